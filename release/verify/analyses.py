"""What several checks consult, worked out once per verify run, on first use.

``Analyses`` belongs to one wheel and is reached from the run's context
(``context.analyses``): the context binds itself to it when it is made, so an analysis reads
the same loader model, policy, options and facts the checks read. Each member is a
``functools.cached_property``: computed by the first check that asks, the same value for
every later one, and typed (a check asks for ``context.analyses.linkage_chains`` and gets a
``Mapping[str, tuple[Chain, ...]]``).

A variant provider's analysis (release/ never imports a provider) is reached through
``of(factory)``: the factory, a function of the wheel and the context, runs once per run and
its value is kept under the function itself, typed as the factory returns it (the CUDA
provider's checks read the wheel's device code as
``context.analyses.of(cuda.device_code.of_wheel)``)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, TypeVar, cast

from release.verify.checks.linkage import Chain, Linkage, Resolution
from release.verify.checks.linkage import analyze as analyze_linkage
from release.verify.checks.ownership import Ownership
from release.verify.checks.ownership import analyze as analyze_ownership
from release.verify.wheel_model import WheelModel

if TYPE_CHECKING:   # the context holds the analyses; the analyses read the context
    from release.verify.context import VerifyContext

T = TypeVar("T")
# a provider's analysis: computed from the wheel and the run's context
Factory = Callable[[WheelModel, "VerifyContext"], T]


class Analyses:
    def __init__(self, wheel: WheelModel) -> None:
        self.wheel = wheel
        self._context: VerifyContext | None = None
        self._provided: dict[Callable[..., object], object] = {}
        self._lock = threading.RLock()   # a factory may ask for another provider's analysis

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

    def of(self, factory: Factory[T]) -> T:
        """The value of ``factory(wheel, context)``, computed on the first call for this
        factory and the same object for every later one (a factory that raises is asked
        again next time). ``factory`` is a module-level function: it is the key, so two
        checks that name the same function share one computation."""
        with self._lock:
            if factory in self._provided:   # stored by this method, from this factory
                return cast(T, self._provided[factory])
            computed = factory(self.wheel, self.context)
            self._provided[factory] = computed
            return computed
