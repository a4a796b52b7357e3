"""The runtime under AddressSanitizer and UndefinedBehaviorSanitizer: the pipeline builds a
sanitized tree (its own build folder, kept and rebuilt incrementally), the program-loader
fuzzer runs on it for a bounded time, and the host-safety, kernel and thread-pool tests run
against it in a child pytest with the ASan runtime preloaded into Python. Any report fails.
(The unallocatable-output test is left out there: ASan's operator new reports a 4 TiB request
instead of throwing std::bad_alloc, so that path is only testable without it; so are the
tests that measure resident memory or time, and the one that forks while a thread runs.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.native.support import ROOT, NativeInstall, build_native

SANITIZE = "-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
ENVIRONMENT = {"ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0:halt_on_error=1",
               "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1"}
FUZZ_SECONDS = 20


@pytest.fixture(scope="module")
def sanitized() -> NativeInstall:
    if subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True,
                      text=True).stdout.strip() in ("", "libasan.so"):
        pytest.fail("gcc has no AddressSanitizer runtime (apt-get install gcc)")
    flags = [f"-DCMAKE_{kind}_FLAGS={SANITIZE}" for kind in ("C", "CXX")]
    flags += [f"-DCMAKE_{kind}_LINKER_FLAGS=-fsanitize=address,undefined"
              for kind in ("SHARED", "EXE", "MODULE")]
    return build_native(ROOT / "build" / "tests" / "sanitize", *flags)


def test_the_loader_fuzzer_is_clean_under_sanitizers(sanitized: NativeInstall,
                                                   tmp_path: Path) -> None:
    from tests.native.test_program_loader import write_corpus
    write_corpus(tmp_path / "corpus")
    completed = subprocess.run([str(sanitized.program("fuzz_program_loader")),
                                f"-max_total_time={FUZZ_SECONDS}", "-seed=11",
                                str(tmp_path / "corpus")], capture_output=True, cwd=tmp_path,
                               text=True, env={**os.environ, **ENVIRONMENT},
                               timeout=FUZZ_SECONDS + 60)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "executed" in completed.stdout + completed.stderr
    assert "; 0 runs delegated" not in completed.stdout   # the CPU delegate was fuzzed too


def test_bad_dtype_codes_are_refused_without_undefined_behaviour(sanitized: NativeInstall,
                                                                tmp_path: Path) -> None:
    """tests/native/programs/bad_dtype.c passes codes no edgert_dtype names to every C API
    call taking one; UBSan halts on any load of such a value as the enum type (the bad-dtype
    paths used to read it as one: "load of value 42, which is not a valid value")."""
    program = tmp_path / "bad_dtype"
    subprocess.run(["gcc", *SANITIZE.split(), "-O1", "-o", str(program),
                    str(ROOT / "tests" / "native" / "programs" / "bad_dtype.c"),
                    f"-I{sanitized.package_dir / 'include'}", f"-L{sanitized.lib_dir}",
                    "-ledgert", "-Wl,--no-as-needed", "-ledgert_kernels",
                    f"-Wl,-rpath,{sanitized.lib_dir}"], check=True)
    completed = subprocess.run([str(program), str(ROOT / "native" / "python" / "edgert" /
                                                  "models" / "mlp.edgert")],
                               capture_output=True, text=True, timeout=120,
                               env={**os.environ, **ENVIRONMENT})
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.strip() == "0 failures"
    assert "runtime error:" not in completed.stderr


def test_native_tests_pass_under_sanitizers(sanitized: NativeInstall, tmp_path: Path) -> None:
    runtime = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True,
                             text=True, check=True).stdout.strip()
    # libstdc++ preloaded too: ASan resolves the real __cxa_throw when it starts, and Python
    # links no C++ runtime, so without it the first C++ exception thrown (a run refused by
    # its memory limit) stops the process in ASan's own CHECK.
    cxx = subprocess.run(["gcc", "-print-file-name=libstdc++.so"], capture_output=True,
                         text=True, check=True).stdout.strip()
    tests = [str(ROOT / "tests" / "native" / name) for name in
             ("test_host_safety.py", "test_threadpool.py", "test_kernels.py",
              "test_program_loader.py", "test_memory_plan.py", "test_constants.py",
              "test_python_calls.py", "test_memory_limit.py", "test_attribute_kinds.py")]
    reports = tmp_path / "report"   # pytest captures stderr: reports go to files
    environment = {name: f"{value}:log_path={reports}" for name, value in ENVIRONMENT.items()}
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
         "-k", "not fuzzer and not load_time and not cannot_be_allocated and not resident "
         "and not forked and not gil", *tests], cwd=ROOT,
        capture_output=True, text=True, timeout=900,
        env={**os.environ, **environment, "LD_PRELOAD": f"{runtime} {cxx}",
             "EDGERT_TEST_NATIVE_BUILD": str(sanitized.build_dir)})
    output = completed.stdout + completed.stderr + "".join(
        path.read_text(errors="replace") for path in sorted(tmp_path.glob("report*")))
    assert completed.returncode == 0, output[-4000:]
    assert "ERROR: AddressSanitizer" not in output and "runtime error:" not in output
    assert Path(sanitized.prefix).is_dir()


def test_threads_and_pool_resizing_are_clean_under_thread_sanitizer(tmp_path: Path) -> None:
    """ThreadSanitizer cannot be preloaded into this Python (it crashes at start-up), so the
    threading contract is exercised by a C program (tests/native/programs/threads_stress.c):
    four threads share one program under a lock and run their own programs unlocked while a
    fifth resizes the pool."""
    tsan = "-fsanitize=thread -g"
    flags = [f"-DCMAKE_{kind}_FLAGS={tsan}" for kind in ("C", "CXX")]
    flags += [f"-DCMAKE_{kind}_LINKER_FLAGS=-fsanitize=thread"
              for kind in ("SHARED", "EXE", "MODULE")]
    tree = build_native(ROOT / "build" / "tests" / "tsan", *flags)
    program = tmp_path / "threads_stress"
    subprocess.run(["gcc", "-fsanitize=thread", "-g", "-O1", "-o", str(program),
                    str(ROOT / "tests" / "native" / "programs" / "threads_stress.c"),
                    f"-I{tree.package_dir / 'include'}", f"-L{tree.lib_dir}", "-ledgert",
                    "-ledgert_threadpool", "-Wl,--no-as-needed", "-ledgert_kernels",
                    "-ledgert_backend_cpu", f"-Wl,-rpath,{tree.lib_dir}", "-lpthread"],
                   check=True)
    completed = subprocess.run([str(program), str(ROOT / "native" / "python" / "edgert" /
                                                  "models" / "mlp.edgert")],
                               capture_output=True, text=True, timeout=300,
                               env={**os.environ, "TSAN_OPTIONS": "halt_on_error=1"})
    assert completed.returncode == 0, completed.stderr[-4000:]
    assert completed.stdout.strip() == "0 failures"
    assert "ThreadSanitizer" not in completed.stderr
