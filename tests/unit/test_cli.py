"""Bad input to the CLI: one clear line, a non-zero exit, nothing left in the output folder."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import ROOT, run_release


def _assert_clean_failure(completed, out: Path, *, code: int, words: str) -> None:
    assert completed.returncode == code, completed.stderr
    lines = [line for line in completed.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and words in lines[0], completed.stderr
    assert "fix:" in lines[0]
    assert "Traceback" not in completed.stderr
    assert not out.exists() or not any(out.iterdir()), list(out.iterdir())


def test_unknown_platform(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    completed = run_release("build", "--platform", "beos", "--out", str(out))
    _assert_clean_failure(completed, out, code=2, words="unknown platform 'beos'")


def test_unknown_arch(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    completed = run_release("build", "--platform", "linux", "--arch", "mips", "--out", str(out))
    _assert_clean_failure(completed, out, code=2, words="unknown arch 'mips'")


def test_unknown_variant(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    completed = run_release("build", "--platform", "linux", "--variant", "rocm", "--out", str(out))
    _assert_clean_failure(completed, out, code=2, words="unknown variant 'rocm'")


def test_broken_manifest(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    text = (ROOT / "pyproject.toml").read_text().replace('opt-in = true', 'opt-in = "yes"', 1)
    (project / "pyproject.toml").write_text(text)
    out = tmp_path / "dist"
    completed = run_release("build", "--platform", "linux", "--project", str(project),
                            "--out", str(out))
    _assert_clean_failure(completed, out, code=2, words="opt-in must be a bool")


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
    _assert_clean_failure(completed, out, code=3, words="'cc' was not found")


def test_build_failure_leaves_no_wheel(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    completed = run_release("build", "--platform", "linux", "--out", str(out),
                            "--build-dir", str(tmp_path / "build"),
                            "--cmake-arg=-DCMAKE_CXX_COMPILER=/nonexistent/c++")
    _assert_clean_failure(completed, out, code=4, words="CMake configure failed")


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
    _assert_clean_failure(completed, out, code=4, words="failed with exit status")
    assert "pip install ninja" in completed.stderr or "pip install cmake" in completed.stderr
    assert not (tmp_path / "cache" / "tools").exists() or not any(
        p.name.endswith(".partial") for p in (tmp_path / "cache" / "tools").iterdir())
