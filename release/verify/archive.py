"""Reading a wheel's zip without trusting it: names are checked before anything is written,
sizes are checked while streaming (not taken from headers), and totals are capped.

Bomb limits are absolute sizes (one member, all members), with every member held to its
declared size while it streams. There is no compression-ratio limit: real libraries that are
mostly zero padding compress over 200x, and a ratio says nothing about how much is written."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import struct
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from release.errors import WheelError
from release.verify.options import Limits

_CHUNK = 1 << 20
_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")
_LOCAL_SIGNATURE = 0x04034B50
_DRIVE = re.compile(r"^[A-Za-z]:")
_SAMPLE = 160


@dataclass(frozen=True)
class Member:
    name: str
    method: int
    flags: int
    header_offset: int
    compressed_size: int
    declared_size: int
    crc: int


@dataclass(frozen=True)
class Leak:
    prefix: str
    sample: str      # the text around the first occurrence


@dataclass(frozen=True)
class StreamedMember:
    name: str
    size: int
    sha256: str          # urlsafe base64 without padding, as RECORD writes it
    head: bytes          # the first bytes (format detection)
    leaks: tuple[Leak, ...]
    written: Path | None
    data: bytes | None   # the whole member, when it was kept in memory
    opens_globally: bool = False   # Python source that loads libraries with RTLD_GLOBAL


def installed_path(name: str) -> str:
    """Where pip puts a wheel member, relative to site-packages: ``<name>.data/purelib/`` and
    ``.../platlib/`` map to the root. The one mapping verify uses; ``_unsafe_name`` checks its
    result too, so what it yields always stays inside the extraction folder."""
    parts = name.split("/")
    if len(parts) > 2 and parts[0].endswith(".data") and parts[1] in ("purelib", "platlib"):
        return "/".join(parts[2:])
    return name


def _unsafe_name(name: str) -> str:
    """Why ``name`` cannot be extracted safely, or ''."""
    if not name:
        return "has an empty name"
    if "\0" in name:
        return "contains a NUL character"
    if name.startswith("/") or _DRIVE.match(name) or name.startswith("\\"):
        return "is an absolute path"
    if "\\" in name:
        return "contains a backslash"
    if ".." in PurePosixPath(name).parts:
        return "climbs out of the extraction folder with '..'"
    if "" in name.rstrip("/").split("/") or "." in name.split("/"):
        return "has an empty or '.' path component"
    return ""


def _unsafe_member(name: str) -> str:
    """``_unsafe_name`` for the entry and for where it is installed."""
    reason = _unsafe_name(name)
    installed = installed_path(name)
    if not reason and installed != name:
        reason = _unsafe_name(installed)
        return f"is installed as '{installed}', which {reason}" if reason else ""
    return reason


def list_members(archive: Path, limits: Limits) -> list[Member]:
    """The wheel's members, after rejecting every entry that is unsafe to unpack."""
    try:
        with zipfile.ZipFile(archive) as opened:
            infos = opened.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as error:
        raise WheelError(f"{archive.name}: not a readable zip archive ({error})",
                         fix="rebuild the wheel or re-download it") from None
    if len(infos) > limits.max_entries:
        raise WheelError(f"{archive.name}: {len(infos)} entries exceed the limit of "
                         f"{limits.max_entries}", fix="this is not a plausible wheel")
    problems = _problems(infos, limits)
    if problems:  # (checked before anything reads a name, an empty one included)
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more"
                                            if len(problems) > 5 else "")
        raise WheelError(f"{archive.name}: unsafe to unpack: {shown}",
                         fix="rebuild the wheel with a tool that writes plain file entries")
    return [Member(info.filename, info.compress_type, info.flag_bits, info.header_offset,
                   info.compress_size, info.file_size, info.CRC)
            for info in infos if not info.is_dir()]


