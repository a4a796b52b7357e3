"""A small, strict Mach-O reader: thin and fat (universal) files, 32- and 64-bit, either byte
order; the load commands a loader acts on and the symbol table.

What it fills in ``BinaryInfo`` (see model.py):

* ``needed``: each LC_LOAD_DYLIB / LC_REEXPORT_DYLIB / LC_LOAD_UPWARD_DYLIB /
  LC_LAZY_LOAD_DYLIB as the loader searches for it (not LC_LOAD_WEAK_DYLIB: dyld carries on
  without a weak library, so it is no requirement): "@rpath/REST"
  becomes REST (searched in the LC_RPATH folders), a name relative to the loading image
  ("@<token>/sub/libx.dylib") becomes "libx.dylib" (searched in the folder it names, see
  platforms/macos/loader.py); absolute names and @executable_path names stay as written.
  ``needed_paths`` keeps every install name as written, weak ones included.
* ``soname``: the install name (LC_ID_DYLIB); ``runpath``: the LC_RPATH entries.
* ``dynamic_symbols``: the external symbols of LC_SYMTAB (defined exports and undefined
  imports), without the leading underscore the C compilers add ("_PyInit_x" -> "PyInit_x",
  "__ZN3foo" -> "_ZN3foo"); ``symbols``: every non-debugging symbol, when asked for.
* ``file_type``: MH_DYLIB "shared", MH_BUNDLE "bundle" (what Python extension modules are),
  MH_EXECUTE "executable", MH_OBJECT "relocatable", MH_CORE "core".
* ``version_requirements``: the minimum macOS of each architecture (LC_BUILD_VERSION or
  LC_VERSION_MIN_MACOSX) as one requirement of the library "macOS", version
  "macOS-<arch>_<version>" (arch with '-' for '_': "macOS-x86-64_10.9"), so a platform
  policy can bound it like any required version.
* ``unsigned``: the machines of the slices without LC_CODE_SIGNATURE; ``bad_signatures``:
  those whose code directory's page hashes do not match the slice's bytes (a file changed
  after signing, e.g. by install_name_tool without re-signing), or whose signature cannot be
  read. The signature's certificates and special slots are not checked.
* ``sections``: "<segment>,<section>" with file offsets (zero-fill sections have size 0).

A fat file is read slice by slice; ``architectures`` lists each slice's machine (empty for a
thin file), ``machine`` is the slices' one machine, "universal2" for exactly arm64 + x86_64,
or the machines joined by "+", and the
lists (needed, search path, symbols, sections) are the union of the slices in slice order.
Section offsets are file offsets into the fat file.

Everything is bounded by the file size; every failure is a BinaryFormatError naming the file
and the structure."""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import cast

from release.binary import model
from release.binary._view import Buffer, ByteView
from release.errors import BinaryFormatError, one_line

MH_MAGIC, MH_MAGIC_64 = 0xFEEDFACE, 0xFEEDFACF
FAT_MAGIC, FAT_MAGIC_64 = 0xCAFEBABE, 0xCAFEBABF
_THIN = {b"\xce\xfa\xed\xfe", b"\xcf\xfa\xed\xfe", b"\xfe\xed\xfa\xce", b"\xfe\xed\xfa\xcf"}
_FAT = {b"\xca\xfe\xba\xbe", b"\xca\xfe\xba\xbf"}
_MAX_SLICES = 16   # Java class files share 0xCAFEBABE; their next word is >= 45

_CPU_64 = 0x01000000
_MACHINES = {7: "x86", 7 | _CPU_64: "x86_64", 12: "arm", 12 | _CPU_64: "arm64",
             12 | 0x02000000: "arm64_32", 18: "ppc", 18 | _CPU_64: "ppc64"}
_FILE_TYPES = {1: "relocatable", 2: "executable", 4: "core", 6: "shared", 8: "bundle"}

