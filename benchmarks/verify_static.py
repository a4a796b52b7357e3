"""verify --static against `unzip -tq` on the torch wheel: wall-clock ratio (target <= 1.0)
and peak memory of verify (target <= 200 MB), each measured in a child process.

    python benchmarks/verify_static.py [WHEEL] [--auditwheel]

Without WHEEL it uses (and if needed downloads) torch 2.13.0 into
release.tools.cache_dir()/wheels."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from release import tools  # noqa: E402

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
print(json.dumps({"seconds": elapsed, "peak_mb": peak, "findings": len(report.findings),
                  "checks": report.checks}))
"""


def torch_wheel() -> Path:
    folder = tools.cache_dir() / "wheels"
    found = sorted(folder.glob("torch-2.13.0*.whl"))
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "torch==2.13.0", "--no-deps",
                        "-q", "-d", str(folder)], check=True)
        found = sorted(folder.glob("torch-2.13.0*.whl"))
    return found[0]


def timed(command: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    return time.perf_counter() - start, completed.stdout


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("wheel", nargs="?", type=Path)
    parser.add_argument("--auditwheel", action="store_true", help="also time auditwheel show")
    arguments = parser.parse_args()
    wheel = arguments.wheel or torch_wheel()
    unzip_seconds, _ = timed(["unzip", "-tq", str(wheel)])
    verify_seconds, output = timed([sys.executable, "-c", _CHILD, str(wheel)])
    child = json.loads(output)
    ratio = verify_seconds / unzip_seconds
    print(f"wheel: {wheel.name} ({wheel.stat().st_size / 1e6:.0f} MB)")
    print(f"unzip -tq:        {unzip_seconds:6.2f} s")
    print(f"verify --static:  {verify_seconds:6.2f} s wall (process), "
          f"{child['seconds']:.2f} s inside; {child['findings']} findings")
    print(f"ratio:            {ratio:6.2f}x   (target <= 1.0x)")
    print(f"peak memory:      {child['peak_mb']:6.0f} MB (target <= 200 MB)")
    if arguments.auditwheel and shutil.which("auditwheel"):
        seconds, _ = timed(["auditwheel", "show", str(wheel)])
        print(f"auditwheel show:  {seconds:6.2f} s (reference)")
    return 0 if ratio <= 1.0 and child["peak_mb"] <= 200 else 1


if __name__ == "__main__":
    sys.exit(main())
