"""Long steps shown during the test run: what the pipeline logs on ``release.long_steps``
(release/progress.py: a tool-cache entry made once, such as zig's cache seed or a toolchain
download, a first cross configure; the pinned test downloads of tests/downloads.py) is written
to the terminal as it happens, past pytest's capture of output and logs, one line before and
one after with the time and the size. A pytest plugin: tests/conftest.py loads it."""

from __future__ import annotations

import contextlib
import logging
import sys

import pytest

from release import progress

_HANDLER = pytest.StashKey[logging.Handler]()


class _TerminalHandler(logging.Handler):
    def __init__(self, config: pytest.Config) -> None:
        super().__init__(logging.INFO)
        self.config = config

    def emit(self, record: logging.LogRecord) -> None:
        line = f"[edgert long step] {record.getMessage()}"
        plugins = self.config.pluginmanager
        reporter = plugins.get_plugin("terminalreporter")
        capture = plugins.get_plugin("capturemanager")
        # the terminal itself, not the capture a test's output goes to
        with capture.global_and_fixture_disabled() if capture is not None else \
                contextlib.nullcontext():
            if reporter is None:   # no terminal (-p no:terminal): the real stderr
                print(line, file=sys.stderr, flush=True)
                return
            reporter.ensure_newline()
            reporter.write(line + "\n", flush=True, yellow=True)


def pytest_configure(config: pytest.Config) -> None:
    handler = _TerminalHandler(config)
    config.stash[_HANDLER] = handler
    progress.log.addHandler(handler)
    if progress.log.getEffectiveLevel() > logging.INFO:
        progress.log.setLevel(logging.INFO)


def pytest_unconfigure(config: pytest.Config) -> None:
    handler = config.stash.get(_HANDLER, None)
    if handler is not None:
        progress.log.removeHandler(handler)
