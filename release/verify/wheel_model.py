"""The typed model of a wheel: its metadata, its files and every shipped binary, read once.

``open_wheel`` streams each member once (in parallel): it checks RECORD's hash and size,
scans for leaked build paths, writes binaries (or, for a full extraction, every file) into a
folder laid out like site-packages, and parses each binary there."""

from __future__ import annotations

import mmap
import os
from collections.abc import Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from packaging.tags import Tag

from release.archive import (
    Leak,
    Limits,
    Member,
    StreamedMember,
    StreamRequest,
    installed_path,
    list_members,
    path_problem,
    read_member,
    read_member_range,
    startup_hook,
    stream_member,
)
from release.binary import (
    READERS,
    BinaryInfo,
    BinaryReader,
    Budget,
    Section,
    Symbol,
    is_binary,
    read_binary,
    read_binary_data,
)
from release.buildrecord import RECORD_FILE, BuildRecord
from release.errors import BinaryFormatError, LimitExceeded, WheelError
from release.findings import Finding, Severity
from release.verify.argument import file_name_tags
from release.verify.dist_info_files import (
    Metadata,
    RecordEntry,
    parse_metadata,
    parse_record,
    parse_wheel_tags,
    parse_wheel_version,
)
from release.verify.options import VerifyOptions

# Where edgert's registry (native/include/edgert/registry.hpp) keeps its registration records,
# in each format's spelling: ELF; PE (section names of images have at most 8 characters);
# Mach-O (segment,section, as the Mach-O reader names sections).
REGISTRATION_SECTIONS = ("edgert_reg", ".edgreg", "__DATA,edgert_reg")
_TEXT_LIMIT = 16 << 20
SECTION_LIMIT = 64 << 20   # a section a check reads whole (.rodata); others are searched in place


@dataclass(frozen=True)
class BinaryFile:
    path: str             # path inside the wheel (as in RECORD)
    installed: str        # path relative to site-packages after installation
    extracted_path: Path | None  # where the bytes are during this run (None: only in the zip)
    info: BinaryInfo
    archive: Path
    member: Member
    readers: tuple[BinaryReader, ...] = READERS
    # an extension module (exports PyInit_*): computed once, the checks ask often
    extension: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "extension", any(
            s.defined and s.name.startswith("PyInit_") for s in self.info.dynamic_symbols))

    @property
    def sections(self) -> tuple[Section, ...]:
        return self.info.sections

    @property
    def name(self) -> str:
        return self.installed.rsplit("/", 1)[-1]

    @property
    def folder(self) -> str:
        return self.installed.rsplit("/", 1)[0] if "/" in self.installed else ""

    @property
    def is_extension(self) -> bool:
        return self.extension

    def read_bytes(self) -> bytes:
        if self.extracted_path is not None:
            return self.extracted_path.read_bytes()
        return read_member(self.archive, self.member, Limits())

    def static_symbols(self) -> tuple[Symbol, ...]:
        """The static symbol table (.symtab), parsed on demand (it can be large: it gets a
        budget of its own, the default ``ReadLimits``, and is dropped after use)."""
        if self.extracted_path is not None:
            return read_binary(self.extracted_path, static_symbols=True, readers=self.readers,
                               budget=Budget()).symbols
        return read_binary_data(self.read_bytes(), where=self.path, static_symbols=True,
                                readers=self.readers, budget=Budget()).symbols

    def section_holds(self, name: str, needles: Collection[bytes]) -> set[bytes]:
        """Which of ``needles`` occur in section ``name``, searched in place (a memory map of
        the extracted file): nothing is copied, whatever the section's size."""
        section = self.info.section(name)
        if section is None or section.size == 0 or not needles:
            return set()
        if self.extracted_path is None:
            data = self.read_bytes()
            start, end = section.offset, section.offset + section.size
            return {needle for needle in needles if data.find(needle, start, end) >= 0}
        with self.extracted_path.open("rb") as handle:
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        with mapped:
            end = min(section.offset + section.size, len(mapped))
            return {needle for needle in needles
                    if mapped.find(needle, section.offset, end) >= 0}

    def read_section(self, name: str, *, limit: int | None = SECTION_LIMIT) -> bytes:
        """The bytes of section ``name`` ('' when absent), read from the extracted file;
        LimitExceeded for a section larger than ``limit`` (None: as large as the member)."""
        section = self.info.section(name)
        if section is None or section.size == 0:
            return b""
        if limit is not None and section.size > limit:
            raise LimitExceeded(f"{self.path}: section {name} holds {section.size:,} bytes, "
                                f"over the limit of {limit:,} for one section read "
                                "whole", fix="ship a smaller library; no real one comes near")
        if self.extracted_path is not None:
            with self.extracted_path.open("rb") as handle:
                handle.seek(section.offset)
                data = handle.read(section.size)
        else:   # only the section's bytes are kept, not the whole member
            data = read_member_range(self.archive, self.member, section.offset, section.size)
        if len(data) != section.size:
            raise BinaryFormatError(f"{self.path}: section {name} is truncated",
                                    fix="rebuild the wheel")
        return data