def _problems(infos: Sequence[zipfile.ZipInfo], limits: Limits) -> list[str]:
    problems: list[str] = []
    raw = Counter(info.filename for info in infos)
    problems += [f"'{name}' appears {count} times" for name, count in raw.items() if count > 1]
    installed = Counter(installed_path(info.filename) for info in infos
                        if not info.filename.endswith("/"))
    problems += [f"{count} entries install to '{name}'" for name, count in installed.items()
                 if count > raw[name] and count > 1]
    problems += [f"'{name}' is both a file and a folder of other entries"
                 for name in sorted(_file_and_folder(installed))]
    total = 0
    for info in infos:
        reason = _unsafe_member(info.filename)
        if reason:
            problems.append(f"entry '{info.filename}' {reason}")
        mode = info.external_attr >> 16
        if info.create_system == 3 and (mode & 0o170000) == 0o120000:
            problems.append(f"entry '{info.filename}' is a symbolic link")
        if info.flag_bits & 1:
            problems.append(f"entry '{info.filename}' is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            problems.append(f"entry '{info.filename}' uses compression method "
                            f"{info.compress_type} (only stored and deflated are allowed)")
        if info.file_size > limits.max_member_size:
            problems.append(f"entry '{info.filename}' claims {info.file_size} bytes, over the "
                            f"limit of {limits.max_member_size} for one member (zip bomb)")
        total += info.file_size
    if total > limits.max_total_size:
        problems.append(f"members claim {total} bytes in all, over the limit of "
                        f"{limits.max_total_size} (zip bomb)")
    return problems


def _file_and_folder(files: Counter[str]) -> set[str]:
    """Installed names that other entries also use as a folder (a/b beside a/b/c)."""
    folders = {"/".join(parts[:end]) for name in files
               for parts in [name.split("/")] for end in range(1, len(parts))}
    return set(files) & folders



# A prefix counts only where a path starts: not inside a longer path
# (/opt/rh/gcc-toolset-14/root/... holds "/root/") or a URL (https://pypi.org/project/...).
_PATH_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~/+@-")
# An absolute source file name as __FILE__ writes it into a binary (NUL-terminated), outside
# the system's own folders (assert() in a system header names /usr/include/...).
_SOURCE_FILE = re.compile(rb"(?:/[A-Za-z0-9._+@-]+){2,}"
                          rb"\.(?:c|cc|cpp|cxx|cu|h|hh|hpp|hxx|inl|f|f90|pyx|m|mm)")
# (/builddir/build/BUILD/: where a distribution's toolchain packages were built, e.g. the
# static part of gcc-toolset's libstdc++ that manylinux links in)
_SYSTEM_SOURCES = (b"/usr/", b"/opt/rh/", b"/opt/_internal/", b"/Library/", b"/Applications/",
                   b"/System/", b"/builddir/build/BUILD/")
_SOURCE_SUFFIXES = tuple(b"." + suffix for suffix in (
    b"c", b"cc", b"cpp", b"cxx", b"cu", b"h", b"hh", b"hpp", b"hxx", b"inl", b"f", b"f90", b"pyx",
    b"m", b"mm"))
SOURCE_FILE = "absolute source file"    # the Leak.prefix of a __FILE__-style source path
_BINARY_MAGIC = (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xca\xfe\xba\xbe",
                 b"MZ")
# Python that loads libraries into the process's global scope (ctypes.RTLD_GLOBAL,
# os.RTLD_GLOBAL): the other libraries it opens may then interpose on each other.
_GLOBAL_OPEN = b"RTLD_GLOBAL"
_KEY = 3   # prefixes starting with '/' are looked up by their first bytes at each path start


