"""Load matrix: shipped libraries loaded together in fresh Python processes, as users load
them. First everything a user can load directly at once (the extension modules, and the
libraries nothing in the wheel loads: bundled runtime libraries come in through their
dependents, as they do for users), then each collision candidate (libraries that register
operators or backends, the extension modules, plugins) alone, then every pair of candidates
that load alone, in both orders; two extension modules are never paired (they are loaded
RTLD_LOCAL and cannot interpose on each other). A combination that aborts (for example
"Re-registering <op>") or fails to load is an error carrying its stderr.

Each load is what really happens: the declared dependencies whose import loads libraries a
file finds by name are imported first (``import torch`` before an extension built against
libtorch), and a library found only through what its loaders pass down is loaded after the
chain that loads it, never alone. A file that needs a library from a provider that is not
here (an extra's dependency, a CUDA toolkit library, an undeclared distribution) is not
loaded: "not run (environment)", the same rule as the linkage check's, never an error; one
that needs a library found nowhere is left to the linkage check's error.

Each process is started by the loader model's runner for the wheel's machine: this machine's
Python, or, for a wheel of another machine, that machine's Python under an emulator, so a
failure means the same thing wherever verify runs.

Bounded: only candidate pairs run, ``workers`` at a time, each within ``load_timeout``
seconds; past ``max_pairs`` the rest are reported as not run."""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

from release.errors import CommandError, ToolError
from release.findings import Finding, Severity
from release.host import Runner
from release.loader import LoaderModel, LoadItem
from release.verify import linkage_model, ownership_model
from release.verify.checks._common import environment, finding, not_run
from release.verify.context import VerifyContext
from release.verify.dependencies import dependency_sites, site_holds
from release.verify.wheel_model import BinaryFile, WheelModel

NAME = "load-matrix"
RUNS_PROGRAMS = True
_ABSENT = (linkage_model.OPTIONAL, linkage_model.TOOLKIT, linkage_model.UNDECLARED)


def link_sites(wheel: WheelModel, sites: Sequence[Path]) -> None:
    """Makes ``--site`` folders visible beside the extracted wheel, as in one site-packages."""
    for site in sites:
        if not site.is_dir():
            raise ToolError(f"--site folder {site} does not exist", fix="pass an existing folder")
        for entry in site.iterdir():
            target = wheel.root / entry.name
            if not target.exists() and not target.is_symlink():
                target.symlink_to(entry.resolve())


@dataclass(frozen=True)
class _Needs:
    """What loading one binary brings in: every resolution of it and of the wheel's
    libraries it loads, transitively."""

    resolutions: tuple[linkage_model.Resolution, ...]

    def modules(self) -> tuple[str, ...]:
        return tuple(sorted({item.module for item in self.resolutions
                             if item.kind == linkage_model.IMPORTED and item.module}))

    def absent(self, sites: Sequence[Path]) -> list[str]:
        """The providers of libraries it needs that are not here (not in any site)."""
        return sorted({item.distribution or item.needed for item in self.resolutions
                       if item.kind in _ABSENT and not any(
                           site_holds(site, item.distribution) for site in sites)})

    def unresolved(self) -> bool:
        return any(item.kind == linkage_model.UNRESOLVED for item in self.resolutions)

    def inherited(self) -> bool:
        return any(item.kind == linkage_model.IN_WHEEL and item.inherited_from
                   for item in self.resolutions)


def _needs(wheel: WheelModel, context: VerifyContext) -> dict[str, _Needs]:
    """For each binary (wheel path), what loading it brings in."""
    direct: dict[str, list[linkage_model.Resolution]] = {}
    for item in linkage_model.resolutions(context):
        direct.setdefault(item.binary, []).append(item)
    by_installed = {binary.installed: binary.path for binary in wheel.binaries}
    result = {}
    for binary in wheel.binaries:
        seen, pending, found = {binary.path}, [binary.path], []
        while pending:
            path = pending.pop()
            for item in direct.get(path, ()):
                found.append(item)
                loaded = (by_installed.get(item.target)
                          if item.kind == linkage_model.IN_WHEEL else None)
                if loaded is not None and loaded not in seen:
                    seen.add(loaded)
                    pending.append(loaded)
        result[binary.path] = _Needs(tuple(found))
    return result


def _loadable(wheel: WheelModel, loader: LoaderModel) -> list[BinaryFile]:
    return [binary for binary in wheel.binaries if loader.is_loadable_library(binary.info)]


def _entry_points(wheel: WheelModel, context: VerifyContext,
                  loader: LoaderModel) -> list[BinaryFile]:
    """What a user loads directly: extension modules and libraries no shipped binary needs."""
    loaded_by_others = {item.target for item in linkage_model.resolutions(context)
                        if item.kind == linkage_model.IN_WHEEL and item.target != item.binary}
    return [binary for binary in _loadable(wheel, loader)
            if binary.is_extension or binary.installed not in loaded_by_others]


