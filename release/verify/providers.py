"""The checks variant providers add to a verify run (``cuda``'s coverage check): named by the
wheel's own build record (``providers``, written by the pipeline) or by the caller
(``--provider NAME``), never read from the verifier's own project."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from release.errors import ConfigurationError
from release.variants import load_provider
from release.verify.checks import Check
from release.verify.wheel_model import WheelModel


def provider_checks(providers: Sequence[str]) -> tuple[Check, ...]:
    """The verify checks the named variant providers contribute, in order, each once."""
    checks: list[Check] = []
    for name in dict.fromkeys(providers):
        for check in load_provider(name).CHECKS:
            if not (hasattr(check, "NAME") and callable(getattr(check, "check", None))):
                raise ConfigurationError(f"variant provider '{name}' offers a check without "
                                         "NAME and check()", fix="see release/verify/checks")
            if check not in checks:
                checks.append(cast(Check, check))
    return tuple(checks)


def wheel_providers(wheel: WheelModel, given: Sequence[str] = ()) -> tuple[str, ...]:
    """The providers whose checks judge ``wheel``: those its build record names, then the
    ones given, each once."""
    record = wheel.build_record
    named = record.providers if record is not None else ()
    return tuple(dict.fromkeys([*named, *given]))


def checks_for(wheel: WheelModel, given: Sequence[str], checks: Sequence[Check]
               ) -> tuple[Check, ...]:
    """``checks``, then those of the providers that judge ``wheel`` (``wheel_providers``),
    each once."""
    named = wheel_providers(wheel, given)
    return tuple(dict.fromkeys((*checks, *provider_checks(named))))
