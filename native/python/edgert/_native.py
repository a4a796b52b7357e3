"""Access to the native side: the extension (imported on first use) and component libraries."""

from __future__ import annotations

import ctypes
import functools
import importlib
import json
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any, TypeVar

from edgert._errors import EdgertError, NotFoundError, UnavailableError, error_for

_T = TypeVar("_T")
_loaded_libraries: dict[str, ctypes.CDLL] = {}


def package_dir() -> Path:
    return Path(__file__).resolve().parent


def extension() -> ModuleType:
    """The edgert._C extension, imported on first use, with the shipped delegates it does not
    link (opt-in ones such as backend_cuda) loaded beside it."""
    module = importlib.import_module("edgert._C")
    _load_optional_delegates()
    _configure_arrays()
    return module


@functools.cache
def _configure_arrays() -> None:
    """Once: gives the extension numpy and the input converter (edgert._arrays)."""
    from edgert import _arrays

    _arrays.configure(importlib.import_module("edgert._C"))


@functools.cache
def build_record() -> dict[str, Any] | None:
    """The build record the pipeline writes beside the package (``_release.json``); None in
    a tree that was not laid out by it."""
    record_path = package_dir() / "_release.json"
    if not record_path.is_file():
        return None
    record: dict[str, Any] = json.loads(record_path.read_text(encoding="utf-8"))
    return record


def backend_name(component: str) -> str:
    """The backend a delegate component registers ("backend_cuda" -> "cuda")."""
    return component[len("backend_"):] if component.startswith("backend_") else component


# Backend name -> why its delegate did not load (the error load_library raised).
_unloaded_delegates: dict[str, EdgertError] = {}


@functools.cache
def _load_optional_delegates() -> None:
    """Loads every backend the build record lists that the extension does not link, so
    ``import edgert`` in a GPU build offers the "cuda" backend. A delegate that cannot load
    (for example its CUDA runtime wheel is missing) is a warning, attributed to the
    application's line that first used edgert: the CPU build still works."""
    record = build_record()
    if record is None:
        return
    linked = set(record["extension"]["depends"])
    for component in record["components"]:
        if "backends" in component["registers"] and component["name"] not in linked:
            try:
                load_library(component["name"])
            except EdgertError as error:
                _unloaded_delegates[backend_name(component["name"])] = error
                problem = backend_problem(backend_name(component["name"]), registered=())
                warn_at_caller(str(problem or error), RuntimeWarning)


def _is_import_machinery(frame: FrameType) -> bool:
    # The frames warnings.warn itself skips when counting stacklevel (warnings.py).
    return "importlib" in frame.f_code.co_filename and "_bootstrap" in frame.f_code.co_filename


def warn_at_caller(message: str, category: type[Warning]) -> None:
    """warnings.warn attributed to the first frame outside this package: the application's
    line, whichever chain of edgert functions led here."""
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame: FrameType | None = sys._getframe(0)
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame = frame.f_back
        while frame is not None and _is_import_machinery(frame):
            frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)


def _label(name: str) -> str:
    return "CUDA" if name == "cuda" else f"'{name}'"


def backend_problem(name: str, registered: Iterable[str]) -> EdgertError | None:
    """Why the backend ``name`` (not among the ``registered`` ones) is not available in this
    installation, with the fix: its delegate is not part of this build, its library is
    missing, or the library is there but does not load (typically: its CUDA runtime wheel is
    missing). None when ``name`` is registered, or is no backend edgert ships, or its
    delegate has not been loaded yet."""
    if name in registered:
        return None
    record = build_record()
    distribution = "edgert" if record is None else str(record["distribution"])
    component = None if record is None else next(
        (c for c in record["components"]
         if "backends" in c["registers"] and backend_name(c["name"]) == name), None)
    head = f"the {_label(name)} backend is not available in this installation"
    if component is None:
        if name != "cuda":
            return None
        if record is None:
            return NotFoundError(f"{head}: this build of edgert has no CUDA delegate (build "
                                 "it with --variant cu12 or --variant cu13)")
        return NotFoundError(
            f"{head}: {distribution} is the CPU build, which has no CUDA delegate; fix: "
            f"pip uninstall -y {distribution} && pip install edgert-cu12   (CUDA 12 driver; "
            "edgert-cu13 for a CUDA 13 driver)")
    library = package_dir().parent / component["file"]
    if not library.is_file():
        return NotFoundError(
            f"{head}: its delegate library {component['file']} is missing, so this "
            f"{distribution} installation is incomplete (another edgert distribution was "
            f"installed over it or removed from it); fix: pip uninstall -y {distribution} && "
            f"pip install {distribution}")
    error = _unloaded_delegates.get(name)
    if error is None:   # present, not registered, and no load failed: not loaded yet
        return None
    # the library from another distribution's wheel it could not load, when that is why
    runtime = next((dependency for dependency in
                    (record or {}).get("runtime_dependencies") or ()
                    if str(dependency["library"]) in str(error)), None)
    if runtime is None:
        return UnavailableError(
            f"{head}: its delegate {library.name} is installed but does not load ({error}); "
            f"fix: pip install --force-reinstall {distribution}")
    requirement = str(runtime["requirement"]).split(";")[0].strip()
    return UnavailableError(
        f"{head}: its delegate {library.name} is installed but cannot load the CUDA runtime "
        f"{runtime['library']}, which the {runtime['distribution']} wheel provides "
        f"({error}); fix: pip install '{requirement}'")


def call(function: Callable[..., _T], *args: Any) -> _T:
    """Calls an extension function, turning its NativeError into the matching EdgertError."""
    native_error = extension().NativeError
    try:
        return function(*args)
    except native_error as error:
        code, message = error.args
        raise error_for(int(code), str(message)) from None


def library_file_name(library: str) -> str:
    """File name of a component library: "edgert_kernels" -> libedgert_kernels.so."""
    if sys.platform == "win32":
        return f"{library}.dll"
    if sys.platform == "darwin":
        return f"lib{library}.dylib"
    return f"lib{library}.so"


def library_name(component: str) -> str:
    """The manifest's library name of a component ("runtime" -> "edgert"); library names
    ("edgert_export_plugin") pass through unchanged."""
    if component == "runtime":
        return "edgert"
    return component if component.startswith("edgert") else f"edgert_{component}"


def load_library(component: str) -> ctypes.CDLL:
    """Loads a component library shipped in the package's lib/ folder (once per process)."""
    name = library_name(component)
    if name not in _loaded_libraries:
        path = package_dir() / "lib" / library_file_name(name)
        if not path.is_file():
            raise NotFoundError(
                f"component library {path.name} is not in {path.parent}; this edgert build "
                f"does not ship component '{component}'"
            )
        try:
            _loaded_libraries[name] = ctypes.CDLL(str(path))
        except OSError as error:
            raise EdgertError(f"cannot load {path}: {error}") from None
    return _loaded_libraries[name]


def component_of(owner: str) -> str:
    """The component of a registering library's path (libedgert_kernels.so -> kernels)."""
    name = re.split(r"[\\/]", owner)[-1]
    match = re.match(r"(?:lib)?edgert_([a-z0-9_]+?)(?:\.so.*|\.dylib|\.dll)?$", name)
    return match.group(1) if match else name
