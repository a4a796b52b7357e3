"""Load matrix: shipped libraries loaded together in fresh Python processes, as the import
does. First everything a user can load directly at once (the extension modules, and the
libraries nothing in the wheel loads: bundled runtime libraries come in through their
dependents, as they do for users), then each collision candidate (libraries that register
operators or backends, the extension modules, plugins) alone, then every pair of candidates
that load alone, in both orders; two extension modules are never paired (they are loaded
RTLD_LOCAL and cannot interpose on each other). A combination that aborts (for example
"Re-registering <op>") or fails to load is an error carrying its stderr.

Each process is started by the loader model's runner for the wheel's machine: this machine's
Python, or, for a wheel of another machine, that machine's Python under an emulator, so a
failure means the same thing wherever verify runs.

Bounded: only candidate pairs run, ``workers`` at a time, each within ``load_timeout``
seconds; past ``max_pairs`` the rest are reported as not run."""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import combinations
from pathlib import Path

from release import _cmd
from release.errors import CommandError, ToolError
from release.findings import Finding, Severity
from release.loader import LoaderModel, LoadItem, Runner
from release.verify.checks import linkage, ownership
from release.verify.checks._common import finding, not_run
from release.verify.context import VerifyContext
from release.verify.dependencies import dependency_sites
from release.verify.wheel import BinaryFile, WheelModel

NAME = "load-matrix"
RUNS_PROGRAMS = True



def link_sites(wheel: WheelModel, sites: Sequence[Path]) -> None:
    """Makes ``--site`` folders visible beside the extracted wheel, as in one site-packages."""
    for site in sites:
        if not site.is_dir():
            raise ToolError(f"--site folder {site} does not exist", fix="pass an existing folder")
        for entry in site.iterdir():
            target = wheel.root / entry.name
            if not target.exists() and not target.is_symlink():
                target.symlink_to(entry.resolve())


def _loadable(wheel: WheelModel, loader: LoaderModel) -> list[BinaryFile]:
    return [binary for binary in wheel.binaries if loader.is_loadable_library(binary.info)]


def _entry_points(wheel: WheelModel, context: VerifyContext,
                  loader: LoaderModel) -> list[BinaryFile]:
    """What a user loads directly: extension modules and libraries no shipped binary needs."""
    loaded_by_others = {item.target for item in linkage.resolve(wheel, context)
                        if item.kind == linkage.IN_WHEEL and item.target != item.binary}
    return [binary for binary in _loadable(wheel, loader)
            if binary.is_extension or binary.installed not in loaded_by_others]


def _candidates(wheel: WheelModel, context: VerifyContext,
                loader: LoaderModel) -> list[BinaryFile]:
    registrars = ownership.analyze(wheel, context).registrars
    record = wheel.build_record
    plugins = {c.file for c in record.components if c.kind == "plugin"} if record else set()
    return [binary for binary in _loadable(wheel, loader)
            if binary.path in registrars or binary.path in plugins or binary.is_extension]


def _run(wheel: WheelModel, context: VerifyContext, loader: LoaderModel, runner: Runner,
         files: Sequence[BinaryFile]) -> tuple[int, str] | None:
    """None when the process loaded everything, else (exit status, output tail)."""
    command = loader.load_command([LoadItem(wheel.root / binary.installed, binary.is_extension,
                                            binary.installed) for binary in files], runner)
    sites = dependency_sites(wheel, context, runner)
    path = os.pathsep.join([str(wheel.root), *map(str, sites)])
    try:
        _cmd.run(command, cwd=context.workdir,
                 env={"PYTHONPATH": path}, timeout=context.options.load_timeout,
                 what="load-matrix process")
    except CommandError as error:
        return error.returncode, error.output[-2000:] or error.what
    return None


def _failure(files: Sequence[BinaryFile], result: tuple[int, str]) -> Finding:
    code, output = result
    names = [binary.path for binary in files]
    timed_out = code == -1
    return finding(
        NAME, Severity.ERROR, names[-1] if len(names) <= 2 else "",
        ("timed out loading " if timed_out else f"loading failed (exit {code}) for ")
        + (f"{names[0]} alone" if len(names) == 1 else " then ".join(names) if len(names) == 2
           else f"all {len(names)} libraries together"),
        why="users who import or link these together hit the same failure",
        fix="give every operator one owner; link shared components instead of copying them",
        order=names, returncode=code, stderr=output)


def _run_all(wheel: WheelModel, context: VerifyContext, loader: LoaderModel, runner: Runner,
             jobs: Sequence[Sequence[BinaryFile]]) -> list[Finding]:
    with ThreadPoolExecutor(max(1, context.options.workers)) as pool:
        results = list(pool.map(lambda files: _run(wheel, context, loader, runner, files),
                                jobs))
    return [_failure(files, result) for files, result in zip(jobs, results)
            if result is not None]


def check(wheel: WheelModel, context: VerifyContext) -> list[Finding]:
    loader = context.loader
    if loader is not None and not _loadable(wheel, loader):
        return [not_run(NAME, "the wheel ships no library or extension module to load")]
    runner = None if loader is None else loader.runner(wheel.platforms, context.host)
    if loader is None or runner is None:
        return [not_run(NAME, f"this host ({context.host.system}-{context.host.machine}) "
                        "cannot run the wheel's binaries, natively or emulated")]
    link_sites(wheel, dependency_sites(wheel, context, runner))
    context.workdir.mkdir(parents=True, exist_ok=True)
    candidates = _candidates(wheel, context, loader)
    pairs = [pair for first, second in combinations(candidates, 2)
             if not (first.is_extension and second.is_extension)
             for pair in ((first, second), (second, first))]
    cap = max(0, context.options.max_pairs) * 2
    singles: list[Sequence[BinaryFile]] = [[binary] for binary in candidates]
    findings = _run_all(wheel, context, loader, runner, [_entry_points(wheel, context, loader),
                                                         *singles])
    broken = {str(f.details["order"][0]) for f in findings if len(f.details["order"]) == 1}
    runnable = [pair for pair in pairs if not broken & {pair[0].path, pair[1].path}]
    findings += _run_all(wheel, context, loader, runner, runnable[:cap])
    count = 1 + len(singles) + min(cap, len(runnable))
    findings.append(finding(NAME, Severity.INFO, "", f"{count} load combinations run, "
                            f"{len(candidates)} collision candidates",
                            candidates=[binary.path for binary in candidates]))
    if len(runnable) > cap:
        findings.append(finding(NAME, Severity.WARNING, "", f"{len(runnable) - cap} ordered "
                                f"pairs not run: over the cap of {cap}",
                                fix="raise --max-pairs to run them all"))
    return findings
