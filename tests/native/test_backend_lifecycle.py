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
