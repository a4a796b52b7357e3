"""Fixtures for verify tests: the generated fixture wheels and the cached torch wheel."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis.configuration import set_hypothesis_home_dir

from release.toolchain import tools
from tests.verify import corpus

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures" / "verify"


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
    """The corpus's torch wheel: the one reviewed file, pinned by URL and sha256."""
    return corpus.wheel("corpus", "torch")
