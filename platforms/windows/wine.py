"""Running Windows programs on this Linux host with wine (Debian: ``apt-get install wine64``).

A runner needs three things, provisioned once into the tool cache:

* a wine prefix (``<cache>/wine/<wine version>``: ~10 s and ~700 MB to create), used with
  ``WINEDEBUG=-all`` and Mono and Gecko switched off, so no dialog or download happens;
* ``load-dlls.exe`` (``load_dlls.c``), which loads DLLs and extension modules the way CPython
  does, and beside it a stand-in ``python3.dll`` exporting the stable ABI's names
  (``python3.def``): the load checks' program, since no Windows Python is at hand. Built by
  the pinned zig and stripped, they have the same bytes on every machine: the sha256s of
  ``[built.windows-helpers]`` in release/toolchain/pinned-tools.toml, which the build must
  reproduce; their folder is sealed with a manifest and checked at each use
  (release/toolchain/toolcache.py);
* the zig toolchain file for ``x86_64-windows-gnu``, so SDK consumers build for the wheel;
* a zig cache seed (``<cache>/zig-seed/<digest>``, about 80 MB for C; the C runtime, libc++
  and compiler-rt compiled from trivial programs): full verify's sandbox leaves the shared
  zig cache read-only, and zig must write its cache, so each verify copies the seed into its
  scratch folder (``Runner.seeds``) instead of compiling the runtime again.

Each is made by one process at a time (a lock beside it in the cache), announced with its
size, and wine runs with ``TMPDIR`` in the cache (its server folder ``wine-*`` stays there,
not in the user's temporary folder). Paths given to Windows programs are written as wine
sees the Linux root: drive ``Z:``."""

from __future__ import annotations

import hashlib
import logging
import shutil
from functools import cache as _memoized
from pathlib import Path, PurePosixPath

from release._lock import folder_size, megabytes, provisioning
from release.errors import CommandError, EnvironmentFailure, ToolError
from release.host import Runner
from release.toolchain import commands, pins, toolcache, zig

log = logging.getLogger("release")

HERE = Path(__file__).parent
LOAD_DLLS_SOURCE = HERE / "load_dlls.c"
PYTHON3_DEF = HERE / "python3.def"
WINE_PACKAGE = "wine64"
# Mono and Gecko would be offered (a download and a dialog) when a prefix is made.
_ENVIRONMENT = ("WINEDEBUG=-all", "WINEDLLOVERRIDES=mscoree,mshtml=")
HELPERS_PIN = "windows-helpers"
# A wine prefix is rewritten by wine whenever a program runs in it (its registry), so it is
# marked complete, not sealed; it is made from the installed wine, never fetched.
PREFIX_MARKER = ".complete"


def find_wine() -> str | None:
    """The wine program: ``wine`` on PATH, else Debian's ``wine64`` loader."""
    for candidate in ("wine", "wine64", "/usr/lib/wine/wine64"):
        found = shutil.which(candidate)
        if found:
            return found
    return None


def windows_path(path: Path | str) -> str:
    """``/tmp/x/y.dll`` as a Windows program under wine names it: ``Z:\\tmp\\x\\y.dll``."""
    return "Z:" + str(PurePosixPath(path)).replace("/", "\\")


@_memoized
def _wine_version(wine: str) -> str:
    output = commands.run([wine, "--version"], what="wine --version", stderr="separate").strip()
    return output.split()[0] if output else "wine"


def _temporary_folder(prefix: Path) -> Path:
    """Where wine keeps its server folder for ``prefix``: in the cache, beside the prefix."""
    return prefix.with_name(prefix.name + ".tmp")


def _prefix_environment(prefix: Path) -> tuple[str, ...]:
    return (f"WINEPREFIX={prefix}", f"TMPDIR={_temporary_folder(prefix)}", *_ENVIRONMENT)


def _prefix_command(wine: str, prefix: Path) -> tuple[str, ...]:
    return ("env", *_prefix_environment(prefix), wine)


