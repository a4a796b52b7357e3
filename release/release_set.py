"""``python -m release check-set DIR``: the release as a whole, before anything is published.

Each wheel was verified where it was built; this checks what no single build can see, and
collects every finding before deciding (docs/release.md):

  files         every file is one of the release's wheels or its sdist
  version       one version everywhere (file names, METADATA, build records, the manifest,
                and the tag's version when given)
  matrix        every buildable target x variant of the release matrix has exactly one wheel,
                nothing else is there, and what is not buildable yet is reported by name
  tag           a wheel's platform tags are its target's architecture; a Linux wheel needs no
                newer glibc than the manylinux image the release builds in
  requirements  a variant's run-time dependency is declared (Requires-Dist)
  claims        the build record claims the compute capabilities the variant declares, and
                the provider's checks (device-code coverage) ran on the wheel
  sbom          the wheel's CycloneDX SBOM (.dist-info/sboms/, PEP 770) names its distribution,
                every shipped component with the sha256 of the file the wheel holds, and the
                toolchain that built them
  verify        ``python -m release verify --static`` on every wheel: its errors are the set's
  variants      a set of variant wheels (PEP 825, ``build --form variant``): one wheel of the
                project's distribution per label, and ``<name>-<version>-variants.json``
                beside them, equal to the index variantlib merges from the wheels' own
                variant.json files (``--write-variants-json`` writes it first)

A variant wheel covers its matrix entry like the variant's separate distribution does; the
CPU entry is covered by the plain ``edgert`` wheel (what installers without variant support
install) or by its null variant.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from email.message import Message
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement

from release._toml import read_toml
from release.building.matrix import MatrixEntry, release_matrix
from release.distribution import sbom
from release.distribution.archive import (
    Limits,
    Member,
    StreamRequest,
    list_members,
    read_member,
    stream_member,
)
from release.distribution.buildrecord import RECORD_FILE, BuildRecord
from release.distribution.wheel import WheelName, normalize_distribution, parse_metadata
from release.distribution.wheel_variant import (
    DIST_INFO_FILE,
    INDEX_SUFFIX,
    index_name,
    index_text,
    read_dist_info,
    read_index,
)
from release.errors import ConfigurationError, ReleaseError, WheelError
from release.findings import CheckStatus, Finding, Severity
from release.host import Host
from release.manifest import Manifest
from release.variants import load_provider
from release.verify.api import verify_wheel
from release.verify.options import VerifyOptions
from release.verify.report import Report

JSON_VERSION = 1
_MEMBER_LIMIT = 1 << 20      # METADATA and the build record are small; refuse anything larger
_LEGACY_POLICIES = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}
_POLICY = re.compile(r"^(?:manylinux_(\d+)_(\d+)|(manylinux1|manylinux2010|manylinux2014))")

Verifier = Callable[[Path], Report]


@dataclass(frozen=True)
class WheelFacts:
    """What the set checks read from one wheel: its name, METADATA and build record."""

    path: Path
    name: WheelName
    metadata: Message
    record: BuildRecord | None
    sbom: bytes | None = None                       # .dist-info/sboms/<package>.cdx.json
    variant_json: str | None = None                 # .dist-info/variant.json (PEP 825)
    digests: Mapping[str, str] = field(default_factory=dict)   # shipped file -> sha256


@dataclass(frozen=True)
class SetReport:
    """What check-set found, made once at the end of the check (a value: nothing grows it)."""

    folder: str
    findings: tuple[Finding, ...] = ()
    wheels: Mapping[str, str] = field(default_factory=dict)        # matrix entry -> wheel
    not_buildable: Mapping[str, str] = field(default_factory=dict)  # matrix entry -> reason

    @property
    def ok(self) -> bool:
        return not any(f.severity is Severity.ERROR for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        return {"version": JSON_VERSION, "folder": self.folder, "ok": self.ok,
                "wheels": dict(self.wheels), "not_buildable": dict(self.not_buildable),
                "findings": [finding.to_json() for finding in self.findings]}

    def render_text(self) -> str:
        lines = [f"{name}: {wheel}" for name, wheel in self.wheels.items()]
        lines += [f"{name}: not buildable yet ({reason})"
                  for name, reason in self.not_buildable.items()]
        for item in sorted(self.findings, key=lambda f: (f.severity is not Severity.ERROR,
                                                         f.check, f.file)):
            where = f" {item.file}:" if item.file else ""
            lines.append(f"{item.severity.value:<7} [{item.check}]{where} {item.what}")
            if item.fix:
                lines.append(f"        fix: {item.fix}")
        errors = sum(1 for f in self.findings if f.severity is Severity.ERROR)
        wheels = f"{len(self.wheels)} wheel{'' if len(self.wheels) == 1 else 's'}"
        lines.append(f"{self.folder}: {'OK' if self.ok else 'FAILED'} ({wheels}, "
                     f"{len(self.not_buildable)} not buildable yet, {errors} errors)")
        return "\n".join(lines)


def _error(check: str, file: str, what: str, fix: str = "") -> Finding:
    return Finding(check=check, severity=Severity.ERROR, file=file, what=what, fix=fix)


def _member(path: Path, members: Mapping[str, Member], name: str) -> bytes | None:
    member = members.get(name)
    if member is None:
        return None
    if member.declared_size > _MEMBER_LIMIT:
        raise WheelError(f"{path.name}: {name} claims {member.declared_size} bytes, over the "
                         f"limit of {_MEMBER_LIMIT}", fix="rebuild the wheel")
    return read_member(path, member, Limits())


def read_wheel(path: Path, package: str) -> WheelFacts:
    """The wheel's name, METADATA, build record (``<package>/_release.json``, None when
    absent), SBOM and the sha256 of each file the record names, read through verify's reader
    (the same rules as verify and repair); a WheelError when it is not a readable wheel."""
    name = WheelName.parse(path.name)
    try:
        members = {member.name: member for member in list_members(path, Limits())}
        metadata = _member(path, members, f"{name.dist_info}/METADATA")
        data = _member(path, members, f"{package}/{RECORD_FILE}")
        record = None if data is None else BuildRecord.from_json(
            data, where=f"{path.name}:{package}/{RECORD_FILE}")
        document = _member(path, members, f"{name.dist_info}/{sbom.file_name(package)}")
        variant = _member(path, members, f"{name.dist_info}/{DIST_INFO_FILE}")
        digests = {} if record is None else {
            file: _sha256(path, members[file]) for file in sbom.shipped_files(record)
            if file in members}
    except OSError as error:
        raise WheelError(f"cannot read {path.name}: {error}", fix="rebuild it") from None
    return WheelFacts(
        path=path, name=name,
        metadata=parse_metadata((metadata or b"").decode("utf-8", errors="replace")),
        record=record, sbom=document, digests=digests,
        variant_json=None if variant is None else variant.decode("utf-8", errors="replace"))


def _sha256(path: Path, member: Member) -> str:
    """The member's sha256 (hex), streamed with the reader's checks (size, CRC-32)."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        streamed = stream_member(path, descriptor, member, Limits(),
                                 StreamRequest((), None, lambda head: False))
    finally:
        os.close(descriptor)
    return base64.urlsafe_b64decode(streamed.sha256 + "=" * (-len(streamed.sha256) % 4)).hex()


