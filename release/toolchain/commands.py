"""The one way the pipeline runs a program: find it, echo it, run it, fail with context.

Each program runs in its own process group; if the pipeline is interrupted (Ctrl-C,
SIGTERM, SIGHUP) or a timeout passes, the whole group is terminated before the error goes
on, so no compiler, ninja or auditwheel outlives the build that started it. A build killed
outright (SIGKILL) cannot do that: every program it runs carries the build folder in its
environment, and the next build on that folder stops those still running (``stop_leftovers``)."""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Literal

from release.errors import (
    CommandError,
    EnvironmentCommandError,
    OutputLimitExceeded,
    ToolError,
)

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
    timeout: float | None = None,
    stderr: Literal["merge", "separate"] = "merge",
    diagnose: Callable[[str], str | None] | None = None,
    machine_faults: bool = False,
    output_limit: int | None = None,
) -> str:
    """Runs ``command``, its output captured; returns it. Raises CommandError on a non-zero
    exit.

    ``env`` entries are added to (not replace) the current environment. ``stderr="merge"``
    returns stdout and stderr together; ``"separate"`` returns stdout alone (stderr still
    lands in the error on failure), for programs whose stdout is compared byte for byte.
    On failure the error names the program's first error line (a compiler's
    ``file:line: error: ...``, a ``CMake Error``), else its last line, and the fix comes from
    what the output says about the machine (a full disk, no memory), else from
    ``diagnose(output)`` (a tool's own messages), else it is the caller's ``fix``. With
    ``machine_faults`` (a program whose output is ours, not a wheel's: a compile, a CMake
    probe), such a machine cause and a timeout raise EnvironmentCommandError (exit 8). With
    ``output_limit`` (characters, stdout and stderr together), a program that prints more is
    stopped and raises OutputLimitExceeded: what is kept never grows past the limit.
    """
    return _run(command, cwd=cwd, env=env, what=what, fix=fix, timeout=timeout,
                stderr=stderr, diagnose=diagnose, machine_faults=machine_faults,
                output_limit=output_limit)


def stream(
    command: Sequence[str | os.PathLike[str]],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    what: str | None = None,
    fix: str = "",
    diagnose: Callable[[str], str | None] | None = None,
    machine_faults: bool = False,
    show: Callable[[str], bool] | None = None,
) -> str:
    """``run``, with the output (stdout and stderr merged) copied to our stderr as it comes
    (a native build, a download: what people read while it runs and when it fails); with
    ``show``, only the lines ``show(line)`` accepts are copied. Returns the last lines."""
    return _run(command, cwd=cwd, env=env, what=what, fix=fix, diagnose=diagnose,
                machine_faults=machine_faults, shown=show or (lambda line: True))


def attached(command: Sequence[str | os.PathLike[str]], *,
             env: Mapping[str, str] | None = None, what: str | None = None) -> None:
    """``run`` with the program writing to our terminal itself (pip's progress bars):
    nothing is captured, so an error names only the exit status."""
    _run(command, cwd=None, env=env, what=what, fix="", diagnose=None, machine_faults=False,
         capture=False)


def _run(command: Sequence[str | os.PathLike[str]], *, cwd: Path | None,
         env: Mapping[str, str] | None, what: str | None, fix: str,
         timeout: float | None = None, stderr: Literal["merge", "separate"] = "merge",
         diagnose: Callable[[str], str | None] | None, machine_faults: bool,
         output_limit: int | None = None, shown: Callable[[str], bool] | None = None,
         capture: bool = True) -> str:
    """``run``, ``stream`` and ``attached``: ``shown`` None captures quietly; ``capture``
    False leaves the output on our terminal."""
    argv = [os.fspath(part) for part in command]
    log.debug("$ %s", shlex.join(argv))
    added = {**_CHILD_ENVIRONMENT, **(env or {})}
    full_env = {**os.environ, **added} if added else None
    try:
        process = subprocess.Popen(
            argv, cwd=cwd, env=full_env, stdout=subprocess.PIPE if capture else None,
            stderr=(subprocess.STDOUT if stderr == "merge" else subprocess.PIPE)
            if capture else None, text=True, errors="replace", start_new_session=True)
    except FileNotFoundError as error:
        raise ToolError(f"cannot run '{argv[0]}': {error.strerror}", fix=fix or
                        f"install {Path(argv[0]).name} or put it on PATH") from None
    try:
        if shown is not None:
            out, err = _stream(process, shown), None
        elif output_limit is not None:
            out, err = _bounded(process, timeout=timeout, limit=output_limit, argv=argv)
        else:
            out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _terminate_group(process)
        if machine_faults:
            raise EnvironmentCommandError(
                f"{what or argv[0]} did not finish within {timeout} s on this machine",
                command=argv, returncode=-1, output="",
                fix="run it on a less busy machine, or give it more time") from None
        raise CommandError(f"{what or argv[0]} did not finish within {timeout} s",
                           command=argv, returncode=-1, output="", fix=fix) from None
    except _Flooded:
        _terminate_group(process)
        raise OutputLimitExceeded(
            f"{what or argv[0]} printed more than {_size(output_limit or 0)} of output",
            command=argv, returncode=-2, output="",
            fix="print less: verify keeps at most that much of a program's output") from None
    except BaseException:
        _terminate_group(process)
        raise
    output = out or ""
    if process.returncode != 0:
        everything = output + (err or "")
        tail = everything[-_OUTPUT_TAIL:].strip()
        name = what or Path(argv[0]).name
        cause = machine_cause(everything)
        kind = EnvironmentCommandError if machine_faults and cause else CommandError
        raise kind(
            f"{name} failed with exit status {process.returncode}: {first_error(everything)}",
            command=argv, returncode=process.returncode, output=tail,
            fix=cause or (diagnose(everything) if diagnose else None) or fix)
    return output


