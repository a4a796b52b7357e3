"""One thread pool per process, sized by API or environment, deterministic results."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.native.support import MLP_MODEL, ROOT, NativeInstall, run_checked

SAME_POOL = r"""
import ctypes, edgert
lib = edgert.lib_dir()
def instance(library, symbol):
    function = getattr(ctypes.CDLL(str(lib / library)), symbol)
    function.restype = ctypes.c_void_p
    return function()
print(edgert.threadpool_instance())
print(instance("libedgert_threadpool.so", "edgert_threadpool_instance"))
print(instance("libedgert_kernels.so", "edgert_kernels_threadpool_instance"))
print(instance("libedgert_backend_cpu.so", "edgert_backend_cpu_threadpool_instance"))
"""


def test_extension_and_components_share_one_pool(native_install: NativeInstall) -> None:
    completed = native_install.python(SAME_POOL)
    assert completed.returncode == 0, completed.stderr
    pointers = completed.stdout.split()
    assert len(pointers) == 4 and pointers[0] != "0"
    assert len(set(pointers)) == 1, pointers


def test_size_from_environment_and_api(native_install: NativeInstall) -> None:
    code = (
        "import edgert; print(edgert.threadpool_size()); edgert.set_threadpool_size(3); "
        "print(edgert.threadpool_size()); edgert.set_threadpool_size(0); "
        "print(edgert.threadpool_size())"
    )
    completed = native_install.python(code, env={"EDGERT_NUM_THREADS": "5"})
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split() == ["5", "3", str(len(os.sched_getaffinity(0)))]


def test_default_size_follows_the_affinity_mask(native_install: NativeInstall) -> None:
    code = "import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); " \
           "import edgert; print(edgert.threadpool_size())"
    completed = native_install.python(code)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split() == ["1"]


FORK = r"""
import os, sys
import numpy as np, edgert
from tests.native.support import run_op
x = np.arange(4096, dtype=np.float32).reshape(64, 64) / 4096
edgert.set_threadpool_size(2)
expected = run_op(edgert, "edgert::matmul", [x, x], backends=[])[0]   # bit-exact at any size
assert np.allclose(expected, x @ x, rtol=1e-5)
child = os.fork()
if child == 0:
    try:
        edgert.set_threadpool_size(3)        # crashed in pthread_join before
        out = run_op(edgert, "edgert::matmul", [x, x], backends=[])[0]
        ok = np.array_equal(out, expected) and edgert.threadpool_size() == 3
        os._exit(0 if ok else 1)
    except BaseException:
        os._exit(2)
_, status = os.waitpid(child, 0)
print(os.waitstatus_to_exitcode(status))
assert np.array_equal(run_op(edgert, "edgert::matmul", [x, x], backends=[])[0], expected)
"""


def test_a_forked_child_resizes_and_runs(native_install: NativeInstall) -> None:
    from tests.native.support import ROOT
    completed = native_install.python(FORK, env={"PYTHONPATH": f"{native_install.prefix}:{ROOT}"},
                                      timeout=60)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert completed.stdout.split() == ["0"]


def test_results_do_not_depend_on_thread_count(native_install: NativeInstall) -> None:
    code = (
        "import numpy as np, edgert, sys\n"
        "program = edgert.load(sys.argv[1])\n"
        "x = np.random.RandomState(1).standard_normal((64, 16)).astype(np.float32)\n"
        "for threads in (1, 2, 4, 7):\n"
        "    edgert.set_threadpool_size(threads)\n"
        "    print(program.run([x])[0].tobytes().hex()[:4096])\n"
    )
    completed = native_install.python(code, str(MLP_MODEL))
    assert completed.returncode == 0, completed.stderr
    assert len(set(completed.stdout.split())) == 1


POOL_PROGRAM = r"""
#include <atomic>
#include <cstdio>
#include <vector>
#include "edgert/threadpool.h"
int main() {
  edgert_threadpool_set_size(4);
  std::vector<long> hits(1000, 0);
  std::atomic<int> nested_calls{0};
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) hits[i] += 1;
    // A nested region runs inline on this thread: it must not deadlock.
    edgert::parallel_for(0, 100, 1, [&](int64_t b, int64_t e) { nested_calls += int(e - b); });
  };
  edgert::parallel_for(0, 1000, 10, body);
  std::vector<std::pair<long, long>> chunks;
  for (int round = 0; round < 2; ++round) {
    std::vector<int64_t> starts(1000, -1);
    edgert::parallel_for(0, 1000, 10, [&](int64_t b, int64_t e) { starts[b] = e; });
    for (int64_t i = 0; i < 1000; ++i) if (starts[i] >= 0) chunks.push_back({i, starts[i]});
  }
  for (long h : hits) if (h != 1) return 1;
  std::printf("%d %zu\n", nested_calls.load(), chunks.size());
  return 0;
}
"""


def test_parallel_for_covers_range_once_and_nests_inline(
    native_install: NativeInstall, tmp_path: Path
) -> None:
    source = tmp_path / "pool.cpp"
    source.write_text(POOL_PROGRAM)
    binary = tmp_path / "pool"
    subprocess.run(
        [
            "g++",
            "-std=c++17",
            "-O1",
            f"-I{native_install.package_dir / 'include'}",
            str(source),
            f"-L{native_install.lib_dir}",
            "-ledgert_threadpool",
            f"-Wl,-rpath,{native_install.lib_dir}",
            "-pthread",
            "-o",
            str(binary),
        ],
        check=True,
        capture_output=True,
    )
    completed = subprocess.run([str(binary)], capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0, completed.stderr
    nested, chunks = completed.stdout.split()
    assert int(nested) == 100 * 4  # each of the 4 outer chunks ran its nested region fully
    assert int(chunks) == 8  # 4 identical chunks, both rounds


def test_thread_counts_are_bounded(native_install: NativeInstall) -> None:
    code = (
        "import edgert\n"
        "for bad in (10**12, -1, 2.5):\n"
        "    try:\n"
        "        edgert.set_threadpool_size(bad)\n"
        "    except (edgert.EdgertError, TypeError) as error:\n"
        "        print(type(error).__name__)\n"
        "print(edgert.threadpool_size() <= 1024)\n"
    )
    completed = native_install.python(code)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split() == ["InvalidArgumentError", "InvalidArgumentError",
                                        "TypeError", "True"]


# ------------------------------------------------------------ regions of several threads

CONCURRENCY_PROGRAM = ROOT / "tests" / "native" / "programs" / "threadpool_concurrency.cpp"


def concurrency_program(native_install: NativeInstall, tmp_path: Path) -> Path:
    """tests/native/programs/threadpool_concurrency.cpp built against the install."""
    binary = tmp_path / "threadpool_concurrency"
    lib = native_install.lib_dir
    run_checked(["c++", "-std=c++17", "-O1", "-o", str(binary), str(CONCURRENCY_PROGRAM),
                 f"-I{native_install.package_dir / 'include'}", f"-L{lib}", "-Wl,--no-as-needed",
                 "-ledgert", "-ledgert_threadpool", "-ledgert_kernels", "-ledgert_backend_cpu",
                 f"-Wl,-rpath,{lib}", "-pthread"])
    return binary


def run_concurrency(binary: Path, *args: str) -> list[str]:
    completed = subprocess.run([str(binary), *args], capture_output=True, text=True,
                               timeout=120, check=False)
    assert completed.returncode == 0, completed.stderr[-2000:]
    return completed.stdout.split()


def test_regions_of_many_threads_run_every_chunk_once(native_install: NativeInstall,
                                                      tmp_path: Path) -> None:
    """Six threads x 200 regions at each of five pool sizes (resized while idle), then four
    threads in regions while a fifth resizes the pool 40 times: every item of every region
    runs exactly once, chunks are at least the grain long and, at a fixed size, exactly the
    planned ones; nested regions run inline on their chunk's thread."""
    words = run_concurrency(concurrency_program(native_install, tmp_path), "regions")
    assert words[0::2] == ["regions", "chunks", "nested"]
    regions, chunks, nested = (int(word) for word in words[1::2])
    assert regions >= 5 * 6 * 200 + 4 * 20 and chunks > regions and nested >= regions // 5


