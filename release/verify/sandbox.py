"""The sandbox full verify runs the wheel's code in: bubblewrap (``bwrap``, Debian's
``bubblewrap``), with the whole file system read-only, verify's scratch folder the one
writable place, no network, no capabilities and no new user namespaces.

Everything a check runs that executes code from the wheel (imports, load-matrix processes,
CMake configure and build of the shipped CMake package and the example consumer, example
programs, programs under qemu-user or wine) goes through ``Sandbox.run``. Modes:

* ``require`` (``verify``'s default): bubblewrap, or a one-line refusal (EnvironmentFailure,
  exit 8) before anything of the wheel runs;
* ``prefer`` (the build's own verify stage: the build has just run the project's CMake with
  the user's rights, so its wheel is no stranger): bubblewrap when it can be made, else
  unsandboxed, said once in the log;
* ``off`` (``--trust-wheel``): unsandboxed, with a warning.

Inside, ``HOME``, ``TMPDIR``, the XDG, pip and zig caches point into the scratch folder,
Python writes no bytecode and ccache only reads; folders a runner must write to outside it
(wine's server folder beside its prefix) are replaced by empty folders of the scratch
folder, so a program inside never meets a server started outside. Mount points that cannot
be read (a FUSE file system whose server died) are left out of the read-only view:
bubblewrap refuses to remount them, and nothing can read them anyway."""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import stat
import subprocess
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from release import _cmd
from release.errors import CommandError, EnvironmentCommandError, EnvironmentFailure

log = logging.getLogger("release")

Mode = Literal["require", "prefer", "off"]
MODES: tuple[Mode, ...] = ("require", "prefer", "off")
BUBBLEWRAP_PACKAGE = "bubblewrap"
# Namespaces and rights taken away from everything the sandbox runs: every namespace
# (network included: only a loopback of its own), every capability (root in a container
# could otherwise remount the read-only view writable), no nested user namespace, a new
# terminal session (no TIOCSTI into the caller's terminal), killed with verify.
_ISOLATION = ("--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL",
              "--new-session", "--die-with-parent")
_SPECIAL = ("/proc", "/dev")   # made fresh inside (--proc, --dev)
_SEEDING = threading.Lock()    # the load matrix runs programs from several threads


@dataclass(frozen=True)
class Sandbox:
    """How a full verify runs one wheel's code: inside bubblewrap (``bwrap`` set) or, when
    the caller chose so, unsandboxed (``bwrap`` empty)."""

    scratch: Path
    bwrap: str = ""
    views: tuple[str, ...] = ("/",)   # folders and files shown read-only (see root_views)
    links: tuple[tuple[str, str], ...] = ()   # (path, target) symbolic links among them

    @property
    def sandboxed(self) -> bool:
        return bool(self.bwrap)

    def environment(self) -> dict[str, str]:
        """Variables that send everything a program caches or keeps into the scratch."""
        if not self.sandboxed:
            return {}
        home = self.scratch / "home"
        return {"HOME": str(home), "TMPDIR": str(self.scratch / "tmp"),
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
                private: Sequence[str] = ()) -> list[str]:
        """``argv`` run in the sandbox (unchanged when unsandboxed); ``private`` are folders
        outside the scratch the program writes to, each replaced by an empty folder of the
        scratch."""
        program = [os.fspath(part) for part in argv]
        if not self.sandboxed:
            return program
        return bubblewrap_command(self.bwrap, self.scratch, program, cwd=cwd,
                                  private=self._private(private), views=self.views,
                                  links=self.links, environment=self.environment())

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

    def run(self, argv: Sequence[str | os.PathLike[str]], *, cwd: Path | None = None,
            env: Mapping[str, str] | None = None, private: Sequence[str] = (),
            seeds: Sequence[tuple[str, str]] = (), **options: Any) -> str:
        """``release._cmd.run`` of ``argv`` in the sandbox."""
        for folder in ("home", "tmp"):
            (self.scratch / folder).mkdir(parents=True, exist_ok=True)
        with _SEEDING:
            seeded = self.seeded(seeds)
        command = self.command(argv, cwd=cwd, private=private)
        if seeded:   # after the sandbox's own variables, so they win
            at = len(command) - len(argv) - 1   # before bubblewrap's "--"
            command[at:at] = [word for name, value in seeded.items()
                              for word in ("--setenv", name, value)]
        try:
            return _cmd.run(command, cwd=cwd, env=dict(env or {}), **options)
        except EnvironmentCommandError as error:
            if not _cmd.READ_ONLY.search(error.output):
                raise
            # everything outside the scratch is read-only on purpose: a program of the wheel
            # that writes there is the wheel's doing, not the machine's
            raise CommandError(
                f"{error.what} (it wrote outside verify's scratch folder, which the sandbox "
                "keeps read-only)", command=error.command, returncode=error.returncode,
                output=error.output, fix="write only into the build folder the consumer "
                "is configured in") from None