class _LeakScanner:
    """Finds, in one pass over the path starts ('/' not preceded by a path character), the
    first occurrence of each prefix and, in binaries, of an absolute source file name.
    Prefixes that do not start with '/' (D:\\a\\) are searched for directly, except in ELF
    and Mach-O files."""

    def __init__(self, prefixes: Sequence[str]) -> None:
        self.by_key: dict[bytes, list[tuple[str, bytes]]] = {}
        self.other: list[tuple[str, bytes]] = []
        for prefix in prefixes:
            encoded = prefix.encode()
            if encoded.startswith(b"/") and len(encoded) >= _KEY:
                self.by_key.setdefault(encoded[:_KEY], []).append((prefix, encoded))
            elif encoded:
                self.other.append((prefix, encoded))
        self.active = bool(self.by_key or self.other)
        longest = max((len(e) for group in self.by_key.values() for _, e in group),
                      default=1)
        longest = max([longest, *(len(e) for _, e in self.other)])
        self.keep = longest + _SAMPLE
        self.tail = b""
        self.started = False
        self.binary = False
        self.posix = False
        self.found: dict[str, Leak] = {}

    def feed(self, chunk: bytes) -> None:
        if not self.active:
            return
        if not self.started:
            self.binary = chunk.startswith(_BINARY_MAGIC)
            # ELF and Mach-O files come from POSIX builds: no drive-letter paths in them
            self.posix = chunk.startswith(_BINARY_MAGIC[:-1])
        window = self.tail + chunk
        if not self.posix:
            for prefix, encoded in self.other:
                if prefix not in self.found:
                    self._find(prefix, encoded, window)
        self._path_starts(window)
        self.tail = window[-self.keep:]
        self.started = True

    def _path_starts(self, window: bytes) -> None:
        by_key, found = self.by_key, self.found
        sources = self.binary and SOURCE_FILE not in found
        # a start at 0 of a later window was seen (with its preceding byte) in the previous one
        position = window.find(b"/", 0 if not self.started else 1)
        while position >= 0:
            if position == 0 or window[position - 1] not in _PATH_BYTES:
                for prefix, encoded in by_key.get(window[position:position + _KEY], ()):
                    if prefix not in found and window.startswith(encoded, position):
                        found[prefix] = Leak(prefix, _sample(window, position))
                if sources:
                    # cheap tests first: NUL-terminated and a source suffix, then the pattern
                    end = window.find(b"\0", position, position + _SAMPLE)
                    if end > 0 and window.endswith(_SOURCE_SUFFIXES, position, end) and \
                            _SOURCE_FILE.fullmatch(window, position, end) and \
                            not window.startswith(_SYSTEM_SOURCES, position) and \
                            window.find(b"XXXXXX", position, end) < 0:
                        # (XXXXXX: a mkstemp template, not a file of the build)
                        found[SOURCE_FILE] = Leak(SOURCE_FILE, _sample(window, position))
                        sources = False
            position = window.find(b"/", position + 1)

    def _find(self, prefix: str, encoded: bytes, window: bytes) -> None:
        position = window.find(encoded, 0 if not self.started else 1)
        while position >= 0:
            if position == 0 or window[position - 1] not in _PATH_BYTES:
                self.found[prefix] = Leak(prefix, _sample(window, position))
                return
            position = window.find(encoded, position + 1)


def _sample(window: bytes, position: int) -> str:
    return window[position:position + _SAMPLE].split(b"\0")[0].decode("utf-8", "replace").strip()


@dataclass(frozen=True)
class StreamRequest:
    prefixes: tuple[str, ...]
    destination: Path | None              # folder to extract into, or None
    write_when: Callable[[bytes], bool]   # decides from the first bytes whether to write
    keep_when: Callable[[bytes], bool] = lambda head: False  # ... whether to keep in memory
    # Larger members are written and memory-mapped: memory stays bounded by workers x 8 MiB.
    keep_limit: int = 8 << 20


def stream_member(archive: Path, descriptor: int, member: Member, limits: Limits,
                  request: StreamRequest) -> StreamedMember:
    """Decompresses one member once: hashes it, scans it and optionally writes it out."""
    start = _data_offset(archive, descriptor, member)
    digest = hashlib.sha256()
    scanner = _LeakScanner(request.prefixes)
    python = member.name.endswith(".py")
    opens_globally, previous = False, b""
    produced, head, output = 0, b"", None
    target: Path | None = None
    kept: list[bytes] | None = None
    try:
        for chunk in _chunks(archive, descriptor, member, start):
            produced += len(chunk)
            if produced > member.declared_size:  # declared sizes are capped in list_members
                raise WheelError(f"{archive.name}: '{member.name}' expands past its declared "
                                 f"{member.declared_size} bytes (zip bomb or corrupt entry)",
                                 fix="rebuild the wheel")
            if not head:
                head = chunk[:64]
                if member.declared_size <= request.keep_limit and request.keep_when(head):
                    kept = []
                elif request.destination is not None and request.write_when(head):
                    target = _confined(request.destination, member.name)
                    output = _create(target)
            digest.update(chunk)
            scanner.feed(chunk)
            if python and not opens_globally:
                opens_globally = _GLOBAL_OPEN in previous[-len(_GLOBAL_OPEN):] + chunk
                previous = chunk
            if output is not None:
                output.write(chunk)
            elif kept is not None:
                kept.append(chunk)
    finally:
        if output is not None:
            output.close()
    if produced != member.declared_size:
        raise WheelError(f"{archive.name}: '{member.name}' holds {produced} bytes but its "
                         f"header says {member.declared_size}", fix="rebuild the wheel")
    if (request.destination is not None and target is None and kept is None
            and request.write_when(head)):
        target = _confined(request.destination, member.name)  # an empty file
        _create(target).close()
    encoded = _record_digest(digest.digest())
    return StreamedMember(member.name, produced, encoded, head,
                          tuple(scanner.found.values()), target,
                          b"".join(kept) if kept is not None else None, opens_globally)