def _sbom(facts: WheelFacts) -> list[Finding]:
    where = f"{facts.name.dist_info}/{sbom.FOLDER}/"
    if facts.record is None:
        return []
    if facts.sbom is None:
        return [_error("sbom", facts.path.name, f"has no SBOM ({facts.name.dist_info}/"
                       f"{sbom.FOLDER}/*.cdx.json, PEP 770)",
                       fix="build it through the pipeline (its fix-up stage writes one)")]
    return [_error("sbom", facts.path.name, f"{where} {problem}",
                   fix="rebuild the wheel through the pipeline; never edit a wheel by hand")
            for problem in sbom.check_sbom(facts.sbom, facts.record, facts.digests)]


def manylinux_images(pyproject: Path) -> dict[str, str]:
    """Architecture -> the manylinux image ``[tool.cibuildwheel]`` builds it in."""
    data = read_toml(pyproject, fix="correct the syntax at the position shown")
    table = data.get("tool", {}).get("cibuildwheel", {})
    prefix, suffix = "manylinux-", "-image"
    return {key[len(prefix):-len(suffix)]: str(value) for key, value in table.items()
            if key.startswith(prefix) and key.endswith(suffix)}


def glibc_of(policy: str) -> tuple[int, int] | None:
    """(2, 28) for ``manylinux_2_28`` or a tag ``manylinux_2_28_x86_64``; None otherwise."""
    match = _POLICY.match(policy)
    if match is None:
        return None
    if match.group(3):
        return _LEGACY_POLICIES[match.group(3)]
    return int(match.group(1)), int(match.group(2))


