"""The error hierarchy of edgert: one subclass per status code of the C API (edgert.h)."""

from __future__ import annotations


class EdgertError(Exception):
    """A call into edgert failed; ``code`` is the C API's edgert_status value."""

    code = 5

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidProgramError(EdgertError):
    code = 1


class InvalidArgumentError(EdgertError, ValueError):
    code = 2


class NotFoundError(EdgertError, LookupError):
    code = 3


class UnsupportedError(EdgertError):
    code = 4


class InternalError(EdgertError):
    code = 5


class UnavailableError(EdgertError):
    code = 6


class OutOfMemoryError(EdgertError, MemoryError):
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
