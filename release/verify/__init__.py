"""``python -m release verify``: prove a wheel is what it claims (see docs/verify.md).

Public API: ``verify_wheel``, ``main``, ``Report``, ``VerifyOptions``, and for checks
``WheelModel``, ``BinaryFile``, ``VerifyContext``."""

from __future__ import annotations

from release.verify.api import verify_wheel
from release.verify.cli import main
from release.verify.context import VerifyContext
from release.verify.options import Limits, VerifyOptions
from release.verify.report import SCHEMA_VERSION, Report
from release.verify.wheel import BinaryFile, WheelModel

__all__ = ["SCHEMA_VERSION", "BinaryFile", "Limits", "Report", "VerifyContext", "VerifyOptions",
           "WheelModel", "main", "verify_wheel"]
