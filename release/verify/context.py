"""Everything a check may consult besides the wheel: options, facts and the host."""

from __future__ import annotations

import platform
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from release.verify.data import DistributionDir, PolicySet
from release.verify.options import VerifyOptions


@dataclass(frozen=True)
class Host:
    system: str      # "linux", "darwin", "windows"
    machine: str     # "x86_64", "aarch64"...

    @classmethod
    def current(cls) -> Host:
        machine = platform.machine().lower()
        return cls(platform.system().lower(), {"amd64": "x86_64", "arm64": "aarch64"}.get(
            machine, machine))


@dataclass(frozen=True, kw_only=True)
class VerifyContext:
    options: VerifyOptions
    static: bool
    host: Host
    policies: PolicySet
    distribution_dirs: tuple[DistributionDir, ...]
    workdir: Path                                   # scratch folder for checks
    cache: dict[str, Any] = field(default_factory=dict)  # results checks share (ownership)