def _files(folder: Path, wheels: Sequence[Path], manifest: Manifest) -> list[Finding]:
    """Every file is a wheel or the project's one sdist."""
    sdist = f"{normalize_distribution(manifest.distribution)}-"
    index = index_name(manifest.distribution, manifest.version)
    findings = [_error("files", path.name, "is neither a wheel nor the sdist (nor the "
                       f"variants index {index})",
                       fix="remove it: the publish step uploads everything in the folder")
                for path in sorted(folder.iterdir())
                if path.suffix != ".whl" and not path.name.endswith(".tar.gz")
                and not (path.name.endswith(INDEX_SUFFIX) and path.name == index)]
    sdists = sorted(p.name for p in folder.glob("*.tar.gz"))
    findings += [_error("files", name, "is not the sdist of "
                        f"{manifest.distribution}", fix="remove it")
                 for name in sdists if not name.startswith(sdist)]
    if len([name for name in sdists if name.startswith(sdist)]) != 1:
        findings.append(_error("files", "", f"expected one sdist of {manifest.distribution}, "
                               f"found {len(sdists)}", fix="add the sdist job's artifact "
                               "(python -m build --sdist)"))
    if not wheels:
        findings.append(_error("files", "", "the folder holds no wheel",
                               fix="download the build jobs' artifacts into it"))
    return findings


def _versions(facts: WheelFacts, version: str) -> list[Finding]:
    found = {"file name": facts.name.version,
             "METADATA": facts.metadata.get("Version", "")}
    if facts.record is not None:
        found["build record"] = facts.record.version
    return [_error("version", facts.path.name, f"{where} says version '{value or '?'}', the "
                   f"release is {version}", fix="rebuild every wheel from the tagged commit")
            for where, value in found.items() if value != version]


def _sdist_versions(folder: Path, manifest: Manifest, version: str) -> list[Finding]:
    prefix = f"{normalize_distribution(manifest.distribution)}-"
    return [_error("version", path.name, f"the sdist's version is not {version}",
                   fix="rebuild the sdist from the tagged commit")
            for path in sorted(folder.glob(f"{prefix}*.tar.gz"))
            if path.name != f"{prefix}{version}.tar.gz"]


def _tags(facts: WheelFacts, entry: MatrixEntry, images: Mapping[str, str]) -> list[Finding]:
    platforms = facts.name.platform.split(".")
    arch = entry.target.arch
    findings = [_error("tag", facts.path.name, f"platform tag {tag} is not for {arch}",
                       fix=f"build {entry.target.name} on its runner")
                for tag in platforms if not tag.endswith(f"_{arch}")]
    if entry.target.platform != "linux":
        return findings
    glibc = [found for tag in platforms if (found := glibc_of(tag)) is not None]
    if not glibc:
        return [*findings, _error("tag", facts.path.name, f"{facts.name.platform} is not a "
                                  "manylinux tag: the wheel was not repaired",
                                  fix="build it through the pipeline's repair stage")]
    ceiling = glibc_of(images.get(arch, ""))
    if ceiling is not None and min(glibc) > ceiling:
        findings.append(_error(
            "tag", facts.path.name, f"needs glibc {'.'.join(map(str, min(glibc)))}, newer "
            f"than the {images[arch]} image the release builds in",
            fix="build it in cibuildwheel's container, not on the runner itself"))
    return findings


