"""Every failure a user can see is one of these; only ``release.__main__.main`` turns them
into an exit code. A message says what failed, why, and how to fix it, on one line."""

from __future__ import annotations


def one_line(text: str) -> str:
    """``text`` with every character that is not printable written as its escape (a newline
    as ``\\n``): names read from archives and binaries may appear in a one-line message."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else char.encode("unicode_escape").decode("ascii")
                   for char in text)


def printable(text: str) -> str:
    """``text`` with its lines kept but every other character that is not printable written
    as its escape (ESC as ``\\x1b``): captured output of a wheel's programs, shown in
    reports, never moves a terminal's cursor, title or colours."""
    return "\n".join(one_line(line.replace("\t", "    ")) for line in text.split("\n"))


class ReleaseError(Exception):
    """Base class. ``exit_code`` is what the CLI exits with."""

    exit_code = 1

    def __init__(self, what: str, *, fix: str = "") -> None:
        self.what = one_line(what)
        self.fix = one_line(fix)
        super().__init__(self.message)

    @property
    def message(self) -> str:
        return f"{self.what} (fix: {self.fix})" if self.fix else self.what


class ConfigurationError(ReleaseError):
    """The manifest, a data file or a command-line option is wrong."""

    exit_code = 2


class ToolError(ReleaseError):
    """A required tool (compiler, CMake, patchelf, auditwheel, nvcc...) is missing or unusable."""

    exit_code = 3


class CommandError(ReleaseError):
    """A subprocess failed; carries the command, its exit status and the tail of its output."""

    exit_code = 4

    def __init__(self, what: str, *, command: list[str], returncode: int, output: str,
                 fix: str = "") -> None:
        self.command = command
        self.returncode = returncode
        self.output = output
        super().__init__(what, fix=fix)


class OutputLimitExceeded(CommandError):
    """A program printed more than the caller keeps (verify's sandbox: the wheel's doing)."""


class DeadlineReached(ReleaseError):
    """A full verify ran out of its overall time (``--deadline``) while the wheel's code ran:
    the check that was running and every later one that runs programs are stopped."""

    exit_code = 7

    def __init__(self, what: str, *, seconds: float, fix: str = "") -> None:
        self.seconds = seconds
        super().__init__(what, fix=fix)


class WheelError(ReleaseError):
    """A wheel is malformed, unsafe to unpack or inconsistent with its metadata."""

    exit_code = 5


class BinaryFormatError(ReleaseError):
    """A binary (ELF, Mach-O, PE, fatbin, program file) is truncated or malformed."""

    exit_code = 6


class LimitExceeded(BinaryFormatError):
    """A binary holds more than a reader's budget allows (symbols, sections, records, bytes):
    reading on would cost memory out of proportion to any real library, so the run stops."""


class VerificationFailed(ReleaseError):
    """verify found at least one error-level finding."""

    exit_code = 7


class EnvironmentFailure(ReleaseError):
    """The environment stopped the run, not the project or the wheel: a full or read-only
    disk, an output path that is not a folder, a build folder in use, an unreachable index."""

    exit_code = 8


class EnvironmentCommandError(CommandError, EnvironmentFailure):
    """A subprocess the machine stopped (a full disk, no memory, too slow for its time
    limit), not the project or the wheel: exit 8, and a check that meets one is 'not run
    (environment)'."""

    exit_code = EnvironmentFailure.exit_code
