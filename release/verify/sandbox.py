"""The sandbox full verify runs the wheel's code in: bubblewrap (``bwrap``, Debian's
``bubblewrap``) showing a fresh machine, no network, no capabilities, no new user namespaces.

Everything a check runs that executes code from the wheel (imports, load-matrix processes,
CMake configure and build of the shipped CMake package and the example consumer, example
programs, programs under qemu-user or wine) goes through ``Sandbox.run``. Modes:

* ``require`` (``verify``'s default): bubblewrap, or a one-line refusal (EnvironmentFailure,
  exit 8) before anything of the wheel runs;
* ``prefer`` (the build's own verify stage: the build has just run the project's CMake with
  the user's rights, so its wheel is no stranger): bubblewrap when it can be made, else
  unsandboxed, said once in the log;
* ``off`` (``--trust-wheel``): unsandboxed, with a warning.

What the wheel's code sees (``SandboxPolicy``): the system's read-only folders (``/usr``,
``/etc`` less every file and folder an unprivileged user could not read, such as the shadow
password file and private keys), the interpreter and its virtual environment, the tool cache
and the ``--site`` folders, all read-only; a private ``/tmp``; verify's scratch folder
read-only, but for the folders a run is handed to write (``writable``), its home and
temporary folders and its seeded caches. Nothing else of the host: no home folder, no
``/run`` or ``/var`` (so no socket of the host's), a private PID, IPC and network namespace,
and a clean environment (``--clearenv``: the variables below and the ones a check passes,
none of the caller's). Each program runs under resource limits (``prlimit``: data size,
processes, file size, CPU time), its output is kept up to a bound (past it, the run stops
and the wheel is blamed), and every run shares one deadline for the whole verify.

verify itself never writes into a folder a sandboxed run could write to, and reads back what
such a run wrote only through ``read_back``: one file, opened without following links
(``O_NOFOLLOW`` at every step below a folder verify made), a regular file, read up to a
bound. A failure is the machine's (exit 8) only when verify sees the cause on the host (its
scratch file system full, its memory exhausted), never because of what the wheel printed.

Mount points that cannot be read (a FUSE file system whose server died) are left out of the
read-only view: bubblewrap refuses to remount them, and nothing can read them anyway."""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from release.errors import (
    CommandError,
    DeadlineReached,
    EnvironmentCommandError,
    EnvironmentFailure,
    OutputLimitExceeded,
)
from release.toolchain import commands

log = logging.getLogger("release")

Mode = Literal["require", "prefer", "off"]
MODES: tuple[Mode, ...] = ("require", "prefer", "off")
BUBBLEWRAP_PACKAGE = "bubblewrap"
# Namespaces and rights taken away from everything the sandbox runs: every namespace
# (network included: only a loopback of its own; PID and IPC: nothing of the host's to see
# or signal), every capability (root in a container could otherwise remount the read-only
# view writable), no nested user namespace, a new terminal session (no TIOCSTI into the
# caller's terminal), killed with verify, and none of the caller's environment.
_ISOLATION = ("--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL",
              "--new-session", "--die-with-parent", "--clearenv")
_SPECIAL = ("/proc", "/dev")   # made fresh inside (--proc, --dev)
# The system's folders, shown read-only (those that exist; merged-/usr links recreated).
SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc",
                  "/sys/devices/system/cpu")
_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_SEEDING = threading.Lock()    # the load matrix runs programs from several threads
# What verify must see free on its own scratch file system and in memory before it blames
# the machine for a failed run (below: the machine's; above: the wheel's).
_LOW_DISK = 64 << 20
_LOW_MEMORY = 64 << 20


@dataclass(frozen=True)
class ResourceLimits:
    """What one program of the wheel's may use (``prlimit`` inside the sandbox), how much of
    its output verify keeps, and how long the whole verify may run the wheel's code."""

    data: int = 8 << 30            # bytes of data segment and private mappings per process
    processes: int = 4096          # processes of the user (not enforced for root)
    file_size: int = 4 << 30       # bytes, the largest file a program may write
    cpu_seconds: int = 1800        # per process
    output: int = 8 << 20          # characters of output kept per run (stdout and stderr)
    deadline: float = 1200.0       # seconds for all the wheel's code of one verify

    def prlimit(self, prlimit: str) -> list[str]:
        return [prlimit, f"--data={self.data}", f"--nproc={self.processes}",
                f"--fsize={self.file_size}", f"--cpu={self.cpu_seconds}", "--core=0", "--"]


