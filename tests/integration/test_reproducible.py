"""Releases anyone can reproduce: the same bytes under every variation of the build
environment that reprotest knows (tests/integration/variations.py: checkout path, user and
HOME, host name, time zone, locale, umask, clock, directory order, CPU count). On a
difference the assertion carries diffoscope's report.

The CPU wheel and the sdist are the default tier; every other wheel this host builds
(linux-aarch64, the macOS wheels, windows-amd64, cu12, cu13), and a CPU wheel compiled without
ccache, are the ``full`` tier: about 50 minutes on 2 shared cores, more than the suite may
take in CI, so ``pytest`` leaves it out (pyproject's addopts) and ``pytest -m full
tests/integration/test_reproducible.py`` runs it."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest

from tests.conftest import BuiltWheel
from tests.integration import variations
from tests.integration.variations import CONTROL, VARIED

pytestmark = pytest.mark.integration


def _same(first: Path, second: Path) -> None:
    report = variations.difference(first, second)
    assert report is None, report


def test_the_cpu_wheel_is_the_same_under_every_variation(cpu_wheel: BuiltWheel,
                                                         tmp_path: Path) -> None:
    control = variations.build(CONTROL, tmp_path, ["--platform", "linux", "--verify", "none"])
    varied = variations.build(VARIED, tmp_path, ["--platform", "linux", "--verify", "none"])
    assert varied.order in ("disorderfs", "shim")
    _same(control.path, varied.path)
    _same(cpu_wheel.path, control.path)


def test_the_shim_reverses_directory_order(tmp_path: Path) -> None:
    """Where FUSE is not available the shim varies the order: it must really reverse it."""
    folder = tmp_path / "listed"
    folder.mkdir()
    for name in ("alpha", "beta", "gamma", "delta", "epsilon"):
        (folder / name).touch()
    shim = variations.reversed_order_shim(tmp_path)
    code = "import os, sys; print(' '.join(os.listdir(sys.argv[1])))"
    plain = subprocess.run(["python3", "-c", code, str(folder)], capture_output=True,
                           text=True, check=True).stdout.split()
    shimmed = subprocess.run(["python3", "-c", code, str(folder)], capture_output=True,
                             text=True, check=True, env={"LD_PRELOAD": str(shim)}).stdout.split()
    assert shimmed == plain[::-1] and sorted(plain) == sorted(shimmed)


def test_a_difference_is_reported_with_diffoscope(tmp_path: Path) -> None:
    first, second = tmp_path / "one.txt", tmp_path / "two.txt"
    first.write_text("built on Monday\n")
    second.write_text("built on Tuesday\n")
    report = variations.difference(first, second)
    assert report is not None and "Monday" in report and "Tuesday" in report
    assert variations.difference(first, first) is None


FULL_TIER = [
    ("linux-aarch64", ["--platform", "linux", "--arch", "aarch64"]),
    ("macos-arm64", ["--platform", "macos", "--arch", "arm64"]),
    ("macos-x86_64", ["--platform", "macos", "--arch", "x86_64"]),
    ("macos-universal2", ["--platform", "macos", "--arch", "universal2"]),
    ("windows-amd64", ["--platform", "windows", "--arch", "amd64"]),
    ("linux-x86_64-cu12", ["--platform", "linux", "--variant", "cu12"]),
    ("linux-x86_64-cu13", ["--platform", "linux", "--variant", "cu13"]),
]


@pytest.mark.full
@pytest.mark.index
@pytest.mark.parametrize("arguments", [arguments for _, arguments in FULL_TIER],
                         ids=[name for name, _ in FULL_TIER])
def test_every_wheel_this_host_builds_is_the_same_under_every_variation(
        tmp_path: Path, arguments: list[str]) -> None:
    control = variations.build(CONTROL, tmp_path, [*arguments, "--verify", "none"])
    varied = variations.build(VARIED, tmp_path, [*arguments, "--verify", "none"])
    _same(control.path, varied.path)


@pytest.mark.full
def test_the_compiler_cache_changes_nothing(cpu_wheel: BuiltWheel, tmp_path: Path) -> None:
    """The variation builds share ccache (relative paths, its results by content hash): a
    build that compiles everything itself, with absolute paths, gives the same bytes."""
    uncached = dataclasses.replace(VARIED, name="uncached", checkout="uncached/edgert")
    built = variations.build(uncached, tmp_path,
                             ["--platform", "linux", "--verify", "none", "--no-ccache"])
    _same(cpu_wheel.path, built.path)


def test_the_sdist_is_the_same_under_every_variation(tmp_path: Path) -> None:
    control = variations.build_sdist(CONTROL, tmp_path)
    varied = variations.build_sdist(VARIED, tmp_path)
    _same(control.path, varied.path)
