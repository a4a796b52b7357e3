"""The delegate lifecycle: a backend prepares its nodes once, on the first run after a program
is planned (planning itself does no backend work), runs them through what it prepared on every
run, and releases it with the program or a new plan.
Observed from a C++ program that registers a counting backend (prepare_lifecycle.cpp)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.native.support import MLP_MODEL, ROOT, NativeInstall, run_checked


def test_prepare_once_run_many_release_with_the_program(native_install: NativeInstall,
                                                        tmp_path: Path) -> None:
    program = tmp_path / "prepare_lifecycle"
    lib = native_install.lib_dir
    run_checked(["c++", "-std=c++17", "-O1", "-o", str(program),
                 str(ROOT / "tests" / "native" / "programs" / "prepare_lifecycle.cpp"),
                 f"-I{ROOT / 'native' / 'include'}", f"-L{lib}", "-Wl,--no-as-needed",
                 "-ledgert_kernels", "-ledgert", f"-Wl,-rpath,{lib}"])
    completed = subprocess.run([str(program), str(MLP_MODEL)], capture_output=True, text=True,
                               check=False)
    assert completed.returncode == 0, completed.stderr
    # loading and set_backends plan without preparing; the first of three runs prepares
    assert completed.stdout.splitlines() == [
        "three-runs prepared=1 runs=3 released=0",
        "replanned prepared=2 runs=4 released=1",    # a new plan releases the old state
        "released prepared=2 runs=4 released=2",     # the program takes the rest with it
    ]


def test_available_backends_are_those_that_can_run_here(native_install: NativeInstall,
                                                        tmp_path: Path) -> None:
    """The C API lists a registered backend that cannot run here (a device delegate without
    its device) as installed but not available, and on the CPU build says of "cuda" that this
    is the CPU build and which distribution has it."""
    program = tmp_path / "backend_availability"
    lib = native_install.lib_dir
    run_checked(["c++", "-std=c++17", "-O1", "-o", str(program),
                 str(ROOT / "tests" / "native" / "programs" / "backend_availability.cpp"),
                 f"-I{ROOT / 'native' / 'include'}", f"-L{lib}", "-Wl,--no-as-needed",
                 "-ledgert_kernels", "-ledgert_backend_cpu", "-ledgert", f"-Wl,-rpath,{lib}"])
    lines = run_checked([program, MLP_MODEL]).splitlines()
    cpu_build = ("this is the CPU build of edgert, which has no CUDA delegate; install "
                 "edgert-cu12 or edgert-cu13 for backend_cuda")
    assert lines[:4] == ["installed: cpu nogpu", "available: cpu", "past the end: null",
                         "available(cpu) = 0 "]
    assert lines[4] == "available(nogpu) = 6 backend 'nogpu' is unavailable: no device found"
    assert lines[5].startswith(f"available(cuda) = 3 unknown backend 'cuda': {cpu_build}")
    assert lines[6] == "available(gpu9) = 3 unknown backend 'gpu9'"
    assert lines[7].startswith(f"set_backends(cuda) = 3 unknown backend 'cuda': {cpu_build}")
    assert lines[8] == ("set_backends(nogpu) = 6 backend 'nogpu' is unavailable: "
                        "no device found")
