"""What several checks consult, worked out once per verify run, on first use.

``Analyses`` belongs to one wheel and is reached from the run's context
(``context.analyses``): the context binds itself to it when it is made, so an analysis reads
the same loader model, policy, options and facts the checks read. Each member is a
``functools.cached_property``: computed by the first check that asks, the same value for
every later one, and typed (a check asks for ``context.analyses.linkage_chains`` and gets a
``Mapping[str, tuple[Chain, ...]]``)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import TYPE_CHECKING

from release.verify.checks.linkage import Chain, Linkage, Resolution
from release.verify.checks.linkage import analyze as analyze_linkage
from release.verify.checks.ownership import Ownership
from release.verify.checks.ownership import analyze as analyze_ownership
from release.verify.wheel import WheelModel

if TYPE_CHECKING:   # the context holds the analyses; the analyses read the context
    from release.verify.context import VerifyContext


class Analyses:
    def __init__(self, wheel: WheelModel) -> None:
        self.wheel = wheel
        self._context: VerifyContext | None = None

    def bind(self, context: VerifyContext) -> None:
        """Called by the context that holds these analyses (``VerifyContext.__post_init__``)."""
        if self._context is not None and self._context is not context:
            raise ValueError("these analyses already belong to another verify context: make "
                             "one Analyses per context")
        self._context = context

    @property
    def context(self) -> VerifyContext:
        if self._context is None:
            raise ValueError("the analyses are not bound to a verify context: pass them as "
                             "VerifyContext(analyses=...)")
        return self._context

    @cached_property
    def linkage(self) -> Linkage:
        """Every needed library of every binary resolved, and the chains that load each
        binary (one pass: the resolutions follow the chains); empty when no loader model
        claims the wheel."""
        return analyze_linkage(self.wheel, self.context)

    @property
    def resolutions(self) -> tuple[Resolution, ...]:
        return self.linkage.resolutions

    @property
    def linkage_chains(self) -> Mapping[str, tuple[Chain, ...]]:
        return self.linkage.chains

    @cached_property
    def ownership(self) -> Ownership:
        """Which shipped library registers each operator and backend (exact, heuristic or
        none: see checks/ownership.py)."""
        return analyze_ownership(self.wheel, self.context)
