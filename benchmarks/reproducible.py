"""What the reproducibility check costs: one plain build of the CPU wheel in a fresh clone
against the two builds under variation that tests/integration/test_reproducible.py runs (a
control environment and one where every variation is changed), in the same run and with the
same caches (the tool cache, ccache, zig's cache: shared; the checkouts, build folders and
outputs: fresh for every build). The target is a ratio of at most 2.2.

    python benchmarks/reproducible.py [--platform linux] [--arch ...] [--variant ...]

Also times the tool-cache check (release/toolchain/toolcache.py) of every entry in the tool cache,
against the 0.2 s a build may spend on it."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from release.toolchain import (
    toolcache,
    tools,  # noqa: E402
)
from tests.integration import variations  # noqa: E402
from tests.integration.variations import CONTROL, VARIED  # noqa: E402

PLAIN = dataclasses.replace(CONTROL, name="plain", checkout="plain/edgert")


def build_seconds(arguments: list[str]) -> tuple[float, float, bool]:
    """(one plain build, the two builds under variation, whether the two are identical)."""
    with tempfile.TemporaryDirectory(prefix="reproducible-") as scratch:
        base = Path(scratch)
        plain = variations.build(PLAIN, base, arguments)
        control = variations.build(CONTROL, base, arguments)
        varied = variations.build(VARIED, base, arguments)
        same = variations.difference(control.path, varied.path) is None
        for built in (plain, control, varied):
            stages = " ".join(f"{name} {seconds:.1f}" for name, seconds in
                              (built.stages or {}).items())
            print(f"  {built.variation.name:8} {built.seconds:7.1f} s  {built.order:10} {stages}")
        return plain.seconds, control.seconds + varied.seconds, same


def check_seconds() -> list[tuple[str, int, float]]:
    """(entry, files, seconds of its check) for every sealed entry of the tool cache."""
    rows = []
    for manifest in sorted(tools.cache_dir().glob("**/" + toolcache.MANIFEST)):
        entry = manifest.parent
        found = toolcache.read_manifest(entry)
        start = time.perf_counter()
        toolcache.damage(entry)
        rows.append((str(entry.relative_to(tools.cache_dir())),
                     len(found[1]) if found else 0, time.perf_counter() - start))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--platform", default="linux")
    parser.add_argument("--arch")
    parser.add_argument("--variant")
    given = parser.parse_args()
    arguments = ["--platform", given.platform, "--verify", "none"]
    arguments += ["--arch", given.arch] if given.arch else []
    arguments += ["--variant", given.variant] if given.variant else []
    print("tool-cache checks (each at most once per use):")
    for entry, files, seconds in check_seconds():
        print(f"  {entry:60} {files:6} files {seconds:6.3f} s")
    print(f"builds ({' '.join(arguments)}):")
    one, two, same = build_seconds(arguments)
    print(f"one plain build {one:.1f} s; two under variation {two:.1f} s; ratio "
          f"{two / one:.2f} (target <= 2.2); identical: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