LC_REQ_DYLD = 0x80000000
LC_SEGMENT, LC_SYMTAB, LC_LOAD_DYLIB, LC_ID_DYLIB = 0x1, 0x2, 0xC, 0xD
LC_LOAD_WEAK_DYLIB, LC_SEGMENT_64 = 0x18 | LC_REQ_DYLD, 0x19
LC_RPATH, LC_REEXPORT_DYLIB = 0x1C | LC_REQ_DYLD, 0x1F | LC_REQ_DYLD
LC_LAZY_LOAD_DYLIB, LC_LOAD_UPWARD_DYLIB = 0x20, 0x23 | LC_REQ_DYLD
LC_CODE_SIGNATURE, LC_VERSION_MIN_MACOSX, LC_BUILD_VERSION = 0x1D, 0x24, 0x32
LC_DYSYMTAB = 0xB
_LOADS = (LC_LOAD_DYLIB, LC_LOAD_WEAK_DYLIB, LC_REEXPORT_DYLIB, LC_LAZY_LOAD_DYLIB,
          LC_LOAD_UPWARD_DYLIB)
PLATFORM_MACOS = 1
MH_TWOLEVEL, MH_FORCE_FLAT = 0x80, 0x100   # header flags: the image's namespace

N_STAB, N_PEXT, N_TYPE, N_EXT = 0xE0, 0x10, 0x0E, 0x01
N_UNDF, N_ABS, N_SECT, N_PBUD, N_INDR = 0x0, 0x2, 0xE, 0xC, 0xA
N_WEAK_REF, N_WEAK_DEF = 0x40, 0x80
S_ZEROFILL, S_GB_ZEROFILL, S_THREAD_LOCAL_ZEROFILL = 0x1, 0xC, 0x12
S_THREAD_LOCAL_REGULAR = 0x11

CSMAGIC_EMBEDDED_SIGNATURE, CSMAGIC_CODEDIRECTORY = 0xFADE0CC0, 0xFADE0C02
CSSLOT_CODEDIRECTORY, CSSLOT_ALTERNATE = 0, 0x1000
_HASHES = {1: "sha1", 2: "sha256", 3: "sha256", 4: "sha384"}   # 3: SHA-256 cut to 20 bytes
_TEAM_VERSION = 0x20200   # code directories from this version on carry a team offset

OS_PREFIX = "macOS"   # the library name and version prefix of a minimum-OS requirement


def is_macho(head: bytes) -> bool:
    """Thin Mach-O magic, or fat magic with a plausible slice count (not a Java class)."""
    if head[:4] in _THIN:
        return True
    return (head[:4] in _FAT and len(head) >= 8 and
        0 < int.from_bytes(head[4:8], "big") <= _MAX_SLICES)


def os_version(packed: int) -> str:
    """xxxx.yy.zz nibbles as "X.Y" (or "X.Y.Z" when Z is not 0)."""
    major, minor, patch = packed >> 16, (packed >> 8) & 0xFF, packed & 0xFF
    return f"{major}.{minor}" + (f".{patch}" if patch else "")


def requirement_version(machine: str, version: str) -> str:
    """The required-version word for a slice's minimum macOS: "macOS-arm64_11.0"."""
    return f"{OS_PREFIX}-{machine.replace('_', '-')}_{version}"


@dataclass
class _Slice:
    machine: str
    bits: int
    little: bool
    file_type: str
    needed_paths: list[str] = field(default_factory=list)
    weak: list[str] = field(default_factory=list)   # LC_LOAD_WEAK_DYLIB: may be missing
    soname: str = ""
    rpaths: list[str] = field(default_factory=list)
    minos: str = ""
    signed: bool = False
    signature_matches: bool = True
    two_level: bool = False
    team: str = ""
    sections: list[model.Section] = field(default_factory=list)
    dynamic: list[model.Symbol] = field(default_factory=list)
    symbols: list[model.Symbol] = field(default_factory=list)
    data: dict[str, bytes] = field(default_factory=dict)


class MachOReader:
    name = "macho"

    def matches(self, head: bytes) -> bool:
        return is_macho(head)

    def read(self, data: Buffer, *, where: str, sections: Collection[str] = (),
             static_symbols: bool = False) -> model.BinaryInfo:
        view = ByteView(data, where=where, byte_order=">")
        magic = view.read(0, 4, "Mach-O magic")
        if magic in _FAT:
            slices = [_read_slice(data, where, offset, size, sections, static_symbols)
                      for offset, size in _fat_slices(view, magic == b"\xca\xfe\xba\xbf")]
        elif magic in _THIN:
            slices = [_read_slice(data, where, 0, view.size, sections, static_symbols)]
        else:
            raise view.fail("not a Mach-O file (bad magic)")
        return _combine(slices, view.size, fat=magic in _FAT)


