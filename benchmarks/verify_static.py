"""verify's targets, measured in one run (docs/verify.md, "Performance"):

* cold start: `python -m release verify X --static` with an empty tool cache (and wine on
  PATH when installed) downloads nothing, writes nothing into the cache or TMPDIR, and takes
  under 5 s beyond reading the wheel (its `unzip -tq` time); a file that is not a zip is
  refused in well under a second;
* speed and memory: `verify --static` against `unzip -tq` on the largest wheels of the
  verify corpus (137-256 MB), wall and CPU ratios (target <= 0.8x wall, goal 0.6x) and
  verify's own peak memory (target <= 150 MB), each round measured in child processes, unzip
  and verify alternating; the median round.

    python benchmarks/verify_static.py [WHEEL ...] [--rounds N] [--auditwheel]

Without WHEEL it uses the corpus's onnxruntime-gpu 1.31.1 (256 MB), torch 2.13.0 CPU
(192 MB) and cupy-cuda12x 14.2.0 (137 MB): the pinned files (tests/fixtures/corpus/*.json),
downloaded once by URL and sha256 into release.tools.cache_dir()/wheels/corpus; the cold
start uses the smallest wheels of the verify corpus that are in the cache. Exits 1 when a
target is missed."""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from release.toolchain import tools  # noqa: E402

BIG_WHEELS = (("corpus", "onnxruntime_gpu"), ("corpus", "torch"), ("corpus", "cupy_cuda12x"))
COLD_TARGET, NOT_A_ZIP_TARGET, RATIO_TARGET, RATIO_GOAL, PEAK_TARGET = 5.0, 1.0, 0.8, 0.6, 150

_CHILD = """
import json, re, sys, time
from pathlib import Path
from release.verify import verify_wheel
start = time.perf_counter()
report = verify_wheel(Path(sys.argv[1]), static=True)
elapsed = time.perf_counter() - start
# VmHWM: this process's own peak (ru_maxrss would carry the parent's over from fork)
status = Path("/proc/self/status").read_text()
peak = int(re.search(r"VmHWM:\\s+(\\d+) kB", status).group(1)) / 1024
print(json.dumps({"seconds": elapsed, "peak_mb": peak, "findings": len(report.findings)}))
"""


@dataclass(frozen=True)
class Timed:
    wall: float
    cpu: float       # user + system of the child
    output: str
    returncode: int


def timed(command: list[str], env: dict[str, str] | None = None) -> Timed:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env,
                               check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Timed(wall, cpu, completed.stdout + completed.stderr, completed.returncode)


def cached_wheel(corpus_name: str, case: str) -> Path:
    """The corpus's pinned file for ``case`` (downloaded once by URL, checked by sha256)."""
    from tests.verify import corpus
    return corpus.wheel(corpus_name, case)


def cold_start(wheels: list[Path]) -> bool:
    """Each wheel verified --static with an empty cache; nothing may appear in the cache or
    TMPDIR, and the time beyond unzip -tq must stay under the target."""
    ok = True
    with tempfile.TemporaryDirectory(prefix="verify-cold-") as scratch:
        cache, temporary = Path(scratch) / "cache", Path(scratch) / "tmp"
        temporary.mkdir()
        env = {**os.environ, "RELEASE_CACHE_DIR": str(cache), "TMPDIR": str(temporary)}
        text = temporary.parent / "notes.txt"
        text.write_text("not a wheel\n")
        refused = timed([sys.executable, "-m", "release", "verify", str(text), "--static"], env)
        fast = refused.wall < NOT_A_ZIP_TARGET and refused.returncode == 5
        ok &= fast
        print(f"not a zip:        {refused.wall:6.2f} s, exit {refused.returncode} "
              f"(target < {NOT_A_ZIP_TARGET:.0f} s, exit 5){'' if fast else '  MISSED'}")
        for wheel in wheels:
            reading = timed(["unzip", "-tq", str(wheel)])
            run = timed([sys.executable, "-m", "release", "verify", str(wheel), "--static"],
                        env)
            beyond = run.wall - reading.wall
            written = sorted(str(p.relative_to(scratch)) for p in Path(scratch).rglob("*")
                             if p != text and p != temporary)
            good = beyond < COLD_TARGET and not written and run.returncode in (0, 7, 8)
            ok &= good
            print(f"cold {wheel.name[:40]:40} {run.wall:6.2f} s ({beyond:+.2f} s beyond unzip "
                  f"-tq; target < {COLD_TARGET:.0f} s), wrote {written or 'nothing'}"
                  f"{'' if good else '  MISSED'}")
    wine = shutil.which("wine")
    print(f"                  (wine {'on PATH: ' + wine if wine else 'not installed'})")
    return ok


def speed(wheel: Path, rounds: int) -> bool:
    ratios, cpu_ratios, peaks, seconds = [], [], [], []
    for _ in range(rounds):
        unzip = timed(["unzip", "-tq", str(wheel)])
        verify = timed([sys.executable, "-c", _CHILD, str(wheel)])
        child = json.loads(verify.output.strip().splitlines()[-1])
        ratios.append(verify.wall / unzip.wall)
        cpu_ratios.append(verify.cpu / unzip.cpu)
        peaks.append(child["peak_mb"])
        seconds.append((unzip.wall, verify.wall))
    ratio, peak = statistics.median(ratios), max(peaks)
    unzip_wall, verify_wall = seconds[ratios.index(ratio)] if ratio in ratios else seconds[0]
    print(f"{wheel.name[:48]:48} ({wheel.stat().st_size / 1e6:.0f} MB)")
    print(f"  unzip -tq {unzip_wall:6.2f} s, verify --static {verify_wall:6.2f} s: ratio "
          f"{ratio:4.2f}x wall (median of {rounds}: {', '.join(f'{r:.2f}' for r in ratios)}; "
          f"target <= {RATIO_TARGET:.1f}x, goal {RATIO_GOAL:.1f}x), "
          f"{statistics.median(cpu_ratios):4.2f}x CPU")
    print(f"  peak memory {peak:4.0f} MB (target <= {PEAK_TARGET} MB)")
    return ratio <= RATIO_TARGET and peak <= PEAK_TARGET


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("wheels", nargs="*", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--auditwheel", action="store_true", help="also time auditwheel show")
    arguments = parser.parse_args()
    big = arguments.wheels or [cached_wheel(*row) for row in BIG_WHEELS]
    small = sorted((tools.cache_dir() / "wheels").rglob("*.whl"),
                   key=lambda path: path.stat().st_size)
    cold = [next((p for p in small if "manylinux" in p.name), None),
            next((p for p in small if "win_amd64" in p.name), None)]
    ok = cold_start([wheel for wheel in cold if wheel is not None])
    for wheel in big:
        ok &= speed(wheel, arguments.rounds)
        if arguments.auditwheel and shutil.which("auditwheel"):
            print(f"  auditwheel show {timed(['auditwheel', 'show', str(wheel)]).wall:6.2f} s "
                  "(reference)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
