"""The error hierarchy of edgert: one subclass per status code of the C API (edgert.h)."""

from __future__ import annotations


class EdgertError(Exception):
    """A call into edgert failed; ``code`` is the C API's edgert_status value."""

    code = 5

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidProgramError(EdgertError):
    """The program's bytes are not a valid edgert program."""

    code = 1


class InvalidArgumentError(EdgertError, ValueError):
    """An argument has the wrong value: input count, dtype or shape, thread count, ..."""

    code = 2


class NotFoundError(EdgertError, LookupError):
    """Something named does not exist: an operator, a backend, a component, a file."""

    code = 3


class ProgramFileNotFoundError(NotFoundError, FileNotFoundError):
    """The program file given to ``edgert.load`` does not exist: a NotFoundError and a
    FileNotFoundError (with ``errno``, ``strerror`` and ``filename`` set)."""

    def __init__(self, message: str, *, errno: int | None = None, strerror: str | None = None,
                 filename: str | None = None) -> None:
        super().__init__(message)
        self.errno = errno
        self.strerror = strerror
        self.filename = filename

    def __str__(self) -> str:
        return self.message   # not OSError's "[Errno 2] ..." built from the fields


class UnsupportedError(EdgertError):
    """The request is valid but this build does not support it."""

    code = 4


class ExportError(UnsupportedError):
    """A model cannot become an edgert program as it is: what it does has no exact
    edgert equivalent (a dtype, a shape known only from the data, a state it writes), or
    the program would not compute what eager PyTorch computes."""


class UnsupportedOperatorError(ExportError):
    """The model uses an operator the front end cannot lower; ``operator`` is its ATen name
    and ``module`` the path of the module it came from ("" for the top level)."""

    def __init__(self, message: str, *, operator: str = "", module: str = "") -> None:
        super().__init__(message)
        self.operator = operator
        self.module = module


class InternalError(EdgertError):
    """A failure inside edgert that is not the caller's."""

    code = 5


class UnavailableError(EdgertError):
    """A backend cannot run here: no GPU, no driver, its runtime does not load."""

    code = 6


class OutOfMemoryError(EdgertError, MemoryError):
    """Memory ran out."""

    code = 7


_BY_CODE: dict[int, type[EdgertError]] = {
    cls.code: cls
    for cls in (
        InvalidProgramError,
        InvalidArgumentError,
        NotFoundError,
        UnsupportedError,
        InternalError,
        UnavailableError,
        OutOfMemoryError,
    )
}


def error_for(code: int, message: str) -> EdgertError:
    """The exception matching a C status code (EdgertError itself for an unknown code)."""
    return _BY_CODE.get(code, EdgertError)(message)
