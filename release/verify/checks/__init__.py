"""The checks verify runs, in order. A check is one module with ``NAME``, ``RUNS_PROGRAMS``
(False: it only reads files, so it runs under --static) and
``check(wheel: WheelModel, context: VerifyContext) -> list[Finding]``.
Add a check by writing its module and listing it in CHECKS; a variant provider adds its own
(release/variants.py, e.g. cuda/coverage.py). Checks speak through the wheel's loader model
(``context.loader``, release/loader.py), never a binary format's own terms; they share the
analyses of ``context.analyses`` (release/verify/analyses.py), and a check that did not run
says so with a finding carrying its ``CheckStatus`` (``_common.not_run``,
``_common.environment``)."""

from __future__ import annotations

from typing import Protocol

from release.findings import Finding
from release.verify.checks import (
    components,
    duplicates,
    identity,
    leaks,
    linkage,
    load_matrix,
    metadata,
    ownership,
    private_copies,
    sdk_routes,
    search_path,
    variant,
)
from release.verify.context import VerifyContext
from release.verify.wheel_model import WheelModel


class Check(Protocol):
    NAME: str
    RUNS_PROGRAMS: bool

    def check(self, wheel: WheelModel, context: VerifyContext) -> list[Finding]: ...


CHECKS: tuple[Check, ...] = (
    identity,
    components,
    linkage,
    search_path,
    ownership,
    private_copies,
    duplicates,
    leaks,
    metadata,
    load_matrix,
    sdk_routes,
    variant,
)
