"""The typed model of a wheel: its metadata, its files and every shipped binary, read once.

``open_wheel`` reads the archive in one pass (release/distribution/archive.py ``read_wheel``: each
member streamed once, in parallel, hashed, scanned for leaked build paths, binaries, or for a full
extraction every file, written into a folder laid out like site-packages) and parses each binary as
it streams; then the .dist-info (RECORD held against the hashes) and the build record, from the
texts that pass read whole."""

from __future__ import annotations

import mmap
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from packaging.tags import Tag

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
from release.distribution.archive import (
    Leak,
    Limits,
    Member,
    StreamedMember,
    StreamRequest,
    installed_path,
    read_member,
    read_member_range,
    read_wheel,
)
from release.distribution.buildrecord import RECORD_FILE, BuildRecord
from release.errors import BinaryFormatError, LimitExceeded
from release.findings import Finding, Severity
from release.verify.argument import WheelArgument
from release.verify.dist_info_files import Metadata, read_dist_info
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


def open_wheel(argument: WheelArgument, destination: Path, *, extract_all: bool,
               prefixes: tuple[str, ...], options: VerifyOptions,
               readers: tuple[BinaryReader, ...]) -> WheelModel:
    """Reads the wheel ``argument`` names (``classify``) in one pass over its archive;
    ``readers`` are the binary formats to recognise and parse, as each member streams."""
    archive = argument.path
    budget = Budget(options.limits.binaries)   # every binary of the wheel, together

    def binary(head: bytes) -> bool:
        return is_binary(head, readers)

    def parsed(entry: Member, member: StreamedMember) -> BinaryFile | Finding | None:
        """The binary ``member`` is, parsed from the bytes kept or the file written."""
        name = entry.name
        if not binary(member.head) or (member.data is None and member.written is None):
            return None
        try:
            info = (read_binary_data(member.data, where=name, sections=REGISTRATION_SECTIONS,
                                     readers=readers, budget=budget)
                    if member.data is not None else
                    read_binary(member.written, sections=REGISTRATION_SECTIONS,  # type: ignore[arg-type]
                                readers=readers, budget=budget))
        except LimitExceeded as error:   # the wheel is refused: its binaries cost too much
            raise LimitExceeded(f"{archive.name}: {name}: {error.what.split(': ', 1)[-1]}",
                                fix=error.fix) from None
        except BinaryFormatError as error:
            return Finding(check="binary", severity=Severity.ERROR, file=name,
                           what=f"unreadable binary: {error.what}", fix=error.fix)
        return BinaryFile(name, installed_path(name), member.written, info, archive, entry,
                          readers)

    request = StreamRequest(prefixes, destination,
                            (lambda head: True) if extract_all else binary,
                            keep_when=(lambda head: False) if extract_all else binary)
    read = read_wheel(archive, request, options.limits, workers=options.workers,
                      read_whole=_read_whole, observe=parsed)
    dist = read_dist_info(archive.name, read.texts, read.streamed,
                          max_rows=options.limits.max_entries + 1)
    texts, streamed = read.texts, read.streamed
    return WheelModel(
        filename=archive.name, archive=archive, root=destination, fully_extracted=extract_all,
        files=frozenset(installed_path(m.name) for m in read.members),
        metadata=dist.metadata, tags=argument.name_tags or dist.wheel_tags,
        wheel_file_tags=dist.wheel_tags,
        binaries=tuple(sorted((b for b in read.observed if isinstance(b, BinaryFile)),
                              key=lambda b: b.path)),
        global_openers=tuple(sorted(s.name for s in streamed if s.opens_globally)),
        build_record=BuildRecord.in_texts(texts),
        leaks={s.name: s.leaks for s in streamed if s.leaks},
        findings=(*read.findings, *(f for f in read.observed if isinstance(f, Finding)),
                  *dist.findings),
        configs={name: text for name, text in texts.items()
                 if name.endswith(CONFIG_SUFFIXES)},
        digests={s.name: s.sha256 for s in streamed},
        init_modules={name: text for name, text in texts.items() if name.count("/") == 1
                      and name.endswith(("/__init__.py", "/_distributor_init.py"))},
        dist_info=dist.folder, wheel_version=dist.wheel_version,
        variant_json=dist.variant_json, members=read.members)


CONFIG_SUFFIXES = (".cmake", ".pc")


def _read_whole(member: Member) -> bool:
    """What verify keeps whole in memory: METADATA, WHEEL, RECORD, variant.json, the build
    record, the shipped .cmake/.pc files and the top-level __init__.py files."""
    name = member.name
    return member.declared_size <= _TEXT_LIMIT and (
        name.endswith(CONFIG_SUFFIXES)
        or (name.count("/") == 1 and name.endswith(("/METADATA", "/WHEEL", "/RECORD",
                                                    "/variant.json", "/" + RECORD_FILE,
                                                    "/__init__.py", "/_distributor_init.py"))))
