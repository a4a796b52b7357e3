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

import functools
import operator
import os
import re
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

if sys.platform == "win32":  # os.name == "nt" (mypy narrows on sys.platform)
    # Windows finds the components' DLLs (edgert/lib) only in folders the process adds, before
    # the extension is imported (Python >= 3.8 searches neither PATH nor the package folder).
    _dll_directory = os.add_dll_directory(os.path.join(os.path.dirname(__file__), "lib"))

import numpy as np
import numpy.typing as npt

from edgert import _arrays
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
from edgert._native import (
    backend_name,
    backend_problem,
    build_record,
    call,
    extension,
    load_library,
    package_dir,
)
from edgert.program_format import DTYPE_NAMES

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
    "ProgramFormatWarning",
    "Registration",
    "TensorInfo",
    "MemoryPlan",
    "Program",
    "load",
    "operators",
    "operator_attributes",
    "backends",
    "available_backends",
    "installed_backends",
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

    dtype: np.dtype[Any]
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
    def format_version(self) -> int:
        """The program file's format version: 2 carries a checksum checked at load, 1 (older
        files, still loaded) none."""
        return int(call(extension().format_version, self._handle))

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
        peak, inputs, outputs, constants, released, storage = call(extension().memory_plan,
                                                                   self._handle)
        return MemoryPlan(int(peak), int(inputs), int(outputs), int(constants), int(released),
                          _CONSTANT_STORAGE[storage])

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
            registered = [entry.name for entry in backends()]
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

    def run(
        self, inputs: Sequence[object], *, memory_limit: int | None = None
    ) -> list[npt.NDArray[Any]]:
        """Runs the program on ``inputs`` (one per input, in order) and returns its outputs
        as new numpy arrays.

        ``memory_limit`` caps, for this run, the bytes of tensor memory it may hold at once
        (0: no cap; None: the program's own cap, which the environment variable
        ``EDGERT_MEMORY_LIMIT`` sets when it is loaded). An allocation that would go past it
        is refused before it is made: OutOfMemoryError gives the bytes the run needed and
        the cap (docs/operators.md, "Memory limit").

        An input is an array of the input's declared dtype (``input_info``): C-contiguous
        little-endian numpy arrays are read in place, other layouts and byte orders are
        copied first. A Python list, tuple or scalar is converted to the declared dtype when
        that keeps what kind of number it holds (bools to anything, integers to integers or
        floats, floats to floats; Python floats to float32 round to nearest) and no value
        changes otherwise. An array of another dtype is not converted: InvalidArgumentError
        names the input, its dtype and the one expected (``x.astype(np.float32)``)."""
        if type(inputs) is not list and type(inputs) is not tuple:
            inputs = _input_list(inputs)
        limit = () if memory_limit is None else (_memory_limit(memory_limit),)
        try:
            return self._run(self._handle, inputs, *limit)  # type: ignore[no-any-return]
        except self._native_error as error:
            code, message = error.args
            failure: EdgertError = error_for(int(code), str(message))
        except InvalidArgumentError as error:   # from the converter (edgert._arrays)
            failure = error
        if not isinstance(failure, InvalidArgumentError):
            raise failure from None
        # Only on failure: find the input the program cannot take, name it, and convert
        # Python values (lists, scalars) to the declared dtypes, then run again.
        converted = _arrays.conform(inputs, [info.dtype for info in self.input_info])
        if converted is None:
            raise failure from None
        try:
            return self._run(self._handle, converted, *limit)  # type: ignore[no-any-return]
        except self._native_error as error:
            code, message = error.args
            raise error_for(int(code), str(message)) from None


_MAX_MEMORY_LIMIT = 2**63 - 1


def _memory_limit(value: object) -> int:
    """``memory_limit`` checked: a whole number of bytes, 0 (no cap) or more."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"memory_limit must be a whole number of bytes, not {type(value).__name__}")
    if not 0 <= int(value) <= _MAX_MEMORY_LIMIT:
        raise ValueError(f"memory_limit must be from 0 (no cap) to {_MAX_MEMORY_LIMIT} bytes, "
                         f"not {int(value)}")
    return int(value)


class ProgramFormatWarning(UserWarning):
    """A program loaded, with a note about its file: format version 1 carries no checksum, so
    corruption cannot be detected (write it again with this edgert to get version 2)."""


def _noted(program: Program) -> Program:
    note = call(extension().last_warning)   # this thread's last load: the one just made
    if note:
        warnings.warn(note, ProgramFormatWarning, stacklevel=3)
    return program


def load(source: str | os.PathLike[str] | bytes | bytearray | memoryview) -> Program:
    """Loads a program from a file path or from its bytes. A file is mapped, not read: its
    constants are read in place (replace a loaded file by renaming a new one over it, never
    by rewriting it: docs/program-format.md, "Loading"). A bytes object is read in place too
    (the program holds a reference to it); a bytearray or memoryview is copied once. A
    missing file raises ProgramFileNotFoundError (a NotFoundError and a FileNotFoundError). A
