"""``release.verify.main``: ``python -m release verify`` called in-process, for callers that
hold their own streams. It sits above the command line (``release.__main__``), which
imports the verify subcommand's arguments and run from ``release.verify.cli``."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

from release.__main__ import main as release_main


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None,
         stderr: TextIO | None = None) -> int:
    """``python -m release verify ARGV`` (default: this process's arguments)."""
    given = sys.argv[1:] if argv is None else list(argv)
    return release_main(["verify", *given], stdout=stdout, stderr=stderr)
