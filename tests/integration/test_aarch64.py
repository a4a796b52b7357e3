"""The linux-aarch64 wheel, cross-built on this machine and run for real under qemu-user: its
tag and verify's full report, the shipped C and C++ examples built against its SDK with the
cross toolchain, and a real arm64 CPython importing it and running the shipped models.

Outputs are compared with the x86_64 wheel's within float32 tolerance (relative 1e-5,
absolute 1e-6): the two builds may order floating-point sums differently (vectorised x86_64
kernels), so bit equality across machines is not promised; within one machine C++, C and
Python stay byte-identical (verify's sdk-routes check, which ran here under qemu).

Needs Debian's g++-aarch64-linux-gnu and qemu-user: the aarch64 tool tier (tests/tools.toml;
README command 2 installs both); the root folder qemu runs programs in is provisioned into the
tool cache on first use."""

from __future__ import annotations

import io
import json
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from elftools.elf.elffile import ELFFile

from platforms.linux import PLATFORM as LINUX
from platforms.linux import cross, emulation
from release.distribution import wheel as wheel_module
from release.errors import EnvironmentFailure
from release.host import Host, Runner
from release.manifest import Target
from release.toolchain import tools
from tests.conftest import ROOT, BuiltWheel, run_release
from tests.integration.conftest import MODELS, build_verified, run_checked, unpack

TARGET = Target(name="linux-aarch64", platform="linux", arch="aarch64")
RELATIVE, ABSOLUTE = 1e-5, 1e-6


@dataclass(frozen=True)
class Aarch64Wheel:
    path: Path
    result: dict
    runner: Runner
    build_dir: Path   # the pipeline's build folder: the in-tree examples are built there


@pytest.fixture(scope="module")
def aarch64_runner() -> Runner:
    """qemu-user with the provisioned arm64 root folder. The cross compiler and qemu are the
    ``aarch64`` tool tier (tests/tools.toml): where they are missing these tests are reported
    as not run, never reached; here a missing one, or a root folder that cannot be
    downloaded, fails."""
    if Host.current().arch("linux") == "aarch64":
        pytest.skip("this machine is aarch64: the native tests cover it")
    target = cross.cross_targets()["aarch64"]
    assert cross.has_compilers(target), f"apt-get install {target.compiler_package}"
    assert emulation.find_emulator(target) is not None, \
        f"apt-get install {target.emulator_package}"
    try:
        runner = LINUX.runner(TARGET, host=Host.current(), cache=tools.cache_dir())
    except EnvironmentFailure as error:
        pytest.fail(f"the arm64 root folder cannot be provisioned: {error.message}")
    assert runner is not None and runner.prefix and runner.cmake_arguments
    return runner


@pytest.fixture(scope="module")
def aarch64_wheel(aarch64_runner: Runner, tmp_path_factory: pytest.TempPathFactory
                  ) -> Aarch64Wheel:
    """The repaired, fully verified (under qemu) aarch64 CPU wheel."""
    result = build_verified("linux", "aarch64", tmp_path_factory.mktemp("dist-aarch64"))
    assert result.wheel is not None
    return Aarch64Wheel(result.wheel, result.to_json(), aarch64_runner, result.build_dir)


def values(output: str) -> tuple[list[str], list[float]]:
    """The header lines and the numbers of a run_program output."""
    lines = output.splitlines()
    return ([line for line in lines if line.startswith("output ")],
            [float(line) for line in lines if not line.startswith("output ")])


def assert_close(actual: str, expected: str) -> None:
    headers, numbers = values(actual)
    expected_headers, expected_numbers = values(expected)
    assert headers == expected_headers
    np.testing.assert_allclose(numbers, expected_numbers, rtol=RELATIVE, atol=ABSOLUTE)


def test_tag_machine_and_full_verify(aarch64_wheel: Aarch64Wheel) -> None:
    name = wheel_module.WheelName.parse(aarch64_wheel.path.name)
    assert (name.python, name.abi) == ("cp39", "abi3")
    assert name.platform.startswith("manylinux_") and name.platform.endswith("_aarch64")
    with zipfile.ZipFile(aarch64_wheel.path) as archive:
        assert f"Tag: {name.tag}" in archive.read(f"{name.dist_info}/WHEEL").decode()
        elves = {entry: archive.read(entry) for entry in archive.namelist()
                 if archive.read(entry)[:4] == b"\x7fELF"}
    assert "edgert/_C.abi3.so" in elves and len(elves) == 7
    assert {ELFFile(io.BytesIO(data))["e_machine"] for data in elves.values()} == {"EM_AARCH64"}
    report = aarch64_wheel.result["verify"]
    assert report["ok"] and report["summary"]["error"] == 0 and not report["static"]
    assert set(report["checks"].values()) == {"ran"}, report["checks"]


def test_verify_command_runs_everything_under_qemu(aarch64_wheel: Aarch64Wheel) -> None:
    """`python -m release verify` finds the provisioned root folder itself: exit 0 means no
    finding and no check kept from running (8 would say the environment was missing)."""
    completed = run_release("verify", "--json", str(aarch64_wheel.path))
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr
    report = json.loads(completed.stdout)
    assert report["checks"]["load-matrix"] == report["checks"]["sdk-routes"] == "ran"
    (loads,) = [f for f in report["findings"] if f["check"] == "load-matrix"]
    assert "load combinations run" in loads["what"] and loads["severity"] == "info"


