"""The tools the release workflow drives accept our configuration."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def test_cibuildwheel_reads_our_configuration() -> None:
    """cibuildwheel accepts [tool.cibuildwheel] and builds exactly one abi3 wheel per arch."""
    completed = subprocess.run(
        [sys.executable, "-m", "cibuildwheel", "--print-build-identifiers", "--platform",
         "linux", "--archs", "x86_64,aarch64", str(ROOT)],
        capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split() == ["cp311-manylinux_x86_64", "cp311-manylinux_aarch64"]
