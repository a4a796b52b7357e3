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

from release import tools
from release.errors import DeadlineReached, EnvironmentFailure, ReleaseError, ToolError
from release.findings import CheckStatus, Finding, Severity
from release.host import Host, provide_once
from release.loader import HasLoader, bind_to_wheel, loader_for
from release.verify.analyses import Analyses
from release.verify.argument import classify
from release.verify.checks import CHECKS, Check
from release.verify.checks._common import environment, not_run
from release.verify.context import VerifyContext
from release.verify.data import (
    load_build_prefixes,
    load_distribution_dirs,
    load_imported_libraries,
    load_toolkit_libraries,
)
from release.verify.options import VerifyOptions
from release.verify.providers import provider_checks, wheel_providers
from release.verify.report import Report
from release.verify.sandbox import make_sandbox
from release.verify.wheel_model import WheelModel, open_wheel


def leak_prefixes(options: VerifyOptions) -> tuple[str, ...]:
    """Folders whose names must not appear in shipped files: the ones given (--build-path)
    and the build-machine folders of release/verify/data/build_prefixes.json. Nothing comes
    from the verifier's own environment, so a wheel gets the same findings everywhere."""
    prefixes = [path.rstrip("/") + "/" for path in options.build_paths if path]
    if options.known_build_prefixes:
        prefixes += [row.prefix for row in load_build_prefixes()]
    return tuple(dict.fromkeys(prefixes))


def run_checks(wheel: WheelModel, context: VerifyContext, checks: Sequence[Check] = CHECKS
               ) -> tuple[list[Finding], dict[str, CheckStatus]]:
    findings = list(wheel.findings)
    status: dict[str, CheckStatus] = {}
    deadline: float | None = None   # seconds, once verify's deadline has passed
    for module in checks:
        if module.RUNS_PROGRAMS and context.static:
            findings.append(not_run(module.NAME, "--static reads files only"))
            status[module.NAME] = CheckStatus.NOT_RUN
            continue
        if module.RUNS_PROGRAMS and deadline is not None:
            findings.append(not_run(module.NAME, f"verify's deadline of {deadline:g} s had "
                                    "passed"))
            status[module.NAME] = CheckStatus.NOT_RUN
            continue
        try:
            found = module.check(wheel, context)
            said = CheckStatus.of(found)
        except DeadlineReached as error:
            deadline = error.seconds
            found = [Finding(check=module.NAME, severity=Severity.ERROR, file="",
                             what=error.what, fix=error.fix,
                             why="verify ran the wheel's code for as long as it may")]
            said = CheckStatus.FAILED
        except (EnvironmentFailure, ToolError) as error:
            found = [environment(module.NAME, "", error.what, fix=error.fix)]
            said = CheckStatus.ENVIRONMENT
        except ReleaseError as error:
            found = [Finding(check=module.NAME, severity=Severity.ERROR, file="",
                             what=f"the check could not run: {error.what}", fix=error.fix)]
            said = CheckStatus.FAILED
        status[module.NAME] = said
        findings.extend(found)
    return findings, status


def _unclaimed(wheel: WheelModel, platform: HasLoader | None) -> list[Finding]:
    tags = [tag for tag in wheel.platforms if tag != "any"]
    formats = sorted({binary.info.format for binary in wheel.binaries})
    if platform is None and formats:
        return [Finding(check="platform", severity=Severity.ERROR, file="",
                        what=f"ships {', '.join(formats)} binaries but its platform tag is "
                             f"{', '.join(wheel.platforms) or 'missing'}",
                        why="installers put it on systems that cannot load its binaries",
                        fix="give the wheel the platform tag its binaries are built for")]
    if platform is not None and platform.reader is not None:
        # binaries of another platform's format (ELF files under a win_amd64 tag)
        native = platform.reader.name
        foreign = [name for name in formats if name != native]
        if foreign:
            alone = native not in formats
            return [Finding(check="platform", severity=Severity.ERROR if alone else
                            Severity.WARNING, file="",
                            what=f"ships {', '.join(foreign)} binaries but its platform tag is "
                                 f"{', '.join(wheel.platforms)}",
                            why="installers put it on systems that cannot load those binaries",
                            fix="give the wheel the platform tag its binaries are built for, "
                                "or leave the other platform's files out")]
    if platform is not None or not tags:
        return []
    return [Finding(check="platform", severity=Severity.WARNING, file="",
                    what=f"no loader model for platform tag {', '.join(tags)}: its binaries' "
                         "linkage, search paths and tag promises were not checked",
                    why="verify reads only the formats of the platforms it knows",
                    fix="verify on a platform module that reads this format, or check the "
                        "tag", status=CheckStatus.NOT_RUN)]