def _requirements(facts: WheelFacts, entry: MatrixEntry) -> list[Finding]:
    variant = entry.variant
    runtime = entry.release.variant.runtime
    if runtime is None:
        return []
    wanted = Requirement(runtime.requirement)
    declared = []
    for text in facts.metadata.get_all("Requires-Dist") or []:
        try:
            declared.append(Requirement(text))
        except InvalidRequirement:
            continue
    if wanted in declared:
        return []
    return [_error("requirements", facts.path.name, f"Requires-Dist lacks '{wanted}', the "
                   f"{variant.name} runtime the wheel's libraries load",
                   fix="build the wheel through the pipeline (it appends the requirement)")]


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


def _claims(facts: WheelFacts, entry: MatrixEntry, report: Report) -> list[Finding]:
    """The wheel's record carries its variant's own section as the variant declares it
    (the CUDA provider's claims and PTX), and the provider's checks ran on the wheel."""
    variant = entry.variant
    declared = entry.release.record.sections
    if not declared:
        return []
    recorded = {} if facts.record is None else facts.record.sections
    findings = []
    for name, section in sorted(declared.items()):
        if recorded.get(name) != section:
            holds, declares = _section_difference(recorded.get(name), section)
            findings.append(_error("claims", facts.path.name,
                                   f"the build record's {name} section {holds}; variant "
                                   f"{variant.name} declares {declares}",
                                   fix=f"rebuild from the variant's file {variant.config}"))
    if variant.provider is None:
        return findings
    for check in load_provider(variant.provider).CHECKS:
        name = str(getattr(check, "NAME", check))
        if report.checks.get(name) != CheckStatus.RAN:
            findings.append(_error("claims", facts.path.name, f"verify's {name} check did not "
                                   f"run ({report.checks.get(name, 'absent')})",
                                   fix="verify the wheel with this project's providers"))
    return findings


def _verified(facts: WheelFacts, verify: Verifier) -> tuple[Report | None, list[Finding]]:
    try:
        report = verify(facts.path)
    except ReleaseError as error:
        return None, [_error("verify", facts.path.name, error.what, fix=error.fix)]
    return report, [_error("verify", facts.path.name, f"[{f.check}] {_located(f)}", fix=f.fix)
                    for f in report.findings if f.severity is Severity.ERROR]


def _located(finding: Finding) -> str:
    return f"{finding.file}: {finding.what}" if finding.file else finding.what


def _entry_of(facts: WheelFacts, entries: Mapping[tuple[str, str], MatrixEntry]
              ) -> tuple[MatrixEntry | None, list[Finding]]:
    record = facts.record
    if record is None:
        return None, [_error("matrix", facts.path.name, "has no build record "
                             "(edgert/_release.json): not built by this pipeline",
                             fix="remove it, or build it with python -m release build")]
    entry = entries.get((record.target, record.variant))
    if entry is None:
        return None, [_error("matrix", facts.path.name, f"{record.target} x {record.variant} "
                             "is not in the manifest's release matrix",
                             fix="remove it, or declare its target and variant")]
    # a variant wheel belongs to the project's distribution; a separate one to the variant's
    distribution = (record.distribution if facts.name.variant is not None else
        entry.distribution)
    wanted = normalize_distribution(distribution)
    if (normalize_distribution(facts.metadata.get("Name", "")) != wanted or
            facts.name.distribution.lower() != wanted):
        return entry, [_error("matrix", facts.path.name, f"is not named {distribution}, "
                              f"the {entry.variant.name} variant's distribution",
                              fix="rebuild it through the pipeline")]
    return entry, []


