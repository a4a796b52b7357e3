"""The one reader of wheels (zip archives): verify, repair, check-set, the platforms and the
pipeline's rewrite paths (release/distribution/wheel.py: ``read_entries``, ``normalize``) all open
wheels here, without trusting them: names are checked before anything is written, sizes are checked
while streaming (not taken from headers), every member's CRC-32 is checked as pip checks it, and
totals are capped. Writing wheels is release/distribution/wheel.py's; tests/quality holds that no
other module opens a zip for reading.

Bomb limits are absolute sizes (one member, all members), with every member held to its
declared size while it streams. There is no compression-ratio limit: real libraries that are
mostly zero padding compress over 200x, and a ratio says nothing about how much is written."""

from __future__ import annotations

import base64
import functools
import hashlib
import os
import queue
import re
import struct
import threading
import unicodedata
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO, Generic, TypeVar

from release.binary import ReadLimits
from release.errors import WheelError
from release.findings import Finding, Severity

_ZLIB: Any
try:  # ISA-L's inflate and CRC-32 (python-isal): about twice zlib's speed, zlib's results
    from isal import isal_zlib as _ZLIB
except ImportError:  # pragma: no cover (requirements-dev.txt installs it)
    _ZLIB = zlib
_INFLATE_ERRORS = (zlib.error, _ZLIB.error)


@dataclass(frozen=True)
class Limits:
    """Bounds that make opening a hostile wheel safe. Members stream through fixed-size
    chunks to disk, so their sizes bound disk, not memory; what the binary readers build is
    bounded by ``binaries`` (docs/verify.md, "Limits")."""

    max_entries: int = 100_000
    max_total_size: int = 8 << 30       # bytes, all members uncompressed
    max_member_size: int = 2 << 30      # the largest real libraries are about 1.5 GB
    binaries: ReadLimits = ReadLimits()  # all the wheel's binaries together
    # startup hooks (.pth files, sitecustomize) the wheel declares it ships: a note, not an
    # error (--allow-startup-hook)
    startup_hooks: tuple[str, ...] = ()


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
    mode: int = 0        # the permission bits the archive records (0o755 for programs)


@dataclass(frozen=True)
class Leak:
    prefix: str
    sample: str                     # the path at the first occurrence, up to the string's end
    samples: tuple[str, ...] = ()   # the first few distinct paths (the first one included)
    count: int = 1                  # occurrences in the file


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
    if ".." in name.split("/"):
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


# What file systems store (Linux NAME_MAX and PATH_MAX, in bytes of UTF-8): a longer name
# cannot be installed anywhere. Reported as a finding (``path_findings``), never written.
NAME_MAX = 255
PATH_MAX = 4096


def path_problem(name: str) -> str:
    """Why no file system can hold ``name`` as an installed path, or ''."""
    encoded = name.encode("utf-8", "surrogateescape")
    if len(encoded) >= PATH_MAX:
        return f"is {len(encoded)} bytes long; no file system stores a path of {PATH_MAX} or more"
    longest = max(name.split("/"), key=lambda part: len(part.encode("utf-8", "surrogateescape")))
    size = len(longest.encode("utf-8", "surrogateescape"))
    if size > NAME_MAX:
        return (f"has a {size}-byte component ('{longest[:40]}...'); no file system stores a "
                f"name over {NAME_MAX} bytes")
    return ""


def list_members(archive: Path, limits: Limits) -> list[Member]:
    """The wheel's members, after rejecting every entry that is unsafe to unpack (the one
    reader of wheels: verify, repair, check-set and the rewrite paths all open them here)."""
    try:
        with zipfile.ZipFile(archive) as opened:
            infos = opened.infolist()
            directory: int = getattr(opened, "start_dir", 0)
    except UnicodeDecodeError as error:   # a name flagged UTF-8 that is not (zipfile decodes)
        raise WheelError(f"{archive.name}: a member name flagged as UTF-8 is not UTF-8 "
                         f"({error.reason} at byte {error.start})",
                         fix="rebuild it; installers refuse such names") from None
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as error:
        raise WheelError(f"{archive.name}: not a readable zip archive ({error})",
                         fix="rebuild the wheel or re-download it") from None
    if len(infos) > limits.max_entries:
        raise WheelError(f"{archive.name}: {len(infos)} entries exceed the limit of "
                         f"{limits.max_entries}", fix="this is not a plausible wheel")
    problems = _problems(infos, limits)
    if not problems:
        problems = _local_names(archive, infos, directory)
    if problems:  # (checked before anything reads a name, an empty one included)
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more"
                                            if len(problems) > 5 else "")
        raise WheelError(f"{archive.name}: unsafe to unpack: {shown}",
                         fix="rebuild the wheel with a tool that writes plain file entries")
    return [Member(info.filename, info.compress_type, info.flag_bits, info.header_offset,
                   info.compress_size, info.file_size, info.CRC,
                   (info.external_attr >> 16) & 0o777)
            for info in infos if not info.is_dir()]


