"""C and C++ applications: in-tree examples, --as-needed linking, and the installed CMake
package consumed with the oldest CMake it accepts (3.24) and the newest."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from tests.native.support import MLP_MODEL, NATIVE, NativeInstall, run_checked

CONSUMER = NATIVE / "examples" / "consumer"


def needed_libraries(binary: Path) -> list[str]:
    output = run_checked(["readelf", "-d", binary])
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", output)


def runpath(binary: Path) -> str:
    match = re.search(
        r"\((?:RUNPATH|RPATH)\)\s+Library (?:runpath|rpath): \[([^\]]*)\]",
        run_checked(["readelf", "-d", binary]),
    )
    return match.group(1) if match else ""


@pytest.fixture(scope="module")
def mlp_input(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    x = np.random.RandomState(11).standard_normal((5, 16)).astype(np.float32)
    # the examples substitute 1 for a run-time dimension: give them the batch via the file
    path = tmp_path_factory.mktemp("inputs") / "x.raw"
    path.write_bytes(x.tobytes())
    return path, x


def python_output(edgert: ModuleType, x: np.ndarray) -> bytes:
    return b"".join(output.tobytes() for output in edgert.load(MLP_MODEL).run([x]))


def run_app(binary: Path, model: Path, input_file: Path, folder: Path) -> tuple[bytes, str]:
    raw = folder / f"{binary.name}.out"
    stdout = run_checked([binary, model, input_file, "--output-raw", raw])
    return raw.read_bytes(), stdout


def batch_model(folder: Path) -> Path:
    """The MLP with its batch dimension fixed to 5, so the examples' input shape is known."""
    import sys

    sys.path.insert(0, str(NATIVE / "python"))
    from edgert.export import read_program, write_program

    program = read_program(MLP_MODEL.read_bytes())
    program.values[program.inputs[0]].shape = (5, 16)
    path = folder / "mlp5.edgert"
    path.write_bytes(write_program(program))
    return path


@pytest.mark.parametrize("app", ["run_program", "run_program_c", "run_program_as_needed"])
def test_in_tree_examples_match_python_byte_for_byte(
    edgert: ModuleType,
    native_install: NativeInstall,
    mlp_input: tuple[Path, np.ndarray],
    tmp_path: Path,
    app: str,
) -> None:
    input_file, x = mlp_input
    raw, stdout = run_app(native_install.program(app), batch_model(tmp_path), input_file, tmp_path)
    assert raw == python_output(edgert, x)
    assert stdout.startswith("output 0 float32 [5,8]\n")
    assert len(stdout.splitlines()) == 1 + 5 * 8


def test_as_needed_app_keeps_kernels_without_registration_call(
    native_install: NativeInstall,
) -> None:
    needed = needed_libraries(native_install.program("run_program_as_needed"))
    assert "libedgert.so" in needed and "libedgert_kernels.so" in needed
    assert (
        "libedgert_kernels_quantized.so" not in needed and "libedgert_backend_cpu.so" not in needed
    )


def build_consumer(
    native_install: NativeInstall, cmake: Path, folder: Path, prefix: Path | None = None
) -> subprocess.CompletedProcess[str]:
    from release.toolchain import tools

    return subprocess.run(
        [
            str(cmake),
            "-S",
            str(CONSUMER),
            "-B",
            str(folder),
            "-G",
            "Ninja",
            f"-DCMAKE_MAKE_PROGRAM={tools.ninja()}",
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DCMAKE_PREFIX_PATH={prefix or native_install.package_dir}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize("route", ["old", "new"])
def test_installed_package_consumer(
    edgert: ModuleType,
    native_install: NativeInstall,
    mlp_input: tuple[Path, np.ndarray],
    tmp_path: Path,
    route: str,
) -> None:
    from release.toolchain import tools

    cmake = tools.cmake(tools.CMAKE_OLD if route == "old" else tools.CMAKE_NEW)
    version = tools.cmake_version(cmake)
    assert (version < (3, 25, 0)) if route == "old" else (version >= (3, 28, 0))
    configured = build_consumer(native_install, cmake, tmp_path / "build")
    assert configured.returncode == 0, configured.stdout + configured.stderr
    run_checked([cmake, "--build", tmp_path / "build", "-j2"])
    input_file, x = mlp_input
    model = batch_model(tmp_path)
    for app in ("run_program", "run_program_c"):
        binary = tmp_path / "build" / app
        assert {
            "libedgert.so",
            "libedgert_kernels.so",
            "libedgert_kernels_quantized.so",
            "libedgert_backend_cpu.so",
        } <= set(needed_libraries(binary))
        raw, _ = run_app(binary, model, input_file, tmp_path)
        assert raw == python_output(edgert, x), app
    if route == "new":
        # CMake pads the build-tree RPATH with ':' to leave room for the install RPATH
        build_runpath = runpath(tmp_path / "build" / "run_program").rstrip(":")
        assert build_runpath == str(native_install.lib_dir)
        moved = tmp_path / "elsewhere"
        moved.mkdir()
        shutil.copy2(tmp_path / "build" / "run_program", moved / "run_program")
        raw, _ = run_app(moved / "run_program", model, input_file, moved)
        assert raw == python_output(edgert, x)


def test_relocated_package_reports_a_missing_component(
    native_install: NativeInstall, tmp_path: Path
) -> None:
    from release.toolchain import tools

    relocated = tmp_path / "relocated" / "edgert"
    shutil.copytree(native_install.package_dir, relocated, symlinks=True)
    configured = build_consumer(native_install, tools.cmake(), tmp_path / "ok", relocated)
    assert configured.returncode == 0, configured.stderr
    assert (
        str(native_install.prefix)
        not in (relocated / "lib/cmake/edgert/edgertConfig.cmake").read_text()
    )
    (relocated / "lib" / "libedgert_kernels_quantized.so").unlink()
    failed = build_consumer(native_install, tools.cmake(), tmp_path / "missing", relocated)
    assert failed.returncode != 0
    assert "edgert component 'kernels_quantized' is missing" in failed.stderr
