"""What the cross-built wheels' tests share: building a fully verified wheel for a target,
unpacking it, running a command that must succeed, and the reference outputs of this
machine's CPU wheel that the other machines' runs are compared with."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from release import manifest
from release.building.pipeline import BuildOptions, BuildResult, VerifyMode, run
from release.host import Host
from release.toolchain import tools
from tests.conftest import ROOT, BuiltWheel

MODELS = ("mlp", "mlp_quantized")


def build_verified(platform: str, arch: str, out: Path) -> BuildResult:
    """The repaired wheel for ``platform``/``arch``, fully verified on this host."""
    result = run(manifest.load(ROOT), BuildOptions(platform=platform, arch=arch, out_dir=out,
                                                   verify=VerifyMode.FULL,
                                                   cache_dir=tools.cache_dir()),
                 host=Host.current())
    assert result.wheel is not None
    return result


def unpack(wheel: Path, folder: Path) -> Path:
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(folder)
    return folder


def run_checked(command: list[str], *, env: dict[str, str] | None = None,
                cwd: str | None = None) -> str:
    completed = subprocess.run(command, capture_output=True, text=True, check=False,
                               env={**os.environ, **(env or {})}, cwd=cwd)
    assert completed.returncode == 0, f"{command}:\n{completed.stdout}\n{completed.stderr}"
    return str(completed.stdout)


@pytest.fixture(scope="session")
def cpu_wheel_outputs(cpu_wheel: BuiltWheel, tmp_path_factory: pytest.TempPathFactory
                      ) -> dict[str, str]:
    """``python -m edgert.run_program`` of each shipped model, from this machine's wheel."""
    site = unpack(cpu_wheel.path, tmp_path_factory.mktemp("host-site"))
    return {name: run_checked([sys.executable, "-m", "edgert.run_program",
                               str(site / "edgert" / "models" / f"{name}.edgert")],
                              env={"PYTHONPATH": str(site)}, cwd="/")
            for name in MODELS}
