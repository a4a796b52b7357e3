"""The leak scanner's two ways of finding where to look (release/distribution/byte_scan.py):
numpy in large windows and the regular expressions elsewhere give the same positions, and
the scanner the same leaks, on random bytes salted with every key and source suffix."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from release.distribution import archive, byte_scan
from release.verify.options import VerifyOptions
from release.verify.run import leak_prefixes


PREFIXES = leak_prefixes(VerifyOptions())
KEYS = tuple(archive._patterns(PREFIXES).by_key)
PIECES = [*KEYS, *archive._SUFFIXES, b"\0", b"/", b".", b"/home/runner/work/x/y.cpp\0",
          b"/__w/a/b/c.h\0", b"x/usr/lib/y.c\0"]


def salted(seed: int, size: int) -> bytes:
    """Random bytes with every key, suffix, NUL, '/' and '.' dropped in many times."""
    rng = random.Random(seed)
    data = bytearray(rng.randbytes(size))
    for _ in range(size // 64):
        piece = rng.choice(PIECES)
        at = rng.randrange(0, max(1, size - len(piece)))
        data[at:at + len(piece)] = piece
    return bytes(data)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), size=st.integers(1, 4096), start=st.integers(0, 40),
       trim=st.integers(0, 40))
def test_numpy_and_the_expressions_find_the_same_positions(seed: int, size: int, start: int,
                                                           trim: int) -> None:
    window = salted(seed, size)
    stop = max(start, len(window) - trim)
    expected_keys = [m.start() for m in archive._key_pattern(KEYS).finditer(window, start, stop)]
    assert byte_scan.key_starts(window, start, stop, KEYS) == expected_keys
    expected_ends = [m.start() for m in archive._SOURCE_END.finditer(window, start, stop)]
    assert byte_scan.source_ends(window, start, stop, archive._SUFFIXES) == expected_ends


def _leaks(data: bytes, chunk: int) -> dict[str, archive.Leak]:
    scanner = archive._LeakScanner(PREFIXES)
    for at in range(0, len(data), chunk):
        scanner.feed(data[at:at + chunk])
    scanner.finish()
    return scanner.found


def test_the_scanner_finds_the_same_leaks_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    data = b"\x7fELF" + salted(7, 3 << 20)   # a binary: source file names are looked for too
    vectored = _leaks(data, 1 << 20)
    assert vectored and archive.SOURCE_FILE in vectored   # the salt holds both kinds
    monkeypatch.setattr(byte_scan, "numpy", None)
    assert not byte_scan.available(data)
    assert _leaks(data, 1 << 20) == vectored


def test_small_windows_and_overlapping_keys_use_the_expressions() -> None:
    assert not byte_scan.available(b"x" * (byte_scan.VECTOR_FROM - 1))
    assert byte_scan.available(b"x" * byte_scan.VECTOR_FROM)
    big = b"x" * byte_scan.VECTOR_FROM
    assert archive._vector_keys(KEYS, big)
    assert not archive._vector_keys((b"/a/",), big)   # '/a/' could start inside '/a/a/'
