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
import threading
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
)
from edgert._native import backend_problem, call, extension, load_library, package_dir
from edgert.export import DTYPE_CODES, DTYPE_NAMES, dtype_name

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


def _to_native(array: object) -> tuple[bytes, tuple[int, ...], int]:
    value = np.asarray(array)
    try:
        name = dtype_name(value.dtype)
    except ValueError as error:
        raise InvalidArgumentError(str(error)) from None
    little = np.ascontiguousarray(value, dtype=np.dtype(name).newbyteorder("<"))
    return little.tobytes(), tuple(int(d) for d in value.shape), DTYPE_CODES[name]


def _from_native(data: bytes, shape: tuple[int, ...], code: int) -> np.ndarray:  # type: ignore[type-arg]
    dtype = np.dtype(DTYPE_NAMES[code]).newbyteorder("<")
    return np.frombuffer(data, dtype=dtype).astype(DTYPE_NAMES[code]).reshape(shape)


class Program:
    """A loaded program, made by ``edgert.load``. Safe to share between threads: runs of one
    program take turns (each run sets its inputs, runs and copies its outputs under the
    program's lock); use one program per thread to run in parallel."""

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
        self._lock = threading.Lock()

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

    def set_backends(self, names: Sequence[str]) -> None:
        """Backends tried in order before the plain kernels; [] runs only the kernels.
        A backend this installation lacks raises NotFoundError (UnavailableError when its
        delegate is installed but cannot run here), saying why and how to fix it. Nothing
        moves to a device here: a backend prepares its nodes (uploads weights) on the next
        run, once, and later runs reuse that."""
        if isinstance(names, str):
            raise TypeError("set_backends takes a list of names, not a string")
        names = list(names)
        with self._lock:
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
        and returns its outputs as new numpy arrays."""
        if isinstance(inputs, (str, bytes, bytearray)) or not isinstance(inputs, Sequence):
            raise TypeError(
                "run takes a sequence of arrays, one per input (for example [x]), not "
                f"{type(inputs).__name__}"
            )
        if len(inputs) != self.input_count:
            raise InvalidArgumentError(
                f"the program takes {self.input_count} inputs, {len(inputs)} given"
            )
        native_inputs = [_to_native(array) for array in inputs]
        with self._lock:
            outputs = call(extension().run, self._handle, native_inputs)
        return [_from_native(*output) for output in outputs]


def load(source: str | os.PathLike[str] | bytes | bytearray | memoryview) -> Program:
    """Loads a program from a file path or from its bytes. A missing file raises
    ProgramFileNotFoundError (both a NotFoundError and a FileNotFoundError)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
    else:
        try:
            data = Path(source).read_bytes()
        except FileNotFoundError as error:
            raise ProgramFileNotFoundError(
                f"cannot read program file {source}: {error.strerror}",
                errno=error.errno, strerror=error.strerror, filename=error.filename,
            ) from None
        except OSError as error:
            raise NotFoundError(f"cannot read program file {source}: {error.strerror}") from None
    return Program(call(extension().load, data))


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
