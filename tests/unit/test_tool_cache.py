"""Tool-cache entries are complete or absent: a folder pip was killed in the middle of (no
completion marker) is discarded and installed again, a failed install leaves nothing behind
and is the environment's failure, not the wheel's; processes that start together provision
an entry once (a lock), say what they download, and leave nothing in TMPDIR. pip is replaced
by a stand-in here."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from release import _cmd, tools
from release.errors import CommandError, EnvironmentFailure

REQUIREMENT = "demo-tool==1.0"
# taken before this tier's fixture refuses build tools: pip itself is the stand-in below
pip_tool = tools.pip_tool


def _fake_pip(calls: list[Path], *, fail: bool = False,  # type: ignore[no-untyped-def]
              pause: float = 0.0, environments: list[dict[str, str]] | None = None):
    def run(command: list[object], env: dict[str, str] | None = None, **_: object) -> str:
        target = Path(str(command[command.index("--target") + 1]))
        calls.append(target)
        if environments is not None:
            environments.append(dict(env or {}))
        time.sleep(pause)
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
    left = sorted(path.name for path in (tmp_path / "tools").iterdir())
    assert left == ["demo_tool_1.0.lock"]       # neither the entry nor .partial: the lock file


def test_processes_that_start_together_provision_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Four callers at once (each with its own lock handle, as separate processes have):
    pip runs once, the others wait and use what it made."""
    calls: list[Path] = []
    monkeypatch.setattr(_cmd, "run", _fake_pip(calls, pause=0.1))
    found: list[Path] = []
    workers = [threading.Thread(target=lambda: found.append(
        pip_tool(REQUIREMENT, "bin/demo", cache=tmp_path))) for _ in range(4)]
    with caplog.at_level("INFO", logger="release"):
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    assert len(calls) == 1 and len(set(found)) == 1 and found[0].is_file()
    assert "waiting for another process that is provisioning demo-tool==1.0" in caplog.text


def test_provisioning_says_what_and_how_big_and_keeps_pip_scratch_in_the_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    calls: list[Path] = []
    environments: list[dict[str, str]] = []
    monkeypatch.setattr(_cmd, "run", _fake_pip(calls, environments=environments))
    with caplog.at_level("INFO", logger="release"):
        binary = pip_tool(REQUIREMENT, "bin/demo", cache=tmp_path)
    assert "downloading demo-tool==1.0 from the package index into" in caplog.text
    assert f"demo-tool==1.0: 0 kB in {binary.parents[1]}" in caplog.text
    (environment,) = environments
    assert Path(environment["TMPDIR"]).parent == calls[0]     # inside the partial folder
    assert not (binary.parents[1] / ".tmp").exists()
