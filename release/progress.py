"""Steps that take minutes (a tool-cache entry made once: a toolchain download, zig's cache
seed, a wine prefix; a first cross configure) log one line before and one after, with the
time and the size, on the logger ``release.long_steps``. A front end that hides the rest of
the log shows these anyway: the test suite writes them to the terminal past pytest's capture
(tests/progress.py), so a long stretch of a run never looks hung."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator

log = logging.getLogger("release.long_steps")


@contextlib.contextmanager
def long_step(what: str, *, waiting_for: str = "started; this can take minutes",
              size: Callable[[], str] | None = None) -> Iterator[None]:
    """Logs ``what`` (and what it waits for) before the block and, after it, how long it
    took and (``size``) what it made; a failure is logged with its time too, and raised."""
    log.info("%s: %s", what, waiting_for)
    start = time.monotonic()
    try:
        yield
    except BaseException:
        log.info("%s: failed after %.0f s", what, time.monotonic() - start)
        raise
    made = f", {size()}" if size is not None else ""
    log.info("%s: done in %.0f s%s", what, time.monotonic() - start, made)
