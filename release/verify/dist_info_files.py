"""The three text files every wheel carries: METADATA, WHEEL and RECORD, parsed into values
(``read_dist_info``: the .dist-info folder of one wheel, with RECORD held against what the
archive streamed). Malformed content becomes findings, not exceptions."""

from __future__ import annotations

import csv
import fnmatch
import io
import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from email.parser import HeaderParser

from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import Tag, parse_tag
from packaging.utils import canonicalize_name

from release.distribution.archive import StreamedMember
from release.errors import WheelError
from release.findings import Finding, Severity


@dataclass(frozen=True)
class RecordEntry:
    path: str
    algorithm: str   # "" when the row carries no hash
    digest: str
    size: int | None


@dataclass(frozen=True)
class Declaration:
    """How METADATA declares a distribution for one target: always (a requirement whose
    markers hold there), only under extras, or not at all."""

    required: bool
    extras: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return self.required or bool(self.extras)


@dataclass(frozen=True)
class Metadata:
    name: str
    version: str
    requires: tuple[Requirement, ...]
    metadata_version: str = ""
    provides_extras: tuple[str, ...] = ()
    authors: str = ""    # Author, Author-email, Maintainer and Maintainer-email, joined

    def names_vendor(self, vendor: str) -> bool:
        """Whether ``vendor`` (a company in a binary's version resource, a signing team) is
        one of the wheel's own authors or maintainers: a significant word of it appears in
        those fields ("Microsoft Corporation" in "Author: Microsoft Corporation")."""
        words = {word for word in re.findall(r"[a-z0-9]+", vendor.lower())
                 if len(word) > 2 and word not in _COMPANY_WORDS}
        mentioned = set(re.findall(r"[a-z0-9]+", self.authors.lower()))
        return bool(words & mentioned)

    def requires_distribution(self, distribution: str,
                              environment: Mapping[str, str] | None = None) -> Declaration:
        """The declaration of ``distribution`` for a target (``environment``: PEP 508 marker
        values, see ``marker_environment``; None: markers are not evaluated)."""
        wanted = canonicalize_name(distribution)
        extras: list[str] = []
        for requirement in self.requires:
            if canonicalize_name(requirement.name) != wanted:
                continue
            marker = requirement.marker
            if marker is None or environment is None:
                return Declaration(required=True)
            if marker.evaluate({**environment, "extra": ""}):
                return Declaration(required=True)
            extras += [extra for extra in self._extras_in(str(marker))
                       if marker.evaluate({**environment, "extra": extra})]
        return Declaration(required=False, extras=tuple(dict.fromkeys(extras)))

    def pins_build(self, distribution: str) -> bool:
        """Whether a requirement of ``distribution`` names one build of it: a version with a
        local label (``torch==2.5.1+cu121``), which is how a build is chosen."""
        wanted = canonicalize_name(distribution)
        return any(canonicalize_name(requirement.name) == wanted and
                   any("+" in specifier.version for specifier in requirement.specifier)
                   for requirement in self.requires)

    def declares_matching(self, patterns: Sequence[str],
                          environment: Mapping[str, str] | None) -> Declaration:
        """The combined declaration of every required distribution whose name matches one of
        ``patterns`` (globs on canonical names)."""
        names = {canonicalize_name(r.name) for r in self.requires
                 if any(fnmatch.fnmatchcase(canonicalize_name(r.name), p) for p in patterns)}
        declarations = [self.requires_distribution(name, environment) for name in sorted(names)]
        if any(d.required for d in declarations):
            return Declaration(required=True)
        return Declaration(required=False, extras=tuple(dict.fromkeys(
            extra for d in declarations for extra in d.extras)))

    def _extras_in(self, marker: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys([*self.provides_extras, *_EXTRA.findall(marker)]))


_EXTRA = re.compile(r"""extra\s*==\s*['"]([^'"]+)['"]""")
_COMPANY_WORDS = frozenset({"corporation", "corp", "inc", "ltd", "limited", "llc", "gmbh",
                            "company", "foundation", "the", "and", "co"})

