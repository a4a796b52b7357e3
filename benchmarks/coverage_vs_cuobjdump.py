"""Coverage check of a large real CUDA library vs `cuobjdump --list-elf --list-ptx`.

    python benchmarks/coverage_vs_cuobjdump.py [--repeat 5] [library.so ...]

Default library: libcurand.so.10 from nvidia-curand-cu12 (167 MB, 153 fatbinary entries),
installed once into the release cache. Both sides read the same file; the listings must agree.
Prints both best-of-N times and the ratio (target: the coverage check is faster)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cuda import coverage_model, cuobjdump, fatbin  # noqa: E402
from cuda import gpu_variant as variant  # noqa: E402
from release.toolchain import tools  # noqa: E402

DEFAULT = ("nvidia-curand-cu12==10.3.10.19", "nvidia/curand/lib/libcurand.so.10")


def best_of(repeat: int, function):  # type: ignore[no-untyped-def]
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("libraries", nargs="*", type=Path)
    arguments = parser.parse_args()
    libraries = arguments.libraries or [tools.pip_tool(*DEFAULT)]
    tool = cuobjdump.provision()
    cu12 = variant.load(variant.variants_dir() / "cu12.toml")
    for library in libraries:
        def check(library: Path = library) -> coverage_model.CoverageReport:
            return coverage_model.judge([fatbin.read_device_code(library)], claims=cu12.claims,
                                  ptx=cu12.ptx)
        ours, report = best_of(arguments.repeat, check)
        theirs, listing = best_of(arguments.repeat,
                                  lambda library=library: cuobjdump.listing(tool, library))
        agree = cuobjdump.reader_listing(fatbin.read_device_code(library)) == listing
        print(f"{library.name}: {library.stat().st_size / 1e6:.0f} MB, {len(listing)} entries, "
              f"listings agree: {agree}")
        print(f"  coverage check {ours * 1000:.1f} ms, cuobjdump {theirs * 1000:.1f} ms, "
              f"ratio {ours / theirs:.3f} ({theirs / ours:.1f}x faster)")
        print(f"  {len(report.findings)} findings; cu12 claims: "
              f"{next(iter(report.table().values()), {})}")
        if not agree:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
