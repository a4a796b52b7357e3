"""Wheel files: names, WHEEL, RECORD, and reproducible zips (core metadata:
release/distribution/core_metadata.py).

A wheel written here is a pure function of its files: entries sorted (``.dist-info`` last,
RECORD at the very end), one fixed timestamp, fixed permissions and compression level."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import re
import stat
import time
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from email.message import Message
from email.parser import Parser
from pathlib import Path

from release.distribution import archive
from release.distribution.archive import Limits
from release.errors import WheelError

# 1980-01-01, the oldest time a zip entry can carry.
_ZIP_EPOCH = 315532800
_COMPRESSION_LEVEL = 6
GENERATOR = "release (edgert) 0.1.0"


@dataclass(frozen=True)
class WheelName:
    distribution: str   # normalized with underscores, as in file names
    version: str
    python: str
    abi: str
    platform: str
    variant: str | None = None   # a variant wheel's label (PEP 825); None: not a variant wheel

    @classmethod
    def parse(cls, filename: str) -> WheelName:
        """A wheel's file name, a variant wheel's too (its label last, PEP 825)."""
        match = re.fullmatch(r"([^-]+)-([^-]+)(?:-\d[^-]*)?-([^-]+)-([^-]+)-([^-]+)"
                             r"(?:-([0-9a-z._]+))?\.whl", filename)
        if match is None:
            raise WheelError(f"'{filename}' is not a wheel file name",
                             fix="expected name-version-python-abi-platform.whl (a variant "
                                 "wheel: name-version-python-abi-platform-label.whl)")
        return cls(*match.groups())

    @property
    def filename(self) -> str:
        label = "" if self.variant is None else f"-{self.variant}"
        return f"{self.distribution}-{self.version}-{self.tag}{label}.whl"

    @property
    def tag(self) -> str:
        return f"{self.python}-{self.abi}-{self.platform}"

    @property
    def dist_info(self) -> str:
        return f"{self.distribution}-{self.version}.dist-info"


def normalize_distribution(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def source_date_epoch(environ: Mapping[str, str]) -> int:
    """SOURCE_DATE_EPOCH when set (clamped to the zip range), else 1980-01-01."""
    value = environ.get("SOURCE_DATE_EPOCH")
    if value is None:
        return _ZIP_EPOCH
    try:
        return max(int(value), _ZIP_EPOCH)
    except ValueError:
        raise WheelError(f"SOURCE_DATE_EPOCH is '{value}'",
                         fix="set it to a number of seconds since 1970") from None


def wheel_text(tags: Iterable[str]) -> str:
    lines = ["Wheel-Version: 1.0", f"Generator: {GENERATOR}", "Root-Is-Purelib: false"]
    lines += [f"Tag: {tag}" for tag in tags]
    return "\n".join(lines) + "\n"


def record_hash(data: bytes) -> str:
    return digest_text(hashlib.sha256(data))


def digest_text(digest: hashlib._Hash) -> str:
    """A finished sha256 as RECORD writes it: ``sha256=<urlsafe base64, unpadded>``."""
    encoded = base64.urlsafe_b64encode(digest.digest()).rstrip(b"=")
    return "sha256=" + encoded.decode("ascii")


def _sort_key(name: str) -> tuple[int, str]:
    top = name.split("/", 1)[0]
    if name.endswith(".dist-info/RECORD"):
        return 2, name
    return (1 if top.endswith(".dist-info") else 0), name


def _zip_info(name: str, *, mode: int, epoch: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=time.gmtime(epoch)[:6])
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = ((0o755 if mode & stat.S_IXUSR else 0o644) | stat.S_IFREG) << 16
    info.create_system = 3
    return info


def _check_names(names: Iterable[str]) -> None:
    for name in names:
        if name.startswith("/") or ".." in name.split("/") or "\\" in name:
            raise WheelError(f"refusing to write unsafe wheel entry '{name}'",
                             fix="entries must be relative, '/'-separated, without '..'")


@contextmanager
def _replaced(path: Path) -> Iterator[zipfile.ZipFile]:
    """A zip written beside ``path`` that replaces it only when complete."""
    partial = path.with_name(path.name + ".partial")
    try:
        with zipfile.ZipFile(partial, "w") as archive:
            yield archive
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def record_text(rows: Iterable[tuple[str, str, str]]) -> str:
    """RECORD rows (path, hash, size) as the csv module writes them (a name holding a comma,
    a quote or a line break is quoted), one ``\\n`` per row: what installers read back with
    the csv module."""
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(rows)
    return text.getvalue()


def write_wheel(path: Path, files: Mapping[str, tuple[bytes, int]], *, dist_info: str,
                epoch: int) -> None:
    """Writes ``files`` (name -> (data, mode)) plus a fresh RECORD, atomically."""
    record_name = f"{dist_info}/RECORD"
    entries = {name: value for name, value in files.items() if name != record_name}
    _check_names(entries)
    rows = [(name, record_hash(entries[name][0]), str(len(entries[name][0])))
            for name in sorted(entries, key=_sort_key)]
    entries[record_name] = (record_text([*rows, (record_name, "", "")]).encode(), 0o644)
    with _replaced(path) as archive:
        for name in sorted(entries, key=_sort_key):
            data, mode = entries[name]
            archive.writestr(_zip_info(name, mode=mode, epoch=epoch), data,
                             compresslevel=_COMPRESSION_LEVEL)


def collect_tree(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every regular file under ``root`` as wheel entries; symlinks are an error."""
    files: dict[str, tuple[bytes, int]] = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            raise WheelError(f"{path} is a symbolic link; wheels cannot hold links",
                             fix="install real files whose names equal their SONAME")
        if path.is_file():
            name = path.relative_to(root).as_posix()
            files[name] = (path.read_bytes(), path.stat().st_mode)
    return files