# The PEP 508 values a platform tag decides (the rest keep this interpreter's values).
_TAG_PLATFORMS = (
    (("manylinux", "musllinux", "linux"), {"sys_platform": "linux", "platform_system": "Linux",
                                          "os_name": "posix"}),
    (("macosx",), {"sys_platform": "darwin", "platform_system": "Darwin", "os_name": "posix"}),
    (("win",), {"sys_platform": "win32", "platform_system": "Windows", "os_name": "nt"}),
)
_MACHINES = {"amd64": "AMD64", "win32": "x86", "universal2": "arm64"}


def marker_environment(tags: Sequence[Tag]) -> dict[str, str] | None:
    """Marker values for the wheel's (first) platform tag and lowest Python version; None for
    a tag that decides nothing (py3-none-any): markers are then not evaluated."""
    platform = next((tag.platform for tag in tags if tag.platform != "any"), None)
    if platform is None:
        return None
    environment = {key: str(value) for key, value in default_environment().items()}
    for prefixes, values in _TAG_PLATFORMS:
        if platform.startswith(prefixes):
            environment.update(values)
    machine = platform.split("_", 1)[1] if "_" in platform else ""
    for arch in ("x86_64", "aarch64", "arm64", "i686", "ppc64le", "s390x", "armv7l",
                 "universal2", "amd64", "win32"):
        if platform.endswith(arch):
            machine = _MACHINES.get(arch, arch)
    environment["platform_machine"] = machine
    versions = sorted(int(tag.interpreter[3:]) for tag in tags
                      if tag.interpreter[:3] in ("cp3", "py3") and tag.interpreter[3:].isdigit())
    if versions:
        environment["python_version"] = f"3.{versions[0]}"
        environment["python_full_version"] = f"3.{versions[0]}.0"
    return environment


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
    extras = tuple(canonicalize_name(extra) for extra in message.get_all("Provides-Extra") or [])
    authors = " ".join(value for field in ("Author", "Author-email", "Maintainer",
                                           "Maintainer-email")
                       for value in message.get_all(field) or [])
    return Metadata(message.get("Name", ""), message.get("Version", ""), tuple(requires),
                    message.get("Metadata-Version", ""), extras, authors), findings


def parse_wheel_version(text: str) -> str:
    """WHEEL's Wheel-Version ("" when absent)."""
    return str(HeaderParser().parsestr(text).get("Wheel-Version", "")).strip()


def parse_wheel_tags(text: str) -> tuple[Tag, ...]:
    message = HeaderParser().parsestr(text)
    tags: list[Tag] = []
    for line in message.get_all("Tag") or []:
        try:
            tags.extend(parse_tag(line.strip()))
        except ValueError:
            continue
    return tuple(tags)


def parse_record(text: str, *, where: str, max_rows: int = 100_001
                 ) -> tuple[dict[str, RecordEntry], list[Finding]]:
    """RECORD's rows by path; a path listed twice, a malformed row, more than ``max_rows``
    rows (a row per entry: the entry limit, plus RECORD's own) are findings."""
    entries: dict[str, RecordEntry] = {}
    findings: list[Finding] = []
    try:
        rows = list(itertools.islice(csv.reader(io.StringIO(text, newline="")), max_rows + 1))
    except csv.Error as error:
        return entries, [Finding(check="record", severity=Severity.ERROR, file=where,
                                 what=f"RECORD is not valid CSV ({error})",
                                 fix="regenerate RECORD")]
    if len(rows) > max_rows:
        return entries, [Finding(check="record", severity=Severity.ERROR, file=where,
                                 what=f"RECORD has more than {max_rows} rows, more than the "
                                      "wheel may have entries", fix="regenerate RECORD")]
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
        if path in entries:   # no row may win over another: both are refused
            findings.append(_bad_row(where, number, f"lists '{path}' again (rows that may "
                                     "contradict each other)"))
            continue
        entries[path] = RecordEntry(path, algorithm if digest else "", digest, size)
    return entries, findings


