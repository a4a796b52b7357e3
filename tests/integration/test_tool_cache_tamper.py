"""A tampered tool is never used: one byte flipped in the middle of the cached CMake 3.24
binary (the one verify's SDK check runs), its modification time put back, and the next build
says so in one line naming the file, installs it again from the pinned wheel and gives the
same wheel; a wheel whose sha256 is not the pin is refused by pip in one line naming it.
Each test has its own tool cache (RELEASE_CACHE_DIR), never the shared one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from release.errors import ToolError
from release.toolchain import pins, toolcache, tools
from tests.conftest import ROOT, run_release

pytestmark = [pytest.mark.integration, pytest.mark.index]


def _flip_middle_byte(path: Path) -> None:
    status = path.stat()
    with path.open("r+b") as handle:
        handle.seek(status.st_size // 2)
        byte = handle.read(1)
        handle.seek(status.st_size // 2)
        handle.write(bytes([byte[0] ^ 0xFF]))
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))


def _build(tmp_path: Path, cache: Path, name: str) -> subprocess.CompletedProcess[str]:
    completed = run_release("build", "--platform", "linux", "--out", str(tmp_path / name),
                            "--json", env={"RELEASE_CACHE_DIR": str(cache)})
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed


def test_the_next_build_heals_a_cached_cmake_with_one_byte_changed(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = _build(tmp_path, cache, "first")
    (folder,) = (path for path in (cache / "tools").glob("cmake-old-*") if path.is_dir())
    cmake = folder / "cmake/data/bin/cmake"
    original = toolcache.file_sha256(cmake)
    _flip_middle_byte(cmake)
    assert toolcache.file_sha256(cmake) != original
    second = _build(tmp_path, cache, "second")
    warnings = [line for line in second.stderr.splitlines() if "installing it again" in line]
    assert len(warnings) == 1, second.stderr[-3000:]
    assert f"{cmake} is changed since it was installed" in warnings[0]
    assert toolcache.file_sha256(cmake) == original and toolcache.damage(folder) is None
    wheels = [Path(json.loads(run.stdout)["wheel"]) for run in (first, second)]
    assert wheels[0].read_bytes() == wheels[1].read_bytes()


def test_a_wheel_that_is_not_the_pin_is_refused(tmp_path: Path) -> None:
    ninja = pins.load().python_pin("ninja")
    wrong = pins.PythonPin(name="ninja-mispinned", purpose="a test", packages=ninja.packages,
                           files=tuple(pins.PinnedFile(f.file, "0" * 64) for f in ninja.files))
    with pytest.raises(ToolError) as caught:
        tools.pinned_folder(wrong, tmp_path / "cache")
    message = caught.value.message
    assert "\n" not in message and "ninja-1.13.2-" in message and ".whl" in message
    assert f"the pin says {'0' * 64}" in message
    left = [path.name for path in (tmp_path / "cache" / "tools").iterdir()]
    assert all(name.endswith(".lock") for name in left), f"nothing half-written: {left}"


def test_the_check_is_cheap(tmp_path: Path) -> None:
    """Not timed here (benchmarks/reproducible.py times it): a clean check reads no file but
    the manifest's first line, whatever the entry's size."""
    folder = tools.pinned_folder(pins.load().python_pin("ninja"), tmp_path / "cache")
    code = ("import builtins, sys; from pathlib import Path; "
            "from release.toolchain import toolcache; "
            "opened = []; real = builtins.open; "
            "builtins.open = lambda *a, **k: (opened.append(str(a[0])), real(*a, **k))[1]; "
            "Path.open = lambda self, *a, **k: (opened.append(str(self)), real(self, *a, **k))[1]; "
            "assert toolcache.damage(Path(sys.argv[1])) is None; print(opened)")
    completed = subprocess.run([sys.executable, "-c", code, str(folder)], cwd=ROOT,
                               capture_output=True, text=True, check=True)
    assert completed.stdout.strip() == str([str(folder / toolcache.MANIFEST)])