def _variant_findings(facts: WheelFacts, entry: MatrixEntry, project: str) -> list[Finding]:
    """A variant wheel: the project's distribution, the label and properties its variant
    declares (the provider's check judges the properties against the wheel)."""
    label = facts.name.variant
    if label is None:
        return []
    if normalize_distribution(facts.name.distribution) != normalize_distribution(project):
        return [_error("variants", facts.path.name, f"a variant wheel of "
                       f"{facts.name.distribution}, not of {project}",
                       fix="build it with --form variant (one distribution for every variant)")]
    if facts.variant_json is None:
        return [_error("variants", facts.path.name, f"has a variant label but no "
                       f"{DIST_INFO_FILE}", fix="rebuild it with --form variant")]
    try:
        found = read_dist_info(facts.variant_json, label=label, where=facts.path.name)
    except ReleaseError as error:
        return [_error("variants", facts.path.name, error.what, fix=error.fix)]
    declared = entry.variant.wheel_variant
    if (found.label, found.properties) != (declared.label, declared.properties):
        return [_error("variants", facts.path.name, f"claims label '{found.label}' with "
                       f"{', '.join(found.properties) or 'no properties'}; variant "
                       f"{entry.variant.name} declares '{declared.label}' with "
                       f"{', '.join(declared.properties) or 'no properties'}",
                       fix=f"rebuild it from [tool.release.variants.{entry.variant.name}]")]
    return []


def _index(folder: Path, manifest: Manifest, version: str, variants: Sequence[WheelFacts],
           write: bool) -> list[Finding]:
    """The variants.json of the set: written from the wheels when asked, else compared."""
    name = index_name(manifest.distribution, version)
    path = folder / name
    texts = [facts.variant_json for facts in variants if facts.variant_json is not None]
    if not texts:
        return [_error("variants", name, "no variant wheel for this index",
                       fix="remove it, or add the variant wheels")] if path.exists() else []
    try:
        wanted = index_text(texts)
    except ReleaseError as error:
        return [_error("variants", name, error.what, fix=error.fix)]
    except ValueError as error:      # variantlib: a label claimed with two property sets
        return [_error("variants", name, f"the wheels disagree: {error}",
                       fix="rebuild every variant wheel from one commit")]
    fix = "run python -m release check-set --write-variants-json on the folder"
    if write:
        partial = path.with_name(path.name + ".partial")
        partial.write_text(wanted, encoding="utf-8")
        partial.replace(path)
    if not path.is_file():
        return [_error("variants", name, "is missing: variant-aware installers read the "
                       "labels' properties from it", fix=fix)]
    try:
        found = read_index(path.read_bytes(), where=name)
    except ReleaseError as error:
        return [_error("variants", name, error.what, fix=error.fix)]
    expected = read_index(wanted, where=name)
    differ = sorted(label for label in {*found, *expected}
                    if found.get(label) != expected.get(label))
    if differ:
        return [_error("variants", name, f"disagrees with the wheels on "
                       f"{', '.join(differ)} (listed: {', '.join(sorted(found)) or 'none'}; "
                       f"wheels: {', '.join(sorted(expected))})", fix=fix)]
    return []


def _wheel_findings(facts: WheelFacts, entry: MatrixEntry, *, version: str,
                    images: Mapping[str, str], verify: Verifier) -> list[Finding]:
    report, findings = _verified(facts, verify)
    findings += _versions(facts, version) + _tags(facts, entry, images)
    findings += _requirements(facts, entry) + _sbom(facts)
    findings += _variant_findings(facts, entry, record_distribution(facts))
    if report is not None:
        findings += _claims(facts, entry, report)
    return findings


def record_distribution(facts: WheelFacts) -> str:
    return facts.record.distribution if facts.record is not None else facts.name.distribution


