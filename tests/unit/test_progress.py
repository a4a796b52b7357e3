"""Long steps say so before and after (release/progress.py): a tool-cache entry being made
logs a line when it starts and one with its time and size when it is done (or failed), on the
logger the test suite writes to the terminal past its capture (tests/progress.py)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from release import progress
from release.toolchain import toolcache


def test_making_a_cache_entry_is_said_before_and_after_with_its_size(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    def make(partial: Path) -> None:
        (partial / "payload").write_bytes(b"x" * 3_000_000)

    with caplog.at_level(logging.INFO, logger=progress.log.name):
        toolcache.provision(tmp_path / "entry", make, what="the demo seed", describes={})
        toolcache.provision(tmp_path / "entry", make, what="the demo seed", describes={})
    lines = [record.getMessage() for record in caplog.records
             if record.name == progress.log.name]
    assert len(lines) == 2, lines      # made once; the second call finds it
    assert lines[0].startswith("making the demo seed in ")
    assert lines[0].endswith(": started; this can take minutes")
    assert " done in " in lines[1] and lines[1].endswith(" s, 3 MB")


def test_a_failed_step_says_after_how_long(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger=progress.log.name), \
            pytest.raises(RuntimeError):
        with progress.long_step("the demo download"):
            raise RuntimeError("cut")
    assert [record.getMessage().split(" after ")[0] for record in caplog.records][-1] == \
        "the demo download: failed"


def test_the_suite_shows_long_steps_past_its_capture(pytestconfig: pytest.Config) -> None:
    assert any(type(handler).__name__ == "_TerminalHandler"
               for handler in progress.log.handlers)
    assert progress.log.getEffectiveLevel() <= logging.INFO
