"""A set of variant wheels (PEP 825, ``build --form variant``): each one a wheel of the
project's distribution with the label and properties its variant declares, and
``<name>-<version>-variants.json`` beside them, equal to the index variantlib merges from
the wheels' own variant.json files (``--write-variants-json`` writes it first)."""

from __future__ import annotations

from release.building.matrix import MatrixEntry
from release.distribution.wheel import normalize_distribution, write_atomically
from release.distribution.wheel_variant import (
    DIST_INFO_FILE,
    index_name,
    index_text,
    read_dist_info,
    read_index,
)
from release.errors import ReleaseError
from release.findings import Finding
from release.release_set.set_model import ReleaseSet, WheelFacts, error, record_distribution

NAME = "variants"


def check(release: ReleaseSet) -> list[Finding]:
    findings = []
    for wheel, entry in release.matched:
        findings += _variant_wheel(wheel.facts, entry, record_distribution(wheel.facts))
    labelled = [wheel.facts for wheel, _ in release.matched
                if wheel.facts.name.variant is not None]
    return findings + _index(release, labelled)


def _variant_wheel(facts: WheelFacts, entry: MatrixEntry, project: str) -> list[Finding]:
    """A variant wheel: the project's distribution, the label and properties its variant
    declares (the provider's check judges the properties against the wheel)."""
    label = facts.name.variant
    if label is None:
        return []
    name = facts.path.name
    if normalize_distribution(facts.name.distribution) != normalize_distribution(project):
        return [error(NAME, name, f"a variant wheel of {facts.name.distribution}, not of "
                      f"{project}", fix="build it with --form variant (one distribution for "
                      "every variant)")]
    if facts.variant_json is None:
        return [error(NAME, name, f"has a variant label but no {DIST_INFO_FILE}",
                      fix="rebuild it with --form variant")]
    try:
        found = read_dist_info(facts.variant_json, label=label, where=name)
    except ReleaseError as refused:
        return [error(NAME, name, refused.what, fix=refused.fix)]
    declared = entry.variant.wheel_variant
    if (found.label, found.properties) != (declared.label, declared.properties):
        return [error(NAME, name, f"claims label '{found.label}' with "
                      f"{', '.join(found.properties) or 'no properties'}; variant "
                      f"{entry.variant.name} declares '{declared.label}' with "
                      f"{', '.join(declared.properties) or 'no properties'}",
                      fix=f"rebuild it from [tool.release.variants.{entry.variant.name}]")]
    return []


def _index(release: ReleaseSet, variants: list[WheelFacts]) -> list[Finding]:
    """The variants.json of the set: written from the wheels when asked, else compared."""
    name = index_name(release.manifest.distribution, release.version)
    path = release.folder / name
    texts = [facts.variant_json for facts in variants if facts.variant_json is not None]
    if not texts:
        return [error(NAME, name, "no variant wheel for this index",
                      fix="remove it, or add the variant wheels")] if path.exists() else []
    try:
        wanted = index_text(texts)
    except ReleaseError as refused:
        return [error(NAME, name, refused.what, fix=refused.fix)]
    except ValueError as disagreement:   # variantlib: a label claimed with two property sets
        return [error(NAME, name, f"the wheels disagree: {disagreement}",
                      fix="rebuild every variant wheel from one commit")]
    fix = "run python -m release check-set --write-variants-json on the folder"
    if release.write_index:
        write_atomically(path, wanted)
    if not path.is_file():
        return [error(NAME, name, "is missing: variant-aware installers read the labels' "
                      "properties from it", fix=fix)]
    try:
        found = read_index(path.read_bytes(), where=name)
    except ReleaseError as refused:
        return [error(NAME, name, refused.what, fix=refused.fix)]
    expected = read_index(wanted, where=name)
    differ = sorted(label for label in {*found, *expected}
                    if found.get(label) != expected.get(label))
    if differ:
        return [error(NAME, name, f"disagrees with the wheels on {', '.join(differ)} "
                      f"(listed: {', '.join(sorted(found)) or 'none'}; wheels: "
                      f"{', '.join(sorted(expected))})", fix=fix)]
    return []