def _helpers_folder(cache: Path) -> Path:
    pin = pins.load().built_pin(HELPERS_PIN)
    digest = hashlib.sha256(LOAD_DLLS_SOURCE.read_bytes() + PYTHON3_DEF.read_bytes()
                            + zig.requirement().encode()
                            + repr(pin.files).encode()).hexdigest()[:12]
    return cache / "windows-helpers" / digest


def stand_in_source(def_text: str) -> str:
    """C source of a DLL exporting every name of a .def file: functions that trap if ever
    called, data objects of 256 zero bytes. Enough to resolve an extension's imports."""
    lines = ["/* python3.dll stand-in for load checks: exports only (platforms/windows/wine.py) */"]
    exporting = False
    for line in def_text.splitlines():
        words = line.split(";", 1)[0].split()
        if words == ["EXPORTS"]:
            exporting = True
        elif exporting and len(words) == 2 and words[1] == "DATA":
            lines.append(f"__declspec(dllexport) char {words[0]}[256];")
        elif exporting and len(words) == 1:
            lines.append(f"__declspec(dllexport) void {words[0]}(void) {{ __builtin_trap(); }}")
    return "\n".join(lines) + "\n"


def _build_helpers(folder: Path, toolchain_folder: Path) -> None:
    """Compiles the helpers into ``folder`` and checks them against their pinned sha256s."""
    log.info("building the Windows load helpers into %s (once per cache)", folder)
    fix = f"check the zig toolchain in {toolchain_folder} and the cache's free space"
    cc = str(zig.tool_path(toolchain_folder, "cc"))
    (folder / "python3.c").write_text(
        stand_in_source(PYTHON3_DEF.read_text(encoding="ascii")), encoding="ascii")
    commands.run([cc, "-shared", "-O1", "-s", "-o", folder / "python3.dll", folder / "python3.c"],
                 what="build the python3.dll stand-in", fix=fix)
    commands.run([cc, "-O2", "-s", "-o", folder / "load-dlls.exe", LOAD_DLLS_SOURCE, "-lshell32"],
                 what="build load-dlls.exe", fix=fix)
    pin = pins.load().built_pin(HELPERS_PIN)
    for pinned in pin.files:
        built = toolcache.file_sha256(folder / pinned.file)
        if built != pinned.sha256:
            raise ToolError(f"{pinned.file} built by {zig.requirement()} has sha256 {built}, "
                            f"[built.{HELPERS_PIN}] pins {pinned.sha256}",
                            fix=f"if {', '.join(pin.sources)} changed on purpose, pin the new "
                                "sha256 in release/toolchain/pinned-tools.toml; else the compiler "
                                "is not the pinned one")


def _helpers(cache: Path, toolchain_folder: Path) -> Path:
    return toolcache.provision(
        _helpers_folder(cache), lambda partial: _build_helpers(partial, toolchain_folder),
        what="the Windows helpers", describes={"pin": HELPERS_PIN})


_SEED_PROGRAMS = (("cc", "seed.c", "int main(void) { return 0; }\n"),
                  ("c++", "seed.cpp", "#include <string>\n"
                   "int main() { return static_cast<int>(std::string().size()); }\n"))


def _zig_seed_folder(cache: Path, toolchain: Path) -> Path:
    digest = hashlib.sha256((zig.requirement() + toolchain.parent.name).encode()).hexdigest()
    return cache / "zig-seed" / digest[:12]


def _make_zig_seed(partial: Path, toolchain: Path) -> None:
    """A zig cache holding what the toolchain's C and C++ programs need (the mingw-w64 C
    runtime, libc++, compiler-rt), compiled from trivial programs: full verify copies it
    into its sandbox, where the shared zig cache is read-only and zig must write."""
    work = partial.with_name(partial.name + ".work")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        for tool, name, text in _SEED_PROGRAMS:
            (work / name).write_text(text)
            commands.run([toolchain.parent / tool, work / name, "-o", work / (name + ".exe")],
                         env={"ZIG_GLOBAL_CACHE_DIR": str(partial),
                          "ZIG_LOCAL_CACHE_DIR": str(partial)},
                         what=f"zig {tool} (the sandbox's zig cache)", timeout=1800)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(partial / "tmp", ignore_errors=True)


