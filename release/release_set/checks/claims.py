"""The wheel's build record carries its variant's own section as the variant declares it
(the CUDA provider's claimed compute capabilities and PTX), and the provider's checks (the
device-code coverage) ran on the wheel."""

from __future__ import annotations

from collections.abc import Mapping

from release.findings import CheckStatus, Finding
from release.release_set.set_model import ReleaseSet, error
from release.variants import load_provider

NAME = "claims"


def check(release: ReleaseSet) -> list[Finding]:
    findings = []
    for wheel, entry in release.matched:
        if wheel.report is None:
            continue
        facts, variant = wheel.facts, entry.variant
        declared = entry.release.record.sections
        if not declared:
            continue
        recorded = {} if facts.record is None else facts.record.sections
        for name, section in sorted(declared.items()):
            if recorded.get(name) != section:
                holds, declares = _section_difference(recorded.get(name), section)
                findings.append(error(NAME, facts.path.name,
                                      f"the build record's {name} section {holds}; variant "
                                      f"{variant.name} declares {declares}",
                                      fix=f"rebuild from the variant's file {variant.config}"))
        if variant.provider is None:
            continue
        for provided in load_provider(variant.provider).CHECKS:
            name = str(getattr(provided, "NAME", provided))
            if wheel.report.checks.get(name) != CheckStatus.RAN:
                findings.append(error(NAME, facts.path.name, f"verify's {name} check did not "
                                      f"run ({wheel.report.checks.get(name, 'absent')})",
                                      fix="verify the wheel with this project's providers"))
    return findings


def _value(value: object) -> str:
    return (", ".join(map(str, value)) or "none") if isinstance(value, list) else str(value)


def _section_difference(recorded: Mapping[str, object] | None,
                        declared: Mapping[str, object]) -> tuple[str, str]:
    """What the record holds and what the variant declares, for the keys that differ."""
    if recorded is None:
        return "is missing", "; ".join(f"{key} {_value(declared[key])}" for key in sorted(declared))
    keys = sorted(key for key in {*recorded, *declared} if recorded.get(key) != declared.get(key))
    return ("holds " + "; ".join(f"{key} {_value(recorded.get(key, 'none'))}" for key in keys),
            "; ".join(f"{key} {_value(declared.get(key, 'none'))}" for key in keys))