def bubblewrap_command(bwrap: str, scratch: Path, argv: Sequence[str], *,
                       cwd: Path | None = None, private: Sequence[tuple[str, str]] = (),
                       views: Sequence[str] = ("/",), links: Sequence[tuple[str, str]] = (),
                       environment: Mapping[str, str] | None = None) -> list[str]:
    """The bubblewrap command line that runs ``argv`` with ``views`` read-only, ``scratch``
    writable, each (source, folder) of ``private`` bound writable over ``folder``, and
    ``environment`` set."""
    command = [bwrap, *_ISOLATION]
    for view in views:
        # a split view's folders may go away before the run (another program's scratch)
        command += ["--ro-bind" if view == "/" else "--ro-bind-try", view, view]
    for path, target in links:
        command += ["--symlink", target, path]
    command += ["--dev", "/dev", "--proc", "/proc", "--bind", str(scratch), str(scratch)]
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


def root_views(dead: Sequence[str], listing: Listing
               ) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The read-only view of ``/`` without the ``dead`` mount points: ``/`` itself when none
    is dead, else the siblings along each path to a dead mount, down to it (folders bound,
    links recreated). Returns (views, links)."""
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

    cover("/")
    return tuple(views), tuple(links)


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


def _host_views() -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    try:
        mountinfo = Path("/proc/self/mountinfo").read_text(errors="replace")
    except OSError:
        mountinfo = ""
    dead = dead_mounts(mountinfo, _alive)
    if dead:
        log.debug("sandbox: leaving out mount points that cannot be read: %s", dead)
    return root_views(dead, Listing(entries=os.listdir, kind=_kind, target=os.readlink))


def _probe(bwrap: str, scratch: Path, views: tuple[str, ...],
           links: tuple[tuple[str, str], ...]) -> str:
    """"" when bubblewrap makes the sandbox on this machine, else why not (one line)."""
    command = bubblewrap_command(bwrap, scratch, ["true"], views=views, links=links)
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
                 find: Callable[[str], str | None] | None = None,
                 probe: Callable[[str, Path, tuple[str, ...], tuple[tuple[str, str], ...]],
                                 str] | None = None) -> Sandbox:
    """The sandbox for a full verify whose scratch folder is ``scratch``. The order: ``off``
    runs unsandboxed (a warning); else bubblewrap when ``bwrap`` is on PATH and a probe run
    succeeds; else ``prefer`` runs unsandboxed (said in the log) and ``require`` raises the
    refusal (EnvironmentFailure)."""
    if mode == "off":
        log.warning("verify runs the wheel's code unsandboxed (--trust-wheel): it can write "
                    "wherever you can and reach the network")
        return Sandbox(scratch)
    bwrap = (find or shutil.which)("bwrap")
    if bwrap is None:
        why = f"bwrap is not installed (apt-get install {BUBBLEWRAP_PACKAGE})"
    else:
        views, links = _host_views()
        why = (probe or _probe)(bwrap, scratch, views, links)
        if not why:
            return Sandbox(scratch, bwrap, views, links)
        why = f"bwrap cannot make a sandbox: {why}"
    if mode == "prefer":
        log.info("verify runs the wheel's code unsandboxed: %s", why)
        return Sandbox(scratch)
    raise refusal(why)


__all__ = ["MODES", "Listing", "Mode", "Sandbox", "bubblewrap_command", "dead_mounts",
           "make_sandbox", "refusal", "root_views"]
