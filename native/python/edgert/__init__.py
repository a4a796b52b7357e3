"""edgert: a compact on-device inference runtime.

    program = edgert.load("model.edgert")
    outputs = program.run([np.ones((1, 4), np.float32)])

The native components (runtime, thread pool, kernels, delegates) are shared libraries in
``edgert/lib``; ``edgert.cmake_dir()`` is the CMake package for C++ applications.
"""

# ruff: noqa: E402  (the installation check runs before the other imports)
from __future__ import annotations

from edgert._installation import check_single_distribution

check_single_distribution()  # first: two edgert distributions in one environment break each other

import operator
import os
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

if os.name == "nt":
    # Windows finds the components' DLLs (edgert/lib) only in folders the process adds, before
    # the extension is imported (Python >= 3.8 searches neither PATH nor the package folder).
    _dll_directory = os.add_dll_directory(os.path.join(os.path.dirname(__file__), "lib"))

import numpy as np

from edgert._errors import (
    EdgertError,
    ExportError,
    InternalError,
    InvalidArgumentError,
    InvalidProgramError,
    NotFoundError,
    OutOfMemoryError,
    ProgramFileNotFoundError,
    UnavailableError,
    UnsupportedError,
    UnsupportedOperatorError,
    error_for,
)
from edgert._native import backend_problem, call, extension, load_library, package_dir
from edgert.export import DTYPE_NAMES

__version__ = "0.1.0"

__all__ = [
    "EdgertError",
    "ExportError",
    "InternalError",
    "InvalidArgumentError",
    "InvalidProgramError",
    "NotFoundError",
    "OutOfMemoryError",
    "ProgramFileNotFoundError",
    "UnavailableError",
    "UnsupportedError",
    "UnsupportedOperatorError",
    "Registration",
    "TensorInfo",
    "MemoryPlan",
    "Program",
    "load",
    "operators",
    "backends",
    "available_backends",
    "threadpool_size",
    "set_threadpool_size",
    "threadpool_instance",
    "load_library",
    "lib_dir",
    "include_dir",
    "cmake_dir",
    "__version__",
]


class Registration(NamedTuple):
    """An operator or backend and the path of the library that registered it."""

    name: str
    owner: str


class TensorInfo(NamedTuple):
    """Declared dtype and shape of a program input (-1: known only at run time)."""

    dtype: np.dtype  # type: ignore[type-arg]
    shape: tuple[int, ...]


class MemoryPlan(NamedTuple):
    """What the executor's memory plan did in the program's last run (docs/operators.md,
    "Memory"). Bytes are those of tensor data, each byte once: a value that is a view of
    another (reshape, squeeze, a contiguous slice), of an input or of a constant adds only
    memory no other value covers."""

    peak_bytes: int       # most bytes the run's computed values (node outputs) held at once
    input_bytes: int      # the inputs the run read
    output_bytes: int     # its outputs (as the runtime held them, before the copy to numpy)
    constant_bytes: int   # the program's constants
    released_values: int  # values each run releases as soon as their last reader has run
    constants: str        # "copied", "mapped" (the file) or "borrowed" (the bytes object)


_CONSTANT_STORAGE = ("copied", "mapped", "borrowed")


def _input_list(inputs: object) -> list[object]:
    """A sequence of inputs other than a list or tuple as a list (TypeError for a string or a
    non-sequence)."""
    if isinstance(inputs, (str, bytes, bytearray)) or not isinstance(inputs, Sequence):
        raise TypeError(
            "run takes a sequence of arrays, one per input (for example [x]), not "
            f"{type(inputs).__name__}"
        )
    return list(inputs)