@dataclass(frozen=True)
class WheelModel:
    filename: str
    archive: Path
    root: Path                       # extraction folder laid out like site-packages
    fully_extracted: bool            # False: only binaries were written (static mode)
    files: frozenset[str]            # installed paths of every member
    metadata: Metadata
    # what pip installs the wheel by: the file name's tags (WHEEL's when the name is not a
    # valid wheel name); every check judges the binaries against these
    tags: tuple[Tag, ...]
    binaries: tuple[BinaryFile, ...]
    build_record: BuildRecord | None
    leaks: Mapping[str, tuple[Leak, ...]]   # wheel path -> leaked prefixes found in it
    findings: tuple[Finding, ...]           # problems found while reading
    # Shipped build-system files consumers read (*.cmake, *.pc): wheel path -> text
    configs: Mapping[str, str] = field(default_factory=dict)
    digests: Mapping[str, str] = field(default_factory=dict)   # wheel path -> sha256 (RECORD form)
    # The Python that runs when a top-level package is imported: "<pkg>/__init__.py" (and
    # "<pkg>/_distributor_init.py", which distributors' builds add) -> text
    init_modules: Mapping[str, str] = field(default_factory=dict)
    wheel_file_tags: tuple[Tag, ...] = ()   # the tags the WHEEL file lists (identity compares)
    # Python files that load libraries into the global scope (RTLD_GLOBAL); without any, the
    # libraries the package opens itself stay each in their own scope
    global_openers: tuple[str, ...] = ()
    dist_info: str = ""        # the .dist-info folder's name ("demo-1.0.dist-info")
    wheel_version: str = ""    # WHEEL's Wheel-Version ("" when it has none)
    variant_json: str | None = None         # .dist-info/variant.json of a variant wheel (PEP 825)
    # the archive's members as listed once (what a check reads on demand is found here)
    members: tuple[Member, ...] = field(default=(), repr=False, compare=False)
    # every folder that holds a file of the wheel ("" for the top), for O(1) lookups
    folders: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        folders = {""}
        for path in self.files:
            parts = path.split("/")[:-1]
            folders.update("/".join(parts[:end]) for end in range(1, len(parts) + 1))
        object.__setattr__(self, "folders", frozenset(folders))

    def binary(self, installed: str) -> BinaryFile | None:
        return next((binary for binary in self.binaries if binary.installed == installed), None)

    @property
    def platforms(self) -> tuple[str, ...]:
        return tuple(sorted({tag.platform for tag in self.tags}))