def _confined(destination: Path, name: str) -> Path:
    """``destination / name``, refused unless it stays inside ``destination``."""
    root = destination.resolve()
    target = (root / name).resolve()
    if target == root or root not in target.parents:
        raise WheelError(f"entry '{name}' would be written outside the extraction folder",
                         fix="rebuild the wheel with plain relative entry names")
    return target


def _create(target: Path) -> BinaryIO:
    """A new file, never an existing one or one reached through a symbolic link."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                             0o644)
    except FileExistsError:
        raise WheelError(f"two entries would be written to '{target.name}'",
                         fix="rebuild the wheel: every file must appear once") from None
    return os.fdopen(descriptor, "wb")


def read_member(archive: Path, member: Member, limits: Limits) -> bytes:
    """The whole content of one member, with the same checks as ``stream_member``."""
    descriptor = os.open(archive, os.O_RDONLY)
    try:
        parts, produced = [], 0
        for chunk in _chunks(archive, descriptor, member, _data_offset(archive, descriptor,
                                                                       member)):
            produced += len(chunk)
            if produced > member.declared_size:
                raise WheelError(f"{archive.name}: '{member.name}' expands past its declared "
                                 f"{member.declared_size} bytes", fix="rebuild the wheel")
            parts.append(chunk)
        return b"".join(parts)
    finally:
        os.close(descriptor)


def _record_digest(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _outside(archive: Path, descriptor: int, member: Member, start: int, size: int) -> bool:
    return start < 0 or size < 0 or start + size > os.fstat(descriptor).st_size


def _data_offset(archive: Path, descriptor: int, member: Member) -> int:
    if _outside(archive, descriptor, member, member.header_offset, _LOCAL_HEADER.size):
        raise WheelError(f"{archive.name}: '{member.name}' points outside the archive "
                         f"(offset {member.header_offset})", fix="re-download the wheel")
    header = os.pread(descriptor, _LOCAL_HEADER.size, member.header_offset)
    if len(header) < _LOCAL_HEADER.size or _LOCAL_HEADER.unpack(header)[0] != _LOCAL_SIGNATURE:
        raise WheelError(f"{archive.name}: '{member.name}' has no valid local header",
                         fix="rebuild the wheel")
    name_length, extra_length = _LOCAL_HEADER.unpack(header)[9:11]
    start: int = member.header_offset + _LOCAL_HEADER.size + name_length + extra_length
    return start


def _chunks(archive: Path, descriptor: int, member: Member, start: int) -> Iterator[bytes]:
    position, end = start, start + member.compressed_size
    if _outside(archive, descriptor, member, start, member.compressed_size):
        raise WheelError(f"{archive.name}: '{member.name}' claims {member.compressed_size} "
                         "bytes past the end of the archive", fix="re-download the wheel")
    inflater = zlib.decompressobj(-15) if member.method == zipfile.ZIP_DEFLATED else None
    while position < end:
        raw = os.pread(descriptor, min(4 * _CHUNK, end - position), position)
        if not raw:
            raise WheelError(f"{archive.name}: '{member.name}' is truncated",
                             fix="re-download the wheel")
        position += len(raw)
        if inflater is None:
            yield raw
            continue
        try:
            data = inflater.decompress(raw, _CHUNK)
            while data:
                yield data
                data = inflater.decompress(inflater.unconsumed_tail, _CHUNK)
        except zlib.error as error:
            raise WheelError(f"{archive.name}: '{member.name}' is corrupt ({error})",
                             fix="re-download the wheel") from None
    if inflater is not None:
        rest = inflater.flush()
        if rest:
            yield rest
