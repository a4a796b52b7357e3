"""The leak scanner's candidate positions in a large window, found with numpy: a comparison
of every byte with '/' or '.' and the positions of the hits, in C loops that release the
GIL, then the few bytes after each hit compared as arrays. Python's regular expressions find
the same positions about 2.5 times slower, one byte at a time and holding the GIL, so two
workers scanning two members took turns instead of running side by side.

Each function returns exactly the positions the scanner's regular expression would match
(``archive._key_pattern``, ``archive._SOURCE_END``), in order, or None where numpy is not
installed or the window is too small for the arrays to pay (the caller then uses the
expression); tests/unit/test_byte_scan.py holds the two to the same answers."""

from __future__ import annotations

import functools
from typing import Any

try:
    import numpy
except ImportError:  # the expressions alone: the same results, slower
    numpy = None  # type: ignore[assignment]

# windows smaller than this go to the regular expressions: a few numpy calls cost more
VECTOR_FROM = 64 << 10


def available(window: bytes) -> bool:
    return numpy is not None and len(window) >= VECTOR_FROM


def _codes(data: Any, at: Any, width: int) -> Any:
    """The ``width`` bytes at each position of ``at`` (all inside ``data``) as one
    big-endian integer."""
    code = data[at].astype(numpy.uint32)
    for step in range(1, width):
        code = (code << 8) | data[at + step]
    return code


def _hits(data: Any, value: int, start: int, stop: int) -> Any:
    if start >= stop:
        return numpy.zeros(0, numpy.intp)
    return numpy.flatnonzero(data[start:stop] == value) + start


@functools.cache
def _key_codes(keys: tuple[bytes, ...]) -> Any:
    return numpy.array(sorted({int.from_bytes(key[1:], "big") for key in keys}),
                       numpy.uint32)


def key_starts(window: bytes, start: int, stop: int, keys: tuple[bytes, ...]) -> list[int]:
    """The positions in window[start:stop] where one of ``keys`` (each '/' and then the same
    number of bytes, none of them '/') starts and ends before ``stop``: what
    ``re.compile(b"/(?:" + tails + b")").finditer(window, start, stop)`` matches."""
    width = len(keys[0]) - 1
    data = numpy.frombuffer(window, numpy.uint8)
    slashes = _hits(data, 0x2F, start, min(stop, len(window)) - width)
    if not len(slashes):
        return []
    found = numpy.isin(_codes(data, slashes + 1, width), _key_codes(keys))
    return slashes[found].tolist()  # type: ignore[no-any-return]


@functools.cache
def _suffix_codes(suffixes: tuple[bytes, ...]) -> dict[int, Any]:
    """Each suffix length (without the dot) -> the suffixes of that length as integers."""
    by_length: dict[int, set[int]] = {}
    for suffix in suffixes:
        tail = suffix[1:]
        by_length.setdefault(len(tail), set()).add(int.from_bytes(tail, "big"))
    return {length: numpy.array(sorted(codes), numpy.uint32)
            for length, codes in by_length.items()}


def source_ends(window: bytes, start: int, stop: int, suffixes: tuple[bytes, ...]) -> list[int]:
    """The positions in window[start:stop] of a '.', one of ``suffixes`` (each '.' and up to
    three bytes, no NUL) and a NUL, all before ``stop``: what ``\\.(?:suffixes)\\x00``
    matches there (never overlapping: each match ends in the NUL)."""
    stop = min(stop, len(window))
    data = numpy.frombuffer(window, numpy.uint8)
    dots = _hits(data, 0x2E, start, stop - 2)   # the shortest match: '.', a byte, NUL
    found = []
    for length, codes in _suffix_codes(suffixes).items():
        fit = dots[dots + length + 2 <= stop]
        fit = fit[data[fit + 1 + length] == 0]
        found.append(fit[numpy.isin(_codes(data, fit + 1, length), codes)])
    return numpy.sort(numpy.concatenate(found)).tolist()  # type: ignore[no-any-return]
