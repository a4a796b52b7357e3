"""A failed program is explained from what it printed: its own first error line, and a fix
read from its words (a full disk, a too-new glibc), not one fixed guess."""

from __future__ import annotations

import sys

import pytest

from platforms.linux import explain_auditwheel
from release.errors import CommandError
from release.toolchain import commands

_NINJA = """\
[1/38] Building CXX object runtime/CMakeFiles/edgert_runtime.dir/src/tensor.cpp.o
FAILED: runtime/CMakeFiles/edgert_runtime.dir/src/tensor.cpp.o
/usr/bin/c++ -O2 -c native/runtime/src/tensor.cpp
native/runtime/src/tensor.cpp:1:26: error: expected primary-expression before ';' token
    1 | int edgert_test_broken = ;
ninja: build stopped: subcommand failed.
"""

_CMAKE = """\
-- The C compiler identification is GNU 12.2.0
CMake Error at CMakeLists.txt:7 (add_library):

  Cannot find source file:

    missing.cpp
-- Configuring incomplete, errors occurred!
"""


@pytest.mark.parametrize(("output", "line"), [
    (_NINJA, "native/runtime/src/tensor.cpp:1:26: error: expected primary-expression before "
             "';' token"),
    (_CMAKE, "CMake Error at CMakeLists.txt:7 (add_library): Cannot find source file:"),
    ("c++: fatal error: no input files\n", "c++: fatal error: no input files"),
    ("all good\nbut exit 1\n\n", "but exit 1"),
    ("", "no output"),
])
def test_first_error_line(output: str, line: str) -> None:
    assert commands.first_error(output) == line


@pytest.mark.parametrize(("output", "words"), [
    ('cannot repair "x.whl" to "manylinux_2_17_x86_64" ABI because of the presence of '
     "too-recent versioned symbols.", "newer glibc"),
    ('Cannot repair wheel, because required library "libfoo.so.1" could not be located',
     "library path"),
    ("can't repair wheel x.whl with aarch64 architecture to a wheel targeting x86_64",
     "another architecture"),
    ("zipfile.BadZipFile: File is not a zip file", "not a valid zip"),
])
def test_auditwheel_failures_are_told_apart(output: str, words: str) -> None:
    fix = explain_auditwheel(output)
    assert fix is not None and words in fix
    assert explain_auditwheel("something nobody has seen") is None


def _failing(text: str) -> list[str]:
    return [sys.executable, "-c", f"import sys; sys.stdout.write({text!r}); sys.exit(1)"]


def test_the_machine_comes_before_the_tools_guess() -> None:
    with pytest.raises(CommandError) as raised:
        commands.run(_failing("OSError: [Errno 28] No space left on device: '/tmp/x/WHEEL'\n"),
                     what="auditwheel repair", diagnose=explain_auditwheel, fix="generic")
    assert "disk is full" in raised.value.fix
    with pytest.raises(CommandError) as raised:
        commands.run(_failing("too-recent versioned symbols\n"), diagnose=explain_auditwheel,
                     fix="generic")
    assert "newer glibc" in raised.value.fix
    with pytest.raises(CommandError) as raised:
        commands.run(_failing("odd\n"), diagnose=explain_auditwheel, fix="generic")
    assert raised.value.fix == "generic"


def test_streamed_output_is_shown_and_kept(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(CommandError) as raised:
        commands.stream(_failing("line one\nsrc.c:3:1: error: boom\n"), what="native build")
    assert capsys.readouterr().err == "line one\nsrc.c:3:1: error: boom\n"
    assert raised.value.what == "native build failed with exit status 1: src.c:3:1: error: boom"
