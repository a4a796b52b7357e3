"""``verify_wheel``: verify with every platform this tool knows and the checks the variant
providers of a project add (by default this release tool's own project). The edge where
verify meets the platform and variant registries; ``run.run_verify`` is the core."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import cast

from release import manifest, tools
from release.errors import ConfigurationError
from release.loader import HasLoader, Host
from release.platform import all_platforms
from release.variant import load_provider
from release.verify.checks import Check
from release.verify.options import VerifyOptions
from release.verify.report import Report
from release.verify.run import run_verify

TOOL_PROJECT = Path(__file__).resolve().parents[2]   # the project this release tool belongs to


def provider_checks(providers: Sequence[str]) -> tuple[Check, ...]:
    """The verify checks the named variant providers contribute, in order, each once."""
    checks: list[Check] = []
    for name in dict.fromkeys(providers):
        for check in load_provider(name).CHECKS:
            if not (hasattr(check, "NAME") and callable(getattr(check, "check", None))):
                raise ConfigurationError(f"variant provider '{name}' offers a check without "
                                         "NAME and check()", fix="see release/verify/checks")
            if check not in checks:
                checks.append(cast(Check, check))
    return tuple(checks)


def provider_checks_of(project: Path | None) -> tuple[Check, ...]:
    """The checks the variant providers of ``project``'s manifest contribute."""
    return provider_checks(manifest.load((project or TOOL_PROJECT).resolve()).providers)


def verify_wheel(path: str | os.PathLike[str], *, static: bool = False,
                 options: VerifyOptions | None = None,
                 platforms: Sequence[HasLoader] | None = None,
                 extra_checks: Sequence[Check] | None = None,
                 project: str | os.PathLike[str] | None = None,
                 host: Host | None = None) -> Report:
    """Verifies the wheel at ``path`` (a ``str`` or path-like). Raises WheelError only when it
    cannot be read safely; every other problem is a finding in the report. The findings
    depend on the wheel and the options alone, never on the verifier's environment. Without
    ``host``, this machine, with the emulated machines the platforms find in the tool cache
    (none for a static run, which runs nothing)."""
    platforms = all_platforms() if platforms is None else platforms
    if host is None and static:
        host = Host.current()
    if host is None:
        cache = tools.cache_dir()
        host = Host.current(emulated=[runner for platform in platforms
                                      for runner in platform.emulated(cache=cache)])
    return run_verify(Path(path), static=static, options=options, platforms=platforms,
                      extra_checks=(provider_checks_of(None if project is None else Path(project))
                                    if extra_checks is None else extra_checks), host=host)
