"""Wheel variants (PEP 825, the package format of PEP 817): one distribution, several wheels
of one version told apart by a variant label in the file name, the variant's properties in
``.dist-info/variant.json``, and ``{name}-{version}-variants.json`` beside the wheels
mapping every label to its properties.

The format is variantlib's (the reference implementation): properties are parsed and
printed by ``VariantProperty``, ``variant.json`` is a ``VariantDistInfo``, the index a
``VariantsJson`` merged from the wheels' own files, so what we write is what variant-aware
installers read. variantlib is imported only when a variant wheel is written or read, so
the build backend and verify of plain wheels need nothing beyond the tool's usual
requirements. A variant without properties is the null variant (label ``null``).

The properties themselves are declared once per variant in ``[tool.release.variants.*]``
(``properties``) and the providers that judge them in ``[tool.release.variant-providers]``
(release/manifest.py)."""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from release.distribution import wheel
from release.errors import ConfigurationError, ToolError, WheelError

NULL_LABEL = "null"                     # variantlib.constants.NULL_VARIANT_LABEL
DIST_INFO_FILE = "variant.json"         # variantlib.constants.VARIANT_DIST_INFO_FILENAME
INDEX_SUFFIX = "-variants.json"
# PEP 825's grammar, as variantlib.constants spells it (tests compare the two): checked here
# without importing variantlib, which only variant wheels need, so the build backend and
# verify of plain wheels run with the tool's usual requirements alone
_LABEL = re.compile(r"[0-9a-z._]+")
_PROPERTY = re.compile(r"([a-z0-9_]+)\s*::\s*([a-z0-9_]+)\s*::\s*([a-z0-9_.]+)")
VARIANTLIB = "variantlib==0.2.2"


def _variantlib(module: str) -> ModuleType:
    """A variantlib module, imported when a variant wheel is written or read."""
    try:
        return importlib.import_module(f"variantlib.{module}")
    except ModuleNotFoundError:
        raise ToolError("variantlib (the reference implementation of wheel variants) is not "
                        "installed; variant wheels are written and read with it",
                        fix=f"pip install '{VARIANTLIB}'") from None


def split_property(text: str) -> tuple[str, str, str] | None:
    """(namespace, feature, value) of ``namespace :: feature :: value``; None when it is not
    one."""
    match = _PROPERTY.fullmatch(text.strip())
    return None if match is None else (match.group(1), match.group(2), match.group(3))


@dataclass(frozen=True)
class VariantProvider:
    """A provider plugin (PEP 850) that reports which properties of its namespace a
    machine supports: ``[tool.release.variant-providers.<namespace>]``."""

    namespace: str
    requires: tuple[str, ...]
    plugin_api: str | None = None


@dataclass(frozen=True)
class WheelVariant:
    """What a variant wheel claims: its label and its properties (canonical text, sorted)."""

    label: str
    properties: tuple[str, ...]

    @property
    def is_null(self) -> bool:
        return not self.properties

    def _split(self) -> list[tuple[str, str, str]]:
        return [found for text in self.properties if (found := split_property(text))]

    @property
    def namespaces(self) -> tuple[str, ...]:
        return tuple(sorted({namespace for namespace, _, _ in self._split()}))

    def values(self, namespace: str, feature: str) -> tuple[str, ...]:
        """The values claimed for ``namespace :: feature``."""
        return tuple(value for ns, name, value in self._split()
                     if (ns, name) == (namespace, feature))


def parse_properties(texts: Iterable[str], *, where: str) -> tuple[str, ...]:
    """``namespace :: feature :: value`` strings validated by variantlib, canonical, sorted."""
    found = []
    for text in texts:
        parts = split_property(text)
        if parts is None:
            raise ConfigurationError(f"{where}: '{text}' is not a variant property",
                                     fix="write it as 'namespace :: feature :: value' in "
                                         "lower case, e.g. 'nvidia :: cuda_version_lower_bound "
                                         ":: 12'")
        found.append(" :: ".join(parts))
    if len(set(found)) != len(found):
        raise ConfigurationError(f"{where} lists a property twice", fix="list each once")
    return tuple(sorted(found))


def check_label(label: str, *, where: str) -> str:
    if label == NULL_LABEL or not _LABEL.fullmatch(label):
        raise ConfigurationError(f"{where}: '{label}' cannot be a variant label",
                                 fix="use lower-case letters, digits, '_' and '.' (and not "
                                     f"'{NULL_LABEL}', the label of the variant without "
                                     "properties)")
    return label


def _info(providers: Iterable[VariantProvider]) -> Any:
    """variantlib's VariantInfo of ``providers``."""
    info = _variantlib("models.variant_info")
    chosen = sorted(providers, key=lambda p: p.namespace)
    return info.VariantInfo(
        namespace_priorities=[p.namespace for p in chosen],
        providers={p.namespace: info.ProviderInfo(requires=list(p.requires),
                                                  plugin_api=p.plugin_api)
                   for p in chosen})


def dist_info_text(variant: WheelVariant, providers: Sequence[VariantProvider]) -> str:
    """The wheel's ``variant.json``: its label and properties, and every provider of the
    project (the same in every wheel, so the index merges them; the null variant's too,
    since variantlib wants at least one)."""
    missing = sorted(set(variant.namespaces) - {p.namespace for p in providers})
    if missing:
        raise ConfigurationError(f"no variant provider for namespace '{missing[0]}'",
                                 fix=f"add [tool.release.variant-providers.{missing[0]}] with "
                                     "the provider plugin's `requires`")
    models = _variantlib("models.variant")
    description = models.VariantDescription(
        [models.VariantProperty.from_str(text) for text in variant.properties],
        label="" if variant.is_null else variant.label)
    info = _variantlib("variant_dist_info").VariantDistInfo(_info(providers))
    info.variant_desc = description
    text: str = info.to_str()
    return text + "\n"


