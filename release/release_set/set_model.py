"""What check-set reads from a release folder, once: each wheel's facts (name, METADATA,
build record, SBOM, the sha256 of each shipped file), the matrix entry it covers and its
``verify --static`` report, and which wheel covers each entry of the release matrix. The
checks (release/release_set/checks/) judge this model; nothing here decides a finding but
what reading itself refuses."""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from email.message import Message
from pathlib import Path

from release._toml import read_toml
from release.building.matrix import MatrixEntry
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
from release.distribution.wheel_variant import DIST_INFO_FILE
from release.errors import ReleaseError, WheelError
from release.findings import Finding, Severity
from release.manifest import Manifest
from release.verify.report import Report

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


def error(check: str, file: str, what: str, fix: str = "") -> Finding:
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




@dataclass(frozen=True)
class SetWheel:
    """One wheel of the set: its facts, the matrix entry it covers (None: none, see
    ``problems``), what reading it against the matrix found, and its verify report (None
    when verify refused it: ``verify_error``)."""

    facts: WheelFacts
    entry: MatrixEntry | None
    problems: tuple[Finding, ...] = ()          # the "matrix" findings of this wheel
    report: Report | None = None
    verify_error: ReleaseError | None = None


@dataclass(frozen=True)
class Coverage:
    """Which wheel covers each matrix entry, the entries not buildable yet, and what is
    wrong with the coverage."""

    wheels: Mapping[str, str]                  # matrix entry -> wheel
    not_buildable: Mapping[str, str]           # matrix entry -> reason
    findings: tuple[Finding, ...]


@dataclass(frozen=True)
class ReleaseSet:
    """A release folder as check-set reads it, once."""

    folder: Path
    manifest: Manifest
    version: str                               # the release's: --expect-version or the manifest's
    expect_version: str | None
    entries: tuple[MatrixEntry, ...]           # the release matrix
    images: Mapping[str, str]                  # arch -> manylinux image (pyproject.toml)
    wheels: tuple[SetWheel, ...]               # those read, in file-name order
    unread: tuple[Finding, ...]                # the wheels no reader accepts
    coverage: Coverage
    write_index: bool                          # --write-variants-json

    @property
    def matched(self) -> tuple[tuple[SetWheel, MatrixEntry], ...]:
        """The wheels that cover a matrix entry, with it."""
        return tuple((wheel, wheel.entry) for wheel in self.wheels if wheel.entry is not None)


def read_release_set(folder: Path, manifest: Manifest, *, entries: Sequence[MatrixEntry],
                     verify: Verifier, expect_version: str | None = None,
                     write_index: bool = False) -> ReleaseSet:
    """Reads every wheel in ``folder`` once, matches it to its entry of ``entries`` and
    verifies it with ``verify``."""
    by_key = {(e.target.name, e.variant.name): e for e in entries}
    wheels, unread = [], []
    for path in sorted(folder.glob("*.whl")):
        try:
            facts = read_wheel(path, manifest.package)
        except ReleaseError as refused:
            unread.append(error("files", path.name, refused.what, fix=refused.fix))
            continue
        entry, problems = _entry_of(facts, by_key)
        report, verify_error = None, None
        if entry is not None:
            try:
                report = verify(facts.path)
            except ReleaseError as refused:
                verify_error = refused
        wheels.append(SetWheel(facts, entry, tuple(problems), report, verify_error))
    return ReleaseSet(folder=folder, manifest=manifest,
                      version=expect_version or manifest.version,
                      expect_version=expect_version, entries=tuple(entries),
                      images=manylinux_images(manifest.root / "pyproject.toml"),
                      wheels=tuple(wheels), unread=tuple(unread),
                      coverage=_coverage(entries, wheels), write_index=write_index)


def record_distribution(facts: WheelFacts) -> str:
    return facts.record.distribution if facts.record is not None else facts.name.distribution


def _entry_of(facts: WheelFacts, entries: Mapping[tuple[str, str], MatrixEntry]
              ) -> tuple[MatrixEntry | None, list[Finding]]:
    record = facts.record
    if record is None:
        return None, [error("matrix", facts.path.name, "has no build record "
                            "(edgert/_release.json): not built by this pipeline",
                            fix="remove it, or build it with python -m release build")]
    entry = entries.get((record.target, record.variant))
    if entry is None:
        return None, [error("matrix", facts.path.name, f"{record.target} x {record.variant} "
                            "is not in the manifest's release matrix",
                            fix="remove it, or declare its target and variant")]
    # a variant wheel belongs to the project's distribution; a separate one to the variant's
    distribution = (record.distribution if facts.name.variant is not None else
                    entry.distribution)
    wanted = normalize_distribution(distribution)
    if (normalize_distribution(facts.metadata.get("Name", "")) != wanted or
            facts.name.distribution.lower() != wanted):
        return entry, [error("matrix", facts.path.name, f"is not named {distribution}, "
                             f"the {entry.variant.name} variant's distribution",
                             fix="rebuild it through the pipeline")]
    return entry, []


def _coverage(entries: Sequence[MatrixEntry], wheels: Sequence[SetWheel]) -> Coverage:
    found: dict[str, list[str]] = {}
    variant_found: dict[str, list[str]] = {}
    for wheel in wheels:
        if wheel.entry is not None:
            kind = found if wheel.facts.name.variant is None else variant_found
            kind.setdefault(wheel.entry.name, []).append(wheel.facts.path.name)
    covered: dict[str, str] = {}
    not_buildable: dict[str, str] = {}
    findings = []
    for entry in entries:
        separate, variant = found.get(entry.name, []), variant_found.get(entry.name, [])
        # in a set of variant wheels a GPU entry is covered by its variant wheel (its
        # separate wheel may be there too), the CPU entry by its plain wheel (what
        # installers without variant support install) or, without one, its null variant
        if not variant_found or len(separate) > 1:
            chosen = separate
        elif entry.variant.properties or len(variant) > 1:
            chosen = variant
        else:
            chosen = separate or variant
        if not entry.route.buildable:
            not_buildable[entry.name] = entry.route.detail
            if chosen:
                findings.append(Finding(
                    "matrix", Severity.WARNING, chosen[0], f"{entry.name} is not buildable "
                    "yet by this pipeline, but a wheel for it is here"))
        elif len(chosen) != 1:
            findings.append(error(
                "matrix", ", ".join(chosen), f"{entry.name}: expected one wheel, found "
                f"{len(chosen)}", fix=f"run the build job for {entry.name} (on "
                f"{entry.target.runner}) and keep only its wheel"))
        else:
            covered[entry.name] = chosen[0]
    return Coverage(covered, not_buildable, tuple(findings))
