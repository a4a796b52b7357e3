"""tests/downloads.py: a pinned test input is that one file, by name and sha256: reused from
the cache, copied from the machine's wheelhouse (PIP_FIND_LINKS) before any download, and
refused with both digests when the file found is another."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests import downloads


def _pin(content: bytes, name: str = "demo-1.0-py3-none-any.whl") -> downloads.PinnedFile:
    return downloads.PinnedFile(name=name, sha256=hashlib.sha256(content).hexdigest(),
                                url="https://files.invalid/demo-1.0-py3-none-any.whl")


def test_the_wheelhouse_copy_is_taken_by_name_and_then_reused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    house = tmp_path / "house"
    house.mkdir()
    (house / "demo-1.0-py3-none-any.whl").write_bytes(b"reviewed")
    (house / "demo-1.1-py3-none-any.whl").write_bytes(b"newer")
    monkeypatch.setenv("PIP_FIND_LINKS", str(house))
    fetched = downloads.fetch(_pin(b"reviewed"), tmp_path / "cache")
    assert fetched.read_bytes() == b"reviewed"
    (house / "demo-1.0-py3-none-any.whl").unlink()
    assert downloads.fetch(_pin(b"reviewed"), tmp_path / "cache") == fetched   # no source left


def test_another_file_under_the_pinned_name_fails_with_both_digests(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    house = tmp_path / "house"
    house.mkdir()
    (house / "demo-1.0-py3-none-any.whl").write_bytes(b"rebuilt")
    monkeypatch.setenv("PIP_FIND_LINKS", str(house))
    pin = _pin(b"reviewed")
    with pytest.raises(pytest.fail.Exception) as failure:
        downloads.fetch(pin, tmp_path / "cache")
    assert pin.sha256 in str(failure.value)
    assert hashlib.sha256(b"rebuilt").hexdigest() in str(failure.value)
    left = [path.name for path in (tmp_path / "cache").iterdir() if path.suffix != ".lock"]
    assert left == []   # neither the file nor a partial one
