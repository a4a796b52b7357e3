"""Build tools the pipeline provisions from the package index on demand (never at import).

A tool the pipeline fetches is pinned by version and sha256 in release/toolchain/pinned-tools.toml
(``release.pins``) and installed with pip in hash-checking mode into its own folder of the
cache folder (``$RELEASE_CACHE_DIR``, default ``~/.cache/edgert-release``), named after the pin,
so test runs and CI reuse it. Every entry is sealed with a manifest of its files' hashes and
checked at each use (``release.toolcache``): a changed file makes it be installed again."""

from __future__ import annotations

import logging
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from release._lock import megabytes
from release.build_options import default_cache_dir
from release.errors import CommandError, EnvironmentFailure, ToolError
from release.toolchain import commands, pins, toolcache


def cache_dir() -> Path:
    """The tool cache for callers outside a build (verify, tests): ``RELEASE_CACHE_DIR`` or
    the default. A build gets its cache from its resolved options
    (release/build_options.py)."""
    configured = os.environ.get("RELEASE_CACHE_DIR")
    return Path(configured) if configured else default_cache_dir()


@dataclass(frozen=True)
class CMakeRoute:
    """A CMake release range a consumer may use: imported targets need >= 3.28."""

    name: str          # "old" or "new"
    pin: str           # the [python.<pin>] entry of release/toolchain/pinned-tools.toml
    lowest: tuple[int, int, int]
    below: tuple[int, int, int]   # a CMake on PATH in [lowest, below) serves the route

    @property
    def label(self) -> str:
        """How messages name the route: "3.24" or ">= 3.28"."""
        if self.below[:2] == (self.lowest[0], self.lowest[1] + 1):
            return f"{self.lowest[0]}.{self.lowest[1]}"
        return f">= {self.lowest[0]}.{self.lowest[1]}"


CMAKE_OLD = CMakeRoute("old", "cmake-old", (3, 24, 0), (3, 25, 0))
CMAKE_NEW = CMakeRoute("new", "cmake-new", (3, 28, 0), (5, 0, 0))


log = logging.getLogger("release")


def _slug(requirement: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "_", requirement).strip("_")


# pip's lines naming a file before it is fetched, with its size ("Downloading x.whl (27.1 MB)",
# "Using cached x.whl (27.1 MB)"), or a local one ("Processing /path/x.whl")
_FILE_LINE = re.compile(r"^\s*(?:Downloading|Using cached|Processing)\s+(\S+)(?:\s+\(([^)]*)\))?")
_SIZE = re.compile(r"^([0-9.]+)\s*([kMG]?B)$")
_UNITS = {"B": 1, "kB": 1000, "MB": 1000 ** 2, "GB": 1000 ** 3}


def downloaded(output: str) -> tuple[int, int]:
    """The files pip's output names as fetched and their total bytes (as pip rounds them)."""
    files, total = 0, 0.0
    for line in output.splitlines():
        match = _FILE_LINE.match(line)
        if match is None:
            continue
        files += 1
        size = _SIZE.match(match.group(2) or "")
        if size is not None:
            total += float(size.group(1)) * _UNITS[size.group(2)]
    return files, int(total)


def _shown(line: str) -> bool:
    """The lines of pip shown off a terminal: each file before it comes, and the unpacking."""
    return _FILE_LINE.match(line) is not None or line.startswith("Installing collected")


def _progress_shown() -> bool:
    """Whether pip may draw its progress bars: our stderr is a terminal (not a log, not CI)."""
    return sys.stderr.isatty() and os.environ.get("TERM") != "dumb"


def _pip_install(arguments: list[str | os.PathLike[str]], *, what: str, fix: str,
                 scratch: Path) -> None:
    """pip install ``arguments``. On a terminal pip draws its progress bar for each file;
    otherwise only its lines naming each file and its size, before the file is fetched, are
    shown. Either way one line at the end says how many files and bytes came and how long
    it took. pip's own temporary folders live in ``scratch`` (in the cache, removed
    afterwards), so nothing is left in TMPDIR."""
    started = time.monotonic()
    terminal = _progress_shown()
    pip_log = scratch / "pip.log"
    command: list[str | os.PathLike[str]] = [
        sys.executable, "-m", "pip", "install", "--progress-bar", "on" if terminal else "off",
        "--disable-pip-version-check", "--log", pip_log, *arguments]
    try:
        scratch.mkdir(parents=True, exist_ok=True)
        if terminal:   # pip's own terminal, for its bars; its log keeps what errors need
            commands.attached(command, what=what, env={"TMPDIR": str(scratch)})
            output = _read_log(pip_log)
        else:
            output = commands.stream(command, what=what, env={"TMPDIR": str(scratch)},
                                     show=_shown)
        files, size = downloaded(output)
        log.info("%s: %d file%s, %s, in %.0f s", what, files, "" if files == 1 else "s",
                 megabytes(size), time.monotonic() - started)
    except CommandError as error:
        output, message = error.output, error.what
        if terminal:   # pip wrote to the terminal: what it said is in its log
            output = _read_log(pip_log)[-4000:] or output
            message = (f"{what} failed with exit status {error.returncode}: "
                      f"{commands.first_error(output)}")
        mismatch = hash_mismatch(output)
        if mismatch is not None:
            raise ToolError(f"{what}: {mismatch}", fix="the index served a file the pin does "
                            "not list: check release/toolchain/pinned-tools.toml and the index pip "
                            "uses") from None
        # a full disk in the cache is told as one, not as a connection problem
        raise EnvironmentFailure(message, fix=commands.machine_cause(output) or fix) from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


_LOG_PREFIX = re.compile(r"^\d{4}-\d\d-\d\dT[0-9:,.]+\s?", re.MULTILINE)


