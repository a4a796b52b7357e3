"""Command line: ``python -m release build|repair|verify|plan|check-set``.

The only place that prints and exits: every ReleaseError (bad arguments included) becomes
one line on stderr and its exit code. Each command imports what it needs when it runs, so a
bad argument is refused at once."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from release.build_options import Form, Stage, VerifyMode
from release.errors import (
    ConfigurationError,
    EnvironmentFailure,
    ReleaseError,
    VerificationFailed,
)


class _Parser(argparse.ArgumentParser):
    """Bad arguments are a ConfigurationError: one line and exit 2, like every failure."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise ConfigurationError(f"{self.prog}: {message}",
                                 fix=f"see `{self.prog} --help`")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m release",
                     description="Build, repair and verify edgert wheels.")
    parser.add_argument("-v", "--verbose", action="store_true", help="show every command run")
    commands = parser.add_subparsers(dest="command", required=True)

    build = commands.add_parser("build", help="configure, build, install, lay out, fix up, pack, "
                                  "repair, verify")
    build.add_argument("--platform", required=True, help="linux, macos or windows")
    build.add_argument("--arch", help="target architecture (default: this machine's)")
    build.add_argument("--variant", help="cpu, cu12 or cu13 (default: cpu)")
    build.add_argument("--out", type=Path, dest="out_dir", help="output folder (default: dist)")
    build.add_argument("--build-dir", type=Path, help="CMake build folder (kept for reuse)")
    build.add_argument("--project", type=Path, default=Path("."), help="folder of pyproject.toml")
    build.add_argument("--until", choices=[s.option for s in Stage], default="verify",
                       help="last stage to run (pack: the wheel before repair; an earlier "
                            "stage writes no wheel)")
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
    build.add_argument("--allow-unchecked", action="store_true",
                       help="publish the wheel even when verify could not run a check on this "
                            "machine ('not run (environment)'; without it the build exits 8)")
    build.add_argument("--form", choices=[f.value for f in Form],
                       help="separate (the default: the variant's own distribution, e.g. "
                            "edgert-cu12) or variant (a PEP 825 variant wheel of the one "
                            "edgert distribution, and the variants.json index beside it)")
    build.add_argument("--json", action="store_true", help="print a machine-readable summary")

    build.epilog = ("Each option can also come from the environment (RELEASE_ARCH, "
                    "RELEASE_VARIANT, RELEASE_OUT, RELEASE_BUILD_DIR, RELEASE_VERIFY, "
                    "RELEASE_JOBS, RELEASE_CACHE_DIR, RELEASE_CCACHE, RELEASE_FORM) or from "
                    "[tool.release.defaults]; the command line wins.")

    repair = commands.add_parser(
        "repair", help="repair a wheel this pipeline built",
        description="Runs the platform's repair tool on a wheel this pipeline built (its build "
                    "record says which libraries are our own, never renamed or copied, and "
                    "which come from declared dependencies, never grafted) and re-packs it "
                    "reproducibly; repairing a repaired wheel changes nothing.")
    repair.add_argument("wheel", type=Path,
                        help="the .whl file to repair (one with edgert/_release.json)")
    repair.add_argument("-w", "--wheel-dir", type=Path, default=Path("dist"),
                        help="folder the repaired wheel is written to (default: dist)")
    repair.add_argument("--json", action="store_true",
                        help="print the repaired wheel's path as JSON ({\"version\": 1, "
                             "\"wheel\": PATH})")

    from release.verify.cli import add_arguments
    add_arguments(commands.add_parser(
        "verify", help="prove a wheel is what it claims (docs/verify.md)",
        description="Verify a wheel: its file, its metadata, every shipped binary against the "
                    "loader of the platform its file name promises, and (without --static) "
                    "load and build checks. Exit 0 ok, 7 errors found, 8 a check this "
                    "machine could not run, 5 unreadable or unsafe, 2 bad arguments."))
    _add_plan(commands)
    _add_check_set(commands)
    return parser


def _add_plan(commands: argparse._SubParsersAction[_Parser]) -> None:
    plan = commands.add_parser(
        "plan", help="the release matrix: every target x variant, and how each is built",
        description="Prints every target x variant the manifest releases, the runner that "
                    "builds it in the release workflow (or 'not buildable yet') and how this "
                    "host would build it (native, cross+emulated, needs another host). "
                    "--build builds every one this host can reach; --json is the workflow's "
                    "input.")
    plan.add_argument("--project", type=Path, default=Path("."), help="folder of pyproject.toml")
    plan.add_argument("--json", action="store_true",
                      help="the matrix and the workflow's jobs as JSON (docs/release.md)")
    plan.add_argument("--build", action="store_true",
                      help="build, repair and verify every entry this host can reach")
    plan.add_argument("--out", type=Path, dest="out_dir", help="output folder (default: dist)")
    plan.add_argument("-j", "--jobs", type=int, help="parallel compile jobs (default: cores)")
    plan.add_argument("--cache-dir", type=Path, help="tool cache (default: "
                      "~/.cache/edgert-release)")
    plan.add_argument("--allow-unchecked", action="store_true",
                      help="publish wheels even when verify could not run a check here")