@dataclass(frozen=True)
class Sandbox:
    """How a full verify runs one wheel's code: inside bubblewrap (``bwrap`` set) or, when
    the caller chose so, unsandboxed (``bwrap`` empty)."""

    scratch: Path
    bwrap: str = ""
    views: tuple[str, ...] = SYSTEM_FOLDERS   # folders and files shown read-only
    links: tuple[tuple[str, str], ...] = ()   # (path, target) symbolic links among them
    masked: tuple[str, ...] = ()              # files and folders of the views hidden
    limits: ResourceLimits = ResourceLimits()
    prlimit: str = ""                         # the prlimit program ("": no limits)
    # time.monotonic() by which the whole verify's runs must end (None: no deadline)
    ends: float | None = None
    clock: Callable[[], float] = field(default=time.monotonic, repr=False, compare=False)

    @property
    def sandboxed(self) -> bool:
        return bool(self.bwrap)

    def environment(self) -> dict[str, str]:
        """The whole environment of a sandboxed program (the caller's never reaches it):
        everything a program caches or keeps goes into the scratch."""
        if not self.sandboxed:
            return {}
        home = self.scratch / "home"
        interpreter_bin = str(Path(sys.prefix) / "bin")
        return {"PATH": f"{interpreter_bin}:{_PATH}", "LANG": "C.UTF-8",
                "HOME": str(home), "USER": "verify", "TMPDIR": str(self.scratch / "tmp"),
                "XDG_CACHE_HOME": str(home / ".cache"), "XDG_CONFIG_HOME": str(home / ".config"),
                "XDG_DATA_HOME": str(home / ".local" / "share"),
                "PIP_CACHE_DIR": str(home / ".cache" / "pip"), "PIP_NO_INPUT": "1",
                # read the bytecode beside installed sources, write none (a cache prefix
                # would recompile every dependency's modules on each run)
                "PYTHONDONTWRITEBYTECODE": "1",
                # ccache may read its cache (nothing in it runs), never store
                "CCACHE_READONLY": "1", "CCACHE_TEMPDIR": str(self.scratch / "tmp"),
                "ZIG_GLOBAL_CACHE_DIR": str(home / ".cache" / "zig"),
                "ZIG_LOCAL_CACHE_DIR": str(home / ".cache" / "zig")}

    def command(self, argv: Sequence[str | os.PathLike[str]], *, cwd: Path | None = None,
                private: Sequence[str] = (), writable: Sequence[Path] = (),
                env: Mapping[str, str] | None = None, shown: Sequence[str] = ()) -> list[str]:
        """``argv`` run in the sandbox (unchanged when unsandboxed); ``private`` are folders
        outside the scratch the program writes to, each replaced by an empty folder of the
        scratch; ``writable`` are folders of the scratch it may write to; ``env`` is added to
        the sandbox's own environment."""
        program = [os.fspath(part) for part in argv]
        if not self.sandboxed:
            return program
        if self.prlimit:
            program = [*self.limits.prlimit(self.prlimit), *program]
        shared = [self.scratch / name for name in ("home", "tmp")]
        return bubblewrap_command(self.bwrap, self.scratch, program, cwd=cwd,
                                  private=self._private(private),
                                  writable=[str(path) for path in (*shared, *writable)],
                                  views=(*self.views, *_outside(shown, self.views)),
                                  links=self.links, masked=self.masked,
                                  environment={**self.environment(), **(env or {})})

    def _private(self, folders: Sequence[str]) -> list[tuple[str, str]]:
        """A fresh folder per run for each: two sandboxes running at once never share one
        (a wineserver dies with its sandbox, and would take the other's programs with it)."""
        if not folders:
            return []
        (self.scratch / "private").mkdir(parents=True, exist_ok=True)
        run = Path(tempfile.mkdtemp(prefix="run-", dir=self.scratch / "private"))
        pairs = []
        for index, folder in enumerate(dict.fromkeys(folders)):
            replacement = run / str(index)
            replacement.mkdir()
            pairs.append((str(replacement), folder))
        return pairs

    def seeded(self, seeds: Sequence[tuple[str, str]]) -> dict[str, str]:
        """The variables that point each (variable, seed folder) at a copy of the seed in
        the scratch, made on first use (one copy per seed and scratch folder)."""
        if not self.sandboxed:
            return {}
        variables = {}
        for variable, seed in seeds:
            copy = self.scratch / "seeds" / hashlib.sha256(seed.encode()).hexdigest()[:12]
            if not copy.is_dir():
                partial = copy.with_name(copy.name + ".partial")
                shutil.rmtree(partial, ignore_errors=True)
                shutil.copytree(seed, partial, symlinks=True)
                partial.rename(copy)
            variables[variable] = str(copy)
        return variables

    def remaining(self, what: str) -> float | None:
        """Seconds left before the deadline (None: none set); DeadlineReached when none."""
        if self.ends is None:
            return None
        left = self.ends - self.clock()
        if left <= 0:
            raise self._deadline(what)
        return left

    def _deadline(self, what: str) -> DeadlineReached:
        seconds = self.limits.deadline
        return DeadlineReached(
            f"verify's deadline of {seconds:g} s passed while {what} ran: the wheel's code "
            "did not finish in time", seconds=seconds,
            fix="make the wheel's imports, library constructors and CMake package finish "
                "promptly (or give verify more time with --deadline SECONDS)")

    def run(self, argv: Sequence[str | os.PathLike[str]], *, cwd: Path | None = None,
            env: Mapping[str, str] | None = None, private: Sequence[str] = (),
            seeds: Sequence[tuple[str, str]] = (), writable: Sequence[Path] = (),
            shown: Sequence[str] = (), timeout: float | None = None, **options: Any) -> str:
        """``release.commands.run`` of ``argv`` in the sandbox. ``writable`` folders of the scratch
        are made here when missing (each must be a real folder verify made: never a link);
        what the run wrote there is read back only through ``read_back``."""
        what = str(options.get("what") or Path(os.fspath(argv[0])).name)
        left = self.remaining(what)
        by_deadline = left is not None and (timeout is None or left < timeout)
        limit = left if by_deadline else timeout
        if not self.sandboxed:
            try:
                return commands.run(argv, cwd=cwd, env=dict(env or {}), timeout=limit, **options)
            except CommandError as error:
                if error.returncode == -1 and by_deadline:
                    raise self._deadline(what) from None
                raise
        for folder in (self.scratch / "home", self.scratch / "tmp", *writable):
            _own_folder(self.scratch, folder)
        with _SEEDING:
            seeded = self.seeded(seeds)
        seed_folders = [Path(folder) for folder in seeded.values()]
        command = self.command(argv, cwd=cwd, private=private,
                               writable=[*seed_folders, *writable],
                               env={**(env or {}), **seeded}, shown=shown)
        options.pop("machine_faults", None)   # what the wheel prints never blames the machine
        try:
            return commands.run(command, cwd=None, env={}, timeout=limit,
                                output_limit=self.limits.output, **options)
        except OutputLimitExceeded:
            raise
        except CommandError as error:
            if error.returncode == -1 and by_deadline:
                raise self._deadline(what) from None
            raise self._blamed(error, str(options.get("fix") or "")) from None

    def _blamed(self, error: CommandError, fix: str) -> CommandError:
        """The machine's failure when verify sees the cause on the host, else the wheel's,
        with the caller's ``fix`` (never one read from what the wheel printed)."""
        cause = host_shortage(self.scratch)
        if cause:
            return EnvironmentCommandError(f"{error.what} ({cause})", command=error.command,
                                           returncode=error.returncode, output=error.output,
                                           fix="free disk space or memory and run again")
        if commands.READ_ONLY.search(error.output):
            # everything outside the writable folders is read-only on purpose: a program of
            # the wheel that writes there is the wheel's doing, not the machine's
            return CommandError(
                f"{error.what} (it wrote outside verify's scratch folder, which the sandbox "
                "keeps read-only)", command=error.command, returncode=error.returncode,
                output=error.output, fix="write only into the build folder the consumer "
                "is configured in")
        return CommandError(error.what, command=error.command, returncode=error.returncode,
                            output=error.output, fix=fix)


