"""Runs per second of one program in one Python thread against the same program in two Python
threads (two Program objects loaded from the same bytes, each thread running its own), with
the process pool at 2 threads and at 1; prints the ratio two threads / one thread.

    python benchmarks/concurrency.py [--prefix build/linux-x86_64-cpu/install] [--seconds 2]

Models (float32, exported from PyTorch with edgert.export.from_torch): an MLP at batch 64
(256 -> 512 -> 512 -> 10, ReLU between) and a small CNN at batch 4 (3x32x32 input, two 3x3
conv + ReLU + 2x2 max-pool stages of 16 and 32 channels, then a linear layer to 10).

A measurement starts every thread at a barrier, lets each run its program for ``--seconds``
and counts the runs all threads completed in that time; the median of ``--repetitions``
measurements is printed. ``_C.run`` releases the GIL while a program runs, so two threads'
programs run at once when the pool lets their parallel regions proceed together.
Target: two threads reach at least 1.6x one thread's runs per second at each pool size.
The process's CPU time per run is printed beside the rates: on a machine shared with other
work the rates follow the load, but CPU time per run shows what the pool itself costs (two
threads on a 2-thread pool should cost per run what they cost on a pool of 1).

Then the cost of an empty parallel region (parallel_for over [0, 2) with grain 1: two chunks
that do nothing) is measured by a small C++ program built against the same install with g++:
nanoseconds per region with the pool at 1 and 2 threads, called from one thread and from two
at once (the median of --repetitions loops of 20000 regions).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernels import DEFAULT_PREFIX  # noqa: E402

POOL_SIZES = (2, 1)
TARGET = 1.6


@dataclass(frozen=True)
class Model:
    """An exported program and an input it runs on."""

    name: str
    program: bytes
    input: np.ndarray


def mlp() -> Model:
    import torch

    torch.manual_seed(0)
    network = torch.nn.Sequential(
        torch.nn.Linear(256, 512), torch.nn.ReLU(),
        torch.nn.Linear(512, 512), torch.nn.ReLU(),
        torch.nn.Linear(512, 10),
    )
    x = torch.randn(64, 256)
    return Model("mlp batch 64, hidden 512", export(network, x), x.numpy())


def cnn() -> Model:
    import torch

    torch.manual_seed(1)
    network = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(32 * 8 * 8, 10),
    )
    x = torch.randn(4, 3, 32, 32)
    return Model("cnn batch 4, 3x32x32", export(network, x), x.numpy())


def export(network: object, x: object) -> bytes:
    import torch
    from edgert.export import from_torch

    with torch.no_grad():
        return from_torch(network, (x,))


@dataclass(frozen=True)
class Rate:
    """One measurement: runs per second, and the process's CPU time (user + system) per run,
    which a loaded machine changes much less than the rate: it shows what the pool wastes."""

    runs_per_second: float
    cpu_per_run: float


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def runs_per_second(edgert: ModuleType, model: Model, threads: int, seconds: float) -> Rate:
    """Runs per second of ``threads`` threads, each running its own copy of the program."""
    programs = [edgert.load(model.program) for _ in range(threads)]
    for program in programs:
        program.run([model.input])  # warm-up: first run's preparation, lazy pool start
    counts = [0] * threads
    start = threading.Barrier(threads + 1)
    deadline = [0.0]

    def loop(index: int) -> None:
        program = programs[index]
        start.wait()
        while time.perf_counter() < deadline[0]:
            program.run([model.input])
            counts[index] += 1

    workers = [threading.Thread(target=loop, args=(index,)) for index in range(threads)]
    for worker in workers:
        worker.start()
    cpu = cpu_seconds()
    began = time.perf_counter()
    deadline[0] = began + seconds
    start.wait()
    for worker in workers:
        worker.join()
    runs = max(sum(counts), 1)
    return Rate(runs / (time.perf_counter() - began), (cpu_seconds() - cpu) / runs)


def median(rates: list[Rate]) -> Rate:
    return Rate(statistics.median(rate.runs_per_second for rate in rates),
                statistics.median(rate.cpu_per_run for rate in rates))


def measure(edgert: ModuleType, seconds: float, repetitions: int) -> bool:
    """Every (pool size, threads) case of a model sampled in turn, ``repetitions`` rounds, so
    a change of the machine's load falls on all of them alike.

    Besides the ratio two threads / one thread, ``of pool 1`` is two threads' rate at this
    pool size over two threads' rate at pool 1 (each running its regions alone: what the
    cores can do), and ``bound`` the highest ratio this machine allows at this pool size:
    two threads cannot beat the cores, so when one program alone already gains from a
    second pool thread, the ratio is at most pool-1 pair / one thread here."""
    print(f"{'model':<26} {'pool':>4} {'1 thread/s':>11} {'2 threads/s':>12} {'ratio':>6}"
          f" {'bound':>6} {'of pool 1':>9} {'cpu us/run 1':>13} {'2':>6}")
    met = True
    for model in (mlp(), cnn()):
        samples: dict[tuple[int, int], list[Rate]] = {}
        for _ in range(repetitions):
            for pool in POOL_SIZES:
                edgert.set_threadpool_size(pool)
                for threads in (1, 2):
                    rate = runs_per_second(edgert, model, threads, seconds)
                    samples.setdefault((pool, threads), []).append(rate)
        rates = {case: median(found) for case, found in samples.items()}
        pair_at_one = rates[(1, 2)].runs_per_second
        for pool in POOL_SIZES:
            one, two = rates[(pool, 1)], rates[(pool, 2)]
            ratio = two.runs_per_second / one.runs_per_second
            met = met and ratio >= TARGET
            flag = "" if ratio >= TARGET else f"  (target >= {TARGET})"
            print(f"{model.name:<26} {pool:>4} {one.runs_per_second:>11.1f} "
                  f"{two.runs_per_second:>12.1f} {ratio:>6.2f} "
                  f"{pair_at_one / one.runs_per_second:>6.2f} "
                  f"{two.runs_per_second / pair_at_one:>9.2f} {one.cpu_per_run * 1e6:>13.0f} "
                  f"{two.cpu_per_run * 1e6:>6.0f}{flag}")
    edgert.set_threadpool_size(0)
    return met


EMPTY_REGIONS = r"""
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>
#include "edgert/threadpool.h"