def _add_check_set(commands: argparse._SubParsersAction[_Parser]) -> None:
    check = commands.add_parser(
        "check-set", help="check a release's wheels and sdist as a whole before publishing",
        description="Every buildable target x variant has one wheel, one version everywhere, "
                    "CUDA requirements declared, claimed compute capabilities covered, "
                    "verify --static on every wheel; what is not buildable yet is listed.")
    check.add_argument("folder", type=Path, help="the folder holding the release's files")
    check.add_argument("--project", type=Path, default=Path("."), help="folder of pyproject.toml")
    check.add_argument("--expect-version", help="the version the release must have (the tag's)")
    check.add_argument("--write-variants-json", action="store_true",
                       help="first (re)write the variants.json index of the folder's variant "
                            "wheels (PEP 825) from their variant.json files")
    check.add_argument("--json", action="store_true", help="print the report as JSON")


def _build(arguments: argparse.Namespace, out: TextIO) -> int:
    from release import build_options
    from release import manifest as manifest_module
    from release.building.pipeline import run as run_pipeline
    from release.host import Host
    manifest = manifest_module.load(arguments.project.resolve())
    given = {setting.field: getattr(arguments, setting.field)
             for setting in build_options.SETTINGS}
    options = build_options.resolve(
        platform=arguments.platform, given=given, manifest_defaults=manifest.defaults,
        environ=os.environ, last_stage=Stage.named(arguments.until),
        cmake_arguments=tuple(arguments.cmake_arguments),
        allow_unchecked=arguments.allow_unchecked)
    result = run_pipeline(manifest, options, host=Host.current())
    if arguments.json:
        out.write(json.dumps(result.to_json(), indent=2) + "\n")
    elif result.wheel is not None:
        out.write(f"wheel: {result.wheel}\n")
        if result.variants_json is not None:
            out.write(f"variants.json: {result.variants_json}\n")
    return 0


def _plan(arguments: argparse.Namespace, out: TextIO) -> int:
    from release import build_options
    from release import manifest as manifest_module
    from release.building import matrix
    from release.host import Host
    manifest = manifest_module.load(arguments.project.resolve())
    entries = matrix.release_matrix(manifest, Host.current())
    if not arguments.build:
        out.write((json.dumps(matrix.to_json(manifest, entries), indent=2) if arguments.json
                   else matrix.render_text(manifest, entries)) + "\n")
        return 0
    given = {"out_dir": arguments.out_dir, "jobs": arguments.jobs,
             "cache_dir": arguments.cache_dir}

    def options_for(entry: matrix.MatrixEntry) -> build_options.BuildOptions:
        chosen = {**given, "arch": entry.target.arch, "variant": entry.variant.name}
        return build_options.resolve(
            platform=entry.target.platform, given=chosen, manifest_defaults=manifest.defaults,
            environ=os.environ, allow_unchecked=arguments.allow_unchecked)

    outcomes = matrix.build_reachable(manifest, entries, options_for)
    if arguments.json:
        out.write(json.dumps({"version": matrix.JSON_VERSION,
                              "results": [outcome.to_json() for outcome in outcomes]},
                             indent=2) + "\n")
    else:
        out.write("\n".join(f"{o.entry.name}: {o.status}" for o in outcomes) + "\n")
    failed = [o.error for o in outcomes if o.error is not None]
    return failed[0].exit_code if failed else 0


def _check_set(arguments: argparse.Namespace, out: TextIO) -> int:
    from release import manifest as manifest_module
    from release.host import Host
    from release.release_set import check_release_set
    manifest = manifest_module.load(arguments.project.resolve())
    report = check_release_set(arguments.folder, manifest, host=Host.current(),
                               expect_version=arguments.expect_version,
                               write_index=arguments.write_variants_json)
    out.write((json.dumps(report.to_json(), indent=2) if arguments.json
               else report.render_text()) + "\n")
    return 0 if report.ok else VerificationFailed.exit_code


def _repair(arguments: argparse.Namespace, out: TextIO) -> int:
    from release.building.repair import repair_wheel
    from release.distribution import wheel
    wheel.source_date_epoch(os.environ)   # refused here, before the repair tool reads it
    repaired = repair_wheel(arguments.wheel, arguments.wheel_dir, environ=dict(os.environ))
    if arguments.json:
        out.write(json.dumps({"version": 1, "wheel": str(repaired)}) + "\n")
    else:
        out.write(f"wheel: {repaired}\n")
    return 0


