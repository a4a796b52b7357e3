"""Load matrix: shipped libraries loaded together in fresh Python processes, as the import
does. First all of them at once, then each collision candidate (libraries that register
operators or backends, the extension modules, plugins) alone, then every pair of candidates
that load alone, in both orders. A combination that aborts (for example "Re-registering
<op>") or fails to load is an error carrying its stderr.

Bounded: only candidate pairs run, ``workers`` at a time, each within ``load_timeout``
seconds; past ``max_pairs`` the rest are reported as not run."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import combinations
from pathlib import Path

from release import _cmd
from release.errors import CommandError, ToolError
from release.findings import Finding, Severity
from release.verify.checks import ownership
from release.verify.checks._common import finding, not_run
from release.verify.context import VerifyContext
from release.verify.wheel import ElfFile, WheelModel

NAME = "load-matrix"
RUNS_PROGRAMS = True

# Extension modules load RTLD_LOCAL (as importlib does), libraries RTLD_GLOBAL.
_LOADER = """
import ctypes, sys
for item in sys.argv[1:]:
    mode, path = item.split(":", 1)
    ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL if mode == "g" else ctypes.RTLD_LOCAL)
"""


def runs_on_host(wheel: WheelModel, context: VerifyContext) -> bool:
    if context.host.system != "linux":
        return False
    return any(platform.endswith("_" + context.host.machine) and "linux" in platform
               for platform in wheel.platforms)


def link_sites(wheel: WheelModel, sites: Sequence[Path]) -> None:
    """Makes ``--site`` folders visible beside the extracted wheel, as in one site-packages."""
    for site in sites:
        if not site.is_dir():
            raise ToolError(f"--site folder {site} does not exist", fix="pass an existing folder")
        for entry in site.iterdir():
            target = wheel.root / entry.name
            if not target.exists() and not target.is_symlink():
                target.symlink_to(entry.resolve())


def _loadable(wheel: WheelModel) -> list[ElfFile]:
    return [elf for elf in wheel.binaries if elf.info.file_type == "shared"
            and elf.info.section(".interp") is None]


def _candidates(wheel: WheelModel, context: VerifyContext) -> list[ElfFile]:
    registrars = ownership.analyze(wheel, context).registrars
    record = wheel.build_record
    plugins = {c.file for c in record.components if c.kind == "plugin"} if record else set()
    return [elf for elf in _loadable(wheel)
            if elf.path in registrars or elf.path in plugins or elf.is_extension]


def _run(wheel: WheelModel, context: VerifyContext,
         files: Sequence[ElfFile]) -> tuple[int, str] | None:
    """None when the process loaded everything, else (exit status, output tail)."""
    arguments = [("l:" if elf.is_extension else "g:") + str(wheel.root / elf.installed)
                 for elf in files]
    path = os.pathsep.join([str(wheel.root), *map(str, context.options.sites)])
    try:
        _cmd.run([sys.executable, "-c", _LOADER, *arguments], cwd=context.workdir,
                 env={"PYTHONPATH": path}, timeout=context.options.load_timeout,
                 what="load-matrix process")
    except CommandError as error:
        return error.returncode, error.output[-2000:] or error.what
    return None


def _failure(files: Sequence[ElfFile], result: tuple[int, str]) -> Finding:
    code, output = result
    names = [elf.path for elf in files]
    timed_out = code == -1
    return finding(
        NAME, Severity.ERROR, names[-1] if len(names) <= 2 else "",
        ("timed out loading " if timed_out else f"loading failed (exit {code}) for ")
        + (f"{names[0]} alone" if len(names) == 1 else " then ".join(names) if len(names) == 2
           else f"all {len(names)} libraries together"),
        why="users who import or link these together hit the same failure",
        fix="give every operator one owner; link shared components instead of copying them",
        order=names, returncode=code, stderr=output)


def _run_all(wheel: WheelModel, context: VerifyContext,
             jobs: Sequence[Sequence[ElfFile]]) -> list[Finding]:
    with ThreadPoolExecutor(max(1, context.options.workers)) as pool:
        results = list(pool.map(lambda files: _run(wheel, context, files), jobs))
    return [_failure(files, result) for files, result in zip(jobs, results, strict=True)
            if result is not None]


def check(wheel: WheelModel, context: VerifyContext) -> list[Finding]:
    if not runs_on_host(wheel, context):
        return [not_run(NAME, f"the wheel is not for this host ({context.host.system}-"
                        f"{context.host.machine})")]
    link_sites(wheel, context.options.sites)
    context.workdir.mkdir(parents=True, exist_ok=True)
    candidates = _candidates(wheel, context)
    pairs = [pair for first, second in combinations(candidates, 2)
             for pair in ((first, second), (second, first))]
    cap = max(0, context.options.max_pairs) * 2
    singles: list[Sequence[ElfFile]] = [[elf] for elf in candidates]
    findings = _run_all(wheel, context, [_loadable(wheel), *singles])
    broken = {str(f.details["order"][0]) for f in findings if len(f.details["order"]) == 1}
    runnable = [pair for pair in pairs if not broken & {pair[0].path, pair[1].path}]
    findings += _run_all(wheel, context, runnable[:cap])
    count = 1 + len(singles) + min(cap, len(runnable))
    findings.append(finding(NAME, Severity.INFO, "", f"{count} load combinations run, "
                            f"{len(candidates)} collision candidates",
                            candidates=[elf.path for elf in candidates]))
    if len(runnable) > cap:
        findings.append(finding(NAME, Severity.WARNING, "", f"{len(runnable) - cap} ordered "
                                f"pairs not run: over the cap of {cap}",
                                fix="raise --max-pairs to run them all"))
    return findings
