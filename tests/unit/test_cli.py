"""Bad input to the CLI: one clear line, a non-zero exit, nothing left in the output folder.
The command line is run in this process (``release.__main__.main``, what ``python -m release``
runs); tests/integration/test_cli_failures.py runs it as its own process."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import ROOT, assert_clean_failure, release_in_process


def test_unknown_platform(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    completed = release_in_process("build", "--platform", "beos", "--out", str(out))
    assert_clean_failure(completed, out, code=2, words="unknown platform 'beos'")


def test_unknown_arch(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    completed = release_in_process("build", "--platform", "linux", "--arch", "mips",
                                   "--out", str(out))
    assert_clean_failure(completed, out, code=2, words="unknown arch 'mips'")


def test_unknown_variant(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    completed = release_in_process("build", "--platform", "linux", "--variant", "rocm",
                                   "--out", str(out))
    assert_clean_failure(completed, out, code=2, words="unknown variant 'rocm'")


def test_broken_manifest(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    text = (ROOT / "pyproject.toml").read_text().replace('opt-in = true', 'opt-in = "yes"', 1)
    (project / "pyproject.toml").write_text(text)
    out = tmp_path / "dist"
    completed = release_in_process("build", "--platform", "linux", "--project", str(project),
                                   "--out", str(out))
    assert_clean_failure(completed, out, code=2, words="opt-in must be a bool")
