"""The one way the pipeline runs a program: find it, echo it, run it, fail with context.

Each program runs in its own process group; if the pipeline is interrupted (Ctrl-C,
SIGTERM, SIGHUP) or a timeout passes, the whole group is terminated before the error goes
on, so no compiler, ninja or auditwheel outlives the build that started it."""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from release.errors import CommandError, ToolError

log = logging.getLogger("release")

_OUTPUT_TAIL = 4000


def find_tool(name: str, *, fix: str) -> str:
    """Absolute path of an executable on PATH, or a ToolError naming how to install it."""
    found = shutil.which(name)
    if found is None:
        raise ToolError(f"required tool '{name}' was not found on PATH", fix=fix)
    return found


def run(
    command: Sequence[str | os.PathLike[str]],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    what: str | None = None,
    fix: str = "",
    capture: bool = True,
    timeout: float | None = None,
    stderr: Literal["merge", "separate"] = "merge",
) -> str:
    """Runs ``command``; returns its output. Raises CommandError on a non-zero exit.

    ``env`` entries are added to (not replace) the current environment. ``stderr="merge"``
    returns stdout and stderr together; ``"separate"`` returns stdout alone (stderr still
    lands in the error on failure), for programs whose stdout is compared byte for byte.
    """
    argv = [os.fspath(part) for part in command]
    log.debug("$ %s", shlex.join(argv))
    full_env = None if env is None else {**os.environ, **env}
    try:
        process = subprocess.Popen(
            argv, cwd=cwd, env=full_env, stdout=subprocess.PIPE if capture else None,
            stderr=(subprocess.STDOUT if stderr == "merge" else subprocess.PIPE)
            if capture else None, text=True, errors="replace", start_new_session=True)
    except FileNotFoundError as error:
        raise ToolError(f"cannot run '{argv[0]}': {error.strerror}", fix=fix or
                        f"install {Path(argv[0]).name} or put it on PATH") from None
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _terminate_group(process)
        raise CommandError(f"{what or argv[0]} did not finish within {timeout} s",
                           command=argv, returncode=-1, output="", fix=fix) from None
    except BaseException:
        _terminate_group(process)
        raise
    completed = subprocess.CompletedProcess(argv, process.returncode, out, err)
    output = completed.stdout or ""
    if completed.returncode != 0:
        tail = (output + (completed.stderr or ""))[-_OUTPUT_TAIL:].strip()
        summary = tail.splitlines()[-1] if tail else "no output"
        name = what or Path(argv[0]).name
        raise CommandError(
            f"{name} failed with exit status {completed.returncode}: {summary}",
            command=argv, returncode=completed.returncode, output=tail, fix=fix)
    return output


def _terminate_group(process: subprocess.Popen[str]) -> None:
    """SIGTERM to the program's process group, SIGKILL after a grace period."""
    for sig, grace in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=grace)
            break
        except subprocess.TimeoutExpired:
            continue
    try:
        os.killpg(process.pid, signal.SIGKILL)  # stragglers the leader left behind
    except ProcessLookupError:
        pass
