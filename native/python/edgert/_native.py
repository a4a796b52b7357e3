"""Access to the native side: the extension (imported on first use) and component libraries."""

from __future__ import annotations

import ctypes
import functools
import importlib
import json
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from edgert._errors import EdgertError, NotFoundError, error_for

_T = TypeVar("_T")
_loaded_libraries: dict[str, ctypes.CDLL] = {}


def package_dir() -> Path:
    return Path(__file__).resolve().parent


def extension() -> ModuleType:
    """The edgert._C extension, imported on first use, with the shipped delegates it does not
    link (opt-in ones such as backend_cuda) loaded beside it."""
    module = importlib.import_module("edgert._C")
    _load_optional_delegates()
    return module


@functools.cache
def _load_optional_delegates() -> None:
    """Loads every backend the build record lists that the extension does not link, so
    ``import edgert`` in a GPU build offers the "cuda" backend. A delegate that cannot load
    (for example its CUDA runtime wheel is missing) is a warning: the CPU build still works."""
    record_path = package_dir() / "_release.json"
    if not record_path.is_file():
        return
    record = json.loads(record_path.read_text(encoding="utf-8"))
    linked = set(record["extension"]["depends"])
    for component in record["components"]:
        if "backends" in component["registers"] and component["name"] not in linked:
            try:
                load_library(component["name"])
            except EdgertError as error:
                warnings.warn(f"edgert: the {component['name']} delegate is unavailable: {error}",
                              RuntimeWarning, stacklevel=3)


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
