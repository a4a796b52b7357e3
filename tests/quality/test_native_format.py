"""The native sources are formatted as native/.clang-format says (Google style, 120 columns):
clang-format (the pinned wheel from requirements-dev.txt) finds nothing to change."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

NATIVE = ROOT / "native"
SUFFIXES = {".c", ".cc", ".cpp", ".h", ".hpp", ".cu", ".cuh"}
STYLE = f"--style=file:{NATIVE / '.clang-format'}"


def _clang_format() -> str:
    try:
        import clang_format
    except ImportError:
        pytest.fail("clang-format is not installed: pip install -r requirements-dev.txt")
    return str(clang_format.get_executable("clang-format"))


def _sources() -> list[Path]:
    return sorted(path for path in NATIVE.rglob("*") if path.suffix in SUFFIXES)


def _dry_run(*files: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([_clang_format(), STYLE, "--dry-run", "--Werror", *map(str, files)],
                          capture_output=True, text=True, check=False)


def test_the_native_sources_are_formatted() -> None:
    sources = _sources()
    assert len(sources) > 50 and {path.suffix for path in sources} >= {".c", ".cpp", ".hpp", ".cu"}
    completed = _dry_run(*sources)
    assert completed.returncode == 0, \
        "run clang-format -i on these (the wheel in requirements-dev.txt):\n" + completed.stderr


def test_a_badly_formatted_source_is_refused(tmp_path: Path) -> None:
    """The check can fail: a line over 120 columns, and one indented by 4, are both found."""
    source = tmp_path / "bad.cpp"
    source.write_text("int f(int a) {\n    return a;\n}\nint g() { return f(" + "1 + " * 40
                      + "1); }\n")
    completed = _dry_run(source)
    assert completed.returncode != 0
    # clang-format reports a bad indent where the whitespace before it starts (line 1)
    assert "bad.cpp:1:" in completed.stderr and "bad.cpp:4:" in completed.stderr
