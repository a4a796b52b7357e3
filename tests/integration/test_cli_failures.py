"""Build failures through the CLI that reach the toolchain: one clear line, a non-zero exit,
nothing left in the output folder."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from release.errors import EnvironmentFailure
from tests.conftest import ROOT, assert_clean_failure, run_release


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
    assert "pip install of the pinned ninja (ninja==" in completed.stderr or \
        "pip install of the pinned cmake-new (cmake==" in completed.stderr
    assert not (tmp_path / "cache" / "tools").exists() or not any(
        p.name.endswith(".partial") for p in (tmp_path / "cache" / "tools").iterdir())


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def test_a_compiler_error_is_shown_with_its_own_line(tmp_path: Path) -> None:
    """A copy of the project with a syntax error in the first file the build compiles: the
    build's output streams live, and the one error line quotes the compiler's."""
    from tests.conftest import ROOT
    project = tmp_path / "project"
    shutil.copytree(ROOT, project, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "__pycache__", ".*cache"))
    source = project / "native" / "runtime" / "src" / "tensor.cpp"
    source.write_text("int edgert_test_broken = ;\n" + source.read_text())
    out = tmp_path / "dist"
    completed = run_release("build", "--platform", "linux", "--out", str(out),
                            cwd=project, env={"RELEASE_CCACHE": "0", "RELEASE_JOBS": "1"})
    assert_clean_failure(completed, out, code=4, words="native build failed")
    (line,) = _error_lines(completed.stderr)
    assert "tensor.cpp:1:" in line and "error: expected primary-expression" in line, line
    before = completed.stderr[:completed.stderr.index(line)]
    assert "FAILED:" in before and "int edgert_test_broken = ;" in before  # streamed


def test_a_bad_cmake_flag_is_shown_with_cmakes_words(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    completed = run_release("build", "--platform", "linux", "--out", str(out),
                            "--build-dir", str(tmp_path / "build"),
                            "--cmake-arg=-DCMAKE_CXX_FLAGS=-fedgert-no-such-flag")
    assert_clean_failure(completed, out, code=4, words="CMake configure failed")
    (line,) = _error_lines(completed.stderr)
    assert "CMake Error" in line, line
    assert "fedgert-no-such-flag" in completed.stderr  # the compiler's own complaint, streamed


def test_pep517_failure_is_one_clean_message(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.conftest import ROOT
    completed = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
         "-w", str(tmp_path)], env={**__import__("os").environ, "RELEASE_VARIANT": "cu99"},
        capture_output=True, text=True, check=False)
    assert completed.returncode != 0
    assert "Traceback" not in completed.stdout + completed.stderr
    everything = completed.stdout + completed.stderr
    assert "error: unknown variant 'cu99'" in everything or "cu99" in everything, everything
    assert [line for line in everything.splitlines() if "error: " in line and "cu99" in line]
    assert not list(tmp_path.glob("*.whl"))


_NO_INDEX_FOR_OLD_CMAKE = """
import sys
from release.toolchain import tools
from release.errors import EnvironmentFailure
real = tools.cmake
def cmake(route=tools.CMAKE_NEW, *, cache=None):
    if route is tools.CMAKE_OLD:
        raise EnvironmentFailure("cannot provision CMake 3.24: the package index is "
                                 "unreachable", fix="check the connection to the package index")
    return real(route, cache=cache)
tools.cmake = cmake
from release.__main__ import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("allowed", [False, True])
def test_a_build_whose_verify_could_not_run_a_check_publishes_only_when_asked(
        tmp_path: Path, allowed: bool) -> None:
    """Without an index sdk-routes is 'not run (environment)': the wheel is not published
    (exit 8, as verify exits on it) unless --allow-unchecked is given; either way it is said."""
    out = tmp_path / "dist"
    completed = subprocess.run([sys.executable, "-c", _NO_INDEX_FOR_OLD_CMAKE, "build",
                                "--platform", "linux", "--out", str(out),
                                *(["--allow-unchecked"] if allowed else [])],
                               cwd=ROOT, capture_output=True, text=True)
    said = "verify could not run the sdk-routes check here: not run (environment): cannot " \
        "provision CMake 3.24"
    assert said in completed.stderr, completed.stderr[-3000:]
    if allowed:
        assert completed.returncode == 0, completed.stderr[-3000:]
        assert "although verify could not run: sdk-routes (--allow-unchecked)" in \
            completed.stderr
        assert len(list(out.glob("*.whl"))) == 1
    else:
        assert_clean_failure(completed, out, code=EnvironmentFailure.exit_code,
                             words="was not published: verify could not run sdk-routes")
