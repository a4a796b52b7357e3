"""What several checks consult, worked out once per verify run, on first use.

``Analyses`` belongs to one wheel and is reached from the run's context
(``context.analyses``): the context binds itself to it when it is made, so an analysis reads
the same loader model, policy, options and facts the checks read. An analysis is a
module-level function of the wheel and the context (``linkage_model.py``'s ``analyze``,
``ownership_model.py``'s, a variant provider's such as ``cuda/device_code.py``'s
``of_wheel``); ``of(factory)`` runs it on the first call and keeps its value under the
function itself, typed as the factory returns it, so every check that names the same
function shares one computation. The module that defines an analysis offers the typed
accessors its users call (``linkage_model.resolutions(context)``, ``ownership_model.of(context)``).

This module knows neither the checks nor the context's class (it is generic in the
context), so the context can hold it without an import running back up."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar, cast

from release.verify.wheel_model import WheelModel

T = TypeVar("T")
C = TypeVar("C")   # the verify context the analyses belong to


class Analyses(Generic[C]):
    def __init__(self, wheel: WheelModel) -> None:
        self.wheel = wheel
        self._context: C | None = None
        self._provided: dict[Callable[..., object], object] = {}
        self._lock = threading.RLock()   # an analysis may ask for another one

    def bind(self, context: C) -> None:
        """Called by the context that holds these analyses (``VerifyContext.__post_init__``)."""
        if self._context is not None and self._context is not context:
            raise ValueError("these analyses already belong to another verify context: make "
                             "one Analyses per context")
        self._context = context

    @property
    def context(self) -> C:
        if self._context is None:
            raise ValueError("the analyses are not bound to a verify context: pass them as "
                             "VerifyContext(analyses=...)")
        return self._context

    def of(self, factory: Callable[[WheelModel, C], T]) -> T:
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
