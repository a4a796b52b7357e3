"""Fixtures for verify tests: the generated fixture wheels and the cached torch wheel."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis.configuration import set_hypothesis_home_dir

from release import tools
from tests import downloads

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures" / "verify"
# The CPU build of torch 2.13.0 the verify tests were written against: fetched as this one
# file (tests/downloads.py), not as whatever `pip download torch==2.13.0` resolves today.
TORCH = downloads.PinnedFile(
    name="torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl",
    sha256="6746dbcbeb526eb61330b76b41ff1b4eb848951103a892eeb080dfa2b264667b",
    url="https://download.pytorch.org/whl/cpu/torch-2.13.0%2Bcpu-cp311-cp311-manylinux_2_28_x86_64.whl")


def pytest_configure(config: pytest.Config) -> None:
    set_hypothesis_home_dir(str(tools.cache_dir() / "hypothesis"))
    config.addinivalue_line("markers", "torch_wheel: reads the ~190 MB torch wheel (cached "
                            "under release.tools.cache_dir()/wheels)")


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_fixtures", FIXTURES / "make_fixtures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_fixtures"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def fixture_wheels() -> dict[str, Path]:
    if shutil.which("gcc") is None:
        pytest.fail("gcc is required to build the verify fixture wheels")
    generator = _generator()
    out = tools.cache_dir() / "fixtures" / "verify" / generator.inputs_digest()
    wheels: dict[str, Path] = generator.build_all(out)
    return wheels


@pytest.fixture(scope="session")
def fixture_build_dir(fixture_wheels: dict[str, Path]) -> Path:
    return fixture_wheels["good"].parents[1] / "build"


@pytest.fixture(scope="session")
def torch_wheel() -> Path:
    """The reviewed torch wheel (the CPU build, 136 ELF files), by name and digest."""
    return downloads.fetch(TORCH, tools.cache_dir() / "wheels")
