"""cuobjdump as a reference to test the fatbinary reader against (never a dependency).

``pip install nvidia-cuda-cuobjdump`` gives cuobjdump 13.x, which also reads CUDA 12
fatbinaries. Its ``--list-elf`` names drop the ``f`` suffix (sm_100f -> sm_100) and it exits
255 on a file without device code; ``reader_listing`` writes our reader's view the same way."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from cuda.fatbin import DeviceCode, EntryKind
from release.errors import CommandError
from release.toolchain import tools

PIN = "cuobjdump"   # its [python.cuobjdump] entry in release/toolchain/pinned-tools.toml
_LINE = re.compile(r"^(ELF|PTX) file\s+\d+: .*\.(sm_\d+[a-z]?)\.(?:cubin|ptx)$")


def provision() -> Path:
    """cuobjdump from the package index (the pinned file), installed once into the release
    cache."""
    return tools.pinned_tool(PIN)


def listing(cuobjdump: Path, library: Path) -> list[str]:
    """``["ELF sm_75", ..., "PTX sm_90"]`` in cuobjdump's order; [] without device code."""
    completed = subprocess.run([str(cuobjdump), "--list-elf", "--list-ptx", str(library)],
                               capture_output=True, text=True, check=False)
    if completed.returncode == 255 and "does not contain device code" in completed.stderr:
        return []
    if completed.returncode != 0:
        raise CommandError(f"cuobjdump failed on {library}", command=[str(cuobjdump), str(library)],
                           returncode=completed.returncode, output=completed.stderr[-2000:])
    result = []
    for line in completed.stdout.splitlines():
        match = _LINE.match(line.strip())
        if match:
            result.append(f"{match.group(1)} {match.group(2)}")
    return result


def reader_listing(code: DeviceCode) -> list[str]:
    """Our reader's entries written like ``listing`` (no ``f``, PTX as sm_XY, no LTO-IR)."""
    result = []
    for entry in code.entries:
        suffix = "a" if entry.arch_specific else ""
        if entry.kind is EntryKind.CUBIN:
            result.append(f"ELF sm_{entry.sm}{suffix}")
        elif entry.kind is EntryKind.PTX:
            result.append(f"PTX sm_{entry.sm}{suffix}")
    return result
