"""Prints the ``[[...files]]`` rows of release/toolchain/pinned-tools.toml for one pinned package:
the wheel file pip would pick on each machine the pipeline runs on, and its sha256 as the package
index states it (``pip install --dry-run --report``: no wheel is downloaded).

    python .ci/pin_hashes.py ziglang==0.17.1 cmake==3.24.3
    python .ci/pin_hashes.py --machines linux numpy==2.4.6 --python 3.11
    python .ci/pin_hashes.py --debian arm64      # the emulator root's packages, as apt has them now

Run it when a pin's version changes, paste the rows into the file and review the diff: the
pipeline then refuses any other file for that pin."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

_GLIBC = range(39, 4, -1)
MACHINES = {
    "linux-x86_64": [f"manylinux_2_{minor}_x86_64" for minor in _GLIBC]
    + ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64", "linux_x86_64"],
    "linux-aarch64": [f"manylinux_2_{minor}_aarch64" for minor in _GLIBC]
    + ["manylinux2014_aarch64", "linux_aarch64"],
    "macos-arm64": ["macosx_15_0_arm64"],
    "macos-x86_64": ["macosx_15_0_x86_64"],
    "windows-amd64": ["win_amd64"],
}


def chosen_file(requirement: str, platforms: list[str], python: str) -> tuple[str, str] | None:
    """(file name, sha256) of the wheel pip picks for ``platforms``; None when none fits."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        command = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet",
                   "--ignore-installed", "--no-deps", "--only-binary=:all:",
                   "--python-version", python, "--implementation", "cp",
                   "--target", str(Path(scratch) / "target"), "--report", str(report),
                   *(part for platform in platforms for part in ("--platform", platform)),
                   requirement]
        completed = subprocess.run(command, capture_output=True, text=True, check=False)
        if completed.returncode != 0:
            return None
        install = json.loads(report.read_text())["install"][0]["download_info"]
    return install["url"].rsplit("/", 1)[-1], install["archive_info"]["hashes"]["sha256"]


def debian_rows(architecture: str) -> int:
    """The current version and sha256 of each package of the emulator root for
    ``architecture``, downloaded through the pipeline's private apt state."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from platforms.linux import cross, emulation

    target = next(t for t in cross.cross_targets().values()
                  if t.debian_architecture == architecture)
    with tempfile.TemporaryDirectory() as scratch:
        latest = [(package.name, "") for package in target.packages.packages]
        for deb in emulation.download_latest(target, Path(scratch), [n for n, _ in latest]):
            fields = {key: subprocess.run(["dpkg-deb", "-f", str(deb), key], check=True,
                                          capture_output=True, text=True).stdout.strip()
                      for key in ("Package", "Version")}
            digest = subprocess.run(["sha256sum", str(deb)], check=True, capture_output=True,
                                    text=True).stdout.split()[0]
            print(f'  {{name = "{fields["Package"]}", version = "{fields["Version"]}", '
                  f'sha256 = "{digest}"}},')
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("requirements", nargs="*", help="name==version")
    parser.add_argument("--debian", metavar="ARCH",
                        help="print the emulator root's Debian packages for ARCH instead")
    parser.add_argument("--machines", default="linux,macos,windows",
                        help="comma-separated prefixes of: " + ", ".join(MACHINES))
    parser.add_argument("--python", default="3.11", help="for cp-tagged wheels")
    arguments = parser.parse_args()
    if arguments.debian:
        return debian_rows(arguments.debian)
    prefixes = tuple(arguments.machines.split(","))
    status = 0
    for requirement in arguments.requirements:
        print(f"# {requirement}")
        seen: set[str] = set()
        for machine, platforms in MACHINES.items():
            if not machine.startswith(prefixes):
                continue
            found = chosen_file(requirement, platforms, arguments.python)
            if found is None:
                print(f"# no wheel of {requirement} for {machine}", file=sys.stderr)
                status = 1
            elif found[0] not in seen:
                seen.add(found[0])
                print(f'  {{file = "{found[0]}", sha256 = "{found[1]}"}},')
    return status


if __name__ == "__main__":
    sys.exit(main())
