"""Build-time and size benchmark for the CPU wheel, measured in one run.

  1. cold build of the CPU wheel in a fresh build folder (compiler cache disabled);
  2. rebuild with no source change in the same folder (target: <= 10 s: the build is
     incremental, only packing, repair and verification run again);
  3. the wheel's size against the monolithic layout, where the extension statically links
     every component (built with -DEDGERT_MONOLITHIC=ON and packed the same way).

Usage: python benchmarks/build_wheel.py [--verify static|full|none] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from release.distribution import wheel  # noqa: E402
from release.toolchain import tools  # noqa: E402


def _release_build(build_dir: Path, out: Path, verify: str) -> float:
    start = time.monotonic()
    subprocess.run([sys.executable, "-m", "release", "build", "--platform", "linux",
                    "--build-dir", str(build_dir), "--out", str(out), "--verify", verify],
                   cwd=ROOT, check=True, env={**os.environ, "RELEASE_CCACHE": "0"},
                   stdout=subprocess.DEVNULL)
    return time.monotonic() - start


def _monolithic_wheel_size(work: Path) -> int:
    build, prefix = work / "mono-build", work / "mono-install"
    subprocess.run([str(tools.cmake()), "-S", str(ROOT / "native"), "-B", str(build), "-G",
                    "Ninja", f"-DCMAKE_MAKE_PROGRAM={tools.ninja()}", "-DCMAKE_BUILD_TYPE=Release",
                    "-DEDGERT_MONOLITHIC=ON", "-DEDGERT_BUILD_EXAMPLES=OFF",
                    "-DEDGERT_BUILD_FUZZERS=OFF", f"-DPython_EXECUTABLE={sys.executable}"],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run([str(tools.cmake()), "--build", str(build)], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run([str(tools.cmake()), "--install", str(build), "--prefix", str(prefix)],
                   check=True, stdout=subprocess.DEVNULL)
    for archive in prefix.rglob("*.a"):  # static archives are build inputs, not shipped
        archive.unlink()
    files = wheel.collect_tree(prefix)
    path = work / "edgert-0.1.0-cp39-abi3-linux_x86_64.whl"
    wheel.write_wheel(path, files, dist_info="edgert-0.1.0.dist-info", epoch=315532800)
    return path.stat().st_size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verify", default="static", choices=["static", "full", "none"])
    parser.add_argument("--keep", type=Path, help="keep the work folder here")
    arguments = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="edgert-bench-"))
    try:
        cold = _release_build(work / "build", work / "dist1", arguments.verify)
        warm = _release_build(work / "build", work / "dist2", arguments.verify)
        shipped = next((work / "dist2").glob("*.whl")).stat().st_size
        monolithic = _monolithic_wheel_size(work)
    finally:
        if arguments.keep:
            shutil.copytree(work, arguments.keep, dirs_exist_ok=True)
        shutil.rmtree(work, ignore_errors=True)
    print(f"cold build (verify={arguments.verify}):      {cold:7.1f} s")
    print(f"rebuild, no source change:       {warm:7.1f} s   (target <= 10 s; "
          f"{'met' if warm <= 10 else 'MISSED'})")
    print(f"rebuild / cold:                  {warm / cold:7.3f}")
    print(f"wheel, one library per component: {shipped / 1024:8.1f} KiB")
    print(f"wheel, monolithic extension:      {monolithic / 1024:8.1f} KiB")
    print(f"shipped / monolithic:             {shipped / monolithic:8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