def test_sdk_exports_the_same_cpp_api_as_x86_64(aarch64_wheel: Aarch64Wheel,
                                                 cpu_wheel: BuiltWheel) -> None:
    """Same C++ ABI on both machines (libstdc++'s std::__cxx11 types in the edgert:: API): a
    C++ application written against the x86_64 SDK links the aarch64 one unchanged."""
    def exported(wheel: Path, library: str) -> set[str]:
        with zipfile.ZipFile(wheel) as archive:
            elf = ELFFile(io.BytesIO(archive.read(f"edgert/lib/{library}")))
        return {s.name for s in elf.get_section_by_name(".dynsym").iter_symbols()
                if s["st_shndx"] != "SHN_UNDEF" and s.name}
    for library in ("libedgert.so", "libedgert_kernels.so", "libedgert_threadpool.so"):
        arm, x86 = exported(aarch64_wheel.path, library), exported(cpu_wheel.path, library)
        assert arm == x86, sorted(arm ^ x86)
    assert any("St7__cxx11" in name for name in exported(aarch64_wheel.path, "libedgert.so"))


def test_examples_built_with_the_cross_toolchain_match_x86_64(
        aarch64_wheel: Aarch64Wheel, cpu_wheel_outputs: dict[str, str], tmp_path: Path) -> None:
    """The shipped consumer (C++ and C), configured through CMAKE_PREFIX_PATH with the
    cross toolchain (its package lookups also search outside the compiler's root), run
    under qemu: the same bytes as the arm64 Python run, the x86_64 numbers within tolerance."""
    runner = aarch64_wheel.runner
    assert runner.cmake_arguments is not None
    site = unpack(aarch64_wheel.path, tmp_path / "site")
    build = tmp_path / "build"
    cmake = str(tools.cmake())
    run_checked([cmake, "-S", str(site / "edgert/examples/consumer"), "-B", str(build),
                 "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={tools.ninja()}",
                 "-DCMAKE_BUILD_TYPE=Release", *runner.cmake_arguments,
                 f"-DCMAKE_PREFIX_PATH={site / 'edgert'}"])
    run_checked([cmake, "--build", str(build)])
    for name in MODELS:
        model = str(site / "edgert" / "models" / f"{name}.edgert")
        python = run_checked(runner.python_command("-m", "edgert.run_program", model),
                             env={"PYTHONPATH": str(site)}, cwd="/")
        for program in ("run_program", "run_program_c"):
            native = run_checked(runner.command(str(build / program), model), cwd="/")
            assert native == python, f"{program} differs from arm64 Python on {name}"
        assert_close(python, cpu_wheel_outputs[name])


def test_in_tree_examples_run_under_qemu(aarch64_wheel: Aarch64Wheel,
                                         cpu_wheel_outputs: dict[str, str]) -> None:
    """The examples the build links in its own tree, including the one linked under
    --as-needed with only runtime + kernels (registration survives without a call)."""
    runner = aarch64_wheel.runner
    model = str(ROOT / "native/python/edgert/models/mlp.edgert")
    outputs = {program: run_checked(runner.command(
        str(aarch64_wheel.build_dir / "examples" / program), model), cwd="/")
        for program in ("run_program", "run_program_c", "run_program_as_needed")}
    assert len(set(outputs.values())) == 1, "C, C++ and --as-needed runs differ"
    assert_close(outputs["run_program"], cpu_wheel_outputs["mlp"])


def test_arm64_cpython_imports_the_wheel_and_runs_the_models(
        aarch64_wheel: Aarch64Wheel, cpu_wheel: BuiltWheel, tmp_path: Path) -> None:
    code = ("import edgert, edgert.models, numpy as np, json, platform;"
            "x = np.linspace(-1, 1, 5 * 16, dtype=np.float32).reshape(5, 16);"
            "out = {n: edgert.load(edgert.models.path(n)).run([x])[0].tolist()"
            " for n in edgert.models.names()};"
            "print(json.dumps({'machine': platform.machine(), 'file': edgert.__file__,"
            " 'lib': str(edgert.lib_dir()), 'out': out}))")
    arm_site = unpack(aarch64_wheel.path, tmp_path / "arm")
    x86_site = unpack(cpu_wheel.path, tmp_path / "x86")
    arm = json.loads(run_checked(aarch64_wheel.runner.python_command("-c", code),
                                 env={"PYTHONPATH": str(arm_site)}, cwd="/"))
    x86 = json.loads(run_checked([sys.executable, "-c", code],
                                 env={"PYTHONPATH": str(x86_site)}, cwd="/"))
    assert arm["machine"] == "aarch64" and arm["file"].startswith(str(arm_site))
    assert arm["lib"].startswith(str(arm_site))
    assert sorted(arm["out"]) == list(MODELS)
    for name in MODELS:
        got = np.array(arm["out"][name])
        assert got.shape == (5, 8)
        np.testing.assert_allclose(got, x86["out"][name], rtol=RELATIVE, atol=ABSOLUTE)


def test_a_load_failure_under_qemu_is_the_same_error(aarch64_runner: Runner,
                                                     tmp_path: Path) -> None:
    """The never-shipped layout (the export plugin with a private copy of the quantized
    kernels) aborts with "Re-registering" under qemu exactly as on x86_64: verify's load
    findings mean the same thing on an emulated machine, and no wheel is written."""
    out = tmp_path / "dist"
    completed = run_release("build", "--platform", "linux", "--arch", "aarch64", "--out",
                            str(out), "--build-dir", str(ROOT / "build/tests/aarch64-old"),
                            "--cmake-arg=-DEDGERT_OLD_LAYOUT=ON")
    assert completed.returncode == 7, completed.stderr[-2000:]
    assert not list(out.glob("*.whl"))
    plugin, kernels = "edgert/lib/libedgert_export_plugin.so", \
        "edgert/lib/libedgert_kernels_quantized.so"
    errors = completed.stderr
    assert f"for {plugin} then {kernels}" in errors and f"for {kernels} then {plugin}" in errors
    assert "| Re-registering edgert_quantized::" in errors
