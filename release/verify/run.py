"""``verify_wheel``: read the wheel once, run every check, collect every finding."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from release.errors import ReleaseError
from release.findings import Finding, Severity
from release.verify.checks import CHECKS
from release.verify.checks._common import not_run
from release.verify.context import Host, VerifyContext
from release.verify.data import load_distribution_dirs, load_policies
from release.verify.options import VerifyOptions
from release.verify.report import Report
from release.verify.wheel import WheelModel, open_wheel


def leak_prefixes(options: VerifyOptions, environment: dict[str, str]) -> tuple[str, ...]:
    """Folders whose names must not appear in shipped files."""
    prefixes = [path.rstrip("/") + "/" for path in options.build_paths if path]
    if options.leak_environment:
        home = environment.get("HOME", "")
        temporary = environment.get("TMPDIR", "")
        prefixes += [p.rstrip("/") + "/" for p in (home, temporary) if p.strip("/")]
        prefixes.append("/tmp/")
    return tuple(dict.fromkeys(prefixes))


def run_checks(wheel: WheelModel, context: VerifyContext) -> tuple[list[Finding], dict[str, str]]:
    findings = list(wheel.findings)
    status = {}
    for module in CHECKS:
        if module.RUNS_PROGRAMS and context.static:
            findings.append(not_run(module.NAME, "--static reads files only"))
            status[module.NAME] = "not run"
            continue
        try:
            found = module.check(wheel, context)
            status[module.NAME] = "not run" if any(
                f.details.get("status") == "not run" for f in found) else "ran"
        except ReleaseError as error:
            found = [Finding(check=module.NAME, severity=Severity.ERROR, file="",
                             what=f"the check could not run: {error.what}", fix=error.fix)]
            status[module.NAME] = "failed"
        findings.extend(found)
    return findings, status


def verify_wheel(path: Path, *, static: bool = False,
                 options: VerifyOptions | None = None) -> Report:
    """Verifies the wheel at ``path``. Raises WheelError only when it cannot be read safely;
    every other problem is a finding in the report."""
    options = options or VerifyOptions()
    with tempfile.TemporaryDirectory(prefix="release-verify-") as scratch:
        root = Path(scratch) / "site-packages"
        root.mkdir()
        wheel = open_wheel(path, root, extract_all=not static,
                           prefixes=leak_prefixes(options, dict(os.environ)), options=options)
        context = VerifyContext(options=options, static=static, host=Host.current(),
                                policies=load_policies(),
                                distribution_dirs=load_distribution_dirs(),
                                workdir=Path(scratch) / "work")
        context.workdir.mkdir()
        findings, status = run_checks(wheel, context)
    return Report(wheel=path.name, static=static, findings=findings, checks=status)