def read_entries(path: Path) -> dict[str, tuple[bytes, int]]:
    """All entries of a wheel (name -> (data, mode)), read through the one wheel reader
    (release/distribution/archive.py: what verify refuses is refused here); WheelError when
    unreadable."""
    try:
        members = archive.list_members(path, Limits())
        return {member.name: (archive.read_member(path, member, Limits()), member.mode)
                for member in members}
    except OSError as error:
        raise WheelError(f"cannot read wheel {path}: {error.strerror or error}",
                         fix="rebuild it; the file is damaged or not a wheel") from None


def parse_metadata(text: str) -> Message:
    return Parser().parsestr(text)


def dist_info_of(entries: Mapping[str, object]) -> str:
    names = {name.split("/", 1)[0] for name in entries if ".dist-info/" in name}
    if len(names) != 1:
        raise WheelError(f"expected one .dist-info folder, found {len(names)}",
                         fix="the wheel is malformed; rebuild it")
    return names.pop()


def _copy_entry(source: Path, member: archive.Member, out: zipfile.ZipFile,
                epoch: int) -> str:
    """Streams one entry into ``out`` in the reproducible form; its RECORD row."""
    target = _zip_info(member.name, mode=member.mode, epoch=epoch)
    digest, size = hashlib.sha256(), 0
    zip64 = member.declared_size >= zipfile.ZIP64_LIMIT
    with out.open(target, "w", force_zip64=zip64) as writer:
        for chunk in archive.member_chunks(source, member):
            digest.update(chunk)
            size += len(chunk)
            writer.write(chunk)
    return record_text([(member.name, digest_text(digest), str(size))])


def normalize(path: Path, *, epoch: int) -> None:
    """Rewrites a wheel in the reproducible form, with RECORD recomputed, atomically. The
    wheel is read through the one wheel reader (release/distribution/archive.py: unsafe names, sizes
    past their headers and failed CRC-32s are refused, and nothing replaces the wheel); entries are
    streamed one chunk at a time, so memory stays bounded whatever their sizes (the bytes equal
    those of write_wheel: zlib's output does not depend on how input is split)."""
    members = {member.name: member for member in archive.list_members(path, Limits())}
    record_name = f"{dist_info_of(members)}/RECORD"
    names = sorted((name for name in members if name != record_name), key=_sort_key)
    _check_names(names)
    try:
        with _replaced(path) as out:
            record = "".join(_copy_entry(path, members[name], out, epoch) for name in names)
            out.writestr(_zip_info(record_name, mode=0o644, epoch=epoch),
                         record + record_text([(record_name, "", "")]),
                         compresslevel=_COMPRESSION_LEVEL)
    except OSError as error:
        raise WheelError(f"cannot rewrite wheel {path}: {error.strerror or error}",
                         fix="check the free space and permissions of its folder") from None


def write_atomically(path: Path, text: str) -> None:
    """Writes ``text`` beside ``path`` and renames it there: ``path`` is the old text or
    the new one, never a part."""
    partial = path.with_name(path.name + ".partial")
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
