"""The CUDA toolchain of a variant: pinned wheels from the package index, or CUDA_HOME.

``provision(variant, environ=..., cache=...)`` installs the variant's pinned toolchain wheels
once into the release cache (``pip install --target``) and reuses them; a toolkit named by
CUDA_HOME is used instead when given. Either way the toolkit's CUDA major must match the variant's.
``CudaToolchain.cmake_arguments(variant)`` is everything native/backend_cuda needs."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cuda.gpu_variant import CudaVariant
from release.errors import ToolError
from release.tool import Tool
from release.toolchain import tools

FATBIN_TOOL = Path(__file__).resolve().parent / "_fatbin_tool.py"
_CUDART_VERSION = re.compile(r"#define\s+CUDART_VERSION\s+(\d+)")


@dataclass(frozen=True)
class CudaToolchain:
    origin: str                        # "package index" or "CUDA_HOME=<path>"
    major: int
    minor: int
    include_dirs: tuple[Path, ...]     # cuda_runtime_api.h first, then what it includes
    runtime_library: Path              # libcudart.so.<major>
    nvcc: Path | None = None
    nvrtc_library: Path | None = None  # the NVRTC route (cu12 from the index)
    ptxas: Path | None = None
    nvfatbin_library: Path | None = None

    def fatbin_command(self, variant: CudaVariant) -> list[str]:
        """The command that compiles one .cu file to a fatbinary; the build appends
        ``-o <fatbin> <source.cu>``. Architectures come from the variant's claims."""
        if self.nvcc is not None:
            gencode = [f"-gencode=arch=compute_{sm},code=sm_{sm}"
                       for sm in variant.sass_architectures]
            gencode += [f"-gencode=arch=compute_{sm},code=compute_{sm}"
                        for sm in variant.ptx_architectures]
            return [str(self.nvcc), "-fatbin", "-O3", *gencode]
        assert self.nvrtc_library and self.ptxas and self.nvfatbin_library
        return [sys.executable, str(FATBIN_TOOL), "--nvrtc", str(self.nvrtc_library),
                "--ptxas", str(self.ptxas), "--nvfatbin", str(self.nvfatbin_library),
                "--sass", ",".join(map(str, variant.sass_architectures)),
                "--ptx", ",".join(map(str, variant.ptx_architectures))]

    def tools(self, variant: CudaVariant) -> tuple[Tool, ...]:
        """What builds the device code: the pinned wheels, or the toolkit CUDA_HOME names."""
        if self.origin.startswith("CUDA_HOME="):
            return (Tool("CUDA toolkit", f"{self.major}.{self.minor}"),)
        return tuple(Tool(name, version, f"pkg:pypi/{name}@{version}")
                     for name, version in variant.toolchain.versions.items())

    def cmake_arguments(self, variant: CudaVariant) -> list[str]:
        """-D options for configuring native/ with the CUDA delegate of ``variant``."""
        def as_list(values: object) -> str:
            return ";".join(str(value) for value in values)  # type: ignore[attr-defined]
        return [
            f"-DEDGERT_CUDA_VARIANT={variant.name}",
            f"-DEDGERT_CUDA_FATBIN_COMMAND={as_list(self.fatbin_command(variant))}",
            f"-DEDGERT_CUDA_ARCHITECTURES={as_list(variant.sass_architectures)}",
            f"-DEDGERT_CUDA_PTX_ARCHITECTURES={as_list(variant.ptx_architectures)}",
            f"-DEDGERT_CUDA_INCLUDE_DIRS={as_list(self.include_dirs)}",
            f"-DEDGERT_CUDA_RUNTIME_LIBRARY_DIR={self.runtime_library.parent}",
            f"-DEDGERT_CUDA_RUNTIME_SONAME={variant.runtime.library}",
        ]