class Program:
    """A loaded program, made by ``edgert.load``. Safe to share between threads: runs of one
    program take turns (the native layer holds the program's lock while it binds the inputs,
    runs and copies the outputs, with the GIL released), and runs of different programs in
    different threads proceed at the same time."""

    def __init__(self, handle: object) -> None:
        """Wraps the native handle ``edgert.load`` makes; load programs with ``edgert.load``."""
        try:
            self._input_count, self._output_count = extension().counts(handle)
        except TypeError:
            raise TypeError(
                "Program wraps the handle edgert.load makes, not a "
                f"{type(handle).__name__}: load a program with edgert.load(path or bytes)"
            ) from None
        self._handle = handle
        self._run = extension().run
        self._native_error = extension().NativeError

    @property
    def input_count(self) -> int:
        """Number of inputs ``run`` takes."""
        return int(self._input_count)

    @property
    def output_count(self) -> int:
        """Number of arrays ``run`` returns."""
        return int(self._output_count)

    @property
    def input_info(self) -> list[TensorInfo]:
        """Declared dtype and shape of each input, in order."""
        infos = []
        for index in range(self.input_count):
            code, shape = call(extension().input_info, self._handle, index)
            infos.append(TensorInfo(np.dtype(DTYPE_NAMES[code]), tuple(shape)))
        return infos

    @property
    def memory_plan(self) -> MemoryPlan:
        """What the memory plan did in the last run (all zero but the constants before one)."""
        *sizes, storage = call(extension().memory_plan, self._handle)
        return MemoryPlan(*(int(size) for size in sizes), _CONSTANT_STORAGE[storage])

    def set_backends(self, names: Sequence[str]) -> None:
        """Backends tried in order before the plain kernels; [] runs only the kernels.
        A backend this installation lacks raises NotFoundError (UnavailableError when its
        delegate is installed but cannot run here), saying why and how to fix it. Nothing
        moves to a device here: a backend prepares its nodes (uploads weights) on the next
        run, once, and later runs reuse that."""
        if isinstance(names, str):
            raise TypeError("set_backends takes a list of names, not a string")
        names = list(names)
        try:
            call(extension().set_backends, self._handle, ",".join(names))
        except NotFoundError as error:
            registered = available_backends()
            for name in names:
                problem = backend_problem(name, registered)
                if problem is not None:
                    raise problem from None
            raise NotFoundError(
                f"{error}; the backends of this installation: {', '.join(registered)}"
            ) from None

    def delegated_nodes(self, backend: str) -> int:
        """Nodes the named backend ran in the last run."""
        return int(extension().delegated_nodes(self._handle, backend))

    def run(self, inputs: Sequence[object]) -> list[np.ndarray]:  # type: ignore[type-arg]
        """Runs the program on ``inputs`` (one array, or array-like, per input, in order)
        and returns its outputs as new numpy arrays. C-contiguous little-endian arrays of an
        edgert dtype are read in place; anything else is converted first."""
        if type(inputs) is not list and type(inputs) is not tuple:
            inputs = _input_list(inputs)
        try:
            return self._run(self._handle, inputs)  # type: ignore[no-any-return]
        except self._native_error as error:
            code, message = error.args
            raise error_for(int(code), str(message)) from None


def load(source: str | os.PathLike[str] | bytes | bytearray | memoryview) -> Program:
    """Loads a program from a file path or from its bytes. A file is mapped, not read: its
    constants are read in place (replace a loaded file by renaming a new one over it, never
    by rewriting it: docs/program-format.md, "Loading"). A bytes object is read in place too
    (the program holds a reference to it); a bytearray or memoryview is copied once. A
    missing file raises ProgramFileNotFoundError (a NotFoundError and a FileNotFoundError)."""
    if isinstance(source, (bytearray, memoryview)):
        source = bytes(source)   # mutable: the program keeps its own copy
    if isinstance(source, bytes):
        return Program(call(extension().load, source))
    path = os.fspath(source)
    try:
        return Program(call(extension().load_file, os.fsencode(path)))
    except NotFoundError as error:
        raise _file_error(path, error) from None


def _file_error(path: str | bytes, error: NotFoundError) -> NotFoundError:
    """The error for a program file the runtime could not open: ProgramFileNotFoundError
    (with errno and strerror) when it does not exist, else the runtime's NotFoundError."""
    try:
        os.stat(path)
    except FileNotFoundError as missing:
        return ProgramFileNotFoundError(
            f"cannot read program file {os.fsdecode(path)}: {missing.strerror}",
            errno=missing.errno, strerror=missing.strerror, filename=missing.filename,
        )
    except OSError:
        pass
    return error


def operators() -> list[Registration]:
    """Every registered operator and the library that registered it, sorted by name."""
    return [Registration(*entry) for entry in extension().operators()]


def backends() -> list[Registration]:
    """Every registered backend (delegate) and the library that registered it."""
    return [Registration(*entry) for entry in extension().backends()]


def available_backends() -> list[str]:
    """Names of the backends this installation offers, e.g. ["cpu", "cuda"]: "cuda" is
    listed when the CUDA delegate is installed and loads with its CUDA runtime (whether a
    GPU is present is known when a program uses it: ``Program.set_backends(["cuda"])``)."""
    return [entry.name for entry in backends()]


def threadpool_size() -> int:
    """Threads of the process-wide pool shared by every component."""
    return int(extension().threadpool_size())


MAX_THREADS = 1024  # the pool's own limit (native/threadpool)


def set_threadpool_size(threads: int) -> None:
    """Resizes the process-wide pool; 0 means one thread per CPU this process may use.
    A count outside 0..MAX_THREADS raises InvalidArgumentError (a ValueError)."""
    try:
        count = operator.index(threads)   # ints and numpy integers, not floats or strings
    except TypeError:
        raise TypeError(f"set_threadpool_size takes an int, not {type(threads).__name__}") from None
    if not 0 <= count <= MAX_THREADS:
        raise InvalidArgumentError(f"thread count {count} is outside 0..{MAX_THREADS}")
    extension().set_threadpool_size(count)


def threadpool_instance() -> int:
    """Address of the process-wide pool (equal in every component of the process)."""
    return int(extension().threadpool_instance())


def lib_dir() -> Path:
    """Folder of the shared libraries (``edgert/lib``)."""
    return package_dir() / "lib"


def include_dir() -> Path:
    """Folder of the C and C++ headers."""
    return package_dir() / "include"


def cmake_dir() -> Path:
    """Folder of ``edgertConfig.cmake``: pass it as ``-Dedgert_DIR`` to CMake."""
    return lib_dir() / "cmake" / "edgert"