def _fat_slices(view: ByteView, wide: bool) -> list[tuple[int, int]]:
    (count,) = view.unpack("I", 4, "fat header")
    if not 0 < count <= _MAX_SLICES:
        raise view.fail(f"fat header names {count} architectures")
    layout, size = ("IIQQII", 32) if wide else ("IIIII", 20)
    rows = view.table(layout, 8, count, size, "fat architecture table")
    result = []
    for row in rows:
        offset, length = row[2], row[3]
        view.check(offset, length, "fat slice")
        result.append((offset, length))
    return result


def _read_slice(data: Buffer, where: str, start: int, length: int,
                wanted: Collection[str], static_symbols: bool) -> _Slice:
    head = ByteView(data, where=where, byte_order="<")
    magic = head.read(start, 4, "Mach-O header")
    if magic not in _THIN:
        raise head.fail(f"slice at offset {start} is not a Mach-O file (bad magic)")
    little = magic[0] in (0xCE, 0xCF)
    bits = 64 if magic in (b"\xcf\xfa\xed\xfe", b"\xfe\xed\xfa\xcf") else 32
    return _SliceParser(data, where, start, length, little, bits).parse(wanted, static_symbols)


class _SliceParser:
    def __init__(self, data: Buffer, where: str, start: int, length: int, little: bool,
                 bits: int) -> None:
        self.view = ByteView(data, where=where, byte_order="<" if little else ">")
        self.start, self.length, self.little, self.bits = start, length, little, bits

    def _check(self, offset: int, size: int, what: str) -> int:
        """A slice-relative range as a file offset, checked against the slice and the file."""
        if offset < 0 or size < 0 or offset + size > self.length:
            raise self.view.fail(f"{what} at slice offset {offset} (+{size} bytes) lies "
                                 f"outside the {self.length}-byte slice")
        self.view.check(self.start + offset, size, what)
        return self.start + offset

    def parse(self, wanted: Collection[str], static_symbols: bool) -> _Slice:
        header = "IiiIIIII" if self.bits == 64 else "IiiIIII"
        fields = self.view.unpack(header, self._check(0, 28 if self.bits == 32 else 32,
                                                      "Mach-O header"), "Mach-O header")
        _magic, cputype, _subtype, file_type, ncmds, sizeofcmds, flags = fields[:7]
        first = 32 if self.bits == 64 else 28
        self._check(first, sizeofcmds, "load commands")
        result = _Slice(_MACHINES.get(cputype & 0xFFFFFFFF, f"cpu-{cputype & 0xFFFFFFFF:#x}"),
                        self.bits, self.little, _FILE_TYPES.get(file_type, "other"),
                        two_level=bool(flags & MH_TWOLEVEL) and not flags & MH_FORCE_FLAT)
        symtab: tuple[int, ...] | None = None
        external: tuple[int, int] | None = None   # LC_DYSYMTAB: the external symbols' range
        offset, end = first, first + sizeofcmds
        self.view.spend("records", ncmds, "load commands")
        for _ in range(ncmds):
            if offset + 8 > end:
                raise self.view.fail("load commands run past sizeofcmds")
            cmd, size = self.view.unpack("II", self.start + offset, "load command")
            if size < 8 or offset + size > end:
                raise self.view.fail(f"load command {cmd:#x} has size {size}, outside "
                                     "the load commands")
            body = self.start + offset
            if cmd in _LOADS or cmd == LC_ID_DYLIB:
                name = self._string(body, size, self.view.unpack("I", body + 8, "dylib")[0])
                if cmd == LC_ID_DYLIB:
                    result.soname = name
                else:
                    result.needed_paths.append(name)
                    if cmd == LC_LOAD_WEAK_DYLIB:
                        result.weak.append(name)
            elif cmd == LC_RPATH:
                result.rpaths.append(self._string(
                    body, size, self.view.unpack("I", body + 8, "rpath")[0]))
            elif cmd == LC_BUILD_VERSION:
                platform, minos = self.view.unpack("II", body + 8, "build version")
                if platform == PLATFORM_MACOS or not result.minos:
                    result.minos = os_version(minos)
            elif cmd == LC_VERSION_MIN_MACOSX:
                result.minos = os_version(self.view.unpack("I", body + 8, "minimum version")[0])
            elif cmd == LC_CODE_SIGNATURE:
                dataoff, datasize = self.view.unpack("II", body + 8, "code signature")
                self._check(dataoff, datasize, "code signature")
                result.signed = True
                result.signature_matches = self._signature_matches(dataoff, datasize)
                result.team = self._team(dataoff, datasize)
            elif cmd in (LC_SEGMENT, LC_SEGMENT_64):
                result.sections += self._sections(body, size, cmd == LC_SEGMENT_64)
            elif cmd == LC_SYMTAB:
                symtab = self.view.unpack("IIII", body + 8, "symbol table command")
            elif cmd == LC_DYSYMTAB:
                # ilocalsym nlocalsym iextdefsym nextdefsym iundefsym nundefsym
                _, _, first_external, defined, first_undefined, undefined = (
                    self.view.unpack("IIIIII", body + 8, "dynamic symbol table command"))
                if first_undefined == first_external + defined:
                    external = (first_external, defined + undefined)
            offset += size
        for section in result.sections:
            short = section.name.split(",", 1)[-1]
            for name in (section.name, short):
                if name in wanted and section.size:
                    result.data[name] = self.view.read(section.offset, section.size,
                                                       f"section {section.name}", paid=True)
        if symtab is not None:
            if external is not None and not static_symbols:
                # the local symbols come first (LC_DYSYMTAB sorts them): never read nor paid
                symtab = _external_part(symtab, *external, 16 if self.bits == 64 else 12)
            result.dynamic, result.symbols = self._symbols(symtab, result.sections,
                                                           static_symbols)
        return result

    def _signature_matches(self, offset: int, size: int) -> bool:
        """Whether the code directory's page hashes match the slice's bytes (False also for
        a signature too damaged to read: dyld refuses both)."""
        try:
            return self._page_hashes_match(offset, size)
        except BinaryFormatError:
            return False

    def _team(self, offset: int, size: int) -> str:
        """The team identifier of the signature's code directory: set when a developer
        identity signed the file (ad-hoc signatures have none); "" when unreadable."""
        try:
            blob = ByteView(self.view.read(self.start + offset, size, "code signature",
                                        paid=True),
                            where=self.view.where, byte_order=">")
            magic, _length, count = blob.unpack("III", 0, "signature blob")
            if magic != CSMAGIC_EMBEDDED_SIGNATURE or count > 64:
                return ""
            for slot, start in blob.table("II", 12, count, 8, "signature index"):
                if slot != CSSLOT_CODEDIRECTORY:
                    continue
                magic, _length, version = blob.unpack("III", start, "code directory")
                if magic != CSMAGIC_CODEDIRECTORY or version < _TEAM_VERSION:
                    return ""
                (team,) = blob.unpack("I", start + 48, "code directory team offset")
                if not team:
                    return ""
                raw = blob.read(start + team, min(64, blob.size - start - team), "team")
                return one_line(raw.split(b"\0", 1)[0].decode("ascii", "replace"))
        except BinaryFormatError:
            return ""
        return ""

    def _page_hashes_match(self, offset: int, size: int) -> bool:
        blob = ByteView(self.view.read(self.start + offset, size, "code signature",
                                        paid=True),
                        where=self.view.where, byte_order=">")
        magic, _length, count = blob.unpack("III", 0, "signature blob")
        if magic != CSMAGIC_EMBEDDED_SIGNATURE or count > 64:
            return False
        directories = [entry for slot, entry in blob.table("II", 12, count, 8, "signature index")
                       if slot in (CSSLOT_CODEDIRECTORY, CSSLOT_ALTERNATE)
                       or CSSLOT_ALTERNATE < slot < CSSLOT_ALTERNATE + 5]
        if not directories:
            return False
        for start in directories:
            (magic, _length, _version, _flags, hash_offset, _ident, _special, slots, limit,
             hash_size, hash_type, _platform, page_log) = blob.unpack(
                "IIIIIIIIIBBBB", start, "code directory")
            algorithm = _HASHES.get(hash_type)
            if (magic != CSMAGIC_CODEDIRECTORY or algorithm is None or
                    limit > self.length or not 0 <= page_log < 32):
                return False
            page = 1 << page_log if page_log else limit
            if slots != (limit + page - 1) // page if page else slots != 0:
                return False
            stored = blob.read(start + hash_offset, slots * hash_size, "code hashes")
            for index in range(slots):
                first = index * page
                piece = self.view.read(self.start + first, min(page, limit - first), "page")
                digest = hashlib.new(algorithm, piece).digest()[:hash_size]
                if digest != stored[index * hash_size:(index + 1) * hash_size]:
                    return False
        return True

    def _string(self, body: int, size: int, offset: int) -> str:
        """An lc_str: a NUL-terminated string inside its load command."""
        if not 8 <= offset < size:
            raise self.view.fail(f"load command string offset {offset} is outside its "
                                 f"{size}-byte command")
        raw = self.view.read(body + offset, size - offset, "load command string")
        return raw.split(b"\0", 1)[0].decode("utf-8", "replace")

    def _sections(self, body: int, size: int, wide: bool) -> list[model.Section]:
        segment = "16sQQQQiiII" if wide else "16sIIIIiiII"
        header = 72 if wide else 56
        if size < header:
            raise self.view.fail(f"segment command of {size} bytes is too small")
        nsects = self.view.unpack(segment, body + 8, "segment command")[7]
        entry = 80 if wide else 68
        if header + nsects * entry > size:
            raise self.view.fail(f"segment lists {nsects} sections beyond its command")
        layout = "16s16sQQIIIIIIII" if wide else "16s16sIIIIIIIII"
        sections = []
        for row in self.view.rows(layout, body + header, nsects, entry, "section",
                                  kind="sections"):
            name = f"{_name(cast(bytes, row[1]))},{_name(cast(bytes, row[0]))}"
            address, length, offset, flags = row[2], row[3], row[4], row[8]
            kind = flags & 0xFF
            if kind in (S_ZEROFILL, S_GB_ZEROFILL, S_THREAD_LOCAL_ZEROFILL) or offset == 0:
                length = 0
            else:
                offset = self._check(offset, length, f"section {name}")
            sections.append(model.Section(name, offset, length, kind, address))
        return sections

    def _symbols(self, symtab: tuple[int, ...], sections: list[model.Section],
                 static_symbols: bool) -> tuple[list[model.Symbol], list[model.Symbol]]:
        symoff, nsyms, stroff, strsize = symtab
        entry = 16 if self.bits == 64 else 12
        if nsyms * entry > self.length:
            raise self.view.fail(f"symbol table claims {nsyms} symbols")
        symbols_at = self._check(symoff, nsyms * entry, "symbol table")
        self.view.spend("symbols", nsyms, "symbol table")   # before a row is read
        # the string table is read in place (names of the symbols kept are decoded and paid
        # for one by one): the local symbols' names are never copied
        strings = (self._check(stroff, strsize, "string table"), strsize)
        layout = "IBBHQ" if self.bits == 64 else "IBBHI"
        rows = self.view.rows(layout, symbols_at, nsyms, entry, "symbol table", kind=None)
        dynamic, everything = [], []
        decoded: dict[int, str] = {}   # string index -> name (decoded and paid for once)
        for strx, kind, section, desc, _value in rows:
            if kind & N_STAB or kind & N_TYPE == N_INDR:
                continue   # debugging entries; re-exports of another image's definition
            # a private extern (N_PEXT) is linked into this image only, like an ELF symbol
            # of hidden visibility, which .dynsym never holds: not a dynamic symbol
            external = bool(kind & N_EXT) and not (kind & N_PEXT and kind & N_TYPE != N_UNDF)
            if not external and not static_symbols:
                continue
            symbol = self._symbol(strings, strx, kind, section, desc, sections, decoded)
            if external:
                dynamic.append(symbol)
            if static_symbols:
                everything.append(symbol)
        return dynamic, everything

    def _symbol(self, strings: tuple[int, int], strx: int, kind: int, section: int,
                desc: int, sections: list[model.Section],
                decoded: dict[int, str]) -> model.Symbol:
        name = decoded.get(strx)
        if name is None:
            table, size = strings
            if strx >= size:
                raise self.view.fail(f"symbol name index {strx} is outside its "
                                     f"{size}-byte string table")
            end = self.view.string_end(table + strx, table + size)
            raw = bytes(self.view.data[table + strx:end if end >= 0 else table + size]).decode(
                "utf-8", "replace")
            self.view.spend("names", len(raw) + 1, "symbol table")
            name = decoded[strx] = raw[1:] if raw.startswith("_") else raw
        defined = kind & N_TYPE in (N_SECT, N_ABS)   # not N_UNDF nor prebound N_PBUD
        weak = bool(desc & (N_WEAK_DEF if defined else N_WEAK_REF))
        binding = model.WEAK if weak else model.GLOBAL if kind & N_EXT else model.LOCAL
        visibility = model.HIDDEN if kind & N_PEXT else model.DEFAULT
        what = "notype"
        if defined and kind & N_TYPE == N_SECT and 0 < section <= len(sections):
            home = sections[section - 1]
            what = ("func" if home.name.startswith("__TEXT,__text") else
                    "tls" if home.kind in (S_THREAD_LOCAL_REGULAR, S_THREAD_LOCAL_ZEROFILL)
                    else "object")
        return model.Symbol(name, binding, visibility, defined, what)