def _outside(paths: Sequence[str], views: Sequence[str]) -> list[str]:
    """``paths`` not already shown by one of ``views``."""
    def covered(path: str) -> bool:
        return any(path == view or path.startswith(view.rstrip("/") + "/") for view in views)
    return [path for path in dict.fromkeys(os.path.abspath(p) for p in paths)
            if not covered(path)]


def host_shortage(scratch: Path) -> str:
    """What verify itself sees missing on the host ("" if nothing): free space on the scratch
    file system, available memory."""
    try:
        space = os.statvfs(scratch)
        if space.f_bavail * space.f_frsize < _LOW_DISK:
            return f"verify's scratch file system has under {_LOW_DISK >> 20} MiB free"
    except OSError:
        pass
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    if int(line.split()[1]) * 1024 < _LOW_MEMORY:
                        return f"the machine has under {_LOW_MEMORY >> 20} MiB of memory free"
                    break
    except (OSError, ValueError):
        pass
    return ""


def _own_folder(scratch: Path, folder: Path) -> None:
    """Makes ``folder`` (inside ``scratch``) when missing; refuses one that is not a real
    folder, or that is reached through a link."""
    scratch.mkdir(parents=True, exist_ok=True)
    relative = folder.relative_to(scratch)
    current = scratch
    for part in relative.parts:
        current = current / part
        try:
            os.mkdir(current, 0o755)
        except FileExistsError:
            pass
        mode = os.lstat(current).st_mode
        if not stat.S_ISDIR(mode):
            raise CommandError(f"verify's scratch folder {current.name} was replaced by "
                               "something that is not a folder", command=[], returncode=-1,
                               output="", fix="the wheel's code must not touch verify's folders")


