"""``verify_wheel``: verify with every platform this tool knows, plus the checks of the variant
providers the wheel's build record names (or ``options.providers``). The edge where verify
meets the platform registry; ``run.run_verify`` is the core. The command line, the pipeline's
verify stage and ``check-set`` all call this one function."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from release.host import Host
from release.loader import HasLoader
from release.platform import all_platforms
from release.verify.argument import WheelArgument, classify
from release.verify.checks import Check
from release.verify.options import VerifyOptions
from release.verify.providers import provider_checks
from release.verify.report import Report
from release.verify.run import run_verify

__all__ = ["provider_checks", "verify_argument", "verify_wheel"]


def verify_wheel(path: str | os.PathLike[str], *, static: bool = False,
                 options: VerifyOptions | None = None,
                 platforms: Sequence[HasLoader] | None = None,
                 extra_checks: Sequence[Check] = (), host: Host | None = None,
                 cache: str | os.PathLike[str] | None = None) -> Report:
    """Verifies the wheel at ``path`` (a ``str`` or path-like). Raises ConfigurationError
    when it is not a file, WheelError when it cannot be read safely and EnvironmentFailure
    when a full run cannot sandbox the wheel's code (release/verify/sandbox.py); every other
    problem is a finding in the report. The findings depend on the wheel and the options alone,
    never on the verifier's environment or project. Without ``host``: this machine, and, for
    a run that may run programs, the runners the wheel's platform makes (in the tool
    ``cache``), asked for only when a check first needs one."""
    return verify_argument(classify(Path(path)), static=static, options=options,
                           platforms=platforms, extra_checks=extra_checks, host=host,
                           cache=cache)


def verify_argument(argument: WheelArgument, *, static: bool = False,
                    options: VerifyOptions | None = None,
                    platforms: Sequence[HasLoader] | None = None,
                    extra_checks: Sequence[Check] = (), host: Host | None = None,
                    cache: str | os.PathLike[str] | None = None) -> Report:
    """``verify_wheel`` of the wheel ``classify`` already opened (the command line classifies
    its argument before it loads the checks and platforms)."""
    return run_verify(argument, static=static, options=options,
                      platforms=all_platforms() if platforms is None else platforms,
                      extra_checks=extra_checks, host=host,
                      cache=None if cache is None else Path(cache))