file of format version 1 (no checksum) loads with a ProgramFormatWarning."""
    if isinstance(source, (bytearray, memoryview)):
        source = bytes(source)   # mutable: the program keeps its own copy
    try:
        if isinstance(source, bytes):
            return _noted(Program(call(extension().load, source)))
        path = os.fspath(source)
        try:
            return _noted(Program(call(extension().load_file, os.fsencode(path))))
        except NotFoundError as error:
            raise _file_error(path, error) from None
    except NotFoundError as error:
        raise _operator_error(error) from None


_UNKNOWN_OPERATOR = re.compile(r"unknown operator '([^']+)' \(node (\d+)\)")


def _operator_error(error: NotFoundError) -> NotFoundError:
    """The runtime's "unknown operator" error with the hint this installation can give (it
    knows every component it loaded and the operators each registers); any other error as it
    is."""
    match = _UNKNOWN_OPERATOR.search(str(error))
    if match is None or isinstance(error, ProgramFileNotFoundError):
        return error
    name, node = match.groups()
    return NotFoundError(f"{str(error)[:match.start()]}unknown operator '{name}' (node {node}) "
                         f"in this edgert {__version__}: {_operator_hint(name)}")


def _namespace(name: str) -> str:
    return name.rsplit("::", 1)[0] + "::" if "::" in name else ""


def _operator_hint(name: str) -> str:
    """Which component provides the operator ``name``, from what this installation registered
    (the table of ``python -m edgert --operators``): the one that registered it, or, when none
    did, the component providing its namespace (which lacks it), or that no shipped component
    provides that namespace."""
    from edgert._native import component_of

    providers: dict[str, dict[str, str]] = {}   # namespace -> component -> library file
    for entry in operators():
        if entry.name == name:
            return (f"it is registered by the {component_of(entry.owner)} component "
                    f"({os.path.basename(entry.owner)})")
        providers.setdefault(_namespace(entry.name), {})[component_of(entry.owner)] = (
            os.path.basename(entry.owner))
    listing = "python -m edgert --operators lists the operators it has"
    namespace = _namespace(name)
    if namespace in providers:
        components = " and ".join(f"the {component} component ({library})"
                                  for component, library in sorted(providers[namespace].items()))
        return (f"no shipped component provides it: operators of namespace '{namespace}' "
                f"come from {components}, which is loaded and has no '{name}' (a program "
                f"made for a newer edgert can name operators this one lacks: export it again "
                f"with this edgert, or upgrade edgert; {listing})")
    known = " and ".join(f"'{space}'" for space in sorted(providers) if space)
    if not namespace:
        return (f"it names no namespace (operators are named 'namespace::name') and no "
                f"shipped component provides it (the components of edgert provide {known}; "
                f"{listing})")
    return (f"no shipped component provides namespace '{namespace}' (the components of "
            f"edgert provide {known}; {listing})")


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


def operator_attributes() -> dict[str, dict[str, str] | None]:
    """The attributes each registered operator reads and their kinds (``int``, ``float``,
    ``string``, ``ints``, ``floats``), by operator: loading a program refuses a node that
    gives one of them a value of another kind. None for an operator that declared nothing
    (one of another library, left to its kernel)."""
    declared: dict[str, dict[str, str] | None] = {}
    for name, text in extension().operator_attributes():
        declared[name] = None if text is None else dict(
            pair.split(":", 1) for pair in text.split(",") if pair)
    return declared


def backends() -> list[Registration]:
    """Every registered backend (delegate) and the library that registered it."""
    return [Registration(*entry) for entry in extension().backends()]


@functools.cache
def _probe_bytes() -> bytes:
    """A program of no nodes (its output is its input): set_backends on it asks each backend
    only whether it can run here, as set_backends on any program does first."""
    from edgert.program_format import ProgramBuilder

    builder = ProgramBuilder()
    builder.output(builder.input("float32", (1,)))
    return builder.to_bytes()


def available_backends() -> list[str]:
    """Names of the backends that can run here, e.g. ["cpu"] or ["cpu", "cuda"]: those
    ``Program.set_backends`` accepts now. "cuda" is listed when the CUDA delegate is
    installed, loads with its CUDA runtime and finds a usable GPU and driver; a CUDA build
    without a GPU lists only "cpu" (``installed_backends()`` still lists "cuda", and
    ``set_backends(["cuda"])`` says why it cannot run). Asked each call: a delegate can become
    unavailable while the process runs (a failed CUDA context, a forked child)."""
    probe = call(extension().load, _probe_bytes())
    names = []
    for entry in backends():
        try:
            call(extension().set_backends, probe, entry.name)
        except EdgertError:   # UnavailableError: no GPU or driver, a poisoned context, ...
            continue
        names.append(entry.name)
    return names


def installed_backends() -> list[str]:
    """Names of the backends this installation has, sorted, whether or not they can run
    here: every registered backend, and a shipped delegate whose library is installed but did
    not load (``Program.set_backends`` names the reason). ``available_backends()`` says which
    of them can run."""
    names = {entry.name for entry in backends()}
    record = build_record()
    for component in [] if record is None else record["components"]:
        if "backends" in component["registers"] and (
                package_dir().parent / component["file"]).is_file():
            names.add(backend_name(component["name"]))
    return sorted(names)


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
