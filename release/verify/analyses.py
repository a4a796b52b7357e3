"""What several checks consult, worked out once per verify run, on first use.

``Analyses`` belongs to one wheel and is reached from the run's context
(``context.analysis(factory)``, which hands itself over with the request), so an analysis
reads the same loader model, policy, options and facts the checks read. An analysis is a
module-level function of the wheel and the context (``linkage_model.py``'s ``analyze``,
``ownership_model.py``'s, a variant provider's such as ``cuda/device_code.py``'s
``of_wheel``); ``of(factory, context)`` runs it on the first call and keeps its value under the
function itself, typed as the factory returns it, so every check that names the same
function shares one computation. The module that defines an analysis offers the typed
accessors its users call (``linkage_model.resolutions(context)``,
``ownership_model.of(context)``).

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
    """The analyses of one wheel, each computed on first use for the one context that asks
    (the run's): the context passes itself with each request (``context.analysis``), so
    nothing binds the two when they are made."""

    def __init__(self, wheel: WheelModel) -> None:
        self.wheel = wheel
        self._context: C | None = None
        self._provided: dict[Callable[..., object], object] = {}
        self._lock = threading.RLock()   # an analysis may ask for another one

    def of(self, factory: Callable[[WheelModel, C], T], context: C) -> T:
        """The value of ``factory(wheel, context)``, computed on the first call for this
        factory and the same object for every later one (a factory that raises is asked
        again next time). ``factory`` is a module-level function: it is the key, so two
        checks that name the same function share one computation. Analyses serve one
        context: another one is refused (ValueError), as its loader model or options could
        make another value."""
        with self._lock:
            if self._context is None:
                self._context = context
            elif self._context is not context:
                raise ValueError("these analyses already serve another verify context: make "
                                 "one Analyses per context")
            if factory in self._provided:   # stored by this method, from this factory
                return cast(T, self._provided[factory])
            computed = factory(self.wheel, context)
            self._provided[factory] = computed
            return computed