def _read_log(path: Path) -> str:
    """pip's --log file without its timestamps ("" when there is none)."""
    try:
        return _LOG_PREFIX.sub("", path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return ""


_MISMATCH = re.compile(r"^\s*(\S+) from (\S+)[^\n]*\n"
                       r"\s*Expected sha256 (\w+)((?:\s*\n\s*(?:Expected\s+)?or\s+\w+)*)"
                       r"\s*\n\s*Got\s+(\w+)", re.MULTILINE)


def hash_mismatch(output: str) -> str | None:
    """pip's hash-checking refusal as one line naming the file, or None."""
    match = _MISMATCH.search(output)
    if match is None:
        return ("pip refused a file whose sha256 is not pinned"
            if "DO NOT MATCH THE HASHES" in output else None)
    package, url, expected, others, got = match.groups()
    more = others.count("or")
    return (f"{url.rsplit('/', 1)[-1].split('#')[0]} ({package}) has sha256 {got}, "
            f"the pin says {expected}" + (f" (or {more} more)" if more else ""))


def _executable(folder: Path, executable: str, what: str) -> Path:
    binary = folder / executable
    if not binary.exists():
        raise ToolError(f"{what} installed but {executable} is missing",
                        fix=f"remove {folder} and retry")
    return binary


def pip_tool(requirement: str, executable: str, *, cache: Path | None = None,
             binary_only: bool = False) -> Path:
    """Installs ``requirement`` (a tool the tests or verify need, not pinned: the release's own
    tools are ``pinned_tool``) into its own folder of the tool cache with pip and returns the
    path of ``executable`` (a path relative to that folder)."""
    target = (cache or cache_dir()) / "tools" / _slug(requirement)

    def install(partial: Path) -> None:
        log.info("downloading %s from the package index into %s (once per cache)",
                 requirement, target)
        only = ["--only-binary=:all:"] if binary_only else []
        _pip_install(["--target", partial, *only, requirement], what=f"pip install {requirement}",
                     fix="check the connection to the package index, or install the tool by "
                         f"hand ({requirement})", scratch=partial / ".tmp")

    toolcache.provision(target, install, what=requirement, describes={"requirement": requirement})
    return _executable(target, executable, requirement)


def pip_site(requirement: str, *, cache: Path | None = None) -> Path:
    """A folder of the tool cache with ``requirement`` (and its dependencies) installed by
    pip, laid out like site-packages; provisioned once. Wheels only: the requirement comes
    from the wheel being verified, and building an sdist would run its code outside verify's
    sandbox."""
    return pip_tool(requirement, ".", cache=cache, binary_only=True)


def install_pinned(pin: pins.PythonPin, folder: Path) -> None:
    """``pip install --target folder`` of ``pin``'s packages in hash-checking mode: only the
    files release/toolchain/pinned-tools.toml lists are accepted."""
    folder.mkdir(parents=True, exist_ok=True)
    requirements = folder.with_name(folder.name + ".requirements.txt")
    requirements.write_text(pin.requirements_text(), encoding="utf-8")
    where: list[str | os.PathLike[str]] = []
    if pin.platform:
        where = ["--platform", pin.platform, "--python-version", pin.python_version,
                 "--implementation", "cp"]
    try:
        _pip_install(["--require-hashes", "--no-deps", "--only-binary=:all:", *where,
                      "--target", folder, "-r", requirements],
                     what=f"pip install of the pinned {pin.name} ({', '.join(pin.packages)})",
                     fix="check the connection to the package index",
                     scratch=folder.with_name(folder.name + ".tmp"))
    finally:
        requirements.unlink(missing_ok=True)


def pinned_folder(pin: pins.PythonPin, cache: Path | None = None) -> Path:
    """The folder of the tool cache holding ``pin``'s wheels, provisioned once and checked
    against its manifest at each use."""
    target = (cache or cache_dir()) / "tools" / f"{pin.name}-{pin.digest}"

    def install(partial: Path) -> None:
        log.info("downloading the pinned %s (%s) from the package index into %s "
                 "(once per cache)", pin.name, ", ".join(pin.packages), target)
        install_pinned(pin, partial)

    return toolcache.provision(target, install,
                               what=f"the pinned {pin.name}",
                               describes={"pin": pin.name, "packages": list(pin.packages)})


def pinned_tool(name: str, *, cache: Path | None = None) -> Path:
    """The executable of the ``[python.<name>]`` pin, provisioned and checked."""
    pin = pins.load().python_pin(name)
    return _executable(pinned_folder(pin, cache), pin.executable, f"the pinned {name}")


def cmake_version(cmake: Path | str) -> tuple[int, int, int]:
    output = commands.run([str(cmake), "--version"], what="cmake --version")
    match = re.search(r"cmake version (\d+)\.(\d+)\.(\d+)", output)
    if not match:
        raise ToolError(f"cannot read the version of {cmake}", fix="install CMake >= 3.24")
    major, minor, patch = (int(group) for group in match.groups())
    return major, minor, patch


def cmake(route: CMakeRoute = CMAKE_NEW, *, cache: Path | None = None) -> Path:
    """A CMake executable for ``route``: the one on PATH when it fits, else the pinned one."""
    on_path = shutil.which("cmake")
    if on_path is not None and route.lowest <= cmake_version(on_path) < route.below:
        return Path(on_path)
    return pinned_tool(route.pin, cache=cache)


def ninja(*, cache: Path | None = None) -> Path:
    """Ninja from PATH, else the pinned one."""
    on_path = shutil.which("ninja")
    if on_path is not None:
        return Path(on_path)
    return pinned_tool("ninja", cache=cache)
