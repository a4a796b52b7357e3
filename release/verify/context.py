"""Everything a check may consult besides the wheel: options, facts, the host, the loader
model of the wheel's platform, and the analyses several checks share (``analyses``, computed
once per run on first use: release/verify/analyses.py)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from release.errors import ToolError
from release.host import Host, Runner
from release.loader import LoaderModel, SystemPolicy
from release.verify.analyses import Analyses
from release.verify.data import DistributionDir, ImportedLibrary, ToolkitLibrary
from release.verify.options import VerifyOptions
from release.verify.sandbox import Sandbox
from release.verify.wheel_model import WheelModel

T = TypeVar("T")

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
    # shared by the checks, of this wheel, each computed on first use
    analyses: Analyses[VerifyContext] = field(repr=False, compare=False)
    imported_libraries: tuple[ImportedLibrary, ...] = ()  # loaded by importing a package
    toolkit_libraries: tuple[ToolkitLibrary, ...] = ()    # CUDA toolkit libraries, preloaded
    sandbox: Sandbox | None = None   # where the wheel's code runs (None: nowhere, --static)

    def analysis(self, factory: Callable[[WheelModel, VerifyContext], T]) -> T:
        """``factory(wheel, self)``, computed once per run (release/verify/analyses.py)."""
        return self.analyses.of(factory, self)

    def run(self, argv: Sequence[str | os.PathLike[str]], *, runner: Runner | None = None,
            **options: Any) -> str:
        """Runs a program that executes the wheel's code (an import, a load, a CMake
        configure or build of a shipped package, an example program) in the sandbox, with
        ``runner``'s folders outside the scratch (wine's server folder) private to it, its
        seeded caches (zig's) copied into the scratch and the files it reads (an emulator's
        root folder, a toolchain file) shown read-only;
        ``options`` are ``release.commands.run``'s."""
        if self.sandbox is None:
            raise ToolError("no sandbox was made for this verify run, so nothing of the "
                            "wheel may run", fix="run a full verify (not --static)")
        return self.sandbox.run(argv, private=runner.writes if runner else (),
                                seeds=runner.seeds if runner else (),
                                shown=runner.reads() if runner else (), **options)
