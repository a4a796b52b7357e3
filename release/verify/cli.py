"""``python -m release verify``: argument parsing and exit codes (0 ok, 7 findings, 8 no
finding but a check the environment kept from running, others: the ReleaseError subclass'
code). Every ReleaseError becomes one line, never a traceback."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from release.errors import (
    ConfigurationError,
    EnvironmentFailure,
    ReleaseError,
    VerificationFailed,
)
from release.verify.api import verify_wheel
from release.verify.options import VerifyOptions
from release.verify.run import ENVIRONMENT


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise ConfigurationError(f"verify: {message}", fix="see `python -m release verify -h`")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m release verify", description="Verify a wheel.")
    parser.add_argument("wheel", type=Path, help="the .whl file")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--static", action="store_true",
                        help="only checks that read files (no loading, no CMake)")
    parser.add_argument("--heuristic-ownership", action="store_true",
                        help="infer operator ownership from strings (wheels without a record)")
    parser.add_argument("--load-timeout", type=float, default=60.0, metavar="SECONDS",
                        help="limit per load-matrix process (default 60)")
    parser.add_argument("--max-pairs", type=int, default=400,
                        help="cap on load-matrix candidate pairs (default 400)")
    parser.add_argument("--workers", type=int, default=2, help="parallel workers (default 2)")
    parser.add_argument("--site", type=Path, action="append", default=[], metavar="DIR",
                        help="a site-packages folder holding declared dependencies (repeat); "
                             "those it lacks are provisioned from the package index")
    parser.add_argument("--offline", action="store_true",
                        help="never provision declared dependencies: the load checks that "
                             "need one not in --site are 'not run (environment)'")
    parser.add_argument("--build-path", action="append", default=[], metavar="DIR",
                        help="a build or source folder that must not appear in files (repeat)")
    parser.add_argument("--project", type=Path, default=None, metavar="DIR",
                        help="project whose [tool.release] names the variant providers whose "
                             "checks also run (default: this release tool's own project)")
    return parser


def options_from(arguments: argparse.Namespace) -> VerifyOptions:
    if arguments.load_timeout <= 0 or arguments.workers < 1 or arguments.max_pairs < 0:
        raise ConfigurationError("verify: --load-timeout, --workers and --max-pairs must be "
                                 "positive", fix="pass positive numbers")
    return VerifyOptions(heuristic_ownership=arguments.heuristic_ownership,
                         load_timeout=arguments.load_timeout, max_pairs=arguments.max_pairs,
                         workers=arguments.workers, sites=tuple(arguments.site),
                         offline=arguments.offline,
                         build_paths=tuple(str(p) for p in arguments.build_path))


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None,
         stderr: TextIO | None = None) -> int:
    out, err = stdout or sys.stdout, stderr or sys.stderr
    try:
        arguments = build_parser().parse_args(argv)
        if not arguments.wheel.is_file():
            raise ConfigurationError(f"verify: {arguments.wheel} is not a file",
                                     fix="pass the path of a .whl file")
        report = verify_wheel(arguments.wheel, static=arguments.static,
                              options=options_from(arguments), project=arguments.project)
    except ReleaseError as error:
        err.write(f"error: {error.message}\n")
        return error.exit_code
    except OSError as error:  # e.g. no space left in TMPDIR for the extraction
        where = f"{error.filename}: " if error.filename else ""
        err.write(f"error: {where}{error.strerror or error} (fix: check the free space in "
                  "TMPDIR and the wheel's path)\n")
        return EnvironmentFailure.exit_code
    out.write(json.dumps(report.to_json(), indent=2, default=str) + "\n" if arguments.json
              else report.render_text() + "\n")
    if not report.ok:
        return VerificationFailed.exit_code
    if ENVIRONMENT in report.checks.values():
        return EnvironmentFailure.exit_code   # no fault found, but not everything could run
    return 0
