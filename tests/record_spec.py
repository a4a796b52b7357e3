"""RECORD checked as the wheel specification defines it, independently of
release/distribution/wheel.py: a CSV file (the csv module's default dialect), one row per file of
the archive, each ``path,sha256=<digest>,<size>`` where the digest is the urlsafe base64 of the
file's sha256 with the trailing ``=`` removed; RECORD's own row has an empty hash and size."""

from __future__ import annotations

import base64
import csv
import hashlib
import io


def spec_hash(data: bytes) -> str:
    """``sha256=`` and the digest as the specification spells it."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode("ascii")
    return "sha256=" + digest.rstrip("=")


def assert_record_matches(entries: dict[str, bytes], record_name: str) -> None:
    """``record_name`` lists every entry of ``entries`` once, with its spec hash and size."""
    rows = list(csv.reader(io.StringIO(entries[record_name].decode("utf-8"), newline="")))
    assert all(len(row) == 3 for row in rows), rows
    paths = [row[0] for row in rows]
    assert sorted(paths) == sorted(entries) and len(set(paths)) == len(paths), paths
    for path, digest, size in rows:
        if path == record_name:
            assert (digest, size) == ("", ""), (path, digest, size)
        else:
            assert (digest, size) == (spec_hash(entries[path]), str(len(entries[path]))), path
