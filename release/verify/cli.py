"""``python -m release verify``: its arguments and exit codes (0 ok, 7 findings, 8 no finding
but a check the environment kept from running, others: the ReleaseError subclass' code).
The subcommand is one of ``release.__main__``'s, with its one error handler: every
ReleaseError becomes one line, never a traceback. The argument is classified (a file, a zip)
before the checks, the platforms or any tool are even imported."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

from release.distribution.archive import Limits
from release.errors import ConfigurationError, EnvironmentFailure, VerificationFailed
from release.verify.argument import classify
from release.verify.options import VerifyOptions
from release.verify.sandbox import ResourceLimits


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("wheel", type=Path, help="the .whl file")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--static", action="store_true",
                        help="only checks that read files (no loading, no CMake, nothing "
                             "provisioned)")
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
    parser.add_argument("--trust-wheel", action="store_true",
                        help="run the wheel's code (imports, loads, CMake, example programs) "
                             "unsandboxed, with your rights and the network (default: in a "
                             "bubblewrap sandbox, refused where none can be made)")
    parser.add_argument("--allow-startup-hook", action="append", default=[], metavar="NAME",
                        help="a .pth file, sitecustomize module or interpreter-named script "
                             "the wheel is meant to install (repeat): a note, not an error")
    parser.add_argument("--deadline", type=float, default=ResourceLimits.deadline,
                        metavar="SECONDS",
                        help="time for all the wheel's code one full verify runs (default "
                             f"{ResourceLimits.deadline:g}); past it the running check stops "
                             "and the wheel is blamed")
    parser.add_argument("--provider", action="append", default=[], metavar="NAME",
                        help="a variant provider package whose checks also run (repeat; the "
                             "wheel's build record names its own)")


def options_from(arguments: argparse.Namespace) -> VerifyOptions:
    if (arguments.load_timeout <= 0 or arguments.workers < 1 or arguments.max_pairs < 0
            or not 0 < arguments.deadline < 10 ** 7):
        raise ConfigurationError("verify: --load-timeout, --workers, --max-pairs and "
                                 "--deadline must be positive", fix="pass positive numbers")
    return VerifyOptions(heuristic_ownership=arguments.heuristic_ownership,
                         load_timeout=arguments.load_timeout, max_pairs=arguments.max_pairs,
                         workers=arguments.workers, sites=tuple(arguments.site),
                         offline=arguments.offline,
                         build_paths=tuple(str(p) for p in arguments.build_path),
                         providers=tuple(arguments.provider),
                         sandbox="off" if arguments.trust_wheel else "require",
                         resources=ResourceLimits(deadline=arguments.deadline),
                         limits=Limits(startup_hooks=tuple(arguments.allow_startup_hook)))


def run(arguments: argparse.Namespace, out: TextIO) -> int:
    """The ``verify`` command: classify the argument, verify, print, choose the exit code."""
    options = options_from(arguments)
    argument = classify(arguments.wheel)
    from release.verify.api import verify_argument  # the checks and platforms, once needed
    report = verify_argument(argument, static=arguments.static, options=options)
    out.write(json.dumps(report.to_json(), indent=2, default=str) + "\n" if arguments.json
              else report.render_text() + "\n")
    if not report.ok:
        return VerificationFailed.exit_code
    if report.unchecked():
        return EnvironmentFailure.exit_code   # no fault found, but not everything could run
    return 0