def open_wheel(archive: Path, destination: Path, *, extract_all: bool, prefixes: tuple[str, ...],
               options: VerifyOptions, readers: tuple[BinaryReader, ...]) -> WheelModel:
    """Reads the wheel; ``readers`` are the binary formats to recognise and parse."""
    members = list_members(archive, options.limits)

    def binary(head: bytes) -> bool:
        return is_binary(head, readers)

    # paths no file system holds: the same finding in --static and full verify, never an
    # attempt to write them (which would fail as if the disk were at fault)
    unwritable = {installed_path(m.name): path_problem(installed_path(m.name))
                  for m in members}
    unwritable = {name: why for name, why in unwritable.items() if why}
    request = StreamRequest(prefixes, destination,
                            (lambda head: True) if extract_all else binary,
                            keep_when=(lambda head: False) if extract_all else binary,
                            unwritable=frozenset(unwritable))
    findings: list[Finding] = [
        Finding(check="archive", severity=Severity.ERROR, file=name, what=f"the path {why}",
                why="pip cannot install the wheel: writing the file fails",
                fix="shorten the file's name (components at most 255 bytes)")
        for name, why in sorted(unwritable.items())]
    findings += _startup_hooks(members, options.limits.startup_hooks)
    streamed, binaries = _stream_all(archive, members, request, options, findings, readers)
    _check_read_whole(archive, members)
    texts = _read_texts(archive, members, options)
    dist_info = _dist_info(archive, members)
    metadata, metadata_findings = parse_metadata(texts.get(f"{dist_info}/METADATA", ""),
                                                 where=f"{dist_info}/METADATA")
    findings += metadata_findings
    findings += _check_record(texts, dist_info, streamed, options.limits.max_entries + 1)
    record = _build_record(texts)
    wheel_text = texts.get(f"{dist_info}/WHEEL", "")
    listed = parse_wheel_tags(wheel_text)
    return WheelModel(
        filename=archive.name, archive=archive, root=destination, fully_extracted=extract_all,
        files=frozenset(installed_path(m.name) for m in members), metadata=metadata,
        tags=file_name_tags(archive.name) or listed, wheel_file_tags=listed, binaries=binaries,
        global_openers=tuple(sorted(s.name for s in streamed if s.opens_globally)),
        build_record=record, leaks={s.name: s.leaks for s in streamed if s.leaks},
        findings=tuple(findings), configs=_read_configs(archive, members, options),
        digests={s.name: s.sha256 for s in streamed},
        init_modules=_read_init_modules(archive, members, options), dist_info=dist_info,
        wheel_version=parse_wheel_version(wheel_text),
        variant_json=texts.get(f"{dist_info}/variant.json"), members=tuple(members))


def _startup_hooks(members: list[Member], declared: tuple[str, ...]) -> list[Finding]:
    """Members that run code whenever any interpreter of the environment starts (or stand in
    for the interpreter): an error unless declared (--allow-startup-hook)."""
    findings = []
    for member in members:
        why = startup_hook(member.name)
        if not why:
            continue
        allowed = member.name in declared or installed_path(member.name) in declared
        findings.append(Finding(
            check="archive", severity=Severity.INFO if allowed else Severity.ERROR,
            file=member.name, what=f"{why}" + (" (declared)" if allowed else ""),
            why="installing the wheel changes every program run by that environment's "
                "Python, not just those importing the package",
            fix="move the code into the package, or declare the hook with "
                f"--allow-startup-hook {member.name}"))
    return findings


def _stream_all(archive: Path, members: list[Member], request: StreamRequest,
                options: VerifyOptions, findings: list[Finding],
                readers: tuple[BinaryReader, ...]
                ) -> tuple[list[StreamedMember], tuple[BinaryFile, ...]]:
    ordered = sorted(members, key=lambda member: -member.compressed_size)
    descriptor = os.open(archive, os.O_RDONLY)

    budget = Budget(options.limits.binaries)   # every binary of the wheel, together

    def work(member: Member) -> tuple[StreamedMember, BinaryFile | Finding | None]:
        placed = Member(installed_path(member.name), member.method, member.flags,
                        member.header_offset, member.compressed_size, member.declared_size,
                        member.crc)
        result = stream_member(archive, descriptor, placed, options.limits, request)
        kept = StreamedMember(member.name, result.size, result.sha256, result.head,
                              result.leaks, result.written, None, result.opens_globally)
        return kept, _read_binary(archive, member, result, readers, budget)

    try:
        with ThreadPoolExecutor(max(1, options.workers)) as pool:
            results = list(pool.map(work, ordered))
    finally:
        os.close(descriptor)
    findings.extend(binary for _, binary in results if isinstance(binary, Finding))
    binaries = sorted((binary for _, binary in results if isinstance(binary, BinaryFile)),
                      key=lambda binary: binary.path)
    return [member for member, _ in results], tuple(binaries)