def _external_part(symtab: tuple[int, ...], first: int, count: int,
                   entry: int) -> tuple[int, ...]:
    """LC_SYMTAB narrowed to the symbols from index ``first`` on, ``count`` of them (the
    external ones LC_DYSYMTAB locates); as it was when that range is not inside it."""
    symoff, nsyms, stroff, strsize = symtab
    if first + count > nsyms:
        return symtab
    return (symoff + first * entry, count, stroff, strsize)


def _name(raw: bytes) -> str:
    """A segment or section name (one line: it may appear in an error)."""
    return one_line(raw.split(b"\0", 1)[0].decode("utf-8", "replace"))


def searched_name(install_name: str) -> str:
    """What the loader searches for: "@rpath/REST" -> REST; a name relative to the loading
    image ("@<token>/dir/libx.dylib") -> "libx.dylib", searched in the folder the platform's
    loader model derives from ``needed_paths``; absolute and @executable_path names (which
    nothing in a wheel resolves) as written."""
    if install_name.startswith("@rpath/"):
        return install_name[len("@rpath/"):]
    if (install_name.startswith("@") and "/" in install_name and
            not install_name.startswith("@executable_path")):
        return posixpath.basename(install_name)
    return install_name


def _unique(items: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def _combine(slices: list[_Slice], size: int, *, fat: bool) -> model.BinaryInfo:
    first = slices[0]
    machines = [piece.machine for piece in slices]
    architectures = tuple(machines) if fat else ()
    if len(set(machines)) == 1:
        machine = first.machine
    else:
        distinct = sorted(set(machines))
        machine = "universal2" if distinct == ["arm64", "x86_64"] else "+".join(distinct)
    paths = _unique([path for piece in slices for path in piece.needed_paths])
    weak = {path for piece in slices for path in piece.weak}
    required = [path for path in paths if path not in weak]
    minimums = [model.VersionRequirement(OS_PREFIX, (requirement_version(piece.machine,
                                                                         piece.minos),))
                for piece in slices if piece.minos]
    seen: set[tuple[str, bool]] = set()
    dynamic = []
    for piece in slices:
        for symbol in piece.dynamic:
            if (symbol.name, symbol.defined) not in seen:
                seen.add((symbol.name, symbol.defined))
                dynamic.append(symbol)
    data: dict[str, bytes] = {}
    for piece in slices:
        for name, content in piece.data.items():
            data.setdefault(name, content)
    return model.BinaryInfo(
        format="macho", machine=machine, bits=max(piece.bits for piece in slices),
        little_endian=first.little, file_type=first.file_type, size=size,
        needed=_unique([searched_name(path) for path in required]), needed_paths=paths,
        soname=first.soname, runpath=_unique([entry for piece in slices
                                              for entry in piece.rpaths]),
        sections=tuple(section for piece in slices for section in piece.sections),
        dynamic_symbols=tuple(dynamic),
        symbols=tuple(symbol for piece in slices for symbol in piece.symbols),
        version_requirements=tuple(minimums), section_data=data,
        architectures=architectures,
        unsigned=_unique([piece.machine for piece in slices if not piece.signed]),
        bad_signatures=_unique([piece.machine for piece in slices
                                if piece.signed and not piece.signature_matches]),
        two_level_namespace=all(piece.two_level for piece in slices),
        vendor=next((piece.team for piece in slices if piece.team), ""))
