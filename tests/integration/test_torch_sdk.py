"""Models exported from PyTorch with the pip-installed wheel, float and quantized, run from
C++ and C (the wheel's examples/consumer, linking the quantized kernels component) and from
Python (`python -m edgert.run_program`): the same printed bytes for each program."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, Venv

pytestmark = pytest.mark.integration

# Run by the test's own Python (it has torch) with the installed wheel's edgert first on
# the path: what `pip install edgert[torch]` gives a user.
EXPORT = """
import sys, numpy as np, torch
from pathlib import Path
from edgert.export import from_torch
from edgert.quantization import quantize_program
from tests.native.torch_models import CASES
out = Path(sys.argv[1])
for case in CASES:
    if case.name not in ("mlp", "cnn", "embedding", "two_heads"):
        continue
    program = from_torch(case.make(), case.example)   # static shapes: the example's batch
    (out / f"{case.name}.edgert").write_bytes(program)
    calibration = [tuple(torch.randn_like(t) if t.is_floating_point() else t for t in case.example)
                   for _ in range(8)]
    if case.name in ("mlp", "cnn"):
        (out / f"{case.name}_quantized.edgert").write_bytes(quantize_program(program, calibration))
    for position, tensor in enumerate(case.example):
        (out / f"{case.name}.{position}.raw").write_bytes(tensor.numpy().tobytes())
"""


@pytest.fixture(scope="module")
def programs(installed_cpu_wheel: Venv, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("torch-programs")
    path = os.pathsep.join([str(installed_cpu_wheel.site_packages), str(ROOT)])
    completed = subprocess.run(
        [sys.executable, "-c", EXPORT, str(folder)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": path},
        cwd=str(ROOT),
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return folder


@pytest.fixture(scope="module")
def consumer(installed_cpu_wheel: Venv, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from release.toolchain import tools

    cmake = tools.cmake(tools.CMAKE_NEW)
    cmake_dir = installed_cpu_wheel.run("-m", "edgert", "--cmake-dir", cwd="/").stdout.strip()
    source = Path(cmake_dir).parents[2] / "examples" / "consumer"
    build = tmp_path_factory.mktemp("consumer")
    for step in (
        [
            str(cmake),
            "-S",
            str(source),
            "-B",
            str(build),
            f"-Dedgert_DIR={cmake_dir}",
            "-DCMAKE_BUILD_TYPE=Release",
        ],
        [str(cmake), "--build", str(build)],
    ):
        completed = subprocess.run(step, capture_output=True, text=True, check=False)
        assert completed.returncode == 0, completed.stdout + completed.stderr
    return build


@pytest.mark.parametrize(
    "name", ["mlp", "mlp_quantized", "cnn", "cnn_quantized", "embedding", "two_heads"]
)
def test_cpp_c_and_python_print_the_same_bytes(
    installed_cpu_wheel: Venv, programs: Path, consumer: Path, name: str
) -> None:
    model = programs / f"{name}.edgert"
    inputs = sorted(str(p) for p in programs.glob(f"{name.removesuffix('_quantized')}.*.raw"))
    python = installed_cpu_wheel.run("-m", "edgert.run_program", str(model), *inputs, cwd="/")
    assert python.returncode == 0, python.stderr
    assert python.stdout.count("output ") >= 1 and len(python.stdout) > 100
    for program in ("run_program", "run_program_c"):
        native = subprocess.run(
            [str(consumer / program), str(model), *inputs], capture_output=True, check=False
        )
        assert native.returncode == 0, native.stderr
        assert native.stdout == python.stdout.encode(), f"{program} differs from Python on {name}"
