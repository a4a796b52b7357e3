"""The fix-up stage's one path (release/building/patcher.py): a platform plans its edits as
data, the patcher runs them with the platform's edit tool, reads each edited file again
through the platform's reader and holds every binary to the decision, so an edit tool that
reports success but leaves the file wrong stops the build. Shown with the made-up toy format
of test_synthetic_format.py and an edit tool written here (no compiler, no patchelf)."""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from release.binary import read_binary
from release.binary.model import BinaryInfo
from release.building.patcher import apply, fix_up
from release.errors import ToolError
from release.host import Host
from release.platform import BinaryEdits, Edits, SearchPath
from tests.unit.test_synthetic_format import MAGIC, ToyReader


class ToyPlatform:
    """The fix-up part of a platform: edits are ``toy-edit --search ENTRY... FILE``."""

    name = "toy"
    reader = ToyReader()

    def __init__(self, tool: Path) -> None:
        self.tool = tool
        self.checked: list[tuple[str, tuple[str, ...]]] = []

    def plan_edits(self, root: Path, search_paths: Sequence[SearchPath]) -> Edits:
        binaries = []
        for entry in search_paths:
            found = read_binary(root / entry.binary, readers=(self.reader,))
            steps = () if found.runpath == entry.entries else (
                ("--search", *entry.entries),)
            binaries.append(BinaryEdits(entry, found, steps))
        return Edits("toy-edit", tuple(binaries))

    def edit_tool(self, name: str, *, host: Host) -> str:
        assert name == "toy-edit"
        return str(self.tool)

    def after_edit(self, path: Path, info: BinaryInfo, *, host: Host) -> BinaryInfo:
        return info

    def check_fixed(self, info: BinaryInfo, entry: SearchPath) -> None:
        self.checked.append((entry.binary, info.runpath))
        if info.runpath != entry.entries:
            raise ToolError(f"{entry.binary} after the fix-up: {list(info.runpath)}",
                            fix="use a working toy-edit")


def _tool(folder: Path, *, works: bool) -> Path:
    """An edit tool: rewrites the file's search entries (or, broken, exits 0 and does
    nothing)."""
    script = folder / "toy-edit"
    body = ("import json, sys\n"
            "*entries, path = sys.argv[2:]\n"
            "data = open(path, 'rb').read()\n"
            "body = json.loads(data[5:])\n"
            "body['search'] = entries\n"
            "open(path, 'wb').write(data[:5] + json.dumps(body).encode())\n") if works else ""
    script.write_text(f"#!{sys.executable}\n{body}")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def _binary(root: Path, name: str, search: list[str]) -> SearchPath:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(MAGIC + json.dumps({"needed": [], "search": search}).encode())
    return SearchPath(binary=name, folders=("pkg/lib",), entries=("@here",))


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, list[SearchPath]]:
    root = tmp_path / "root"
    return root, [_binary(root, "pkg/lib/libwrong.toy", ["/home/ci/build/lib"]),
                  _binary(root, "pkg/lib/libright.toy", ["@here"])]


def test_the_plan_is_data_and_edits_only_what_differs(
        tmp_path: Path, layout: tuple[Path, list[SearchPath]]) -> None:
    root, search_paths = layout
    platform = ToyPlatform(_tool(tmp_path, works=True))
    before = {path: path.read_bytes() for path in root.rglob("*.toy")}
    planned = platform.plan_edits(root, search_paths)
    assert {path: path.read_bytes() for path in root.rglob("*.toy")} == before  # nothing ran
    assert [(edit.entry.binary, edit.steps) for edit in planned.binaries] == [
        ("pkg/lib/libwrong.toy", (("--search", "@here"),)), ("pkg/lib/libright.toy", ())]
    assert apply(planned, root, platform, host=Host.current()) == ["pkg/lib/libwrong.toy"]
    # every binary is held to the decision: the edited one as read again after the edit
    assert platform.checked == [("pkg/lib/libwrong.toy", ("@here",)),
                                ("pkg/lib/libright.toy", ("@here",))]
    assert read_binary(root / "pkg/lib/libwrong.toy", readers=(ToyReader(),)).runpath == (
        "@here",)
    assert (root / "pkg/lib/libright.toy").read_bytes() == before[root / "pkg/lib/libright.toy"]


def test_an_edit_tool_that_leaves_the_file_wrong_stops_the_fix_up(
        tmp_path: Path, layout: tuple[Path, list[SearchPath]]) -> None:
    root, search_paths = layout
    platform = ToyPlatform(_tool(tmp_path, works=False))
    with pytest.raises(ToolError, match="libwrong.toy after the fix-up"):
        fix_up(platform, root, search_paths, host=Host.current())  # type: ignore[arg-type]


def test_no_planned_edit_needs_no_tool(tmp_path: Path) -> None:
    root = tmp_path / "root"
    search_paths = [_binary(root, "pkg/lib/libright.toy", ["@here"])]
    platform = ToyPlatform(tmp_path / "absent-tool")
    assert fix_up(platform, root, search_paths, host=Host.current()) == []  # type: ignore[arg-type]
    assert not os.path.exists(tmp_path / "absent-tool")
