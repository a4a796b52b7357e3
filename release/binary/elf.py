"""A small, strict ELF reader: header, program and section headers, the dynamic section,
dynamic and static symbols with versions, and the bytes of named sections; or the section
table alone (``read_sections``: what cuda/fatbin.py reads to find a library's fatbinary and a
cubin's section names), the one ELF parser of the project.

Everything is bounded by the file size: counts, offsets and chains are checked before use and
every failure is a BinaryFormatError naming the file and the structure. Work is bounded by the
readers' budget (``release.binary._view.Budget``): each table's claimed count is paid for
before a row is read, string tables and section contents by their bytes, symbol names by the
bytes decoded (a name shared by many symbols is decoded once)."""

from __future__ import annotations

import array
import itertools
import operator
import sys
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple, overload

from release.binary import model
from release.binary._view import Buffer, ByteView, Image, string_at

MAGIC = b"\x7fELF"

_MACHINES = {2: "sparc", 3: "x86", 8: "mips", 20: "ppc", 21: "ppc64", 22: "s390", 40: "arm",
             43: "sparcv9", 62: "x86_64", 183: "aarch64", 243: "riscv", 258: "loongarch"}
_FILE_TYPES = {1: "relocatable", 2: "executable", 3: "shared", 4: "core"}
_BINDINGS = {0: model.LOCAL, 1: model.GLOBAL, 2: model.WEAK, 10: model.UNIQUE}
_VISIBILITIES = (model.DEFAULT, model.INTERNAL, model.HIDDEN, model.PROTECTED)
_KINDS = {0: "notype", 1: "object", 2: "func", 3: "section", 4: "file", 5: "common",
          6: "tls", 10: "ifunc"}

SHT_SYMTAB, SHT_STRTAB, SHT_DYNAMIC, SHT_NOBITS, SHT_DYNSYM = 2, 3, 6, 8, 11
SHT_VERDEF, SHT_VERNEED, SHT_VERSYM = 0x6FFFFFFD, 0x6FFFFFFE, 0x6FFFFFFF
PT_LOAD, PT_DYNAMIC = 1, 2
DT_NULL, DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_SONAME, DT_RPATH = 0, 1, 5, 10, 14, 15
DT_RUNPATH, DT_FLAGS = 29, 30


@dataclass(frozen=True)
class _Layout:
    header: str
    section: str
    segment: str
    dynamic: str
    symbol: str


_LAYOUT32 = _Layout("HHIIIIIHHHHHH", "IIIIIIIIII", "IIIIIIII", "iI", "IIIBBH")
_LAYOUT64 = _Layout("HHIQQQIHHHHHH", "IIQQQQIIQQ", "IIQQQQQQ", "qQ", "IBBHQQ")


@dataclass(frozen=True)
class _Header:
    file_type: int
    machine: int
    phoff: int
    shoff: int
    phentsize: int
    phnum: int
    shentsize: int
    shnum: int
    shstrndx: int


class _SectionHeader(NamedTuple):
    """One section header (a tuple: a table is made of them at once)."""

    name: str
    kind: int
    address: int
    offset: int
    size: int
    link: int
    info: int
    entsize: int


@dataclass(frozen=True)
class _Segment:
    kind: int
    offset: int
    address: int
    filesz: int


class ElfReader:
    name = "elf"

    def matches(self, head: bytes) -> bool:
        return head[:4] == MAGIC

    def read(self, data: Buffer, *, where: str, sections: Collection[str] = (),
             static_symbols: bool = False) -> model.BinaryInfo:
        return _Parser(data, where).parse(sections, static_symbols)