def toolkit_version(include_dir: Path) -> tuple[int, int]:
    """(major, minor) from CUDART_VERSION in cuda_runtime_api.h."""
    header = include_dir / "cuda_runtime_api.h"
    try:
        match = _CUDART_VERSION.search(header.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        match = None
    if match is None:
        raise ToolError(f"cannot read CUDART_VERSION from {header}",
                        fix="install the CUDA runtime headers (or fix CUDA_HOME)")
    version = int(match.group(1))
    return version // 1000, version % 1000 // 10


def _first(candidates: list[Path], what: str, origin: str) -> Path:
    for candidate in candidates:
        if candidate.exists():
            return candidate
    raise ToolError(f"{what} is missing from {origin} (looked for "
                    f"{', '.join(str(path) for path in candidates)})",
                    fix="reinstall the toolkit, or remove the cached toolchain folder")


def _from_cuda_home(home: Path, variant: CudaVariant) -> CudaToolchain:
    origin = f"CUDA_HOME={home}"
    include = _first([home / "include", home / "targets/x86_64-linux/include"],
                     "cuda_runtime_api.h", origin)
    major, minor = toolkit_version(include)
    if major != variant.major:  # before looking for the variant's libcudart.so.<major>
        raise ToolError(
            f"{origin} is CUDA {major}.{minor} but variant {variant.name} builds for CUDA "
            f"{variant.major}: its libraries would need the wrong libcudart",
            fix=f"set CUDA_HOME to a CUDA {variant.major} toolkit, or unset it to use the "
                "pinned toolchain from the package index")
    soname = variant.runtime.library
    runtime = _first([home / "lib64" / soname, home / "lib" / soname,
                      home / "targets/x86_64-linux/lib" / soname], soname, origin)
    nvcc = _first([home / "bin" / "nvcc"], "nvcc", origin)
    return CudaToolchain(origin=origin, major=major, minor=minor, include_dirs=(include,),
                         runtime_library=runtime, nvcc=nvcc)


def _install(variant: CudaVariant, cache: Path) -> Path:
    """The pinned toolchain wheels, installed once (all pinned, so without dependencies) and
    checked against their manifest at each use."""
    return tools.pinned_folder(variant.toolchain, cache)


def _from_index(root: Path, variant: CudaVariant) -> CudaToolchain:
    origin = f"the package index ({root})"
    runtime_dir = root / variant.runtime.dir
    include = runtime_dir.parent / "include"
    major, minor = toolkit_version(include)
    runtime = _first([runtime_dir / variant.runtime.library], variant.runtime.library, origin)
    if variant.compiler == "nvcc":
        nvcc = _first([runtime_dir.parent / "bin" / "nvcc"], "nvcc", origin)
        return CudaToolchain(origin=origin, major=major, minor=minor, include_dirs=(include,),
                             runtime_library=runtime, nvcc=nvcc)
    nvidia = root / "nvidia"
    # The cu12 runtime wheel's headers include crt/*.h, which only the nvcc wheel ships.
    crt = _first([nvidia / "cuda_nvcc/include"], "crt/host_defines.h", origin)
    return CudaToolchain(
        origin=origin, major=major, minor=minor, include_dirs=(include, crt),
        runtime_library=runtime,
        nvrtc_library=_first([nvidia / f"cuda_nvrtc/lib/libnvrtc.so.{variant.major}"],
                             "libnvrtc", origin),
        ptxas=_first([nvidia / "cuda_nvcc/bin/ptxas"], "ptxas", origin),
        nvfatbin_library=_first([nvidia / f"nvfatbin/lib/libnvfatbin.so.{variant.major}"],
                                "libnvfatbin", origin))


def provision(variant: CudaVariant, *, environ: Mapping[str, str], cache: Path) -> CudaToolchain:
    """The toolchain for ``variant``: CUDA_HOME when set, else the pinned index wheels."""
    home = environ.get("CUDA_HOME", "")
    if home:
        toolchain = _from_cuda_home(Path(home), variant)
        fix = (f"set CUDA_HOME to a CUDA {variant.major} toolkit, or unset it to use the "
              "pinned toolchain from the package index")
    else:
        toolchain = _from_index(_install(variant, cache), variant)
        fix = f"correct the pinned requirements in the {variant.name} variant file"
    if toolchain.major != variant.major:
        raise ToolError(
            f"{toolchain.origin} is CUDA {toolchain.major}.{toolchain.minor} but variant "
            f"{variant.name} builds for CUDA {variant.major}: its libraries would need the "
            f"wrong libcudart", fix=fix)
    return toolchain
