"""One bad moment does not break a build folder for good: an empty or corrupt configure
stamp, or a truncated CMake cache or build.ninja (a kill or a full disk during configure),
is discarded with a log line and the next build heals."""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
from pathlib import Path

import pytest

from release import manifest
from release.build_options import BuildOptions, Stage
from release.building.pipeline import STAMP_FILE, run
from release.host import Host
from tests.conftest import ROOT

pytestmark = pytest.mark.integration


def _build(tmp_path: Path) -> Path:
    options = BuildOptions(platform="linux", last_stage=Stage.BUILD, out_dir=tmp_path / "out")
    return run(manifest.load(ROOT), options, host=Host.current()).build_dir


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize("damage", ["empty stamp", "stamp not JSON", "half a CMake cache",
                                    "half a build.ninja"])
def test_the_next_build_heals(tmp_path: Path, damage: str,
                              caplog: pytest.LogCaptureFixture) -> None:
    build_dir = _build(tmp_path)
    stamp = build_dir / STAMP_FILE
    if damage == "empty stamp":
        stamp.write_text("")
    elif damage == "stamp not JSON":
        stamp.write_text("{not json")
    else:
        _truncate(build_dir / ("CMakeCache.txt" if "cache" in damage else "build.ninja"))
    with caplog.at_level(logging.WARNING, logger="release"):
        assert _build(tmp_path) == build_dir
    assert any("configur" in record.getMessage() for record in caplog.records), damage
    assert json.loads(stamp.read_text())["source"] == str((ROOT / "native").resolve())
    assert (build_dir / "build.ninja").read_text().rstrip().endswith("default all")


def test_a_changed_native_source_is_configured_afresh(tmp_path: Path) -> None:
    """The stamp names the source folder: pointing native-source elsewhere configures the
    build folder from the new folder instead of building the old sources."""
    loaded = manifest.load(ROOT)
    copy = tmp_path / "native-copy"
    shutil.copytree(loaded.native_source, copy)
    build_dir = tmp_path / "build"

    def configure(source: Path) -> str:
        options = BuildOptions(platform="linux", last_stage=Stage.CONFIGURE,
                               out_dir=tmp_path / "out", build_dir=build_dir)
        run(dataclasses.replace(loaded, native_source=source), options, host=Host.current())
        return (build_dir / "CMakeCache.txt").read_text()

    assert f"CMAKE_HOME_DIRECTORY:INTERNAL={loaded.native_source.resolve()}\n" in configure(
        loaded.native_source)
    assert f"CMAKE_HOME_DIRECTORY:INTERNAL={copy.resolve()}\n" in configure(copy)
    assert json.loads((build_dir / STAMP_FILE).read_text())["source"] == str(copy.resolve())
