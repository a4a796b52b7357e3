"""``python -m release verify``: prove a wheel is what it claims (see docs/verify.md).

Public API: ``verify_wheel``, ``Report``, ``VerifyOptions``, and for checks
``WheelModel``, ``BinaryFile``, ``VerifyContext``. Each is imported when first used, so the
command line can refuse a bad argument before the checks and platforms are loaded. The
command itself, in-process, is ``release.__main__.main(["verify", ...])``."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from release.distribution.archive import Limits
    from release.verify.api import verify_wheel
    from release.verify.context import VerifyContext
    from release.verify.options import VerifyOptions
    from release.verify.report import SCHEMA_VERSION, Report
    from release.verify.wheel_model import BinaryFile, WheelModel

_HOMES = {"verify_wheel": "release.verify.api", "VerifyContext": "release.verify.context",
          "Limits": "release.distribution.archive", "VerifyOptions": "release.verify.options",
          "SCHEMA_VERSION": "release.verify.report", "Report": "release.verify.report",
          "BinaryFile": "release.verify.wheel_model", "WheelModel": "release.verify.wheel_model"}

__all__ = ["SCHEMA_VERSION", "BinaryFile", "Limits", "Report", "VerifyContext", "VerifyOptions",
           "WheelModel", "verify_wheel"]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'release.verify' has no attribute '{name}'")
    return getattr(importlib.import_module(home), name)