def host_for(platform: HasLoader | None, *, static: bool, cache: Path | None) -> Host:
    """This machine (verify's edge makes the one Host of a run that was handed none); for a
    run that may run programs, with the runners the wheel's platform (and only it) makes for
    this Host, asked for when a check first needs one."""
    here = Host.current()
    if static or platform is None:
        return here
    chosen = platform
    return Host(here.system, here.machine,
                provide=provide_once(lambda: chosen.emulated(
                    here, cache=cache or tools.cache_dir())))


def run_verify(path: Path, *, static: bool = False, options: VerifyOptions | None = None,
               platforms: Sequence[HasLoader] = (), extra_checks: Sequence[Check] = (),
               host: Host | None = None, cache: Path | None = None) -> Report:
    """Verifies the wheel at ``path`` with the readers and loader models of ``platforms``.
    Raises ConfigurationError when ``path`` is not a file, WheelError when it cannot be
    read safely and EnvironmentFailure when a full run cannot sandbox the wheel's code
    (``options.sandbox`` "require"); every other problem is a finding in the report."""
    options = options or VerifyOptions()
    argument = classify(path)
    readers = tuple(p.reader for p in platforms if p.reader is not None)
    with tempfile.TemporaryDirectory(prefix="release-verify-") as scratch:
        # before anything is extracted: a full run that cannot sandbox the wheel's code
        # refuses at once (options.sandbox "require")
        sandbox = None if static else make_sandbox(
            Path(scratch), options.sandbox, shown=(cache or tools.cache_dir(), *options.sites),
            limits=options.resources)
        root = Path(scratch) / "site-packages"
        root.mkdir()
        wheel = open_wheel(argument.path, root, extract_all=not static,
                           prefixes=leak_prefixes(options), options=options,
                           readers=readers)
        platform = loader_for(platforms, wheel.platforms)
        loader = platform.loader if platform is not None else None
        if loader is not None:
            loader = bind_to_wheel(loader, wheel.folders, wheel.init_modules,
                                   platform_tags=wheel.platforms)
        context = VerifyContext(options=options, static=static,
                                host=host or host_for(platform, static=static, cache=cache),
                                loader=loader,
                                policy=loader.policy(wheel.platforms) if loader else None,
                                distribution_dirs=load_distribution_dirs(),
                                imported_libraries=load_imported_libraries(),
                                toolkit_libraries=load_toolkit_libraries(),
                                workdir=Path(scratch) / "work", analyses=Analyses(wheel),
                                sandbox=sandbox)
        context.workdir.mkdir()
        checks = (*CHECKS, *extra_checks,
                  *provider_checks(wheel_providers(wheel, options.providers)))
        findings, status = run_checks(wheel, context, tuple(dict.fromkeys(checks)))
    findings += _unclaimed(wheel, platform)
    read = Counter(binary.info.format for binary in wheel.binaries)
    unreadable = sum(1 for f in wheel.findings if f.check == "binary")
    if unreadable:
        read["unreadable"] = unreadable
    return Report(wheel=argument.path.name, static=static, findings=findings, checks=status,
                  binaries=dict(read))
