"""The fix-up stage, one path for every platform: the platform plans the edits that give
each shipped binary its decided search path (``Platform.plan_edits``: data read from the
files, nothing run), ``apply`` runs them, reads each edited file again through the
platform's own reader and holds every binary to the decision (``Platform.check_fixed``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from release.binary import read_binary
from release.host import Host
from release.platform import Edits, Platform, SearchPath
from release.toolchain import commands


def fix_up(platform: Platform, root: Path, search_paths: Sequence[SearchPath], *,
           host: Host) -> list[str]:
    """Plans and applies the edits of ``search_paths`` to the binaries under ``root``;
    returns the files it changed."""
    return apply(platform.plan_edits(root, search_paths), root, platform, host=host)


def apply(edits: Edits, root: Path, platform: Platform, *, host: Host) -> list[str]:
    """Runs ``edits`` on the files under ``root`` with ``host``'s edit tool, reads each
    edited file again and checks every binary against its decision; returns the files
    it changed."""
    changed = []
    tool = None
    readers = (platform.reader,) if platform.reader is not None else ()
    for edit in edits.binaries:
        info = edit.found
        if edit.steps:
            tool = tool or platform.edit_tool(edits.tool, host=host)
            path = root / edit.entry.binary
            for step in edit.steps:
                commands.run([tool, *step, path], what=f"{edits.tool} on {edit.entry.binary}",
                         fix="read the tool's message above")
            info = platform.after_edit(path, read_binary(path, readers=readers), host=host)
            changed.append(edit.entry.binary)
        platform.check_fixed(info, edit.entry)
    return changed
