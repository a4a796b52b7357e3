"""``run_verify``: read the wheel once, run every check, collect every finding.

The caller passes the platforms (their binary readers and loader models) and any extra
checks; the variant providers the wheel's build record names (or the options name) add
theirs. The platform whose loader model claims the wheel's file-name tags is the one the
checks consult, and the only one asked for a way to run programs: lazily, when a check that
runs programs asks (never under ``static``)."""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from release.host import Host
from release.loader import HasLoader
from release.toolchain import tools
from release.verify.analyses import Analyses
from release.verify.argument import WheelArgument
from release.verify.checks import CHECKS, Check, run_checks
from release.verify.context import VerifyContext
from release.verify.data import (
    load_build_prefixes,
    load_distribution_dirs,
    load_imported_libraries,
    load_toolkit_libraries,
)
from release.verify.options import VerifyOptions
from release.verify.platform_claim import claim_wheel
from release.verify.providers import checks_for
from release.verify.report import Report
from release.verify.sandbox import make_sandbox
from release.verify.wheel_model import open_wheel


def leak_prefixes(options: VerifyOptions) -> tuple[str, ...]:
    """Folders whose names must not appear in shipped files: the ones given (--build-path)
    and the build-machine folders of release/verify/data/build_prefixes.json. Nothing comes
    from the verifier's own environment, so a wheel gets the same findings everywhere."""
    prefixes = [path.rstrip("/") + "/" for path in options.build_paths if path]
    if options.known_build_prefixes:
        prefixes += [row.prefix for row in load_build_prefixes()]
    return tuple(dict.fromkeys(prefixes))


def run_verify(argument: WheelArgument, *, static: bool = False,
               options: VerifyOptions | None = None,
               platforms: Sequence[HasLoader] = (), extra_checks: Sequence[Check] = (),
               host: Host | None = None, cache: Path | None = None) -> Report:
    """Verifies the wheel ``argument`` names (``classify``) with the readers and loader
    models of ``platforms``. Raises WheelError when it cannot be read safely and
    EnvironmentFailure when a full run cannot sandbox the wheel's code (``options.sandbox``
    "require"); every other problem is a finding in the report."""
    options = options or VerifyOptions()
    prefixes = leak_prefixes(options)
    readers = tuple(p.reader for p in platforms if p.reader is not None)
    with tempfile.TemporaryDirectory(prefix="release-verify-") as scratch:
        # before anything is extracted: a full run that cannot sandbox the wheel's code
        # refuses at once (options.sandbox "require")
        sandbox = None if static else make_sandbox(
            Path(scratch), options.sandbox, shown=(cache or tools.cache_dir(), *options.sites),
            limits=options.resources)
        root = Path(scratch) / "site-packages"
        root.mkdir()
        wheel = open_wheel(argument, root, extract_all=not static, prefixes=prefixes,
                           options=options, readers=readers)
        claim = claim_wheel(wheel, platforms, static=static, host=host, cache=cache)
        context = VerifyContext(options=options, static=static, host=claim.host,
                                loader=claim.loader, policy=claim.policy,
                                distribution_dirs=load_distribution_dirs(),
                                imported_libraries=load_imported_libraries(),
                                toolkit_libraries=load_toolkit_libraries(),
                                workdir=Path(scratch) / "work", analyses=Analyses(wheel),
                                sandbox=sandbox)
        context.workdir.mkdir()
        checks = checks_for(wheel, options.providers, (*CHECKS, *extra_checks))
        findings, status = run_checks(wheel, context, checks)
    read = Counter(binary.info.format for binary in wheel.binaries)
    unreadable = sum(1 for f in wheel.findings if f.check == "binary")
    if unreadable:
        read["unreadable"] = unreadable
    return Report(wheel=argument.path.name, static=static,
                  findings=[*findings, *claim.findings], checks=status, binaries=dict(read))