def _candidates(wheel: WheelModel, context: VerifyContext,
                loader: LoaderModel) -> list[BinaryFile]:
    registrars = ownership_model.of(context).registrars
    record = wheel.build_record
    plugins = {c.file for c in record.components if c.kind == "plugin"} if record else set()
    return [binary for binary in _loadable(wheel, loader)
            if binary.path in registrars or binary.path in plugins or binary.is_extension]


def _with_loaders(wheel: WheelModel, context: VerifyContext, binary: BinaryFile,
                  needs: dict[str, _Needs]) -> list[BinaryFile]:
    """``binary`` preceded by the chain that loads it when it finds some library only
    through what its loaders pass down: nothing ever loads it alone."""
    if not needs[binary.path].inherited():
        return [binary]
    chains = linkage_model.chains(context)
    order, current, seen = [binary], binary, {binary.path}
    while True:
        loader = chains.get(current.installed, (linkage_model.Chain("", ()),))[0].loader
        parent = next((b for b in wheel.binaries if b.path == loader), None)
        if parent is None or parent.path in seen:
            return order
        seen.add(parent.path)
        order.insert(0, parent)
        current = parent


def _run(wheel: WheelModel, context: VerifyContext, loader: LoaderModel, runner: Runner,
         sites: Sequence[Path], files: Sequence[BinaryFile], imports: Sequence[str]
         ) -> tuple[int, str] | None:
    """None when the process loaded everything, else (exit status, output tail)."""
    command = loader.load_command([LoadItem(wheel.root / binary.installed, binary.is_extension,
                                            binary.installed) for binary in files], runner,
                                  imports)
    path = os.pathsep.join([str(wheel.root), *map(str, sites)])
    try:
        context.run(command, runner=runner, cwd=context.workdir,
                    env={"PYTHONPATH": path}, timeout=context.options.load_timeout,
                    what="load-matrix process")
    except CommandError as error:
        return error.returncode, error.output[-2000:] or error.what
    return None


def _failure(files: Sequence[BinaryFile], result: tuple[int, str],
             imports: Sequence[str]) -> Finding:
    code, output = result
    names = [binary.path for binary in files]
    timed_out = code == -1
    first = f"after `import {', '.join(imports)}`, " if imports else ""
    return finding(
        NAME, Severity.ERROR, names[-1] if len(names) <= 2 else "",
        first + ("timed out loading " if timed_out else "printed more than verify keeps "
                 "(its output limit) loading " if code == -2
                 else f"loading failed (exit {code}) for ")
        + (f"{names[0]} alone" if len(names) == 1 else " then ".join(names) if len(names) == 2
           else f"all {len(names)} libraries together"),
        why="users who import or link these together hit the same failure",
        fix="read the output in the details: a library that aborts when loaded twice "
            "(two owners of one operator) or a symbol it cannot resolve",
        order=names, returncode=code, stderr=output, imports=list(imports))


@dataclass(frozen=True)
class _Job:
    files: tuple[BinaryFile, ...]
    imports: tuple[str, ...]


def _job(wheel: WheelModel, context: VerifyContext, files: Sequence[BinaryFile],
         needs: dict[str, _Needs]) -> _Job:
    ordered: list[BinaryFile] = []
    for binary in files:
        for item in _with_loaders(wheel, context, binary, needs):
            if item not in ordered:
                ordered.append(item)
    modules = sorted({module for binary in ordered for module in needs[binary.path].modules()})
    return _Job(tuple(ordered), tuple(modules))


def _run_all(wheel: WheelModel, context: VerifyContext, loader: LoaderModel, runner: Runner,
             sites: Sequence[Path], jobs: Sequence[_Job]) -> list[Finding | None]:
    """One finding per job (None: it loaded), in the jobs' order."""
    def attempt(job: _Job) -> tuple[int, str] | None | ToolError:
        try:
            return _run(wheel, context, loader, runner, sites, job.files, job.imports)
        except ToolError as error:   # the runner cannot import the modules first
            return error
    with ThreadPoolExecutor(max(1, context.options.workers)) as pool:
        results = list(pool.map(attempt, jobs))
    findings: list[Finding | None] = []
    for job, result in zip(jobs, results):
        if isinstance(result, ToolError):
            findings.append(environment(NAME, job.files[-1].path, result.what,
                                        fix=result.fix))
        else:
            findings.append(None if result is None else
                            _failure(job.files, result, job.imports))
    return findings


