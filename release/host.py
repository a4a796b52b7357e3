"""The machine verify and the pipeline run on, and how it runs programs for other machines:
``Host`` (this machine's system and architecture, and the emulated machines it can run
programs for) and ``Runner`` (how programs of one machine run and are built here: natively,
or through an emulator in a root folder of that machine). Every layer takes these values
from here; nothing else reads the host's operating system and architecture."""

from __future__ import annotations

import functools
import platform as host_platform
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from release.errors import ToolError


@dataclass(frozen=True)
class Runner:
    """How this host runs, and builds, programs for one machine: natively (no prefix, this
    interpreter, the default compilers), or through an emulator that runs them in a root
    folder holding that machine's C library, C++ runtime and Python."""

    machine: str                            # "x86_64", "aarch64"...
    prefix: tuple[str, ...] = ()            # before a program: ("qemu-aarch64", "-L", root)
    python: str = sys.executable            # an interpreter of that machine ("": none)
    # configure a CMake project for that machine (a toolchain file); None: no compiler for it
    cmake_arguments: tuple[str, ...] | None = ()
    system: str = ""                        # the programs' operating system ("": this host's)
    # programs the platform provisioned for its loader model to run there: name -> path
    helpers: tuple[tuple[str, str], ...] = ()
    # folders outside verify's scratch its programs must write to (wine's server folder):
    # a sandbox gives each run an empty folder of its own there
    writes: tuple[str, ...] = ()
    # caches its compilers must write to (zig's): (variable, seed folder); a sandbox copies
    # each seed into its scratch before its first run and points the variable at the copy
    seeds: tuple[tuple[str, str], ...] = ()

    def reads(self) -> tuple[str, ...]:
        """The files and folders outside the system's that its programs read: the emulator's
        root folder, the toolchain files its CMake arguments name, its helpers. A sandbox
        shows them read-only."""
        named = [*self.prefix, *(argument.partition("=")[2] for argument in
                                 self.cmake_arguments or ()),
                 *(path for _, path in self.helpers)]
        return tuple(dict.fromkeys(path for path in named if path.startswith("/")))

    def command(self, program: str, *arguments: str) -> list[str]:
        """``program`` run with ``arguments`` on this host."""
        return [*self.prefix, program, *arguments]

    def python_command(self, *arguments: str) -> list[str]:
        if not self.python:
            raise ToolError(f"no Python interpreter runs {self.system or 'here'} "
                            f"{self.machine} programs on this host",
                            fix="run this check on a machine of the wheel's platform")
        return self.command(self.python, *arguments)

    def helper(self, name: str) -> str:
        """The path of the provisioned helper program ``name``."""
        for known, path in self.helpers:
            if known == name:
                return path
        raise ToolError(f"the {self.system or 'host'} {self.machine} runner has no helper "
                        f"'{name}'", fix="provision it in the platform's runner()")


# the names operating systems report for a machine -> the one name verify uses for it
_MACHINES = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}
# verify's machine name -> the platform's own target name, where the two differ
_TARGET_ARCHES = {"macos": {"aarch64": "arm64"}, "windows": {"x86_64": "amd64", "aarch64": "arm64"}}


@dataclass(frozen=True)
class Host:
    """The machine verify runs on (passed in, so other hosts are testable anywhere), with
    the emulated machines it can run programs for besides its own. ``provide`` is asked,
    only when no runner above answers a request, for the runners the wheel's platform can
    make (a wine prefix and its helpers): nothing is provisioned unless a check runs
    programs. A Host is a value: ``provide`` is made to answer from memory once it has
    provisioned (``provide_once``), so the Host itself keeps no state."""

    system: str      # "linux", "darwin", "windows"
    machine: str     # "x86_64", "aarch64"...
    emulated: tuple[Runner, ...] = ()
    provide: Callable[[], Sequence[Runner]] | None = field(default=None, compare=False,
                                                          repr=False)

    @classmethod
    def current(cls, *, emulated: Sequence[Runner] = (),
                provide: Callable[[], Sequence[Runner]] | None = None) -> Host:
        """This machine: the one place the pipeline reads the host's operating system and
        architecture (tests/quality holds it); everything else is handed this value."""
        machine = host_platform.machine().lower()
        return cls(host_platform.system().lower(), _MACHINES.get(machine, machine),
                   tuple(emulated), provide)

    def arch(self, platform: str) -> str:
        """This host's architecture in the target names of ``platform`` (a manifest target's
        ``arch``): an Apple-silicon Mac is ``arm64`` to macOS, a 64-bit Arm Linux machine
        ``aarch64``, an x86-64 Windows machine ``amd64``."""
        return _TARGET_ARCHES.get(platform, {}).get(self.machine, self.machine)

    def runner(self, machine: str, system: str = "") -> Runner | None:
        """How programs for ``machine`` (of operating system ``system``; "": this host's)
        run here: natively, emulated, or not at all (None)."""
        system = "" if system == self.system else system
        if machine == self.machine and not system:
            return Runner(machine)

        def answering(runners: Sequence[Runner]) -> Runner | None:
            return next((runner for runner in runners
                         if runner.machine == machine and runner.system == system), None)
        found = answering(self.emulated)
        if found is None and self.provide is not None:
            found = answering(self.provide())
        return found


def provide_once(provide: Callable[[], Sequence[Runner]]) -> Callable[[], tuple[Runner, ...]]:
    """``provide``, run on its first call only; later calls answer what it made."""
    return functools.cache(lambda: tuple(provide()))


__all__ = ["Host", "Runner", "provide_once"]
