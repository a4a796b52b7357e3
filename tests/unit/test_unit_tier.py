"""The quick tier's own guard (tests/unit/conftest.py): no compiler is found on PATH, running
one or asking for CMake, Ninja or a pinned tool fails the test, and every other program is
looked up and run as usual; and the tier runs the command line in its own process."""

from __future__ import annotations

import ast
import shutil
import sys
from pathlib import Path

import pytest

from release.toolchain import commands, tools
from tests.conftest import ROOT
from tests.unit.conftest import COMPILER


@pytest.mark.parametrize("name", ["cc", "c++", "gcc", "g++", "clang", "clang++", "cl.exe",
                                  "zig", "nvcc", "gcc-12", "aarch64-linux-gnu-gcc",
                                  "x86_64-w64-mingw32-g++", "/usr/bin/cc"])
def test_no_compiler_is_on_path_and_none_runs(name: str) -> None:
    assert shutil.which(name) is None
    with pytest.raises(AssertionError, match="ran the compiler"):
        commands.run([name, "--version"])


@pytest.mark.parametrize("name", ["ccache", "cmake", "patchelf", "auditwheel", "otool",
                                  "install-name-tool", "bwrap", "git", "python3"])
def test_other_programs_are_not_compilers(name: str) -> None:
    assert COMPILER.fullmatch(name) is None


def test_other_programs_are_found_and_run() -> None:
    assert shutil.which(sys.executable) == sys.executable
    assert commands.run([sys.executable, "-c", "print('ran')"]).strip() == "ran"


@pytest.mark.parametrize("tool", ["cmake", "ninja", "pip_tool", "pinned_tool",
                                  "pinned_folder"])
def test_build_tools_are_refused(tool: str) -> None:
    with pytest.raises(AssertionError, match="asked for a build tool"):
        getattr(tools, tool)()


def _runs_the_cli_in_a_process(tree: ast.AST) -> list[int]:
    """Lines calling ``run_release`` or spelling ``-m release`` in a command list."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            function = node.func
            name = function.id if isinstance(function, ast.Name) else \
                function.attr if isinstance(function, ast.Attribute) else ""
            if name == "run_release":
                lines.append(node.lineno)
        if isinstance(node, (ast.List, ast.Tuple)):
            words = [item.value for item in node.elts if isinstance(item, ast.Constant)]
            if any(words[index:index + 2] == ["-m", "release"] for index in range(len(words))):
                lines.append(node.lineno)
    return lines


def test_the_command_line_runs_in_this_process() -> None:
    """tests/unit calls the command line through release_in_process (release.__main__.main in
    the test's own process); running it as a process of its own is tests/integration's."""
    offenders = [f"{path.relative_to(ROOT)}:{line}"
                 for path in sorted((ROOT / "tests" / "unit").glob("*.py"))
                 if path.name != Path(__file__).name     # the scan's own pattern
                 for line in _runs_the_cli_in_a_process(ast.parse(path.read_text()))]
    assert offenders == []


def test_the_scan_sees_a_process_running_the_command_line() -> None:
    assert _runs_the_cli_in_a_process(ast.parse(
        "run_release('plan')\nconftest.run_release('plan')\n"
        "subprocess.run([sys.executable, '-m', 'release', 'plan'])\n")) == [1, 2, 3]
    assert _runs_the_cli_in_a_process(ast.parse(
        "release_in_process('plan')\nsubprocess.run([sys.executable, '-c', 'pass'])\n")) == []
