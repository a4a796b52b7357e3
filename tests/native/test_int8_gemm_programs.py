"""The int8 GEMM's kernels checked on their own by a C++ program (programs/int8_gemm_check.cpp):
on this machine at every integer level it has, and cross-compiled for aarch64 and run under
qemu-user on an emulated processor with the dot-product extension (the sdot kernels) and on
one without it (the portable kernels). Each run compares its level's bytes with the portable
kernels' and with the documented arithmetic."""

from __future__ import annotations

import platform
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.native.support import ROOT, run_checked

SOURCES = [
    ROOT / "tests/native/programs/int8_gemm_check.cpp",
    ROOT / "native/kernels_quantized/int8_gemm.cpp",
    ROOT / "native/kernels_quantized/int8_gemm_x86.cpp",
    ROOT / "native/kernels_quantized/int8_gemm_arm.cpp",
    ROOT / "native/kernels/isa.cpp",
]
# The build's own floating-point setting (native/cmake/EdgertComponent.cmake).
FLAGS = [
    "-std=c++17",
    "-O2",
    "-ffp-contract=off",
    f"-I{ROOT / 'native/include'}",
    f"-I{ROOT / 'native'}",
]
X86_LEVELS = ("portable", "avx2", "avx512", "avx512vnni")


def build(compiler: str, output: Path, *extra: str) -> Path:
    run_checked([compiler, *FLAGS, *extra, "-o", str(output), *map(str, SOURCES)])
    return output


def level_of(completed: subprocess.CompletedProcess[str]) -> str:
    """The level a run reports ("level NAME: ok"), after checking that it passed."""
    assert completed.returncode == 0, completed.stdout + completed.stderr
    words = completed.stdout.split()
    assert words[0] == "level" and words[-1] == "ok", completed.stdout
    return words[1].rstrip(":")


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the x86-64 levels")
def test_every_x86_level_matches_the_reference(tmp_path: Path) -> None:
    program = build("c++", tmp_path / "int8_gemm_check")
    chosen = {}
    for level in X86_LEVELS:
        completed = subprocess.run(
            [str(program)],
            capture_output=True,
            text=True,
            check=False,
            env={"EDGERT_KERNELS_ISA": level},
            timeout=120,
        )
        chosen[level] = level_of(completed)
    print("levels run:", chosen)
    best = max(X86_LEVELS.index(name) for name in chosen.values())
    assert [chosen[level] for level in X86_LEVELS[: best + 1]] == list(X86_LEVELS[: best + 1])


def test_aarch64_sdot_and_portable_kernels_under_qemu(tmp_path: Path) -> None:
    compiler, emulator = shutil.which("aarch64-linux-gnu-g++"), shutil.which("qemu-aarch64")
    # the aarch64 tool tier (tests/tools.toml): not reached without them
    assert compiler is not None and emulator is not None, \
        "apt-get install g++-aarch64-linux-gnu qemu-user"
    program = build(compiler, tmp_path / "int8_gemm_check_aarch64", "-static")
    runs = {}
    for cpu, level in (("max", None), ("cortex-a53", None), ("max", "portable")):
        environment = {"EDGERT_KERNELS_ISA": level} if level else {}
        completed = subprocess.run(
            [emulator, "-cpu", cpu, str(program)],
            capture_output=True,
            text=True,
            check=False,
            env=environment,
            timeout=300,
        )
        runs[(cpu, level)] = level_of(completed)
    assert runs == {
        ("max", None): "dotprod",
        ("cortex-a53", None): "portable",
        ("max", "portable"): "portable",
    }