static void nothing(void*, int64_t, int64_t) {}

// Nanoseconds per empty region over `count` regions, in each of `callers` threads at once.
static double nanoseconds(int callers, int count) {
  auto loop = [count] {
    for (int i = 0; i < count; ++i) edgert_threadpool_parallel_for(0, 2, 1, nothing, nullptr);
  };
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int i = 1; i < callers; ++i) threads.emplace_back(loop);
  loop();
  for (std::thread& thread : threads) thread.join();
  std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
  return took.count() / count;
}

int main(int argc, char** argv) {
  const int repetitions = argc > 1 ? std::atoi(argv[1]) : 5;
  for (int pool : {1, 2}) {
    edgert_threadpool_set_size(pool);
    for (int callers : {1, 2}) {
      std::vector<double> samples;
      for (int r = 0; r < repetitions; ++r) samples.push_back(nanoseconds(callers, 20000));
      std::sort(samples.begin(), samples.end());
      std::printf("%d %d %.0f\n", pool, callers, samples[samples.size() / 2]);
    }
  }
  return 0;
}
"""


def empty_region_nanoseconds(prefix: Path, repetitions: int) -> list[tuple[int, int, float]]:
    """(pool size, calling threads, ns per empty region) from EMPTY_REGIONS."""
    package = prefix / "edgert"
    with tempfile.TemporaryDirectory() as folder:
        source, binary = Path(folder) / "empty.cpp", Path(folder) / "empty"
        source.write_text(EMPTY_REGIONS)
        subprocess.run(
            ["g++", "-std=c++17", "-O2", f"-I{package / 'include'}", str(source),
             f"-L{package / 'lib'}", "-ledgert_threadpool", f"-Wl,-rpath,{package / 'lib'}",
             "-pthread", "-o", str(binary)],
            check=True,
        )
        output = subprocess.run([str(binary), str(repetitions)], check=True,
                                capture_output=True, text=True).stdout
    return [(int(pool), int(callers), float(ns))
            for pool, callers, ns in (line.split() for line in output.splitlines())]


def print_empty_regions(prefix: Path, repetitions: int) -> None:
    print(f"{'empty region':<26} {'pool':>4} {'callers':>7} {'ns/region':>10}")
    for pool, callers, ns in empty_region_nanoseconds(prefix, repetitions):
        print(f"{'':<26} {pool:>4} {callers:>7} {ns:>10.0f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prefix", type=Path, default=DEFAULT_PREFIX,
                        help="folder holding the edgert package to measure (an install tree)")
    parser.add_argument("--seconds", type=float, default=2.0, help="length of one measurement")
    parser.add_argument("--repetitions", type=int, default=5, help="measurements per median")
    parser.add_argument("--only-empty-regions", action="store_true",
                        help="measure only the cost of an empty parallel region")
    arguments = parser.parse_args()
    if arguments.prefix.is_dir():
        sys.path.insert(0, str(arguments.prefix))
    import edgert
    import torch

    torch.set_num_threads(1)  # torch only exports here; keep its threads off the cores
    print(f"edgert {edgert.__file__}, torch {torch.__version__}")
    print(f"median of {arguments.repetitions} measurements of {arguments.seconds:g} s each")
    met = arguments.only_empty_regions or measure(edgert, arguments.seconds, arguments.repetitions)
    print_empty_regions(Path(edgert.__file__).resolve().parents[1], arguments.repetitions)
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