def _bad_row(where: str, number: int, what: str) -> Finding:
    return Finding(check="record", severity=Severity.ERROR, file=where,
                   what=f"RECORD line {number} {what}", fix="regenerate RECORD")


@dataclass(frozen=True)
class DistInfo:
    """A wheel's .dist-info folder, read: its name, METADATA, WHEEL's tags and version, the
    variant.json of a variant wheel, and the findings of METADATA and RECORD."""

    folder: str                 # "demo-1.0.dist-info"
    metadata: Metadata
    wheel_tags: tuple[Tag, ...]  # the tags WHEEL lists
    wheel_version: str          # WHEEL's Wheel-Version ("" when it has none)
    variant_json: str | None    # variant.json of a variant wheel (PEP 825)
    findings: tuple[Finding, ...]


def read_dist_info(wheel: str, texts: Mapping[str, str], streamed: Sequence[StreamedMember],
                   *, max_rows: int) -> DistInfo:
    """The .dist-info of the wheel named ``wheel`` from the member ``texts`` read whole, with
    RECORD compared to each ``streamed`` member's hash and size. A WheelError when the wheel
    has no single .dist-info folder."""
    folders = sorted({m.name.split("/")[0] for m in streamed
                      if m.name.split("/")[0].endswith(".dist-info")})
    if len(folders) != 1:
        raise WheelError(f"{wheel}: expected one .dist-info folder, found {len(folders)}",
                         fix="rebuild the wheel with a PEP 427 builder")
    folder = folders[0]
    metadata, findings = parse_metadata(texts.get(f"{folder}/METADATA", ""),
                                        where=f"{folder}/METADATA")
    findings += _check_record(texts, folder, streamed, max_rows)
    wheel_text = texts.get(f"{folder}/WHEEL", "")
    return DistInfo(folder, metadata, parse_wheel_tags(wheel_text),
                    parse_wheel_version(wheel_text), texts.get(f"{folder}/variant.json"),
                    tuple(findings))


def _check_record(texts: Mapping[str, str], dist_info: str,
                  streamed: Sequence[StreamedMember], max_rows: int) -> list[Finding]:
    record_name = f"{dist_info}/RECORD"
    if record_name not in texts:
        return [Finding(check="record", severity=Severity.ERROR, file=record_name,
                        what="the wheel has no RECORD", why="pip cannot verify or uninstall it",
                        fix="rebuild the wheel")]
    entries, findings = parse_record(texts[record_name], where=record_name,
                                     max_rows=max_rows)
    for member in streamed:
        findings.extend(_compare(member, entries.get(member.name), record_name))
    present = {member.name for member in streamed}
    for path in sorted(set(entries) - present):
        findings.append(Finding(check="record", severity=Severity.ERROR, file=path,
                                what="listed in RECORD but absent from the wheel",
                                fix="rebuild the wheel"))
    return findings


def _compare(member: StreamedMember, entry: RecordEntry | None, record: str) -> list[Finding]:
    # RECORD cannot hash itself, nor its signatures, which the wheel specification puts
    # beside it (.dist-info/RECORD.jws, .dist-info/RECORD.p7s); every other file is listed
    unsigned = member.name in (record, record + ".jws", record + ".p7s")
    if entry is None:
        return [] if unsigned else [Finding(
            check="record", severity=Severity.ERROR, file=member.name,
            what="not listed in RECORD", why="the file cannot be verified", fix="rebuild")]
    problems = []
    if entry.algorithm != "sha256" and not unsigned:
        problems.append(f"RECORD has no sha256 hash for it ('{entry.algorithm or 'none'}')")
    elif entry.algorithm == "sha256" and entry.digest != member.sha256:
        problems.append(f"sha256 is {member.sha256}, RECORD says {entry.digest}")
    if entry.size is not None and entry.size != member.size:
        problems.append(f"size is {member.size}, RECORD says {entry.size}")
    return [Finding(check="record", severity=Severity.ERROR, file=member.name, what=problem,
                    why="the file changed after RECORD was written or RECORD is wrong",
                    fix="regenerate RECORD as the last step of the build")
            for problem in problems]