def _stream(process: subprocess.Popen[str], show: Callable[[str], bool]) -> str:
    """Copies the program's output (the lines ``show`` accepts) to stderr line by line;
    returns it (the last lines)."""
    assert process.stdout is not None
    kept: collections.deque[str] = collections.deque(maxlen=_STREAM_LINES)
    for line in process.stdout:
        if show(line):
            sys.stderr.write(line)
            sys.stderr.flush()
        kept.append(line)
    process.wait()
    return "".join(kept)


_STREAM_LINES = 2000
_CHUNK = 1 << 16


class _Flooded(Exception):
    """A program printed more than its output limit."""


def _size(count: int) -> str:
    return f"{count >> 20} MiB" if count >= 1 << 20 else f"{count} characters"


def _bounded(process: subprocess.Popen[str], *, timeout: float | None, limit: int,
             argv: list[str]) -> tuple[str, str | None]:
    """``communicate`` that keeps at most ``limit`` characters of the two streams together:
    each stream is drained by a thread in fixed chunks; past the limit the program is
    stopped (raises _Flooded), after ``timeout`` seconds subprocess.TimeoutExpired."""
    streams = [stream for stream in (process.stdout, process.stderr) if stream is not None]
    kept: dict[int, list[str]] = {id(stream): [] for stream in streams}
    total = [0]
    flooded = threading.Event()
    lock = threading.Lock()

    def drain(stream: IO[str]) -> None:
        while chunk := stream.read(_CHUNK):
            with lock:
                total[0] += len(chunk)
                if total[0] > limit:
                    flooded.set()
                elif not flooded.is_set():
                    kept[id(stream)].append(chunk)

    readers = [threading.Thread(target=drain, args=(stream,), daemon=True)
               for stream in streams]
    for reader in readers:
        reader.start()
    ends = None if timeout is None else time.monotonic() + timeout
    for reader in readers:
        while reader.is_alive():
            if flooded.is_set():
                raise _Flooded()
            left = None if ends is None else ends - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(argv, timeout or 0)
            reader.join(0.05 if left is None else min(0.05, left))
    if flooded.is_set():
        raise _Flooded()
    process.wait(timeout=None if ends is None else max(0.0, ends - time.monotonic()))
    out = "".join(kept[id(process.stdout)]) if process.stdout is not None else None
    err = "".join(kept[id(process.stderr)]) if process.stderr is not None else None
    return out or "", err
_ERROR_LINE = re.compile(r"(?:^|:\s*|\s)(?:fatal )?error\b\s*:|^CMake Error\b|^FAILED:",
                         re.IGNORECASE)


def first_error(output: str) -> str:
    """The line a reader wants from a failed program's output: its first error line (with the
    next line when a CMake error puts its message there), else its last line."""
    lines = [line.rstrip() for line in output.splitlines()]
    for index, line in enumerate(lines):
        if _ERROR_LINE.search(line) and not line.startswith("FAILED:"):
            if line.startswith("CMake Error"):
                following = next((rest.strip() for rest in lines[index + 1:] if rest.strip()),
                                 "")
                return f"{line.strip()} {following}".strip()
            return line.strip()
    meaningful = [line.strip() for line in lines if line.strip()]
    return meaningful[-1] if meaningful else "no output"