def read_dist_info(text: str | bytes, *, label: str | None, where: str) -> WheelVariant:
    """A wheel's ``variant.json`` validated by variantlib (label checked when given); a
    WheelError naming ``where`` when it is not valid."""
    dist_info = _variantlib("variant_dist_info")
    try:
        info = dist_info.VariantDistInfo(text, expected_label=label)
    except (_variantlib("errors").ValidationError, ValueError, TypeError, KeyError) as error:
        raise WheelError(f"{where}: {error}",
                         fix="rebuild the wheel with python -m release build --form variant"
                         ) from None
    found = info.variant_desc
    return WheelVariant(info.variant_label,
                        tuple(sorted(p.to_str() for p in found.properties)))


def index_name(distribution: str, version: str) -> str:
    """``edgert-0.1.0-variants.json``: the index of a release's variant wheels."""
    return f"{wheel.normalize_distribution(distribution)}-{version}{INDEX_SUFFIX}"


def index_text(dist_infos: Iterable[str]) -> str:
    """The ``variants.json`` of a set of wheels, merged from their ``variant.json`` files by
    variantlib (which refuses a label claimed with two property sets)."""
    dist_info, variants_json = _variantlib("variant_dist_info"), _variantlib("variants_json")
    merged: Any = None
    for text in dist_infos:
        info = dist_info.VariantDistInfo(text)
        if merged is None:
            merged = variants_json.VariantsJson(info)
        merged.merge(info)
    if merged is None:
        raise WheelError("no variant wheel to index", fix="build wheels with --form variant")
    result: str = merged.to_str()
    return result + "\n"


def read_index(text: str | bytes, *, where: str) -> dict[str, tuple[str, ...]]:
    """label -> properties of a ``variants.json``, validated by variantlib."""
    variants_json = _variantlib("variants_json")
    try:
        index = variants_json.VariantsJson(json.loads(text))
    except (_variantlib("errors").ValidationError, ValueError, TypeError, KeyError) as error:
        raise WheelError(f"{where}: {error}", fix="regenerate it with python -m release "
                                                  "check-set --write-variants-json") from None
    return {label: tuple(sorted(p.to_str() for p in description.properties))
            for label, description in index.variants.items()}


def update_index(folder: Path, distribution: str, version: str, dist_info: str) -> Path:
    """Adds one wheel's ``variant.json`` to the index in ``folder`` (created when absent;
    the entry of the same label is replaced)."""
    path, text = merged_index(folder, distribution, version, dist_info)
    wheel.write_atomically(path, text)
    return path


def merged_index(folder: Path, distribution: str, version: str,
                 dist_info: str) -> tuple[Path, str]:
    """The index in ``folder`` with one wheel's ``variant.json`` added, not yet written: its
    path and text."""
    path = folder / index_name(distribution, version)
    texts = [dist_info]
    if path.is_file():
        added = _variantlib("variant_dist_info").VariantDistInfo(dist_info).variant_label
        try:
            kept: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
            for label, properties in dict(kept.get("variants", {})).items():
                if label != added:
                    texts.append(json.dumps({**kept, "variants": {label: properties}}))
            text = index_text(texts)
        except (ValueError, TypeError, AttributeError) as error:
            raise WheelError(f"{path} is not a variants index this wheel can join: {error}",
                             fix="remove it (python -m release check-set "
                                 "--write-variants-json rewrites it from the wheels)") from None
    else:
        text = index_text(texts)
    return path, text


def variant_wheel_name(base: wheel.WheelName, label: str) -> str:
    """``edgert-0.1.0-cp39-abi3-manylinux_2_35_x86_64-cu12.whl``."""
    return f"{base.filename[:-len('.whl')]}-{label}.whl"


def make_variant_wheel(source: Path, out_dir: Path, variant: WheelVariant,
                       providers: Sequence[VariantProvider], *,
                       epoch: int) -> tuple[Path, str]:
    """Writes the variant wheel of ``source`` (a wheel of the variant's distribution) into
    ``out_dir``: the same files plus ``.dist-info/variant.json``, RECORD recomputed, the
    label in the file name. Returns its path and its ``variant.json`` text."""
    name = wheel.WheelName.parse(source.name)
    if name.variant is not None:
        raise WheelError(f"{source.name} is already a variant wheel",
                         fix="pass the wheel the pipeline built before its variant step")
    entries = wheel.read_entries(source)
    dist_info = wheel.dist_info_of(entries)
    text = dist_info_text(variant, providers)
    entries[f"{dist_info}/{DIST_INFO_FILE}"] = (text.encode("utf-8"), 0o644)
    target = out_dir / variant_wheel_name(name, variant.label)
    wheel.write_wheel(target, entries, dist_info=dist_info, epoch=epoch)
    return target, text


def dist_info_of_wheel(path: Path) -> str | None:
    """The ``variant.json`` text of a wheel; None when it has none."""
    entries: Mapping[str, tuple[bytes, int]] = wheel.read_entries(path)
    dist_info = wheel.dist_info_of(entries)
    found = entries.get(f"{dist_info}/{DIST_INFO_FILE}")
    return None if found is None else found[0].decode("utf-8", errors="replace")
