"""The CUDA delegate's host side, run for real on a stand-in for libcudart that executes its
kernels on the host (tests/cuda/host_cudart): where no GPU is lent, this is what checks that a
program prepares once (a second run moves its inputs and outputs only, allocates nothing, and
copies through page-locked staging on the program's own stream), that results match the CPU
kernels, that nothing leaks, and that a poisoned context, a forked child and a machine
without a GPU are reported with their reasons. The stand-in is strict where a GPU is (a host
pointer in a kernel or copy is an illegal address); what it cannot check is the device code
itself, which tests/gpu checks on a real GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.index]
HERE = Path(__file__).resolve().parent / "host_cudart"


def _cache_value(build_dir: Path, name: str) -> str:
    for line in (build_dir / "CMakeCache.txt").read_text().splitlines():
        if line.startswith(name + ":"):
            return line.split("=", 1)[1]
    raise AssertionError(f"{name} is not in {build_dir}/CMakeCache.txt")


@pytest.fixture(scope="module")
def stand_in(cuda_build, tmp_path_factory: pytest.TempPathFactory) -> Path:  # type: ignore[no-untyped-def]
    """A folder holding the stand-in as libcudart.so.<major> of the build's variant."""
    soname = _cache_value(cuda_build.build_dir, "EDGERT_CUDA_RUNTIME_SONAME")
    folder = tmp_path_factory.mktemp("host-cudart")
    script = folder / "libcudart.map"
    script.write_text((HERE / "libcudart.map.in").read_text().replace(
        "@MAJOR@", soname.rsplit(".", 1)[1]))
    includes = [f"-I{d}" for d in _cache_value(cuda_build.build_dir,
                                               "EDGERT_CUDA_INCLUDE_DIRS").split(";")]
    completed = subprocess.run(
        ["g++", "-std=c++17", "-O1", "-fPIC", "-shared", "-Wall", "-Werror", *includes,
         f"-Wl,-soname,{soname}", f"-Wl,--version-script,{script}",
         "-o", str(folder / soname), str(HERE / "host_cudart.cpp")],
        capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stderr
    return folder


def scenario(cuda_build, stand_in: Path, name: str, **environ: str) -> dict:  # type: ignore[no-untyped-def, type-arg]
    env = {**os.environ, "LD_LIBRARY_PATH": str(stand_in), "PYTHONPATH": str(cuda_build.site),
           **environ}
    completed = subprocess.run([sys.executable, str(HERE / "scenario.py"), name], env=env,
                               capture_output=True, text=True, timeout=120, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return json.loads(completed.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_a_second_run_moves_inputs_and_outputs_only(cuda_build, stand_in: Path) -> None:  # type: ignore[no-untyped-def]
    result = scenario(cuda_build, stand_in, "prepared")
    assert "cuda" in result["backends"] and result["delegated"] == 6   # 3 linear + 2 relu + softmax
    first, second = result["first"], result["second"]
    # prepare uploads the six constants once, from pageable memory, then waits
    assert first["pageable_copies"] == 6 and first["pinned_allocations"] == 2
    assert first["default_stream_uses"] == 0 and second["default_stream_uses"] == 0
    # the second run: one input up, one output down, both through staging; no allocation
    assert second["h2d_bytes"] == result["input_bytes"] == result["second_uploaded"]
    assert second["d2h_bytes"] == result["output_bytes"]
    assert second["pinned_copies"] == 2 and second["pageable_copies"] == 0
    assert second["device_allocations"] == 0 and second["pinned_allocations"] == 0
    assert second["launches"] == first["launches"] == 4   # linear+relu fused twice, linear, softmax
    assert result["matches_cpu"]


def test_a_larger_batch_regrows_buffers_and_still_matches(cuda_build, stand_in: Path) -> None:  # type: ignore[no-untyped-def]
    result = scenario(cuda_build, stand_in, "prepared")
    assert result["bigger_matches_cpu"]
    assert result["bigger"]["device_allocations"] > 0 and result["bigger"]["pinned_allocations"] > 0
    assert result["add_softmax_matches_cpu"] and result["add_softmax_delegated"] == 2
    assert result["two_programs_live_streams"] == 2        # a stream per program
    released = result["released"]
    assert released["live_device_bytes"] == 0 and released["live_streams"] == 0, released
    assert released["device_allocations"] == released["device_frees"]


def test_a_poisoned_context_makes_the_delegate_unavailable(cuda_build, stand_in: Path) -> None:  # type: ignore[no-untyped-def]
    result = scenario(cuda_build, stand_in, "fault", HOST_CUDART_FAULT_AT_LAUNCH="2")
    assert "an illegal memory access was encountered" in result["error"]
    assert "unrecoverable error" in result["again"] and "restart the process" in result["again"]
    assert result["default_on_cuda"] == 0   # a program on the default backends runs on the CPU


def test_a_forked_child_is_told_to_use_spawn(cuda_build, stand_in: Path) -> None:  # type: ignore[no-untyped-def]
    result = scenario(cuda_build, stand_in, "fork")
    assert "forked child" in result["child"]["message"], result
    assert result["child"]["default_on_cuda"] == 0 and result["parent_again"]


def test_without_a_device_the_reason_is_given(cuda_build, stand_in: Path) -> None:  # type: ignore[no-untyped-def]
    result = scenario(cuda_build, stand_in, "no-device", HOST_CUDART_DEVICES="0")
    assert result["default_on_cuda"] == 0
    assert "no usable CUDA GPU" in result["error"] and "compute capability" in result["error"]
    assert result["available"] == ["cpu"]              # what set_backends accepts here
    assert result["installed"] == ["cpu", "cuda"]      # the delegate is there and registered


def test_exported_models_mix_the_delegate_and_the_cpu_kernels(cuda_build, stand_in: Path) -> None:  # type: ignore[no-untyped-def]
    """The delegate claims only the nodes it implements (linear, add, relu, softmax); the
    other operators of a PyTorch model run on the CPU kernels in the same program."""
    result = scenario(cuda_build, stand_in, "mixed")
    for name, model in result.items():
        assert 0 < model["delegated"] < model["nodes"], (name, model)
        assert model["matches_cpu"] and model["matches_eager"], (name, model)
    assert result["cnn"]["delegated"] == 1  # only the final linear
    assert result["mlp"]["delegated"] == 5  # linear-relu-linear, then linear-softmax: not gelu