_INTERPRETERS = re.compile(r"^(?:python|pythonw|pip|pip3|py)(?:[0-9]+(?:\.[0-9]+)*)?(?:\.exe)?$",
                           re.IGNORECASE)


def startup_hook(name: str) -> str:
    """Why a member runs code in every interpreter started in the environment, or shadows
    the interpreter itself, or '': a ``.pth`` file or a ``sitecustomize`` / ``usercustomize``
    module at the root of site-packages (``site`` runs them at start), a script installed as
    ``python``, ``python3``, ``pip``..."""
    installed = installed_path(name)
    parts = name.split("/")
    if (len(parts) == 3 and parts[0].endswith(".data") and parts[1] == "scripts"
            and _INTERPRETERS.match(parts[2])):
        return f"installs a script named '{parts[2]}', which shadows the interpreter or pip"
    top = installed.split("/", 1)[0]
    if "/" not in installed and installed.endswith(".pth"):
        return "is a .pth file: site runs its import lines at every interpreter start"
    if top in ("sitecustomize.py", "usercustomize.py", "sitecustomize", "usercustomize"):
        return f"is the {top.split('.')[0]} module: site imports it at every interpreter start"
    return ""


def has_zip_directory(path: Path) -> bool:
    """Whether ``path`` ends with a zip directory (reads only the archive's end; False for
    a file that cannot be read, as zipfile answers). ``list_members`` then reads the whole
    directory and checks it."""
    return zipfile.is_zipfile(path)


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
    problems += _collisions(list(installed))
    total = 0
    for info in infos:
        reason = _unsafe_member(info.filename) or _unportable(installed_path(info.filename))
        if reason:
            problems.append(f"entry '{info.filename}' {reason}")
        if _UNICODE_PATH in _extra_ids(info.extra):
            problems.append(f"entry '{info.filename}' carries an Info-ZIP Unicode Path extra "
                            "field (0x7075), which some installers use instead of its name")
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


def _raw_name(info: zipfile.ZipInfo) -> bytes:
    """The name's bytes as the central directory holds them."""
    encoding = "utf-8" if info.flag_bits & 0x800 else "cp437"
    return info.orig_filename.encode(encoding)


def _local_names(archive: Path, infos: Sequence[zipfile.ZipInfo], directory: int
                 ) -> list[str]:
    """Entries whose local header names another file than the central directory does, or
    carries a Unicode Path field: extractors that walk local headers (streaming unzippers)
    would write that name; and members that overlap or hide between the listed ones
    (``directory``: where the central directory starts)."""
    problems: list[str] = []
    try:
        descriptor = os.open(archive, os.O_RDONLY)
    except OSError as error:
        raise WheelError(f"{archive.name}: cannot be read ({error.strerror or error})",
                         fix="check the file's permissions") from None
    spans: list[tuple[int, int, str]] = []
    try:
        size = os.fstat(descriptor).st_size
        for info in infos:
            if not 0 <= info.header_offset <= size - _LOCAL_HEADER.size:
                problems.append(f"entry '{info.filename}' points outside the archive")
                continue
            header = os.pread(descriptor, _LOCAL_HEADER.size, info.header_offset)
            fields = _LOCAL_HEADER.unpack(header)
            if fields[0] != _LOCAL_SIGNATURE:
                problems.append(f"entry '{info.filename}' has no valid local header")
                continue
            expected = _raw_name(info)
            local = os.pread(descriptor, fields[9], info.header_offset + _LOCAL_HEADER.size)
            if local != expected:
                shown = local.decode("utf-8", "replace")
                problems.append(f"entry '{info.filename}' is named '{shown}' in its local "
                                "header (extractors that read local headers would write that)")
            extra = os.pread(descriptor, fields[10],
                             info.header_offset + _LOCAL_HEADER.size + fields[9])
            if _UNICODE_PATH in _extra_ids(extra):
                problems.append(f"entry '{info.filename}' carries an Info-ZIP Unicode Path "
                                "extra field (0x7075) in its local header")
            spans.append((info.header_offset,
                          _member_end(descriptor, info, fields[9] + fields[10]),
                          info.filename))
        if not problems:
            problems += _layout(descriptor, spans, directory)
    finally:
        os.close(descriptor)
    return problems


