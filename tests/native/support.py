"""Helpers of the native tests: where things are, an installed native tree, and running one
operator as a program. Imported as ``tests.native.support`` (conftest.py holds the fixtures)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "native"
MLP_MODEL = NATIVE / "python" / "edgert" / "models" / "mlp.edgert"

# What cmake/edgert.map exports, by mangled name: C names, and C++ entities whose outermost
# scope is namespace edgert (with their typeinfo, vtables, VTTs and guard variables).
EXPORTED_API = re.compile(
    r"^(edgert_|PyInit_|_ZN[KRO]*6edgert|_ZNK[RO]?6edgert|_ZT[ISVT]N6edgert|_ZGVN6edgert)")
# The mangled scope of an entity of the C++ standard library: std:: ("St", or one of the
# abbreviations Sa Sb Ss Si So Sd) or libstdc++'s __gnu_cxx.
_STANDARD_SCOPE = re.compile(r"^(S[tabsiod]|9__gnu_cxx|10__cxxabiv1)")


def standard_library_entity(mangled: str) -> bool:
    """Whether a mangled symbol defines something of the C++ standard library: a function,
    variable, typeinfo, vtable or guard variable in std:: (an instance of a std template
    included, whatever its template arguments or return type)."""
    if not mangled.startswith("_Z"):
        return False
    rest = re.sub(r"^(T[ISVT]|GV|GR|TH|TW|Th[n0-9]+_|Tv[n0-9_]+_)", "", mangled[2:])
    rest = re.sub(r"^Z", "", rest)            # a local entity: the scope of its function
    rest = re.sub(r"^N[rVKRO]*", "", rest)    # a nested name and its qualifiers
    return bool(_STANDARD_SCOPE.match(rest))


def defined_dynamic_symbols(library: Path, *, demangle: bool = False) -> list[str]:
    """The names a shared library defines in its dynamic symbol table (nm -D --defined-only),
    mangled or demangled."""
    command = ["nm", "-D", "--defined-only", *(["-C"] if demangle else []), str(library)]
    listed = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    # "address type name": a demangled name may hold spaces, so split off the first two only
    return [fields[2] for line in listed.splitlines() if len(fields := line.split(maxsplit=2)) == 3]

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
    from release.building.pipeline import BuildOptions, Stage, run
    from release.host import Host

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
