"""Command line: ``python -m release build|repair|verify``.

The only place that prints and exits: every ReleaseError becomes one line on stderr and
its exit code."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
from pathlib import Path

from release import manifest as manifest_module
from release import options as build_options
from release.errors import EnvironmentFailure, ReleaseError
from release.options import Stage, VerifyMode
from release.pipeline import run as run_pipeline


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m release",
                                     description="Build, repair and verify edgert wheels.")
    parser.add_argument("-v", "--verbose", action="store_true", help="show every command run")
    commands = parser.add_subparsers(dest="command", required=True)

    build = commands.add_parser("build", help="configure, build, lay out, fix up, repair, verify")
    build.add_argument("--platform", required=True, help="linux, macos or windows")
    build.add_argument("--arch", help="target architecture (default: this machine's)")
    build.add_argument("--variant", help="cpu, cu12 or cu13 (default: cpu)")
    build.add_argument("--out", type=Path, dest="out_dir", help="output folder (default: dist)")
    build.add_argument("--build-dir", type=Path, help="CMake build folder (kept for reuse)")
    build.add_argument("--project", type=Path, default=Path("."), help="folder of pyproject.toml")
    build.add_argument("--until", choices=[s.name.lower() for s in Stage], default="verify",
                       help="last stage to run")
    build.add_argument("--verify", choices=[m.value for m in VerifyMode],
                       help="full (load and compile probes; the default), static (read files "
                            "only) or none")
    build.add_argument("-j", "--jobs", type=int, help="parallel compile jobs (default: cores)")
    build.add_argument("--cache-dir", type=Path, help="tool cache (default: "
                       "~/.cache/edgert-release)")
    build.add_argument("--no-ccache", dest="ccache", action="store_false", default=None,
                       help="do not use ccache even when installed")
    build.add_argument("--cmake-arg", action="append", default=[], dest="cmake_arguments",
                       help="extra argument for CMake configure (repeatable)")
    build.add_argument("--json", action="store_true", help="print a machine-readable summary")

    build.epilog = ("Each option can also come from the environment (RELEASE_ARCH, "
                    "RELEASE_VARIANT, RELEASE_OUT, RELEASE_BUILD_DIR, RELEASE_VERIFY, "
                    "RELEASE_JOBS, RELEASE_CACHE_DIR, RELEASE_CCACHE) or from "
                    "[tool.release.defaults]; the command line wins.")

    repair = commands.add_parser("repair", help="repair a wheel this pipeline built")
    repair.add_argument("wheel", type=Path)
    repair.add_argument("-w", "--wheel-dir", type=Path, default=Path("dist"))
    repair.add_argument("--json", action="store_true")

    commands.add_parser("verify", help="prove a wheel's native layout (see --help)",
                        add_help=False)
    return parser


def _build(arguments: argparse.Namespace) -> int:
    manifest = manifest_module.load(arguments.project.resolve())
    given = {setting.field: getattr(arguments, setting.field)
             for setting in build_options.SETTINGS}
    options = build_options.resolve(
        platform=arguments.platform, given=given, manifest_defaults=manifest.defaults,
        environ=os.environ, last_stage=Stage[arguments.until.upper()],
        cmake_arguments=tuple(arguments.cmake_arguments))
    result = run_pipeline(manifest, options)
    if arguments.json:
        print(json.dumps(result.to_json(), indent=2))
    elif result.wheel is not None:
        print(f"wheel: {result.wheel}")
    return 0


def _repair(arguments: argparse.Namespace) -> int:
    from release.repair import repair_wheel
    repaired = repair_wheel(arguments.wheel, arguments.wheel_dir, environ=dict(os.environ))
    if arguments.json:
        print(json.dumps({"version": 1, "wheel": str(repaired)}))
    else:
        print(f"wheel: {repaired}")
    return 0


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, handled like Ctrl-C: stages unwind, children are terminated,
    scratch folders are removed."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated(signum)


def _run(argv: list[str]) -> int:
    if "verify" in argv:
        position = argv.index("verify")
        if all(a.startswith("-") for a in argv[:position]):
            from release.verify import main as verify_main
            return verify_main(argv[position + 1:])
    arguments = _parser().parse_args(argv)
    return _build(arguments) if arguments.command == "build" else _repair(arguments)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    verbose = "-v" in argv or "--verbose" in argv
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="[release] %(message)s", stream=sys.stderr)
    for handled in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(handled, _raise_terminated)
    try:
        return _run(argv)
    except ReleaseError as error:
        print(f"error: {error.message}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt as interrupt:
        signum = interrupt.signum if isinstance(interrupt, Terminated) else signal.SIGINT.value
        print(f"error: interrupted ({signal.Signals(signum).name}); no wheel was written",
              file=sys.stderr)
        return 128 + signum
    except OSError as error:  # the edge: anything the stages did not already explain
        where = f"{error.filename}: " if error.filename else ""
        print(f"error: {where}{error.strerror or error} (fix: check the path, its permissions "
              "and the free disk space)", file=sys.stderr)
        return EnvironmentFailure.exit_code


if __name__ == "__main__":
    sys.exit(main())
