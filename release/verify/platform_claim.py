"""Which platform claims a wheel: the one whose loader model claims the wheel's platform
tags. Its loader bound to the wheel is what the checks consult; the Host of the run (this
machine, plus the runners that platform makes, asked for only when a check first runs a
program, never under ``--static``); and the findings of binaries no claiming platform reads
(ELF files under a ``win_amd64`` tag, or a tag no platform claims)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from release.findings import Finding
from release.host import Host, provide_once
from release.loader import (
    HasLoader,
    LoaderModel,
    SystemPolicy,
    bind_to_wheel,
    loader_for,
    unclaimed,
)
from release.toolchain import tools
from release.verify.wheel_model import WheelModel


@dataclass(frozen=True)
class Claim:
    platform: HasLoader | None      # None: no platform claims the wheel's tags
    loader: LoaderModel | None      # the platform's loader, bound to the wheel
    policy: SystemPolicy | None     # what the wheel's tags promise
    host: Host
    findings: tuple[Finding, ...]   # binaries the claiming platform cannot load, if any


def claim_wheel(wheel: WheelModel, platforms: Sequence[HasLoader], *, static: bool,
                host: Host | None, cache: Path | None) -> Claim:
    """The platform of ``platforms`` that claims ``wheel``; ``host`` is the caller's, or
    made here (verify's edge makes the one Host of a run that was handed none)."""
    platform = loader_for(platforms, wheel.platforms)
    loader = (None if platform is None or platform.loader is None else
              bind_to_wheel(platform.loader, wheel.folders, wheel.init_modules,
                            platform_tags=wheel.platforms))
    policy = loader.policy(wheel.platforms) if loader is not None else None
    formats = sorted({binary.info.format for binary in wheel.binaries})
    findings = unclaimed(platform, wheel.platforms, formats)
    return Claim(platform, loader, policy,
                 host or host_for(platform, static=static, cache=cache), tuple(findings))


def host_for(platform: HasLoader | None, *, static: bool, cache: Path | None) -> Host:
    """This machine; for a run that may run programs, with the runners the wheel's platform
    (and only it) makes for this Host, asked for when a check first needs one."""
    here = Host.current()
    if static or platform is None:
        return here
    chosen = platform
    return Host(here.system, here.machine,
                provide=provide_once(lambda: chosen.emulated(
                    here, cache=cache or tools.cache_dir())))
