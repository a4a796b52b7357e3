"""The pipeline and the shipped package (native/python/edgert) are lint-clean (ruff) and
type-checked strictly (mypy, configured in pyproject.toml): a regression in either fails the
suite."""

from __future__ import annotations

import subprocess
import sys
import tomllib

from tests.conftest import ROOT


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *command], cwd=ROOT, capture_output=True,
                          text=True, check=False)


def test_ruff_is_clean() -> None:
    completed = _run("ruff", "check", ".")
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_mypy_strict_is_clean() -> None:
    completed = _run("mypy")
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_mypy_covers_the_shipped_package() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert config["strict"] is True
    assert set(config["files"]) >= {"release", "platforms", "cuda", "native/python/edgert"}