_UNICODE_PATH = 0x7075
_DATA_DESCRIPTOR = 0x08074B50
# characters no installed name may hold: C0 and C1 controls, DEL, and the bidirectional
# controls that make a name read as another (U+202A-U+202E, U+2066-U+2069)
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_RESERVED = re.compile(r"(?i)^(?:con|prn|aux|nul|com[0-9]|lpt[0-9])(?:\.|$)")


def _extra_ids(extra: bytes) -> set[int]:
    """The header ids of a zip extra field's records."""
    ids, at = set(), 0
    while at + 4 <= len(extra):
        ident, size = struct.unpack_from("<HH", extra, at)
        ids.add(ident)
        at += 4 + size
    return ids


def _unportable(name: str) -> str:
    """Why an installed name is read differently by some file system or terminal, or ''."""
    if _CONTROL.search(name):
        return "holds a control character"
    for part in name.split("/"):
        if part != part.rstrip(" ."):
            return f"has a component ending in a dot or space ('{part}'), which Windows drops"
        if _RESERVED.match(part):
            return f"has a component Windows reserves for a device ('{part}')"
    return ""


def _folded(name: str) -> str:
    """``name`` as a case-insensitive, normalising file system (Windows, macOS) compares it."""
    return unicodedata.normalize("NFC", name).casefold()


def _collisions(installed: Sequence[str]) -> list[str]:
    """Installed names that are one file on a case-insensitive or normalising file system."""
    seen: dict[str, set[str]] = {}
    for name in installed:
        seen.setdefault(_folded(name), set()).add(name)
    folders = {_folded("/".join(parts[:end])): "/".join(parts[:end]) for name in installed
               for parts in [name.split("/")] for end in range(1, len(parts))}
    problems = [f"{' and '.join(repr(n) for n in sorted(names))} are one file on "
                "case-insensitive or normalising file systems"
                for names in seen.values() if len(names) > 1]
    problems += [f"'{sorted(seen[key])[0]}' and the folder '{folder}' are one name on "
                 "case-insensitive or normalising file systems"
                 for key, folder in folders.items() if key in seen and folder not in seen[key]]
    return sorted(problems)


def _member_end(descriptor: int, info: zipfile.ZipInfo, names: int) -> int:
    """Where a member's bytes end: its local header, data and data descriptor."""
    end: int = info.header_offset + _LOCAL_HEADER.size + names + info.compress_size
    if info.flag_bits & 0x08:
        signature = os.pread(descriptor, 4, end)
        zip64 = (info.file_size >= zipfile.ZIP64_LIMIT or
            info.compress_size >= zipfile.ZIP64_LIMIT)
        body = 20 if zip64 else 12
        has_signature = (len(signature) == 4 and
            struct.unpack("<I", signature)[0] == _DATA_DESCRIPTOR)
        end += body + (4 if has_signature else 0)
    return end


def _layout(descriptor: int, spans: list[tuple[int, int, str]], directory: int) -> list[str]:
    """Members whose bytes overlap, and local headers between the listed members (a member
    only an extractor that walks local headers would see)."""
    problems = []
    spans = sorted(spans)
    previous_end, previous = 0, ""
    for start, end, name in [*spans, (directory, directory, "")]:
        if start < previous_end:
            problems.append(f"entries '{previous}' and '{name or 'the central directory'}' "
                            "overlap")
        elif start > previous_end:
            gap = os.pread(descriptor, min(start - previous_end, _GAP_LIMIT), previous_end)
            if b"PK\x03\x04" in gap:
                problems.append(f"a member that the central directory does not list lies "
                                f"after '{previous or 'the start'}'")
        previous_end, previous = max(previous_end, end), name
    return problems


_GAP_LIMIT = 64 << 20


def _file_and_folder(files: Counter[str]) -> set[str]:
    """Installed names that other entries also use as a folder (a/b beside a/b/c)."""
    folders = {"/".join(parts[:end]) for name in files
               for parts in [name.split("/")] for end in range(1, len(parts))}
    return set(files) & folders