def read_back(folder: Path, relative: str, *, limit: int = 1 << 20) -> bytes | None:
    """The bytes of ``folder``/``relative``, a file a sandboxed run may have written: each
    step opened without following links, the file a regular one, at most ``limit`` bytes
    (more is an error of the wheel's). None when it is missing, or is a link, a pipe, a
    device or a folder."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    parts = [part for part in relative.split("/") if part]
    try:
        descriptor = os.open(folder, flags | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        for part in parts[:-1]:
            following = os.open(part, flags | os.O_DIRECTORY, dir_fd=descriptor)
            os.close(descriptor)
            descriptor = following
        file = os.open(parts[-1], flags | os.O_NONBLOCK, dir_fd=descriptor)
    except OSError as error:
        os.close(descriptor)
        if error.errno in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR, errno.ENXIO):
            return None
        raise
    os.close(descriptor)
    try:
        if not stat.S_ISREG(os.fstat(file).st_mode):
            return None
        data = b""
        while len(data) <= limit and (chunk := os.read(file, 1 << 16)):
            data += chunk
    finally:
        os.close(file)
    if len(data) > limit:
        raise CommandError(f"{relative} written by the wheel's code is over {limit} bytes",
                           command=[], returncode=-1, output="",
                           fix="the file verify reads back must stay small")
    return data


def list_back(folder: Path) -> list[tuple[str, int]]:
    """(name, mode) of the entries of ``folder``, a folder a sandboxed run may have written:
    the modes without following links (a link is a link)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY | os.O_NOFOLLOW | os.O_DIRECTORY)
    except OSError:
        return []
    try:
        return sorted((name, os.lstat(name, dir_fd=descriptor).st_mode)
                      for name in os.listdir(descriptor))
    finally:
        os.close(descriptor)


def bubblewrap_command(bwrap: str, scratch: Path, argv: Sequence[str], *,
                       cwd: Path | None = None, private: Sequence[tuple[str, str]] = (),
                       writable: Sequence[str] = (), views: Sequence[str] = SYSTEM_FOLDERS,
                       links: Sequence[tuple[str, str]] = (), masked: Sequence[str] = (),
                       environment: Mapping[str, str] | None = None) -> list[str]:
    """The bubblewrap command line that runs ``argv`` with ``views`` read-only (``masked``
    entries of them hidden), a private ``/tmp``, ``scratch`` read-only but its ``writable``
    folders, each (source, folder) of ``private`` bound writable over ``folder``, and
    exactly ``environment`` set."""
    command = [bwrap, *_ISOLATION, "--tmpfs", "/tmp"]
    for view in views:
        # a split view's folders may go away before the run (another program's scratch)
        command += ["--ro-bind-try", view, view]
    for path, target in links:
        command += ["--symlink", target, path]
    for path in masked:
        command += ["--tmpfs", path] if path.endswith("/") else ["--ro-bind", "/dev/null", path]
    command += ["--dev", "/dev", "--proc", "/proc", "--ro-bind", str(scratch), str(scratch)]
    for folder in writable:
        command += ["--bind", folder, folder]
    for source, folder in private:
        command += ["--bind", source, folder]
    for name, value in (environment or {}).items():
        command += ["--setenv", name, value]
    if cwd is not None:
        command += ["--chdir", str(cwd)]
    return [*command, "--", *argv]


