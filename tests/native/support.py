"""Helpers of the native tests: where things are, an installed native tree, and running one
operator as a program. Imported as ``tests.native.support`` (conftest.py holds the fixtures)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "native"
MLP_MODEL = NATIVE / "python" / "edgert" / "models" / "mlp.edgert"


@dataclass(frozen=True)
class NativeInstall:
    """A configured, built and installed native tree."""

    build_dir: Path
    prefix: Path  # CMAKE_INSTALL_PREFIX; the package lives in prefix / "edgert"

    @property
    def package_dir(self) -> Path:
        return self.prefix / "edgert"

    @property
    def lib_dir(self) -> Path:
        return self.package_dir / "lib"

    def library(self, name: str) -> Path:
        return self.lib_dir / f"lib{name}.so"

    def program(self, name: str) -> Path:
        """An executable built in the tree (examples, fuzz targets)."""
        for folder in ("examples", "fuzz"):
            candidate = self.build_dir / folder / name
            if candidate.exists():
                return candidate
        raise FileNotFoundError(f"{name} was not built in {self.build_dir}")

    def env(self) -> dict[str, str]:
        """Environment for a subprocess that imports this install's ``edgert``."""
        path = os.pathsep.join(filter(None, [str(self.prefix), os.environ.get("PYTHONPATH")]))
        return {**os.environ, "PYTHONPATH": path}

    def python(
        self, code: str, *args: str, env: dict[str, str] | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", code, *args],
            capture_output=True,
            text=True,
            env={**self.env(), **(env or {})},
            timeout=timeout,
            check=False,
        )


def run_checked(command: list[str | os.PathLike[str]], **kwargs: object) -> str:
    completed = subprocess.run(
        [os.fspath(part) for part in command], capture_output=True, text=True, check=False, **kwargs
    )  # type: ignore[call-overload]
    assert completed.returncode == 0, (
        f"{command} failed ({completed.returncode}):\n{completed.stdout}\n{completed.stderr}"
    )
    return str(completed.stdout)


def build_native(build_dir: Path, *options: str) -> NativeInstall:
    """A native tree built by the pipeline's configure/build/install stages with extra CMake
    ``options`` (so it gets the same decided search paths as the shipped build)."""
    from release import manifest
    from release.host import Host
    from release.pipeline import BuildOptions, Stage, run

    built = run(manifest.load(ROOT), BuildOptions(
        platform="linux", build_dir=build_dir, last_stage=Stage.INSTALL,
        out_dir=build_dir / "out", cmake_arguments=options), host=Host.current())
    return NativeInstall(build_dir=built.build_dir, prefix=built.build_dir / "install")


def run_op(
    edgert: ModuleType,
    op: str,
    arrays: list[np.ndarray | None],
    attributes: dict | None = None,
    *,
    outputs: int = 1,
    backends: list[str] | None = None,
) -> list[np.ndarray]:
    """Runs one operator as a one-node program; None is an absent optional input.
    ``backends=[]`` runs the plain kernels; None keeps the default backends."""
    from edgert.export import ProgramBuilder

    builder = ProgramBuilder()
    wired = [None if array is None else builder.input(array.dtype, array.shape) for array in arrays]
    produced = builder.op(op, wired, attributes, outputs=outputs)
    for value in produced if isinstance(produced, list) else [produced]:
        builder.output(value)
    program = edgert.load(builder.to_bytes())
    if backends is not None:
        program.set_backends(backends)
    return program.run([array for array in arrays if array is not None])
