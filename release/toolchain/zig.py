"""zig as a cross toolchain for CMake: one compiler from the package index (``ziglang``) that
builds macOS and Windows binaries on any host.

``write_toolchain`` writes, into a folder of the build tree, one small wrapper script per tool
(``cc``, ``c++``, ``ar``, ``ranlib``, ``rc``, ``dlltool``: CMake wants one executable per
tool, zig is one program with subcommands) and a CMake toolchain file naming them. zig
compiles its C and C++ runtimes once per target and OS version (one to two minutes on two
cores); the wrappers keep that cache in the release cache folder (``<cache>/zig``) so it is
shared by every build folder and kept by CI's cache of that folder.

Files are rewritten only when their text changes, so a second configure sees the same
toolchain and CMake does not configure from scratch."""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from release.tool import Tool
from release.toolchain import pins, tools

PIN = "zig"                       # the [python.zig] entry of release/toolchain/pinned-tools.toml
_TOOLS = {"cc": ("cc", True), "c++": ("c++", True), "ar": ("ar", False),
          "ranlib": ("ranlib", False), "rc": ("rc", False), "dlltool": ("dlltool", False)}


@dataclass(frozen=True)
class ZigTarget:
    """One target as zig and CMake name it."""

    triple: str                     # zig's -target: "x86_64-windows-gnu", "aarch64-macos.11.0"
    system: str                     # CMAKE_SYSTEM_NAME: "Windows", "Darwin"
    processor: str                  # CMAKE_SYSTEM_PROCESSOR: "AMD64", "arm64"
    # more toolchain-file lines: name -> value (set(<name> <value>))
    settings: Mapping[str, str] = field(default_factory=dict)


def requirement() -> str:
    """The pinned zig, as messages name it ("ziglang==0.17.1")."""
    return pins.load().python_pin(PIN).packages[0]


def tool() -> Tool:
    """The pinned zig as the SBOM names it."""
    name, _, version = requirement().partition("==")
    return Tool(name, version, f"pkg:pypi/{name}@{version}")


def zig(*, cache: Path | None = None) -> Path:
    """The pinned zig executable, provisioned into the tool cache and checked on each use."""
    return tools.pinned_tool(PIN, cache=cache)


def cache_folder(cache: Path) -> Path:
    """Where zig keeps what it compiles once per target (its C and C++ runtimes)."""
    return cache / "zig"


def _write_if_changed(path: Path, text: str, *, executable: bool = False) -> None:
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except OSError:
        pass
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    if executable:
        partial.chmod(0o755)
    os.replace(partial, path)


# On Windows the wrappers are batch files (CMake and Ninja run them through cmd.exe).
WRAPPER_SUFFIX = ".cmd" if os.name == "nt" else ""


def wrapper_text(zig_path: Path, cache: Path, tool: str, target: ZigTarget) -> str:
    subcommand, takes_target = _TOOLS[tool]
    words = [str(zig_path), subcommand, *(("-target", target.triple) if takes_target else ())]
    if WRAPPER_SUFFIX:
        return ("@echo off\r\n"
                f"if not defined ZIG_GLOBAL_CACHE_DIR set \"ZIG_GLOBAL_CACHE_DIR="
                f"{cache_folder(cache)}\"\r\n"
                f"if not defined ZIG_LOCAL_CACHE_DIR set \"ZIG_LOCAL_CACHE_DIR="
                f"{cache_folder(cache)}\"\r\n"
                + " ".join(f'"{word}"' for word in words) + " %*\r\n")
    folder = shlex.quote(str(cache_folder(cache)))
    return ("#!/bin/sh\n"
            f"# {tool} for {target.triple}: zig from the package index ({requirement()})\n"
            f"ZIG_GLOBAL_CACHE_DIR=${{ZIG_GLOBAL_CACHE_DIR:-{folder}}}\n"
            f"ZIG_LOCAL_CACHE_DIR=${{ZIG_LOCAL_CACHE_DIR:-{folder}}}\n"
            "export ZIG_GLOBAL_CACHE_DIR ZIG_LOCAL_CACHE_DIR\n"
            f"exec {shlex.join(words)} \"$@\"\n")


def tool_path(folder: Path, tool: str) -> Path:
    """The wrapper of ``tool`` (cc, c++, ar, ranlib, rc, dlltool) in a toolchain folder."""
    return folder / (tool + WRAPPER_SUFFIX)


def toolchain_text(folder: Path, target: ZigTarget) -> str:
    def tool(name: str) -> str:
        return tool_path(folder, name).as_posix()

    lines = [f"# CMake toolchain: {target.triple} built with zig (release/toolchain/zig.py)",
             f"set(CMAKE_SYSTEM_NAME {target.system})",
             f"set(CMAKE_SYSTEM_PROCESSOR {target.processor})",
             f'set(CMAKE_C_COMPILER "{tool("cc")}")',
             f'set(CMAKE_CXX_COMPILER "{tool("c++")}")',
             f'set(CMAKE_AR "{tool("ar")}" CACHE FILEPATH "zig ar")',
             f'set(CMAKE_RANLIB "{tool("ranlib")}" CACHE FILEPATH "zig ranlib")',
             f'set(CMAKE_RC_COMPILER "{tool("rc")}")',
             *(f"set({name} {value})" for name, value in target.settings.items()),
             # Libraries and headers come from zig's own target libc; programs are the host's.
             "set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)"]
    return "\n".join(lines) + "\n"


def write_toolchain(target: ZigTarget, folder: Path, *, cache: Path) -> Path:
    """Writes the wrappers and the toolchain file for ``target`` into ``folder`` (created);
    returns the toolchain file. Provisions zig into ``cache`` when missing."""
    zig_path = zig(cache=cache)
    folder.mkdir(parents=True, exist_ok=True)
    for tool in _TOOLS:
        _write_if_changed(tool_path(folder, tool), wrapper_text(zig_path, cache, tool, target),
                          executable=True)
    toolchain = folder / "toolchain.cmake"
    _write_if_changed(toolchain, toolchain_text(folder, target))
    return toolchain