def dead_mounts(mountinfo: str, alive: Callable[[str], bool]) -> list[str]:
    """Mount points of ``/proc/self/mountinfo`` text that cannot be read (``alive`` says
    False), outside /proc and /dev, which the sandbox makes fresh."""
    found = []
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) < 5:
            continue
        point = _unescape(fields[4])
        if any(point == s or point.startswith(s + "/") for s in _SPECIAL):
            continue
        if not alive(point):
            found.append(point)
    return found


def _unescape(text: str) -> str:
    """A mountinfo field: space, tab, newline and backslash are written as octal escapes."""
    for code in ("040", "011", "012", "134"):
        text = text.replace("\\" + code, chr(int(code, 8)))
    return text


@dataclass(frozen=True)
class Listing:
    """What ``root_views`` asks of the file system (passed in, so it is testable)."""

    entries: Callable[[str], list[str]]
    kind: Callable[[str], str]            # "dir", "link", "file" or "other"
    target: Callable[[str], str]          # a link's target


def root_views(dead: Sequence[str], listing: Listing, tops: Sequence[str] = ("/",)
               ) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The read-only view of the folders ``tops`` without the ``dead`` mount points: each
    top itself when nothing under it is dead, else the siblings along each path to a dead
    mount, down to it (folders bound, links recreated); a top that is a link is recreated,
    any other shown as it is when the sandbox runs. Returns (views, links)."""
    views: list[str] = []
    links: list[tuple[str, str]] = []

    def cover(path: str) -> None:
        prefix = path.rstrip("/") + "/"
        below = [d for d in dead if d == path or d.startswith(prefix)]
        if not below:
            views.append(path)
            return
        if path in dead:
            return
        for name in sorted(listing.entries(path)):
            child = prefix + name
            if child in _SPECIAL:
                continue
            kind = listing.kind(child)
            if kind == "link":
                links.append((child, listing.target(child)))
            elif kind in ("dir", "file"):
                cover(child) if kind == "dir" else views.append(child)

    for top in dict.fromkeys(tops):
        kind = listing.kind(top) if top != "/" else "dir"
        if kind == "link":
            links.append((top, listing.target(top)))
        elif kind == "dir":
            cover(top)
        else:   # a file, or a folder made later (the tool cache): bound if there by then
            views.append(top)
    return tuple(views), tuple(links)


def hidden_entries(top: str, *, walk: Callable[[str], Any] = os.walk,
                   mode_of: Callable[[str], int] | None = None) -> tuple[str, ...]:
    """Entries under ``top`` that an unprivileged user could not read (a file without the
    others' read bit, a folder without their read or search bit: ``/etc/shadow``, private
    keys): the sandbox hides them (folders end with ``/``)."""
    mode_of = mode_of or (lambda path: os.lstat(path).st_mode)
    hidden: list[str] = []
    for folder, folders, files in walk(top):
        for name in sorted(folders):
            path = os.path.join(folder, name)
            mode = _mode(mode_of, path)
            if (mode is not None and stat.S_ISDIR(mode) and
                    (mode & (stat.S_IROTH | stat.S_IXOTH)) != (stat.S_IROTH | stat.S_IXOTH)):
                hidden.append(path + "/")
        folders[:] = [name for name in folders if os.path.join(folder, name) + "/" not in hidden]
        for name in sorted(files):
            path = os.path.join(folder, name)
            mode = _mode(mode_of, path)
            if mode is not None and stat.S_ISREG(mode) and not mode & stat.S_IROTH:
                hidden.append(path)
    return tuple(sorted(hidden))


def _mode(mode_of: Callable[[str], int], path: str) -> int | None:
    try:
        return mode_of(path)
    except OSError:
        return None


def _alive(path: str) -> bool:
    try:
        os.stat(path)
    except OSError:
        return False
    return True


def _kind(path: str) -> str:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return "other"
    return ("link" if stat.S_ISLNK(mode) else "dir" if stat.S_ISDIR(mode) else
            "file" if stat.S_ISREG(mode) else "other")


def shown_folders(extra: Sequence[Path | str] = ()) -> tuple[str, ...]:
    """The folders a sandbox shows read-only: the system's, this interpreter's (its virtual
    environment and the installation it was made from) and ``extra`` (the tool cache, the
    --site folders)."""
    interpreter = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    folders = [*SYSTEM_FOLDERS, *sorted(interpreter), *(os.fspath(path) for path in extra)]
    return tuple(dict.fromkeys(os.path.abspath(folder) for folder in folders))


def _host_views(tops: Sequence[str]) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    try:
        mountinfo = Path("/proc/self/mountinfo").read_text(errors="replace")
    except OSError:
        mountinfo = ""
    dead = dead_mounts(mountinfo, _alive)
    if dead:
        log.debug("sandbox: leaving out mount points that cannot be read: %s", dead)
    return root_views(dead, Listing(entries=os.listdir, kind=_kind, target=os.readlink), tops)


def _probe(bwrap: str, scratch: Path, views: tuple[str, ...],
           links: tuple[tuple[str, str], ...]) -> str:
    """"" when bubblewrap makes the sandbox on this machine, else why not (one line)."""
    command = bubblewrap_command(bwrap, scratch, ["/bin/sh", "-c", "exit 0"], views=views,
                                 links=links)
    try:
        completed = subprocess.run(command, capture_output=True, text=True, timeout=60,
                                   check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return str(error)
    if completed.returncode == 0:
        return ""
    lines = [line.strip() for line in completed.stderr.splitlines() if line.strip()]
    return lines[-1] if lines else f"bwrap exited with {completed.returncode}"


def refusal(why: str) -> EnvironmentFailure:
    return EnvironmentFailure(f"cannot sandbox the wheel's code here ({why}); use --static, "
                              "or --trust-wheel to run it unsandboxed",
                              fix=f"install bubblewrap (apt-get install {BUBBLEWRAP_PACKAGE}) "
                                  "and allow user namespaces, or verify --static")


def make_sandbox(scratch: Path, mode: Mode = "require", *,
                 shown: Sequence[Path | str] = (), limits: ResourceLimits = ResourceLimits(),
                 find: Callable[[str], str | None] | None = None,
                 probe: Callable[[str, Path, tuple[str, ...], tuple[tuple[str, str], ...]],
                                 str] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> Sandbox:
    """The sandbox for a full verify whose scratch folder is ``scratch``, showing ``shown``
    read-only beside the system's folders, its deadline counted from now. The order:
    ``off`` runs unsandboxed (a warning); else bubblewrap when ``bwrap`` is on PATH and a
    probe run succeeds; else ``prefer`` runs unsandboxed (said in the log) and ``require``
    raises the refusal (EnvironmentFailure)."""
    ends = clock() + limits.deadline
    if mode == "off":
        log.warning("verify runs the wheel's code unsandboxed (--trust-wheel): it can write "
                    "wherever you can and reach the network")
        return Sandbox(scratch, limits=limits, ends=ends, clock=clock)
    bwrap = (find or shutil.which)("bwrap")
    if bwrap is None:
        why = f"bwrap is not installed (apt-get install {BUBBLEWRAP_PACKAGE})"
    else:
        views, links = _host_views(shown_folders(shown))
        why = (probe or _probe)(bwrap, scratch, views, links)
        if not why:
            prlimit = (find or shutil.which)("prlimit") or ""
            if not prlimit:
                log.info("sandbox: no prlimit (util-linux): programs run without resource "
                         "limits, under the deadline and output bound alone")
            return Sandbox(scratch, bwrap, views, links, hidden_entries("/etc"), limits,
                           prlimit, ends, clock)
        why = f"bwrap cannot make a sandbox: {why}"
    if mode == "prefer":
        log.info("verify runs the wheel's code unsandboxed: %s", why)
        return Sandbox(scratch, limits=limits, ends=ends, clock=clock)
    raise refusal(why)


__all__ = ["MODES", "SYSTEM_FOLDERS", "Listing", "Mode", "ResourceLimits", "Sandbox",
           "bubblewrap_command", "dead_mounts", "hidden_entries", "host_shortage", "list_back",
           "make_sandbox", "read_back", "refusal", "root_views", "shown_folders"]
