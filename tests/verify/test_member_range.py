"""A section of a library read from the zip (verify --static) keeps only the section's bytes:
``read_member_range`` inflates the member once and returns exactly [start, start + size),
with the member's size and CRC-32 checked as for a whole read."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

from release.distribution.archive import Limits, list_members, read_member_range
from release.errors import WheelError

pytestmark = pytest.mark.verify


@pytest.mark.parametrize("method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_the_range_is_the_bytes_of_the_member(tmp_path: Path, method: int) -> None:
    data = os.urandom(3 << 20)
    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", method) as archive:
        archive.writestr("demo/lib.so", data)
    (member,) = list_members(wheel, Limits())
    for start, size in ((0, 10), (1000, 1 << 20), ((3 << 20) - 5, 5), (12345, 2 << 20),
                        (0, 3 << 20), (7, 0)):
        assert read_member_range(wheel, member, start, size) == data[start:start + size]


def test_a_corrupted_member_is_refused(tmp_path: Path) -> None:
    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("demo/lib.so", b"A" * 4096)
    (member,) = list_members(wheel, Limits())
    content = bytearray(wheel.read_bytes())
    content[content.index(b"A" * 64) + 100] ^= 0xFF
    wheel.write_bytes(bytes(content))
    with pytest.raises(WheelError, match="CRC"):
        read_member_range(wheel, member, 0, 16)
