"""Tool-cache entries are complete or absent: a folder pip was killed in the middle of (no
completion marker) is discarded and installed again, a failed install leaves nothing behind
and is the environment's failure, not the wheel's. pip is replaced by a stand-in here."""

from __future__ import annotations

from pathlib import Path

import pytest

from release import _cmd, tools
from release.errors import CommandError, EnvironmentFailure

REQUIREMENT = "demo-tool==1.0"
# taken before this tier's fixture refuses build tools: pip itself is the stand-in below
pip_tool = tools.pip_tool


def _fake_pip(calls: list[Path], *, fail: bool = False):  # type: ignore[no-untyped-def]
    def run(command: list[object], **_: object) -> str:
        target = Path(str(command[command.index("--target") + 1]))
        calls.append(target)
        (target / "bin").mkdir(parents=True)
        (target / "bin" / "demo").write_text("#!/bin/sh\n")
        if fail:   # pip dies after writing part of the tree
            raise CommandError("pip install demo-tool==1.0 failed",
                               command=[str(part) for part in command], returncode=1,
                               output="Killed")
        return ""
    return run


def test_a_complete_entry_is_used_as_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Path] = []
    monkeypatch.setattr(_cmd, "run", _fake_pip(calls))
    first = pip_tool(REQUIREMENT, "bin/demo", cache=tmp_path)
    assert pip_tool(REQUIREMENT, "bin/demo", cache=tmp_path) == first
    assert len(calls) == 1 and (first.parents[1] / tools.COMPLETE_MARKER).is_file()


def test_a_half_deleted_entry_is_installed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    calls: list[Path] = []
    monkeypatch.setattr(_cmd, "run", _fake_pip(calls))
    binary = pip_tool(REQUIREMENT, "bin/demo", cache=tmp_path)
    (binary.parents[1] / tools.COMPLETE_MARKER).unlink()        # half deleted by hand
    assert pip_tool(REQUIREMENT, "bin/demo", cache=tmp_path) == binary
    assert len(calls) == 2 and "discarding the incomplete tool folder" in caplog.text
    binary.unlink()                                             # the marker stays, the tool is gone
    assert pip_tool(REQUIREMENT, "bin/demo", cache=tmp_path).is_file()
    assert len(calls) == 3


def test_a_failed_install_leaves_nothing_and_blames_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Path] = []
    monkeypatch.setattr(_cmd, "run", _fake_pip(calls, fail=True))
    with pytest.raises(EnvironmentFailure, match="demo-tool") as caught:
        pip_tool(REQUIREMENT, "bin/demo", cache=tmp_path)
    assert "package index" in caught.value.fix
    assert not any((tmp_path / "tools").iterdir())              # neither the entry nor .partial
