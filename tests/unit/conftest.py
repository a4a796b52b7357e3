"""The quick tier: these tests need no compiler, no CMake and no package index. Asking the
pipeline for a build tool here, or running a compiler, fails the test instead of quietly
provisioning one; and no compiler is on PATH for these tests (``shutil.which`` finds none),
whatever this machine has, so the tier passes the same on a machine without one."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator, Sequence

import pytest

from release.toolchain import commands, tools

# cc, c++, gcc, g++, clang, clang++, cl, zig, nvcc; with a target prefix
# (aarch64-linux-gnu-gcc), a version suffix (gcc-12) or .exe
COMPILER = re.compile(r"(?:.+-)?(?:cc|c\+\+|gcc|g\+\+|clang|clang\+\+|cl|zig|nvcc)"
                      r"(?:-[0-9.]+)?(?:\.exe)?", re.IGNORECASE)


def _refused(what: str) -> AssertionError:
    return AssertionError(f"a tests/unit test {what}; it belongs in tests/integration or "
                          "tests/native")


@pytest.fixture(autouse=True)
def _no_build_tools(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    def refuse(*args: object, **kwargs: object) -> None:
        raise _refused("asked for a build tool")
    for name in ("cmake", "ninja", "pip_tool", "pinned_tool", "pinned_folder"):
        monkeypatch.setattr(tools, name, refuse)
    which, run, stream = shutil.which, commands.run, commands.stream

    def which_no_compiler(name: str, *args: object, **kwargs: object) -> str | None:
        if COMPILER.fullmatch(os.path.basename(name)):
            return None
        return which(name, *args, **kwargs)  # type: ignore[arg-type]

    def no_compiler(command: Sequence[str | os.PathLike[str]]) -> None:
        program = os.path.basename(os.fspath(command[0])) if command else ""
        if COMPILER.fullmatch(program):
            raise _refused(f"ran the compiler '{program}'")

    def run_no_compiler(command: Sequence[str | os.PathLike[str]], **kwargs: object) -> str:
        no_compiler(command)
        return run(command, **kwargs)  # type: ignore[arg-type]

    def stream_no_compiler(command: Sequence[str | os.PathLike[str]], **kwargs: object) -> str:
        no_compiler(command)
        return stream(command, **kwargs)  # type: ignore[arg-type]
    monkeypatch.setattr(shutil, "which", which_no_compiler)
    monkeypatch.setattr(commands, "run", run_no_compiler)
    monkeypatch.setattr(commands, "stream", stream_no_compiler)
    yield