def _unloadable(wheel: WheelModel, binary: BinaryFile, needs: _Needs, loader: LoaderModel,
                runner: Runner) -> str:
    """Why the runner cannot load ``binary`` or a library of the wheel it loads, or ""."""
    by_installed = {b.installed: b for b in wheel.binaries}
    loaded = [binary, *(by_installed[item.target] for item in needs.resolutions
                        if item.kind == linkage_model.IN_WHEEL and item.target in by_installed)]
    return next((reason for item in loaded if (reason := loader.unloadable(item.info, runner))),
                "")


def _held_back(wheel: WheelModel, candidates: list[BinaryFile], entry_points: list[BinaryFile],
               needs: dict[str, _Needs], sites: Sequence[Path], loader: LoaderModel,
               runner: Runner) -> tuple[set[str], list[Finding]]:
    """The files not loaded, and a note for each reason: a provider that is not here or
    something the runner cannot offer (the environment's), or a library found nowhere (the
    linkage check's error)."""
    absent: dict[str, list[str]] = {}
    limits: dict[str, list[str]] = {}
    unresolved = []
    for binary in {b.path: b for b in (*candidates, *entry_points)}.values():
        missing = needs[binary.path].absent(sites)
        reason = _unloadable(wheel, binary, needs[binary.path], loader, runner)
        if reason:
            limits.setdefault(reason, []).append(binary.path)
        elif missing:
            for provider in missing:
                absent.setdefault(provider, []).append(binary.path)
        elif needs[binary.path].unresolved():
            unresolved.append(binary.path)
    held = {path for group in (absent, limits) for paths in group.values() for path in paths}
    held |= set(unresolved)
    notes = []
    if absent:
        files = sorted({path for paths in absent.values() for path in paths})
        notes.append(environment(
            NAME, files[0] if len(files) == 1 else "",
            f"{len(files)} file(s) need libraries from {', '.join(sorted(absent))}, which are "
            "not installed here (optional or undeclared providers)",
            fix="pass --site DIR holding them to load these files", files=files[:20],
            providers=sorted(absent)))
    for reason, files in sorted(limits.items()):
        notes.append(environment(
            NAME, files[0] if len(files) == 1 else "",
            f"{len(files)} file(s) cannot be loaded here: {reason}",
            fix="run verify on a machine of the wheel's platform", files=sorted(files)[:20]))
    if unresolved:
        notes.append(finding(
            NAME, Severity.INFO, "", f"{len(unresolved)} file(s) not loaded: they need "
            "libraries found nowhere (the linkage check's errors)", files=sorted(unresolved)[:20]))
    return held, notes


def check(wheel: WheelModel, context: VerifyContext) -> list[Finding]:
    loader = context.loader
    if loader is not None and not _loadable(wheel, loader):
        return [not_run(NAME, "the wheel ships no library or extension module to load")]
    runner = None if loader is None else loader.runner(wheel.platforms, context.host)
    if loader is None or runner is None:
        return [not_run(NAME, f"this host ({context.host.system}-{context.host.machine}) "
                        "cannot run the wheel's binaries, natively or emulated")]
    sites = dependency_sites(wheel, context, runner)
    link_sites(wheel, sites)
    context.workdir.mkdir(parents=True, exist_ok=True)
    needs = _needs(wheel, context)
    entry_points = _entry_points(wheel, context, loader)
    held, findings = _held_back(wheel, _candidates(wheel, context, loader), entry_points,
                                needs, sites, loader, runner)
    candidates = [b for b in _candidates(wheel, context, loader) if b.path not in held]
    pairs = [pair for first, second in combinations(candidates, 2)
             if not (first.is_extension and second.is_extension)
             for pair in ((first, second), (second, first))]
    cap = max(0, context.options.max_pairs) * 2
    together = [b for b in entry_points if b.path not in held]
    jobs = (([_job(wheel, context, together, needs)] if together else []) +
        [_job(wheel, context, [binary], needs) for binary in candidates])
    results = _run_all(wheel, context, loader, runner, sites, jobs)
    alone = results[1:] if together else results
    broken = {binary.path for binary, result in zip(candidates, alone) if result is not None}
    runnable = [pair for pair in pairs if not broken & {pair[0].path, pair[1].path}]
    results += _run_all(wheel, context, loader, runner, sites,
                        [_job(wheel, context, pair, needs) for pair in runnable[:cap]])
    findings += [result for result in results if result is not None]
    count = len(jobs) + min(cap, len(runnable))
    findings.append(finding(NAME, Severity.INFO, "", f"{count} load combinations run, "
                            f"{len(candidates)} collision candidates",
                            candidates=[binary.path for binary in candidates]))
    if len(runnable) > cap:
        findings.append(finding(NAME, Severity.WARNING, "", f"{len(runnable) - cap} ordered "
                                f"pairs not run: over the cap of {cap}",
                                fix="raise --max-pairs to run them all"))
    return findings