def _verify(arguments: argparse.Namespace, out: TextIO) -> int:
    from release.verify.cli import run
    return run(arguments, out)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, handled like Ctrl-C: stages unwind, children are terminated,
    scratch folders are removed."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated(signum)


def _on_disk(arguments: argparse.Namespace | None) -> str:
    """What an interrupted command leaves, exactly: a signal that lands after a wheel was
    renamed into place must not be told as "no wheel was written"."""
    from release.building import buildfolder
    command = arguments.command if arguments is not None else None
    if arguments is not None and command == "repair":
        return (f"a repaired wheel in {arguments.wheel_dir} is complete (it is renamed into "
                "place whole); nothing else was written")
    if command not in ("build", "plan"):
        return "nothing was written"
    done = buildfolder.published()
    if not done:
        return "no wheel was written"
    names = ", ".join(str(path) for path in done)
    return (f"the wheel {names} was published complete before the signal" if len(done) == 1
            else f"the wheels {names} were published complete before the signal")


TEMPORARY_PREFIX = "edgert-release."


@contextlib.contextmanager
def process_temporary_folder() -> Iterator[None]:
    """A temporary folder of this process (in TMPDIR, named for its pid) that its own scratch
    and every program it runs use (TMPDIR), removed at the end; folders of processes that no
    longer exist (killed outright, so nothing removed them) are removed first. A repair
    tool's unpacked wheel therefore never outlives the run, even after SIGKILL."""
    from release.building import buildfolder
    base = Path(tempfile.gettempdir())
    with contextlib.suppress(OSError):   # (another run may be removing the same folders)
        for stale in list(base.glob(TEMPORARY_PREFIX + "*")):
            pid = stale.name[len(TEMPORARY_PREFIX):].split(".", 1)[0]
            with contextlib.suppress(OSError):
                if (pid.isdigit() and not buildfolder.process_alive(int(pid))
                        and stale.is_dir() and not stale.is_symlink() and _owned(stale)):
                    shutil.rmtree(stale, ignore_errors=True)
    try:
        folder = Path(tempfile.mkdtemp(prefix=f"{TEMPORARY_PREFIX}{os.getpid()}.", dir=base))
    except OSError:   # an unwritable TMPDIR: each step then says so where it writes
        yield
        return
    saved_environ, saved_tempdir = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"], tempfile.tempdir = str(folder), str(folder)
    try:
        yield
    finally:
        tempfile.tempdir = saved_tempdir
        if saved_environ is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved_environ
        shutil.rmtree(folder, ignore_errors=True)


def _owned(path: Path) -> bool:
    getuid = getattr(os, "getuid", None)
    return getuid is None or path.stat().st_uid == getuid()


_COMMANDS = {"build": _build, "repair": _repair, "verify": _verify, "plan": _plan,
             "check-set": _check_set}


def _handle_signals() -> None:
    for handled in (signal.SIGTERM, signal.SIGHUP):
        try:
            signal.signal(handled, _raise_terminated)
        except ValueError:   # not the main thread (a caller's own thread): theirs to handle
            return


def report_error(error: ReleaseError, err: TextIO) -> int:
    """The one way a ReleaseError leaves the program: one line on ``err``, ``error: what
    (fix: how)``, and the exit code of its cause (docs/concepts.md). The PEP 517 backend's
    hooks, which a build frontend calls in its own process, and the maintainers' scripts
    (platforms/linux/update_policies.py) end through it too."""
    err.write(f"error: {error.message}\n")
    return error.exit_code


def main(argv: list[str] | None = None, *, stdout: TextIO | None = None,
         stderr: TextIO | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    out, err = stdout or sys.stdout, stderr or sys.stderr
    verbose = "-v" in argv or "--verbose" in argv
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="[release] %(message)s", stream=sys.stderr)
    _handle_signals()
    arguments: argparse.Namespace | None = None
    try:
        arguments = _parser().parse_args(argv)
        with process_temporary_folder():
            return _COMMANDS[arguments.command](arguments, out)
    except ReleaseError as error:
        return report_error(error, err)
    except KeyboardInterrupt as interrupt:
        signum = interrupt.signum if isinstance(interrupt, Terminated) else signal.SIGINT.value
        err.write(f"error: interrupted ({signal.Signals(signum).name}); "
                  f"{_on_disk(arguments)}\n")
        return 128 + signum
    except OSError as error:  # the edge: anything the commands did not already explain
        where = f"{error.filename}: " if error.filename else ""
        err.write(f"error: {where}{error.strerror or error} (fix: check the path, its "
                  "permissions, the free space in TMPDIR and on the disk)\n")
        return EnvironmentFailure.exit_code


if __name__ == "__main__":
    sys.exit(main())
