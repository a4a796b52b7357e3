"""Everything a check may consult besides the wheel: options, facts, the host and the loader
model of the wheel's platform."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from release.loader import Host, LoaderModel, SystemPolicy
from release.verify.data import DistributionDir, ImportedLibrary, ToolkitLibrary
from release.verify.options import VerifyOptions

__all__ = ["Host", "VerifyContext"]


@dataclass(frozen=True)
class VerifyContext:
    options: VerifyOptions
    static: bool
    host: Host
    loader: LoaderModel | None                      # None: no platform claims the wheel's tags
    policy: SystemPolicy | None                     # what the wheel's tags promise
    distribution_dirs: tuple[DistributionDir, ...]
    workdir: Path                                   # scratch folder for checks
    imported_libraries: tuple[ImportedLibrary, ...] = ()  # loaded by importing a package
    toolkit_libraries: tuple[ToolkitLibrary, ...] = ()    # CUDA toolkit libraries, preloaded
    cache: dict[str, Any] = field(default_factory=dict)  # results checks share (ownership)
