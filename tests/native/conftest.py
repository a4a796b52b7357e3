"""Fixtures of the native tests: the native/ CMake project built and installed once per
session by the release pipeline (in its own build folder, kept between sessions, so rebuilds
are incremental), and ways to import the installed ``edgert`` in-process or in a subprocess."""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.native.support import ROOT, NativeInstall, build_native


@pytest.fixture(scope="session")
def native_install(tmp_path_factory: pytest.TempPathFactory) -> NativeInstall:
    """The release pipeline's own build of this machine's CPU target, run up to its install
    stage: the same build the wheel is made from, compiled once (incrementally) per session."""
    import os

    from release import manifest
    from release.building.pipeline import BuildOptions, Stage, run
    from release.host import Host

    given = os.environ.get("EDGERT_TEST_NATIVE_BUILD")
    if given:  # a tree built elsewhere, e.g. the sanitizer build of test_sanitizers.py
        return NativeInstall(build_dir=Path(given), prefix=Path(given) / "install")
    options = BuildOptions(platform="linux", last_stage=Stage.INSTALL,
                           out_dir=tmp_path_factory.mktemp("native-out"))
    build_dir = run(manifest.load(ROOT), options, host=Host.current()).build_dir
    return NativeInstall(build_dir=build_dir, prefix=build_dir / "install")


@pytest.fixture(scope="session")
def native_old_layout_install() -> NativeInstall:
    """The never-shipped layout (export plugin with a private copy of the quantized kernels),
    built only when a test asks for it."""
    return build_native(ROOT / "build" / "tests" / "native-old", "-DEDGERT_OLD_LAYOUT=ON")


@contextlib.contextmanager
def _imported(native_install: NativeInstall) -> Iterator[ModuleType]:
    saved = list(sys.path)
    loaded = sys.modules.get("edgert")
    if loaded is not None and Path(loaded.__file__ or "").parent != native_install.package_dir:
        for name in [n for n in sys.modules if n == "edgert" or n.startswith("edgert.")]:
            del sys.modules[name]
    sys.path.insert(0, str(native_install.prefix))
    try:
        module = importlib.import_module("edgert")
        assert Path(module.__file__).parent == native_install.package_dir  # type: ignore[arg-type]
        yield module
    finally:
        sys.path[:] = saved


@pytest.fixture()
def edgert(native_install: NativeInstall) -> Iterator[ModuleType]:
    """The installed ``edgert`` package, imported in this process."""
    with _imported(native_install) as module:
        yield module


@pytest.fixture(scope="module")
def edgert_for_module(native_install: NativeInstall) -> Iterator[ModuleType]:
    """The same, for module-scoped fixtures (programs exported once per test module)."""
    with _imported(native_install) as module:
        yield module