def _read_binary(archive: Path, entry: Member, member: StreamedMember,
                 readers: tuple[BinaryReader, ...], budget: Budget) -> BinaryFile | Finding | None:
    name = entry.name
    if not is_binary(member.head, readers):
        return None
    try:
        if member.data is not None:
            info = read_binary_data(member.data, where=name, sections=REGISTRATION_SECTIONS,
                                    readers=readers, budget=budget)
        elif member.written is not None:
            info = read_binary(member.written, sections=REGISTRATION_SECTIONS,
                               readers=readers, budget=budget)
        else:
            return None
    except LimitExceeded as error:   # the wheel is refused: its binaries cost too much
        raise LimitExceeded(f"{archive.name}: {name}: {error.what.split(': ', 1)[-1]}",
                            fix=error.fix) from None
    except BinaryFormatError as error:
        return Finding(check="binary", severity=Severity.ERROR, file=name,
                       what=f"unreadable binary: {error.what}", fix=error.fix)
    return BinaryFile(name, installed_path(name), member.written, info, archive, entry, readers)


def _read_texts(archive: Path, members: list[Member], options: VerifyOptions) -> dict[str, str]:
    wanted = [m for m in members if m.declared_size <= _TEXT_LIMIT and (
        m.name.count("/") == 1 and (m.name.endswith(("/METADATA", "/WHEEL", "/RECORD",
                                                     "/variant.json", "/" + RECORD_FILE))))]
    return {m.name: read_member(archive, m, options.limits).decode("utf-8", "replace")
            for m in wanted}


CONFIG_SUFFIXES = (".cmake", ".pc")
# what verify keeps whole in memory (METADATA, WHEEL, RECORD, variant.json, the build record,
# the shipped .cmake/.pc files, the top-level __init__.py files), all together
READ_WHOLE_LIMIT = 64 << 20


def _read_whole(member: Member) -> bool:
    name = member.name
    return member.declared_size <= _TEXT_LIMIT and (
        name.endswith(CONFIG_SUFFIXES)
        or (name.count("/") == 1 and name.endswith(("/METADATA", "/WHEEL", "/RECORD",
                                                    "/variant.json", "/" + RECORD_FILE,
                                                    "/__init__.py", "/_distributor_init.py"))))


def _check_read_whole(archive: Path, members: list[Member]) -> None:
    total = sum(member.declared_size for member in members if _read_whole(member))
    if total > READ_WHOLE_LIMIT:
        raise WheelError(f"{archive.name}: the files verify reads whole (metadata, RECORD, "
                         f".cmake, .pc, top-level __init__.py) hold {total:,} bytes, over the "
                         f"limit of {READ_WHOLE_LIMIT:,}",
                         fix="this is no plausible wheel; ship smaller configuration files")


def _read_configs(archive: Path, members: list[Member],
                  options: VerifyOptions) -> dict[str, str]:
    return {m.name: read_member(archive, m, options.limits).decode("utf-8", "replace")
            for m in members if m.name.endswith(CONFIG_SUFFIXES)
            and m.declared_size <= _TEXT_LIMIT}


def _read_init_modules(archive: Path, members: list[Member],
                       options: VerifyOptions) -> dict[str, str]:
    return {m.name: read_member(archive, m, options.limits).decode("utf-8", "replace")
            for m in members if m.name.count("/") == 1
            and m.name.endswith(("/__init__.py", "/_distributor_init.py"))
            and m.declared_size <= _TEXT_LIMIT}


def _dist_info(archive: Path, members: list[Member]) -> str:
    folders = sorted({m.name.split("/")[0] for m in members
                      if m.name.split("/")[0].endswith(".dist-info")})
    if len(folders) != 1:
        raise WheelError(f"{archive.name}: expected one .dist-info folder, found "
                         f"{len(folders)}", fix="rebuild the wheel with a PEP 427 builder")
    return folders[0]


def _check_record(texts: dict[str, str], dist_info: str,
                  streamed: list[StreamedMember], max_rows: int) -> list[Finding]:
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


def _build_record(texts: dict[str, str]) -> BuildRecord | None:
    names = sorted(name for name in texts if name.endswith("/" + RECORD_FILE)
                   and not name.split("/")[0].endswith(".dist-info"))
    return BuildRecord.from_json(texts[names[0]], where=names[0]) if names else None