class _Parser:
    def __init__(self, data: Image, where: str) -> None:
        view = ByteView(data, where=where)
        ident = view.read(0, 16, "ELF identification")
        if ident[:4] != MAGIC:
            raise view.fail("not an ELF file (bad magic)")
        if ident[4] not in (1, 2) or ident[5] not in (1, 2):
            raise view.fail(f"unknown ELF class {ident[4]} or data encoding {ident[5]}")
        self.bits = 32 if ident[4] == 1 else 64
        self.little = ident[5] == 1
        self.layout = _LAYOUT32 if self.bits == 32 else _LAYOUT64
        self.view = ByteView(data, where=where, byte_order="<" if self.little else ">")

    def parse(self, wanted: Collection[str], static_symbols: bool) -> model.BinaryInfo:
        header = self._header()
        segments = self._segments(header)
        sections = self._sections(header)
        dynamic = self._dynamic(sections, segments)
        version_names, requirements = self._versions(sections)
        return model.BinaryInfo(
            format="elf", machine=_MACHINES.get(header.machine, f"machine-{header.machine}"),
            bits=self.bits, little_endian=self.little,
            file_type=_FILE_TYPES.get(header.file_type, "other"), size=self.view.size,
            needed=tuple(value for tag, value in dynamic if tag == DT_NEEDED),
            soname=next((value for tag, value in dynamic if tag == DT_SONAME), ""),
            rpath=_search_path(dynamic, DT_RPATH), runpath=_search_path(dynamic, DT_RUNPATH),
            dynamic_flags=self._flags, sections=tuple(
                model.Section(s.name, s.offset, 0 if s.kind == SHT_NOBITS else s.size,
                              s.kind, s.address) for s in sections),
            dynamic_symbols=self._symbols(sections, SHT_DYNSYM, version_names),
            symbols=self._symbols(sections, SHT_SYMTAB, {}) if static_symbols else (),
            version_requirements=requirements,
            section_data={s.name: self.view.read(s.offset, s.size, f"section {s.name}",
                                                 paid=True)
                          for s in sections if s.name in wanted and s.kind != SHT_NOBITS})

    def _header(self) -> _Header:
        fields = self.view.unpack(self.layout.header, 16, "ELF header")
        (file_type, machine, _version, _entry, phoff, shoff, _flags, _ehsize, phentsize, phnum,
         shentsize, shnum, shstrndx) = fields
        return _Header(file_type, machine, phoff, shoff, phentsize, phnum, shentsize, shnum,
                       shstrndx)

    def _segments(self, header: _Header) -> list[_Segment]:
        if header.phoff == 0 or header.phnum == 0:
            return []
        rows = self.view.table(self.layout.segment, header.phoff, header.phnum,
                               header.phentsize, "program header table")
        if self.bits == 64:
            return [_Segment(row[0], row[2], row[3], row[5]) for row in rows]
        return [_Segment(row[0], row[1], row[2], row[4]) for row in rows]

    def _section_table(self, header: _Header) -> SectionTable:
        """The section headers, every bound checked per table: one read of the table, the
        contents of every section with file contents inside the file (one maximum over the
        rows), every name index inside the name table and NUL-terminated (the largest index
        is at or before the table's last NUL). Names are decoded when asked for."""
        if header.shoff == 0:
            return SectionTable((), b"")
        count, names_index = header.shnum, header.shstrndx
        if count == 0 or names_index == 0xFFFF:  # extended numbering lives in section 0
            first = self.view.table(self.layout.section, header.shoff, 1, header.shentsize,
                                    "section header 0")[0]
            count = count or first[5]
            names_index = first[6] if names_index == 0xFFFF else names_index
        rows = self.view.table(self.layout.section, header.shoff, count, header.shentsize,
                               "section header table", kind="sections")
        if not rows:
            return SectionTable((), b"")
        # name, kind, flags, address, offset, size, link, info, align, entsize
        columns = tuple(zip(*rows))
        kinds, offsets, sizes = columns[1], columns[4], columns[5]
        ends = map(operator.add, offsets, sizes)
        with_contents = map(operator.not_, map(_NO_CONTENTS.__contains__, kinds))
        if max(itertools.compress(ends, with_contents), default=0) > self.view.size:
            for kind, offset, size in zip(kinds, offsets, sizes):   # the first, for its words
                if kind not in _NO_CONTENTS:
                    self.view.check(offset, size, "section contents")
        names = b""
        if 0 < names_index < count:
            names = self.view.read(offsets[names_index], sizes[names_index],
                                   "section name table", paid=True)
            if max(columns[0]) > names.rfind(b"\0"):
                for name in columns[0]:   # the first that is outside or unterminated
                    string_at(names, name, view=self.view, what="section name")
        return SectionTable(columns, names)

    def _sections(self, header: _Header) -> list[_SectionHeader]:
        table = self._section_table(header)
        if not table.columns:
            return []
        name, kind, _flags, address, offset, size, link, info, _align, entsize = table.columns
        names = table.names()
        return list(map(_SectionHeader._make,
                        zip(names, kind, address, offset, size, link, info, entsize)))

    def _strings(self, sections: list[_SectionHeader], index: int, what: str) -> bytes:
        if not 0 < index < len(sections) or sections[index].kind != SHT_STRTAB:
            raise self.view.fail(f"{what} links to section {index}, which is not a string table")
        table = sections[index]
        return self.view.read(table.offset, table.size, what, paid=True)

    _flags = 0

    def _dynamic(self, sections: list[_SectionHeader],
                 segments: list[_Segment]) -> list[tuple[int, str]]:
        dynamic = next((s for s in sections if s.kind == SHT_DYNAMIC), None)
        if dynamic is not None:
            strings = self._strings(sections, dynamic.link, "dynamic section")
            offset, size = dynamic.offset, dynamic.size
        else:
            segment = next((s for s in segments if s.kind == PT_DYNAMIC), None)
            if segment is None:
                return []
            offset, size = segment.offset, segment.filesz
            strings = b""
        entry = 8 if self.bits == 32 else 16
        rows = self.view.table(self.layout.dynamic, offset, size // entry, entry,
                               "dynamic section")
        end = next((i for i, row in enumerate(rows) if row[0] == DT_NULL), len(rows))
        rows = rows[:end]
        if not strings:
            strings = self._strings_from_segments(rows, segments)
        result: list[tuple[int, str]] = []
        for tag, value in rows:
            if tag == DT_FLAGS:
                self._flags = value
            elif tag in (DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH):
                result.append((tag, string_at(strings, value, view=self.view,
                                              what="dynamic entry")))
        return result

    def _strings_from_segments(self, rows: list[tuple[int, ...]],
                               segments: list[_Segment]) -> bytes:
        """DT_STRTAB located through PT_LOAD, for files without section headers."""
        values = {tag: value for tag, value in rows}
        if DT_STRTAB not in values or DT_STRSZ not in values:
            return b""
        address, size = values[DT_STRTAB], values[DT_STRSZ]
        for segment in segments:
            if segment.kind == PT_LOAD and segment.address <= address < (
                    segment.address + segment.filesz):
                offset = segment.offset + (address - segment.address)
                return self.view.read(offset, min(size, self.view.size - offset),
                                      "dynamic string table", paid=True)
        raise self.view.fail(f"DT_STRTAB address {address:#x} is in no loadable segment")

    def _versions(self, sections: list[_SectionHeader]
                  ) -> tuple[dict[int, str], tuple[model.VersionRequirement, ...]]:
        names: dict[int, str] = {}
        requirements: list[model.VersionRequirement] = []
        for section in sections:
            if section.kind == SHT_VERNEED:
                requirements.extend(self._version_needs(sections, section, names))
            elif section.kind == SHT_VERDEF:
                self._version_definitions(sections, section, names)
        return names, tuple(requirements)


    def _version_needs(self, sections: list[_SectionHeader], section: _SectionHeader,
                       names: dict[int, str]) -> list[model.VersionRequirement]:
        strings = self._strings(sections, section.link, "version requirements")
        result = []
        offset, end, seen = section.offset, section.offset + section.size, 0
        while seen <= section.size // 16:
            _version, count, file_name, aux, following = self.view.unpack(
                "HHIII", offset, "version requirement")
            versions, aux_offset = [], offset + aux
            for _ in range(min(count, section.size // 16)):
                if not section.offset <= aux_offset < end:
                    raise self.view.fail("version requirement entry lies outside its section")
                _hash, _flags, other, name, next_aux = self.view.unpack(
                    "IHHII", aux_offset, "version requirement entry")
                version = string_at(strings, name, view=self.view, what="version name")
                # entries of several requirements may share one chain: each read is paid for
                self.view.spend("records", 1, "version requirements")
                self.view.spend("names", len(version) + 1, "version requirements")
                versions.append(version)
                names[other & 0x7FFF] = version
                if next_aux == 0:
                    break
                aux_offset += next_aux
            library = string_at(strings, file_name, view=self.view, what="version file")
            self.view.spend("records", 1, "version requirements")
            self.view.spend("names", len(library) + 1, "version requirements")
            result.append(model.VersionRequirement(library, tuple(versions)))
            seen += 1
            if following == 0:
                return result
            offset += following
            if not section.offset <= offset < end:
                raise self.view.fail("version requirement chain leaves its section")
        raise self.view.fail("version requirement chain does not end")

    def _version_definitions(self, sections: list[_SectionHeader], section: _SectionHeader,
                             names: dict[int, str]) -> None:
        strings = self._strings(sections, section.link, "version definitions")
        offset, end = section.offset, section.offset + section.size
        self.view.spend("records", section.size // 20 + 1, "version definitions")
        for _ in range(section.size // 20 + 1):
            _version, _flags, index, count, _hash, aux, following = self.view.unpack(
                "HHHHIII", offset, "version definition")
            if count:
                if not section.offset <= offset + aux < end:
                    raise self.view.fail("version definition entry lies outside its section")
                name, _next = self.view.unpack("II", offset + aux, "version definition entry")
                defined = string_at(strings, name, view=self.view, what="version name")
                self.view.spend("names", len(defined) + 1, "version definitions")
                names[index & 0x7FFF] = defined
            if following == 0:
                return
            offset += following
            if not section.offset <= offset < end:
                raise self.view.fail("version definition chain leaves its section")
        raise self.view.fail("version definition chain does not end")

    def _symbols(self, sections: list[_SectionHeader], kind: int,
                 version_names: dict[int, str]) -> tuple[model.Symbol, ...]:
        table = next((s for s in sections if s.kind == kind), None)
        if table is None or table.size == 0:
            return ()
        entry = 16 if self.bits == 32 else 24
        stride = max(table.entsize, entry) if table.entsize else entry
        count = table.size // stride
        what = f"symbol table {table.name}"
        self.view.check(table.offset, count * stride, what)
        self.view.spend("symbols", count, what)   # before the strings are copied
        strings = self._strings(sections, table.link, what)
        rows = self.view.rows(self.layout.symbol, table.offset, count, stride, what,
                              kind=None)
        versions = self._version_indexes(sections, count) if version_names else None
        symbols = []
        size = len(strings)
        find, symbol = strings.find, model.Symbol
        bindings, visibilities, kinds = _BINDINGS, _VISIBILITIES, _KINDS
        wide = self.bits == 64
        decoded: dict[int, str] = {0: ""}   # string index -> name (decoded once)
        spent, spend_every = 0, 1 << 20
        next(rows, None)   # entry 0 is the undefined symbol
        for index, row in enumerate(rows, start=1):
            if wide:
                name, info, other, shndx = row[0], row[1], row[2], row[3]
            else:
                name, info, other, shndx = row[0], row[3], row[4], row[5]
            number = versions[index] & 0x7FFF if versions is not None else 0
            version = version_names.get(number, "") if number > 1 else ""  # 0 local, 1 base
            text = decoded.get(name)
            if text is None:
                end = find(b"\0", name) if name < size else -1
                if end < 0:   # out of the table, or not NUL-terminated: the one error path
                    text = string_at(strings, name, view=self.view, what="symbol name")
                else:
                    text = strings[name:end].decode("utf-8", "replace")
                decoded[name] = text
                spent += len(text) + 1
                if spent >= spend_every:   # paid in steps: the budget's lock is shared
                    self.view.spend("names", spent, what)
                    spent = 0
            binding = bindings.get(info >> 4)
            symbols.append(symbol(text, binding or f"binding-{info >> 4}",
                                  visibilities[other & 3], shndx != 0,
                                  kinds.get(info & 0xF, "notype"), version))
        self.view.spend("names", spent, what)
        return tuple(symbols)

    def _version_indexes(self, sections: list[_SectionHeader],
                         count: int) -> array.array[int] | None:
        """The version index of each of ``count`` symbols (2 bytes each, zeros past the
        table's end), or None without a version table."""
        table = next((s for s in sections if s.kind == SHT_VERSYM), None)
        if table is None:
            return None
        raw = self.view.read(table.offset, min(table.size, 2 * count) // 2 * 2,
                             "symbol version table", paid=True)
        indexes = array.array("H", raw)
        if self.little != (sys.byteorder == "little"):
            indexes.byteswap()
        if len(indexes) < count:
            indexes.frombytes(bytes(2 * (count - len(indexes))))
        return indexes


_NO_CONTENTS = frozenset((0, SHT_NOBITS))   # SHT_NULL, SHT_NOBITS: no bytes in the file


class SectionTable(Sequence[model.Section]):
    """The section table ``read_sections`` returns: its rows, checked, with their names
    decoded on first use (a cubin's table is searched for a name prefix without decoding the
    rest). Indexing and iteration give ``model.Section`` values as ``BinaryInfo.sections``
    holds them."""

    def __init__(self, columns: tuple[tuple[int, ...], ...], names: bytes) -> None:
        self.columns = columns        # the header fields, one tuple per field (row order)
        self._names = names           # the name table; b"": none, every name is ""
        self._decoded: dict[int, str] = {}

    def __len__(self) -> int:
        return len(self.columns[0]) if self.columns else 0

    @overload
    def __getitem__(self, index: int) -> model.Section: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[model.Section]: ...

    def __getitem__(self, index: int | slice) -> model.Section | Sequence[model.Section]:
        if isinstance(index, slice):
            return tuple(self[position] for position in range(len(self))[index])
        position = range(len(self))[index]   # IndexError past the end, as a tuple's
        columns = self.columns
        kind = columns[1][position]
        return model.Section(self._name(columns[0][position]), columns[4][position],
                             0 if kind == SHT_NOBITS else columns[5][position], kind,
                             columns[3][position])

    def __iter__(self) -> Iterator[model.Section]:
        if not self.columns:
            return iter(())
        name, kind, _flags, address, offset, size = self.columns[:6]
        named, section, nobits = self._name, model.Section, SHT_NOBITS
        return (section(named(index), start, 0 if type_ == nobits else length, type_, at)
                for index, type_, at, start, length in zip(name, kind, address, offset, size))

    def __eq__(self, other: object) -> bool:
        """Equal to any sequence of the same sections (a tuple of them, as before)."""
        if not isinstance(other, Sequence):
            return NotImplemented
        return tuple(self) == tuple(other)

    __hash__ = None   # type: ignore[assignment]   # compared by value, as a list is

    def _name(self, index: int) -> str:
        """The name at ``index`` of the name table (bounds checked with the table)."""
        if not self._names:
            return ""
        text = self._decoded.get(index)
        if text is None:
            text = self._names[index:self._names.find(b"\0", index)].decode("utf-8",
                                                                             "replace")
            self._decoded[index] = text
        return text

    def names(self) -> list[str]:
        """Every section's name, in table order."""
        return [self._name(index) for index in self.columns[0]] if self.columns else []

    def _matching(self, text: str, *, whole: bool) -> Iterator[model.Section]:
        """The sections whose name is (``whole``) or starts with ``text``, in table order.
        The name table's bytes are compared with the encoded text, so only the matches are
        decoded; text an undecodable name could equal (U+FFFD) or that holds a NUL is
        compared decoded."""
        if not self.columns:
            return iter(())
        if not self._names or "\ufffd" in text or "\0" in text:
            return (section for section in self if section.name == text
                    or not whole and section.name.startswith(text))
        encoded = text.encode("utf-8") + (b"\0" if whole else b"")
        starts = self._names.startswith
        return (self[position] for position, index in enumerate(self.columns[0])
                if starts(encoded, index))

    def starting_with(self, prefix: str) -> Iterator[model.Section]:
        """The sections whose name starts with ``prefix``; only those names are decoded."""
        return self._matching(prefix, whole=False)

    def named(self, name: str) -> model.Section | None:
        """The first section called ``name``, or None."""
        return next(self._matching(name, whole=True), None)


def read_sections(data: Image, *, where: str) -> SectionTable:
    """The section table of the ELF file in ``data`` (the header, the section headers and
    their names; no dynamic section, no symbols), paid for from the readers' budget in force.
    ``data`` may be a memory map or a memoryview of an ELF image inside another file (a cubin
    in a fatbinary): only the tables are copied out of it. Every bound is checked before
    this returns; names are decoded when first asked for."""
    parser = _Parser(data, where)
    return parser._section_table(parser._header())


def section_named(sections: Iterable[model.Section], name: str) -> model.Section | None:
    """The first section called ``name`` (as ``BinaryInfo.section`` finds it), or None."""
    if isinstance(sections, SectionTable):
        return sections.named(name)
    return next((section for section in sections if section.name == name), None)


def _search_path(dynamic: list[tuple[int, str]], tag: int) -> tuple[str, ...]:
    return tuple(entry for tag_, value in dynamic if tag_ == tag for entry in value.split(":"))