@dataclass
class _Coverage:
    """Which wheel covers each matrix entry, the entries not buildable yet, and what is
    wrong with the coverage (filled entry by entry, then read into the SetReport)."""

    wheels: dict[str, str]
    not_buildable: dict[str, str]
    findings: list[Finding]


def _coverage(entries: Sequence[MatrixEntry], found: Mapping[str, list[str]],
              variant_found: Mapping[str, list[str]]) -> _Coverage:
    covered = _Coverage({}, {}, [])
    for entry in entries:
        separate, variant = found.get(entry.name, []), variant_found.get(entry.name, [])
        # in a set of variant wheels a GPU entry is covered by its variant wheel (its
        # separate wheel may be there too), the CPU entry by its plain wheel (what
        # installers without variant support install) or, without one, its null variant
        if not variant_found or len(separate) > 1:
            wheels = separate
        elif entry.variant.properties or len(variant) > 1:
            wheels = variant
        else:
            wheels = separate or variant
        if not entry.route.buildable:
            covered.not_buildable[entry.name] = entry.route.detail
            if wheels:
                covered.findings.append(Finding(
                    "matrix", Severity.WARNING, wheels[0], f"{entry.name} is not buildable "
                    "yet by this pipeline, but a wheel for it is here"))
        elif len(wheels) != 1:
            covered.findings.append(_error(
                "matrix", ", ".join(wheels), f"{entry.name}: expected one wheel, found "
                f"{len(wheels)}", fix=f"run the build job for {entry.name} (on "
                f"{entry.target.runner}) and keep only its wheel"))
        else:
            covered.wheels[entry.name] = wheels[0]
    return covered


def check_release_set(folder: Path, manifest: Manifest, *, host: Host,
                      expect_version: str | None = None, verify: Verifier | None = None,
                      entries: Sequence[MatrixEntry] | None = None,
                      write_index: bool = False) -> SetReport:
    """Checks the distributions in ``folder`` against the release ``manifest`` describes, as
    ``host`` (the edge's) would build it; ``verify`` defaults to verify --static with the
    project's providers on that host."""
    if not folder.is_dir():
        raise ConfigurationError(f"check-set: {folder} is not a folder",
                                 fix="pass the folder holding the release's wheels and sdist")
    entries = release_matrix(manifest, host) if entries is None else entries
    providers = VerifyOptions(providers=manifest.providers)
    verify = verify or (lambda path: verify_wheel(path, static=True, options=providers,
                                                  host=host))
    version = expect_version or manifest.version
    wheels = sorted(folder.glob("*.whl"))
    findings = [*_files(folder, wheels, manifest), *_sdist_versions(folder, manifest, version)]
    if expect_version and expect_version != manifest.version:
        findings.append(_error("version", "pyproject.toml", f"the manifest's version is "
                                      f"{manifest.version}, the release is {expect_version}",
                                      fix="set project.version and tag that commit"))
    by_key = {(e.target.name, e.variant.name): e for e in entries}
    images = manylinux_images(manifest.root / "pyproject.toml")
    found: dict[str, list[str]] = {}
    variant_found: dict[str, list[str]] = {}
    variants: list[WheelFacts] = []
    for path in wheels:
        try:
            facts = read_wheel(path, manifest.package)
        except ReleaseError as error:
            findings.append(_error("files", path.name, error.what, fix=error.fix))
            continue
        entry, problems = _entry_of(facts, by_key)
        findings.extend(problems)
        if entry is None:
            continue
        if facts.name.variant is None:
            found.setdefault(entry.name, []).append(path.name)
        else:
            variant_found.setdefault(entry.name, []).append(path.name)
            variants.append(facts)
        findings.extend(_wheel_findings(facts, entry, version=version, images=images,
                                               verify=verify))
    findings.extend(_index(folder, manifest, version, variants, write_index))
    covered = _coverage(entries, found, variant_found)
    return SetReport(folder=str(folder), findings=(*findings, *covered.findings),
                     wheels=covered.wheels, not_buildable=covered.not_buildable)
