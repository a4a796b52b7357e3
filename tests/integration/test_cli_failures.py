"""Build failures through the CLI that reach the toolchain: one clear line, a non-zero exit,
nothing left in the output folder."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import assert_clean_failure, run_release


def test_missing_compiler(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("cmake", "ninja"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    out = tmp_path / "dist"
    completed = run_release("build", "--platform", "linux", "--out", str(out),
                            env={"PATH": str(bin_dir)})
    assert_clean_failure(completed, out, code=3, words="'cc' was not found")


def test_build_failure_leaves_no_wheel(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    completed = run_release("build", "--platform", "linux", "--out", str(out),
                            "--build-dir", str(tmp_path / "build"),
                            "--cmake-arg=-DCMAKE_CXX_COMPILER=/nonexistent/c++")
    assert_clean_failure(completed, out, code=4, words="CMake configure failed")


def test_missing_cmake_that_cannot_be_provisioned(tmp_path: Path) -> None:
    """No CMake on PATH and no reachable index: one line naming the tool and the fix."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("cc", "c++"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    out = tmp_path / "dist"
    completed = run_release(
        "build", "--platform", "linux", "--out", str(out), "--build-dir", str(tmp_path / "b"),
        env={"PATH": str(bin_dir), "RELEASE_CACHE_DIR": str(tmp_path / "cache"),
             "PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_RETRIES": "0",
             "PIP_TIMEOUT": "2", "PIP_NO_CACHE_DIR": "1", "PIP_FIND_LINKS": "",
             "PIP_EXTRA_INDEX_URL": "", "PIP_CONFIG_FILE": "/dev/null"})
    assert_clean_failure(completed, out, code=8, words="failed with exit status")
    assert "pip install ninja" in completed.stderr or "pip install cmake" in completed.stderr
    assert not (tmp_path / "cache" / "tools").exists() or not any(
        p.name.endswith(".partial") for p in (tmp_path / "cache" / "tools").iterdir())
