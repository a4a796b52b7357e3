"""The quick tier's own guard (tests/unit/conftest.py): no compiler is found on PATH, running
one or asking for CMake, Ninja or a pinned tool fails the test, and every other program is
looked up and run as usual."""

from __future__ import annotations

import shutil
import sys

import pytest

from release import _cmd, tools
from tests.unit.conftest import COMPILER


@pytest.mark.parametrize("name", ["cc", "c++", "gcc", "g++", "clang", "clang++", "cl.exe",
                                  "zig", "nvcc", "gcc-12", "aarch64-linux-gnu-gcc",
                                  "x86_64-w64-mingw32-g++", "/usr/bin/cc"])
def test_no_compiler_is_on_path_and_none_runs(name: str) -> None:
    assert shutil.which(name) is None
    with pytest.raises(AssertionError, match="ran the compiler"):
        _cmd.run([name, "--version"])


@pytest.mark.parametrize("name", ["ccache", "cmake", "patchelf", "auditwheel", "otool",
                                  "install-name-tool", "bwrap", "git", "python3"])
def test_other_programs_are_not_compilers(name: str) -> None:
    assert COMPILER.fullmatch(name) is None


def test_other_programs_are_found_and_run() -> None:
    assert shutil.which(sys.executable) == sys.executable
    assert _cmd.run([sys.executable, "-c", "print('ran')"]).strip() == "ran"


@pytest.mark.parametrize("tool", ["cmake", "ninja", "pip_tool", "pinned_tool",
                                  "pinned_folder"])
def test_build_tools_are_refused(tool: str) -> None:
    with pytest.raises(AssertionError, match="asked for a build tool"):
        getattr(tools, tool)()
