"""The three text files every wheel carries: METADATA, WHEEL and RECORD, parsed into values.
Malformed content becomes findings, not exceptions."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from email.parser import HeaderParser

from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import Tag, parse_tag
from packaging.utils import canonicalize_name

from release.findings import Finding, Severity


@dataclass(frozen=True)
class RecordEntry:
    path: str
    algorithm: str   # "" when the row carries no hash
    digest: str
    size: int | None


@dataclass(frozen=True)
class Metadata:
    name: str
    version: str
    requires: tuple[Requirement, ...]
    metadata_version: str = ""

    def requires_distribution(self, distribution: str) -> bool:
        wanted = canonicalize_name(distribution)
        return any(canonicalize_name(requirement.name) == wanted for requirement in self.requires)


def parse_metadata(text: str, *, where: str) -> tuple[Metadata, list[Finding]]:
    message = HeaderParser().parsestr(text)
    findings, requires = [], []
    for line in message.get_all("Requires-Dist") or []:
        try:
            requires.append(Requirement(line))
        except InvalidRequirement as error:
            findings.append(Finding(check="metadata", severity=Severity.ERROR, file=where,
                                    what=f"invalid Requires-Dist '{line}'", why=str(error),
                                    fix="write a PEP 508 requirement"))
    return Metadata(message.get("Name", ""), message.get("Version", ""), tuple(requires),
                    message.get("Metadata-Version", "")), findings


def parse_wheel_tags(text: str) -> tuple[Tag, ...]:
    message = HeaderParser().parsestr(text)
    tags: list[Tag] = []
    for line in message.get_all("Tag") or []:
        try:
            tags.extend(parse_tag(line.strip()))
        except ValueError:
            continue
    return tuple(tags)


def parse_record(text: str, *, where: str) -> tuple[dict[str, RecordEntry], list[Finding]]:
    entries: dict[str, RecordEntry] = {}
    findings: list[Finding] = []
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as error:
        return entries, [Finding(check="record", severity=Severity.ERROR, file=where,
                                 what=f"RECORD is not valid CSV ({error})",
                                 fix="regenerate RECORD")]
    for number, row in enumerate(rows, start=1):
        if not row:
            continue
        if len(row) != 3:
            findings.append(_bad_row(where, number, "does not have three fields"))
            continue
        path, hashed, size_text = row
        algorithm, _, digest = hashed.partition("=")
        try:
            size = int(size_text) if size_text else None
        except ValueError:
            findings.append(_bad_row(where, number, f"has a non-numeric size '{size_text}'"))
            size = None
        entries[path] = RecordEntry(path, algorithm if digest else "", digest, size)
    return entries, findings


def _bad_row(where: str, number: int, what: str) -> Finding:
    return Finding(check="record", severity=Severity.ERROR, file=where,
                   what=f"RECORD line {number} {what}", fix="regenerate RECORD")