# A prefix counts only where a path starts: not inside a longer path
# (/opt/rh/gcc-toolset-14/root/... holds "/root/") or a URL (https://pypi.org/project/...).
_PATH_BYTES = frozenset(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~/+@-\\")
_ALNUM = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_KEY = 3   # prefixes starting with '/' are looked up by their first bytes at each path start
# After the '/' a pattern starts with: the byte before it is no path byte (the scanner keeps
# a byte before every window, so the lookbehind always has one to look at). Patterns start
# with a literal byte so the regular-expression engine skips to its occurrences.
_PATH_START = rb"/(?<=[^A-Za-z0-9._~/+@\\-]/)"
# An absolute source file name as __FILE__ writes it into a binary (NUL-terminated), outside
# the system's own folders (assert() in a system header names /usr/include/...).
_SOURCE_SUFFIXES = rb"(?:c|cc|cpp|cxx|cu|h|hh|hpp|hxx|inl|f|f90|pyx|m|mm)"
_SOURCE_FILE = re.compile(rb"(?:/[A-Za-z0-9._+@-]+){2,}\." + _SOURCE_SUFFIXES + rb"\x00")
_SUFFIXES = tuple(b"." + suffix for suffix in (
    b"c", b"cc", b"cpp", b"cxx", b"cu", b"h", b"hh", b"hpp", b"hxx", b"inl", b"f", b"f90", b"pyx",
    b"m", b"mm"))
# (/builddir/build/BUILD/: where a distribution's toolchain packages were built, e.g. the
# static part of gcc-toolset's libstdc++ that manylinux links in)
_SYSTEM_SOURCES = (b"/usr/", b"/opt/rh/", b"/opt/_internal/", b"/Library/", b"/Applications/",
                   b"/System/", b"/builddir/build/BUILD/")
SOURCE_FILE = "absolute source file"    # the Leak.prefix of a __FILE__-style source path
_BINARY_MAGIC = (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xca\xfe\xba\xbe",
                 b"MZ")
# Where a path written into a file ends: the end of its string (NUL, a quote, a line break,
# a separator of a list of paths, characters no path holds).
_PATH_TEXT = re.compile(rb"[^\x00\"'\n\r\t<>|;*?]*")
_DRIVE_BEFORE = re.compile(rb"(?<![A-Za-z0-9])[A-Za-z]:\Z")
_SAMPLE = 160
_SAMPLES = 5   # distinct samples kept per prefix and file
# Python that loads libraries into the process's global scope (ctypes.RTLD_GLOBAL,
# os.RTLD_GLOBAL): the other libraries it opens may then interpose on each other.
_GLOBAL_OPEN = b"RTLD_GLOBAL"


def _posix_pattern(prefix: str) -> bytes:
    """A regex for a prefix that starts with '/', after its '/': '*' stands for one path
    component."""
    return b"[^/\\x00\"']+".join(re.escape(part.encode()) for part in prefix[1:].split("*"))


def _drive_pattern(prefix: str) -> bytes:
    """A regex for a drive path prefix ("C:/Users/*/AppData/"), after its ':': the drive
    letter in either case (a lookbehind), '/' and '\\' (written once or doubled, as in C
    strings) alike, '*' one component."""
    drive, rest = prefix[0], prefix[2:]
    separator = rb"(?:\\{1,2}|/)"
    parts = []
    for component in re.split(r"[\\/]", rest):
        if component == "*":
            parts.append(rb"[^\\/\x00\"']+")
        elif component:
            parts.append(re.escape(component.encode()))
    body = separator + separator.join(parts) + (separator if rest.endswith(("/", "\\")) else b"")
    letter = re.escape(drive.upper().encode()) + re.escape(drive.lower().encode())
    return rb"(?<=[^A-Za-z0-9][" + letter + rb"]:)" + body


def is_drive_path(prefix: str) -> bool:
    return len(prefix) > 2 and prefix[1] == ":" and prefix[0].isalpha()


def starts_with_prefix(text: str, prefix: str) -> bool:
    """Whether the path ``text`` starts with the leak prefix ``prefix`` (as the scanner
    matches it: '*' one folder name; drive paths with either slash and letter case)."""
    encoded = b"\n" + text.encode("utf-8", "replace")
    if is_drive_path(prefix):
        return re.compile(b":" + _drive_pattern(prefix)).match(encoded, 2) is not None
    return re.compile(_PATH_START + _posix_pattern(prefix)).match(encoded, 1) is not None


@dataclass(frozen=True)
class _Patterns:
    """The prefixes as the scanner looks them up, made once per set of prefixes."""

    by_key: dict[bytes, list[tuple[str, bytes, re.Pattern[bytes] | None]]]
    drives: dict[int, list[tuple[str, re.Pattern[bytes]]]]
    other: list[tuple[str, bytes]]   # any other text (a relative --build-path)


@functools.cache
def _patterns(prefixes: tuple[str, ...]) -> _Patterns:
    by_key: dict[bytes, list[tuple[str, bytes, re.Pattern[bytes] | None]]] = {}
    drives: dict[int, list[tuple[str, re.Pattern[bytes]]]] = {}
    other: list[tuple[str, bytes]] = []
    for prefix in prefixes:
        if is_drive_path(prefix):
            pattern = re.compile(b":" + _drive_pattern(prefix))
            for letter in {prefix[0].lower(), prefix[0].upper()}:
                drives.setdefault(ord(letter), []).append((prefix, pattern))
        elif prefix.startswith("/") and len(prefix) >= _KEY:
            literal = prefix.split("*", 1)[0].encode()
            wild = re.compile(_posix_pattern(prefix)) if "*" in prefix else None
            by_key.setdefault(literal[:_KEY], []).append((prefix, literal, wild))
        elif prefix:
            other.append((prefix, prefix.encode()))
    # the most specific first: literal prefixes before wildcard ones, longer before shorter
    for keyed in by_key.values():
        keyed.sort(key=lambda row: ("*" in row[0], -len(row[0])))
    for lettered in drives.values():
        lettered.sort(key=lambda row: ("*" in row[0], -len(row[0])))
    return _Patterns(by_key, drives, other)


class _LeakScanner:
    """Finds, in one pass over the path starts ('/' not preceded by a path byte, found with
    bytes.find: far faster than a regular expression over every byte), every occurrence of
    each prefix and, in binaries, absolute source file names; and, in files other than ELF
    and Mach-O ones (POSIX builds), drive paths where their drive letter starts. Keeps each
    one's count and first few paths, cut where their string ends."""

    def __init__(self, prefixes: Sequence[str]) -> None:
        patterns = _patterns(tuple(prefixes))
        self.by_key, self.drives, self.other = patterns.by_key, patterns.drives, patterns.other
        self.active = bool(self.by_key or self.drives or self.other)
        self.keep = 4096 + _SAMPLE   # the longest path a match may still need
        self.pending = b""           # bytes not yet examined (the previous byte first)
        self.started = False
        self.binary = False
        self.posix_only = False
        self.found: dict[str, Leak] = {}

    def feed(self, chunk: bytes) -> None:
        if not self.active:
            return
        if not self.started:
            self.binary = chunk.startswith(_BINARY_MAGIC)
            # ELF and Mach-O files come from POSIX builds: no drive-letter paths in them
            self.posix_only = chunk.startswith(_BINARY_MAGIC[:-1])
            self.started = True
            self.pending = b"\n"    # a neutral byte before the first one
        window = self.pending + chunk
        limit = len(window) - self.keep
        if limit > 1:
            self._examine(window, limit)
            self.pending = window[limit - 1:]
        else:
            self.pending = window

    def finish(self) -> None:
        if self.active and self.started and len(self.pending) > 1:
            self._examine(self.pending, len(self.pending))
        self.pending = b""

    def _examine(self, window: bytes, limit: int) -> None:
        """Records the occurrences that start in window[1:limit] (window[0] precedes)."""
        self._path_starts(window, limit)
        if self.drives and not self.posix_only:
            for separator in (b":/", b":\\"):
                self._drive_paths(window, limit, separator)
        for prefix, encoded in self.other:
            position = window.find(encoded, 1, limit + len(encoded))
            while 0 <= position < limit:
                if window[position - 1] not in _PATH_BYTES:
                    self._record(prefix, window, position)
                position = window.find(encoded, position + 1, limit + len(encoded))

    def _path_starts(self, window: bytes, limit: int) -> None:
        _prefix_starts(self, window, limit)
        if self.binary:
            _source_files(self, window, limit)

    def _source_file(self, window: bytes, position: int) -> bool:
        """Records an absolute source file name at ``position``; True when it found one."""
        # cheap tests first: NUL-terminated and a source suffix, then the pattern
        end = window.find(b"\0", position, position + _SAMPLE)
        if end < 0 or not window.endswith(_SUFFIXES, position, end):
            return False
        if (_SOURCE_FILE.match(window, position) is None or
                window.startswith(_SYSTEM_SOURCES, position) or
                window.find(b"XXXXXX", position, end) >= 0):
            return False   # (XXXXXX: a mkstemp template, not a file of the build)
        self._record(SOURCE_FILE, window, _drive_start(window, position), end)
        return True

    def _drive_paths(self, window: bytes, limit: int, separator: bytes) -> None:
        position = window.find(separator, 2, limit)
        while position >= 0:
            candidates = self.drives.get(window[position - 1])
            if candidates and window[position - 2] not in _ALNUM:
                for prefix, pattern in candidates:
                    if pattern.match(window, position):
                        self._record(prefix, window, position - 1)
                        break   # one prefix per path: the most specific
            position = window.find(separator, position + 1, limit)

    def _record(self, prefix: str, window: bytes, position: int, end: int = -1) -> None:
        """Counts an occurrence; the first few are kept as samples (up to ``end``, else to
        the end of the string)."""
        known = self.found.get(prefix)
        if known is not None and known.count >= _SAMPLES:
            self.found[prefix] = Leak(prefix, known.sample, known.samples, known.count + 1)
            return
        sample = (window[position:end].decode("utf-8", "replace") if end >= 0 else
            _sample(window, position))
        if known is None:
            self.found[prefix] = Leak(prefix, sample, (sample,), 1)
            return
        samples = known.samples if sample in known.samples else (*known.samples, sample)
        self.found[prefix] = Leak(prefix, known.sample, samples, known.count + 1)


@functools.cache
def _key_pattern(keys: tuple[bytes, ...]) -> re.Pattern[bytes]:
    """Any of the prefixes' first bytes (each starts with '/'): one search in C for every
    candidate path start, instead of a step of Python at every '/' of a file."""
    tails = sorted({key[1:] for key in keys}, key=lambda tail: (-len(tail), tail))
    return re.compile(b"/(?:" + b"|".join(re.escape(tail) for tail in tails) + b")")


def _prefix_starts(scanner: _LeakScanner, window: bytes, limit: int) -> None:
    """Records each known prefix at a path start ('/' after no path byte) in window[1:limit]."""
    by_key = scanner.by_key
    if not by_key:
        return
    for match in _key_pattern(tuple(by_key)).finditer(window, 1, limit + _KEY):
        position = match.start()
        if position >= limit:
            break
        if window[position - 1] in _PATH_BYTES:
            continue
        for prefix, literal, wild in by_key.get(window[position:position + _KEY], ()):
            if window.startswith(literal, position) and (
                    wild is None or wild.match(window, position + 1)):
                scanner._record(prefix, window, _drive_start(window, position))
                break   # one prefix per path: the most specific


_SOURCE_END = re.compile(rb"\.(?:" + b"|".join(
    re.escape(suffix[1:]) for suffix in sorted(_SUFFIXES, key=len, reverse=True)) + rb")\x00")
_SOURCE_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._+@/-")


def _source_files(scanner: _LeakScanner, window: bytes, limit: int) -> None:
    """Records absolute source file names (a path start whose string ends in a source
    suffix) in window[1:limit], found from their ends: a source suffix before a NUL is rare
    where a '/' is not; at most a few samples are taken per window once enough are known."""
    floor = 1
    for match in _SOURCE_END.finditer(window, 1, limit + _SAMPLE):
        end = match.start()
        position = end
        stop = max(floor, end - _SAMPLE)
        while position > stop and window[position - 1] in _SOURCE_BYTES:
            position -= 1
        floor = match.end()
        while 0 <= position < end and (window[position] != 0x2F
                                       or window[position - 1] in _PATH_BYTES):
            position = window.find(b"/", position + 1, end)
        if position < 1 or position >= limit:
            continue
        if (scanner._source_file(window, position) and
                scanner.found[SOURCE_FILE].count >= _SAMPLES):
            return


def _drive_start(window: bytes, position: int) -> int:
    """Where the path at ``position`` starts: two bytes earlier when a drive letter precedes
    it ("C:/project/..." is shown with its letter)."""
    if position >= 2 and window[position - 1] == 0x3A and _DRIVE_BEFORE.search(
            window, max(0, position - 3), position):
        return position - 2
    return position


def _sample(window: bytes, position: int) -> str:
    """The path at ``position``, up to the end of its string."""
    match = _PATH_TEXT.match(window, position, position + _SAMPLE)
    text = match.group(0) if match else b""
    return text.decode("utf-8", "replace").strip()


@dataclass(frozen=True)
class StreamRequest:
    prefixes: tuple[str, ...]
    destination: Path | None              # folder to extract into, or None
    write_when: Callable[[bytes], bool]   # decides from the first bytes whether to write
    keep_when: Callable[[bytes], bool] = lambda head: False  # ... whether to keep in memory
    # Larger members are written and memory-mapped: memory stays bounded by workers x 8 MiB.
    keep_limit: int = 8 << 20
    # installed names never written (no file system can hold them: ``path_problem``); they
    # are still hashed and scanned
    unwritable: frozenset[str] = frozenset()


def stream_member(archive: Path, descriptor: int, member: Member, limits: Limits,
                  request: StreamRequest) -> StreamedMember:
    """Decompresses one member once: hashes it, scans it and optionally writes it out."""
    start = _data_offset(archive, descriptor, member)
    digest = hashlib.sha256()
    crc = 0
    scanner = _LeakScanner(request.prefixes)
    python = member.name.endswith(".py")
    opens_globally, previous = False, b""
    produced, head, output = 0, b"", None
    target: Path | None = None
    kept: list[bytes] | None = None
    try:
        chunks = _chunks(archive, descriptor, member, start)
        if member.method == zipfile.ZIP_DEFLATED and member.compressed_size > _AHEAD_FROM:
            chunks = _inflated_ahead(chunks)
        for chunk in chunks:
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
                    if member.name not in request.unwritable:
                        target = _confined(request.destination, member.name)
                        output = _create(target)
            digest.update(chunk)
            crc = _ZLIB.crc32(chunk, crc)
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
    _check_crc(archive, member, crc)
    scanner.finish()
    if (request.destination is not None and target is None and kept is None
            and request.write_when(head) and member.name not in request.unwritable):
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
    return read_member_range(archive, member, 0, member.declared_size)


def read_member_range(archive: Path, member: Member, start: int, size: int) -> bytes:
    """Bytes [start, start + size) of one member, inflating it once and keeping only that
    range (a section of a large library), with the same size and CRC-32 checks."""
    parts, produced, end = [], 0, start + size
    for chunk in member_chunks(archive, member):
        begin, produced = produced, produced + len(chunk)
        if produced > start and begin < end:
            parts.append(chunk[max(0, start - begin):end - begin])
    return b"".join(parts)


def member_chunks(archive: Path, member: Member) -> Iterator[bytes]:
    """One member's bytes, inflated a chunk at a time (memory stays bounded whatever its
    size), held to its declared size while it streams; its CRC-32 is checked after the last
    chunk, so a caller that writes the chunks out must discard them on a WheelError."""
    descriptor = os.open(archive, os.O_RDONLY)
    try:
        produced, crc = 0, 0
        for chunk in _chunks(archive, descriptor, member, _data_offset(archive, descriptor,
                                                                       member)):
            produced += len(chunk)
            if produced > member.declared_size:
                raise WheelError(f"{archive.name}: '{member.name}' expands past its declared "
                                 f"{member.declared_size} bytes", fix="rebuild the wheel")
            crc = _ZLIB.crc32(chunk, crc)
            yield chunk
        if produced != member.declared_size:
            raise WheelError(f"{archive.name}: '{member.name}' holds {produced} bytes but its "
                             f"header says {member.declared_size}", fix="rebuild the wheel")
        _check_crc(archive, member, crc)
    finally:
        os.close(descriptor)


def member_head(archive: Path, member: Member, size: int = 64) -> bytes:
    """The first ``size`` bytes of one member (format detection), inflating at most one
    chunk; the CRC-32 is checked when the member is read whole."""
    descriptor = os.open(archive, os.O_RDONLY)
    try:
        chunks = _chunks(archive, descriptor, member, _data_offset(archive, descriptor, member))
        return next(chunks, b"")[:size]
    finally:
        os.close(descriptor)


def _check_crc(archive: Path, member: Member, crc: int) -> None:
    """pip (zipfile) refuses a member whose bytes fail the CRC-32 its header records."""
    if crc != member.crc:
        raise WheelError(f"{archive.name}: '{member.name}' fails its CRC-32 check (the bytes "
                         f"give {crc:08x}, the header says {member.crc:08x}): corrupt or altered",
                         fix="re-download the wheel, or rebuild it")


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


_AHEAD_FROM = 16 << 20   # members larger than this (compressed) inflate in a helper thread
_AHEAD = 4               # chunks the helper may inflate ahead of the reader
_DONE = object()


def _inflated_ahead(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """``chunks``, inflated by a helper thread a few chunks ahead of the caller: zlib (which
    releases the GIL) runs while the caller hashes, scans and writes, so one large member
    uses two cores. The helper's errors reach the caller; the caller stopping early stops
    the helper."""
    ready: queue.Queue[object] = queue.Queue(maxsize=_AHEAD)
    stop = threading.Event()

    def put(item: object) -> bool:
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for chunk in chunks:
                if not put(chunk):
                    return
            put(_DONE)
        except BaseException as error:  # handed to the reader, who raises it
            put(error)

    helper = threading.Thread(target=produce, name="inflate", daemon=True)
    helper.start()
    try:
        while True:
            item = ready.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            assert isinstance(item, bytes)
            yield item
    finally:
        stop.set()
        helper.join()


def _chunks(archive: Path, descriptor: int, member: Member, start: int) -> Iterator[bytes]:
    position, end = start, start + member.compressed_size
    if _outside(archive, descriptor, member, start, member.compressed_size):
        raise WheelError(f"{archive.name}: '{member.name}' claims {member.compressed_size} "
                         "bytes past the end of the archive", fix="re-download the wheel")
    inflater = _ZLIB.decompressobj(-15) if member.method == zipfile.ZIP_DEFLATED else None
    while position < end:
        # a quarter of a chunk of input inflates to about a chunk: its unconsumed rest,
        # which zlib copies on every call, stays small
        raw = os.pread(descriptor, min(_CHUNK // 4 if inflater else 4 * _CHUNK,
                                       end - position), position)
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
        except _INFLATE_ERRORS as error:
            raise WheelError(f"{archive.name}: '{member.name}' is corrupt ({error})",
                             fix="re-download the wheel") from None
    if inflater is not None:
        rest = inflater.flush()
        if rest:
            yield rest


# what verify keeps whole in memory (METADATA, WHEEL, RECORD, variant.json, the build record,
# the shipped .cmake/.pc files, the top-level __init__.py files), all together
READ_WHOLE_LIMIT = 64 << 20
_Observed = TypeVar("_Observed")


@dataclass(frozen=True)
class WheelRead(Generic[_Observed]):
    """One pass over a wheel's archive (``read_wheel``): what a reader of the wheel needs
    from the archive itself, read once."""

    members: tuple[Member, ...]          # as the zip directory lists them
    findings: tuple[Finding, ...]        # paths no file system holds; startup hooks
    streamed: tuple[StreamedMember, ...]  # every member, hashed and scanned (no bytes kept)
    observed: tuple[_Observed, ...]      # what ``observe`` made of each, in the same order
    texts: Mapping[str, str]             # the members read whole, decoded


def read_wheel(archive: Path, request: StreamRequest, limits: Limits, *, workers: int,
               read_whole: Callable[[Member], bool],
               observe: Callable[[Member, StreamedMember], _Observed]
               ) -> WheelRead[_Observed]:
    """Lists ``archive``, streams every member once (``workers`` at a time, the largest
    first) as ``request`` asks, handing each to ``observe`` (which sees the bytes kept in
    memory, or the file written), and reads the members ``read_whole`` names into text."""
    members = list_members(archive, limits)
    # paths no file system holds: the same finding in --static and full verify, never an
    # attempt to write them (which would fail as if the disk were at fault)
    unwritable = {installed_path(m.name): path_problem(installed_path(m.name))
                  for m in members}
    unwritable = {name: why for name, why in unwritable.items() if why}
    findings = [
        Finding(check="archive", severity=Severity.ERROR, file=name, what=f"the path {why}",
                why="pip cannot install the wheel: writing the file fails",
                fix="shorten the file's name (components at most 255 bytes)")
        for name, why in sorted(unwritable.items())]
    findings += _startup_hooks(members, limits.startup_hooks)
    request = replace(request, unwritable=frozenset(unwritable))
    streamed, observed = _stream_all(archive, members, request, limits, workers, observe)
    whole = [m for m in members if read_whole(m)]
    total = sum(m.declared_size for m in whole)
    if total > READ_WHOLE_LIMIT:
        raise WheelError(f"{archive.name}: the files verify reads whole (metadata, RECORD, "
                         f".cmake, .pc, top-level __init__.py) hold {total:,} bytes, over the "
                         f"limit of {READ_WHOLE_LIMIT:,}",
                         fix="this is no plausible wheel; ship smaller configuration files")
    texts = {m.name: read_member(archive, m, limits).decode("utf-8", "replace") for m in whole}
    return WheelRead(tuple(members), tuple(findings), streamed, observed, texts)


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


# Members smaller than this go to the workers in groups of _GROUP: one task per member
# costs more than a small member's own work.
_SMALL = 64 << 10
_GROUP = 64


def _stream_all(archive: Path, members: list[Member], request: StreamRequest, limits: Limits,
                workers: int, observe: Callable[[Member, StreamedMember], _Observed]
                ) -> tuple[tuple[StreamedMember, ...], tuple[_Observed, ...]]:
    ordered = sorted(members, key=lambda member: -member.compressed_size)
    large = [m for m in ordered if m.compressed_size >= _SMALL]
    small = ordered[len(large):]
    tasks = [[m] for m in large] + [small[i:i + _GROUP] for i in range(0, len(small), _GROUP)]
    descriptor = os.open(archive, os.O_RDONLY)

    def work(group: list[Member]) -> list[tuple[StreamedMember, _Observed]]:
        done = []
        for member in group:
            placed = replace(member, name=installed_path(member.name))
            result = stream_member(archive, descriptor, placed, limits, request)
            kept = replace(result, name=member.name, data=None)
            done.append((kept, observe(member, result)))
        return done

    try:
        with ThreadPoolExecutor(max(1, workers)) as pool:
            results = [pair for done in pool.map(work, tasks) for pair in done]
    finally:
        os.close(descriptor)
    return tuple(kept for kept, _ in results), tuple(seen for _, seen in results)