def test_regions_of_two_threads_are_in_progress_at_once(native_install: NativeInstall,
                                                        tmp_path: Path) -> None:
    """Each thread's chunks wait until the other thread is inside its own region: a pool that
    ran one region at a time would never return (the subprocess timeout would fail this)."""
    assert run_concurrency(concurrency_program(native_install, tmp_path), "overlap") == ["overlap"]


def test_a_region_beside_a_busy_pool_runs_on_its_caller(native_install: NativeInstall,
                                                         tmp_path: Path) -> None:
    """On a pool of 2, edgert_threadpool_available() is 2 when idle, 1 inside a region and 1
    while another thread's region computes; a region begun then runs both its chunks on its
    caller (two programs on a 2-thread pool each run alone, as on a pool of one). On a pool of
    4, two callers at once get half of it each (for a millisecond after they were seen
    together); a caller alone again gets all 4. The millisecond is read from a clock the
    program moves itself (edgert_threadpool_set_clock): no read races the machine's load."""
    words = run_concurrency(concurrency_program(native_install, tmp_path), "available")
    assert words == ["available", "2", "1", "1", "inline", "2", "4"]


def test_a_fork_while_another_thread_is_inside_a_region(native_install: NativeInstall,
                                                        tmp_path: Path) -> None:
    """The child gets a working pool: it resizes, runs regions from two threads and runs a
    program with the parent's results; the parent's region then finishes."""
    binary = concurrency_program(native_install, tmp_path)
    assert run_concurrency(binary, "fork", str(MLP_MODEL)) == ["child", "0"]


PROGRAMS_IN_THREADS = r"""
import sys, threading
import numpy as np, edgert
from edgert.export import ProgramBuilder

def conv_program():
    rng = np.random.default_rng(3)
    builder = ProgramBuilder()
    x = builder.input(np.float32, (2, 8, 24, 24))
    w = builder.constant((rng.standard_normal((16, 8, 3, 3)) / 8).astype(np.float32))
    y = builder.op("edgert::conv2d", [x, w], {"padding": [1, 1]})
    builder.output(builder.op("edgert::relu", [y]))
    return builder.to_bytes()

rng = np.random.default_rng(1)
cases = [(open(sys.argv[1], "rb").read(), rng.standard_normal((64, 16)).astype(np.float32)),
         (conv_program(), rng.standard_normal((2, 8, 24, 24)).astype(np.float32))]
edgert.set_threadpool_size(1)
expected = [edgert.load(data).run([x])[0].tobytes() for data, x in cases]
failures = []

def run(data, x, reference):
    program = edgert.load(data)
    for _ in range(30):
        if program.run([x])[0].tobytes() != reference:
            failures.append(1)

for size in (2, 3):
    edgert.set_threadpool_size(size)
    threads = [threading.Thread(target=run, args=(*cases[i % 2], expected[i % 2]))
               for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
print(len(failures))
"""


def test_programs_in_several_threads_match_one_thread(native_install: NativeInstall) -> None:
    """Four Python threads, two on an MLP and two on a convolution, each with its own program,
    at pool sizes 2 and 3: every output is bit-identical to the one-thread pool's."""
    completed = native_install.python(PROGRAMS_IN_THREADS, str(MLP_MODEL), timeout=300)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert completed.stdout.split() == ["0"]
