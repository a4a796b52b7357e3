"""Toolchain selection without downloads: fake CUDA_HOME toolkits."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuda import gpu_variant as variant
from cuda import toolchain
from release.errors import ToolError


def fake_toolkit(root: Path, version: int, soname: str) -> Path:
    (root / "include").mkdir(parents=True)
    (root / "include" / "cuda_runtime_api.h").write_text(f"#define CUDART_VERSION {version}\n")
    (root / "lib64").mkdir()
    (root / "lib64" / soname).write_bytes(b"")
    (root / "bin").mkdir()
    (root / "bin" / "nvcc").write_text("#!/bin/sh\n")
    return root


def load(name: str) -> variant.CudaVariant:
    return variant.load(variant.variants_dir() / f"{name}.toml")


def test_cuda_home_of_the_wrong_major_is_refused(tmp_path: Path) -> None:
    home = fake_toolkit(tmp_path / "cuda", 13000, "libcudart.so.12")
    with pytest.raises(ToolError) as error:
        toolchain.provision(load("cu12"), environ={"CUDA_HOME": str(home)},
                            cache=tmp_path / "cache")
    message = str(error.value)
    assert "is CUDA 13.0 but variant cu12 builds for CUDA 12" in message
    assert "set CUDA_HOME to a CUDA 12 toolkit" in message


def test_cuda_home_without_the_runtime_library_names_what_is_missing(tmp_path: Path) -> None:
    home = fake_toolkit(tmp_path / "cuda", 12090, "libcudart.so.11")
    with pytest.raises(ToolError, match="libcudart.so.12 is missing from CUDA_HOME="):
        toolchain.provision(load("cu12"), environ={"CUDA_HOME": str(home)},
                            cache=tmp_path / "cache")


def test_cmake_arguments_derive_code_generation_from_the_claims(tmp_path: Path) -> None:
    home = fake_toolkit(tmp_path / "cuda", 13000, "libcudart.so.13")
    cu13 = load("cu13")
    chain = toolchain.provision(cu13, environ={"CUDA_HOME": str(home)},
                            cache=tmp_path / "cache")
    arguments = dict(argument[2:].split("=", 1) for argument in chain.cmake_arguments(cu13))
    assert arguments["EDGERT_CUDA_VARIANT"] == "cu13"
    assert arguments["EDGERT_CUDA_ARCHITECTURES"] == "75;80;86;89;90;100;120"
    assert arguments["EDGERT_CUDA_RUNTIME_SONAME"] == "libcudart.so.13"
    command = arguments["EDGERT_CUDA_FATBIN_COMMAND"].split(";")
    assert command[:2] == [str(home / "bin" / "nvcc"), "-fatbin"]
    assert "-gencode=arch=compute_86,code=sm_86" in command
    assert command[-1] == "-gencode=arch=compute_120,code=compute_120"
    assert not any("compute_120,code=sm_121" in part for part in command)


def test_nvrtc_route_command(tmp_path: Path) -> None:
    chain = toolchain.CudaToolchain(
        origin="test", major=12, minor=9, include_dirs=(tmp_path,),
        runtime_library=tmp_path / "libcudart.so.12", nvrtc_library=tmp_path / "libnvrtc.so.12",
        ptxas=tmp_path / "ptxas", nvfatbin_library=tmp_path / "libnvfatbin.so.12")
    command = chain.fatbin_command(load("cu12"))
    assert command[1].endswith("_fatbin_tool.py")
    assert command[command.index("--sass") + 1] == "75,80,86,89,90"
    assert command[command.index("--ptx") + 1] == "90"
