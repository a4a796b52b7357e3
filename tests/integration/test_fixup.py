"""The Linux fix-up stage on real ELF files: absolute DT_RPATH becomes the relative
DT_RUNPATH the layout asks for; a file already right is left untouched."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from platforms.linux import PLATFORM
from release.binary import read_binary
from release.building.patcher import fix_up
from release.host import Host
from release.platform import SearchPath

pytestmark = pytest.mark.integration


def _library(folder: Path, *link_flags: str) -> Path:
    source = folder / "probe.c"
    source.write_text("int probe(void) { return 42; }\n")
    target = folder / "pkg" / "lib" / "libprobe.so"
    target.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(target), str(source), *link_flags],
                   check=True)
    return target


def _layout(binary: str, folders: tuple[str, ...]) -> SearchPath:
    return SearchPath(binary=binary, folders=folders,
                      entries=PLATFORM.search_entries(binary, folders))


def test_absolute_rpath_becomes_relative_runpath(tmp_path: Path) -> None:
    library = _library(tmp_path, "-Wl,--disable-new-dtags,-rpath,/opt/build/lib")
    assert read_binary(library).rpath == ("/opt/build/lib",)
    layout = [_layout("pkg/lib/libprobe.so", ("pkg/lib", "nvidia/cu13/lib"))]
    planned = PLATFORM.plan_edits(tmp_path, layout)
    assert (planned.tool, [edit.steps for edit in planned.binaries]) == ("patchelf", [(
        ("--remove-rpath",), ("--set-rpath", "$ORIGIN:$ORIGIN/../../nvidia/cu13/lib"))])
    assert fix_up(PLATFORM, tmp_path, layout, host=Host.current()) == ["pkg/lib/libprobe.so"]
    fixed = read_binary(library)
    assert fixed.rpath == ()
    assert fixed.runpath == ("$ORIGIN", "$ORIGIN/../../nvidia/cu13/lib")


def test_a_correct_file_is_not_rewritten(tmp_path: Path) -> None:
    library = _library(tmp_path, "-Wl,--enable-new-dtags,-rpath,$ORIGIN")
    before = library.read_bytes()
    layout = [_layout("pkg/lib/libprobe.so", ("pkg/lib",))]
    assert [edit.steps for edit in PLATFORM.plan_edits(tmp_path, layout).binaries] == [()]
    assert fix_up(PLATFORM, tmp_path, layout, host=Host.current()) == []
    assert library.read_bytes() == before