def _zig_seed(cache: Path, toolchain: Path) -> Path:
    return toolcache.provision(_zig_seed_folder(cache, toolchain),
                               lambda partial: _make_zig_seed(partial, toolchain),
                               what="the zig cache seed of verify's sandbox",
                               describes={"zig": zig.requirement(),
                                          "toolchain": toolchain.parent.name})


def _make_prefix(wine: str, prefix: Path) -> None:
    shutil.rmtree(prefix, ignore_errors=True)
    _temporary_folder(prefix).mkdir(parents=True, exist_ok=True)
    log.info("creating a wine prefix in %s (once per cache; about 10 s and 700 MB)", prefix)
    try:
        commands.run([*_prefix_command(wine, prefix), "wineboot", "--init"],
                     what="wineboot --init", timeout=300)
        commands.run(["env", *_prefix_environment(prefix), "wineserver", "-w"],
                     what="wineserver -w", timeout=300)
    except CommandError as error:
        shutil.rmtree(prefix, ignore_errors=True)
        raise EnvironmentFailure(f"wine could not create a prefix in {prefix}: {error.what}",
                                 fix=f"check the wine installation (apt-get install "
                                     f"{WINE_PACKAGE}) and the disk space") from None
    (prefix / PREFIX_MARKER).write_text("wine prefix\n")
    log.info("wine prefix: %s in %s", megabytes(folder_size(prefix)), prefix)


def prefix_folder(wine: str, cache: Path) -> Path:
    return cache / "wine" / _wine_version(wine)


def _runner(wine: str, prefix: Path, helpers: Path, toolchain: Path, seed: Path) -> Runner:
    _temporary_folder(prefix).mkdir(parents=True, exist_ok=True)   # a prefix made before it
    return Runner(machine="x86_64", system="windows", prefix=_prefix_command(wine, prefix),
                  python="", cmake_arguments=(f"-DCMAKE_TOOLCHAIN_FILE={toolchain}",),
                  helpers=(("load-dlls", str(helpers / "load-dlls.exe")),),
                  writes=(str(_temporary_folder(prefix)),),
                  seeds=(("ZIG_GLOBAL_CACHE_DIR", str(seed)),
                         ("ZIG_LOCAL_CACHE_DIR", str(seed))))


def provision_runner(toolchain: Path, cache: Path) -> Runner | None:
    """A runner for x86_64 Windows programs under wine, provisioning its prefix and helpers
    (once); None when wine is not installed."""
    wine = find_wine()
    if wine is None:
        log.info("no wine on PATH: Windows binaries are checked without running them (fix: "
                 "apt-get install %s)", WINE_PACKAGE)
        return None
    prefix = prefix_folder(wine, cache)
    if not (prefix / PREFIX_MARKER).is_file():
        with provisioning(prefix, "the wine prefix"):
            if not (prefix / PREFIX_MARKER).is_file():
                _make_prefix(wine, prefix)
    return _runner(wine, prefix, _helpers(cache, toolchain.parent), toolchain,
                   _zig_seed(cache, toolchain))


def existing_runner(toolchain: Path, cache: Path) -> Runner | None:
    """The runner when wine, its prefix, the helpers and the toolchain are in place; never
    provisions anything."""
    wine = find_wine()
    if wine is None or not toolchain.is_file():
        return None
    prefix = prefix_folder(wine, cache)
    helpers = _helpers_folder(cache)
    if not (prefix / PREFIX_MARKER).is_file() or not helpers.is_dir():
        return None
    found = toolcache.damage(helpers)
    if found is not None:
        log.warning("the Windows helpers are not used: %s", found.describe(helpers))
        return None
    seed = _zig_seed_folder(cache, toolchain)
    if not seed.is_dir() or toolcache.damage(seed) is not None:
        return None
    return _runner(wine, prefix, helpers, toolchain, seed)


__all__ = ["existing_runner", "find_wine", "provision_runner", "stand_in_source",
           "windows_path"]