# what a program prints when it writes where it may not: a machine cause for our own
# programs, the wheel's doing inside verify's sandbox (release/verify/sandbox.py)
READ_ONLY = re.compile(r"Read-only file system", re.IGNORECASE)
_KNOWN_CAUSES = (
    (re.compile(r"No space left on device|Disk quota exceeded", re.IGNORECASE),
     "the disk is full: free space (or point TMPDIR / --out elsewhere) and run again"),
    (READ_ONLY,
     "a folder it writes to is read-only: choose a writable --out / --build-dir"),
    (re.compile(r"Cannot allocate memory|virtual memory exhausted|out of memory|Killed signal",
                re.IGNORECASE),
     "the machine ran out of memory: lower --jobs (RELEASE_JOBS) and run again"),
)


def machine_cause(output: str) -> str | None:
    """A fix read from what any program printed about its environment."""
    for pattern, fix in _KNOWN_CAUSES:
        if pattern.search(output):
            return fix
    return None


def _terminate_group(process: subprocess.Popen[str]) -> None:
    """SIGTERM to the program's process group and its descendants; SIGKILL after a grace.

    The group alone is not enough: ``cmake --build`` leads the group, but ninja starts each
    compiler in a process group of its own, and cleans those up only if it is allowed to
    finish. So the grace period lasts until the whole group is gone (not just its leader),
    and any descendant seen before the signal that is still alive afterwards is killed."""
    descendants = _descendants(process.pid)
    _signal_group(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + _GRACE
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=_GRACE)
    while _group_alive(process.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    _signal_group(process.pid, signal.SIGKILL)  # stragglers the leader left behind
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=_GRACE)
    for pid, started in descendants:
        if _start_time(pid) == started:  # the same process, not a recycled pid
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


_GRACE = 5.0

# Set while a build holds its build folder: every program run then carries OWNER_VARIABLE
# (the build folder) in its environment, and so do the programs it starts (ninja's
# compilers), so the next build on the folder finds any a killed build left running.
OWNER_VARIABLE = "EDGERT_RELEASE_BUILD_FOLDER"
_CHILD_ENVIRONMENT: dict[str, str] = {}


@contextlib.contextmanager
def child_environment(values: Mapping[str, str]) -> Iterator[None]:
    """Adds ``values`` to the environment of every program run inside the block."""
    saved = dict(_CHILD_ENVIRONMENT)
    _CHILD_ENVIRONMENT.update(values)
    try:
        yield
    finally:
        _CHILD_ENVIRONMENT.clear()
        _CHILD_ENVIRONMENT.update(saved)


def owned_by(build_folder: str) -> contextlib.AbstractContextManager[None]:
    """Marks the programs run inside the block as the build of ``build_folder``'s."""
    return child_environment({OWNER_VARIABLE: build_folder})


def _marked(pid: int, marker: bytes) -> bool:
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return marker in environ.split(b"\0")


def _ancestors() -> set[int]:
    found, pid = set(), os.getpid()
    while pid > 1 and pid not in found:
        found.add(pid)
        fields = _stat_fields(pid)
        if not fields:
            break
        pid = int(fields[1])
    return found


def stop_leftovers(build_folder: str) -> int:
    """Kills the programs a killed build of ``build_folder`` left running (found by the
    marker in their environment; the caller holds the folder's lock, so no live build owns
    them); returns how many. Empty where there is no /proc."""
    marker = f"{OWNER_VARIABLE}={build_folder}".encode()
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return 0
    mine = _ancestors()
    stopped = 0
    for pid in pids:
        if pid not in mine and _marked(pid, marker):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                stopped += 1
    return stopped


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _stat_fields(pid: int) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name, or None (gone, or no /proc)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(errors="replace")
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()


def _start_time(pid: int) -> str | None:
    fields = _stat_fields(pid)
    return fields[19] if fields and len(fields) > 19 else None


def _descendants(root: int) -> list[tuple[int, str]]:
    """(pid, start time) of every process below ``root``, from /proc (empty where there is
    none: the group signal is then all there is)."""
    children: dict[int, list[int]] = {}
    started: dict[int, str] = {}
    try:
        entries = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []
    for pid in entries:
        fields = _stat_fields(pid)
        if fields and len(fields) > 19:
            children.setdefault(int(fields[1]), []).append(pid)
            started[pid] = fields[19]
    found, stack = [], list(children.get(root, []))
    while stack:
        pid = stack.pop()
        found.append((pid, started[pid]))
        stack.extend(children.get(pid, []))
    return found
