"""Wheel names, metadata and the reproducible writer."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from release.distribution import wheel
from release.errors import WheelError
from tests.record_spec import assert_record_matches


def test_wheel_name_round_trip() -> None:
    name = wheel.WheelName.parse("edgert_cu12-0.1.0-cp39-abi3-manylinux_2_34_x86_64.whl")
    assert name.distribution == "edgert_cu12"
    assert name.platform == "manylinux_2_34_x86_64"
    assert name.filename == "edgert_cu12-0.1.0-cp39-abi3-manylinux_2_34_x86_64.whl"
    assert name.dist_info == "edgert_cu12-0.1.0.dist-info"


def test_bad_wheel_name() -> None:
    with pytest.raises(WheelError, match="not a wheel file name"):
        wheel.WheelName.parse("edgert.zip")


def test_normalize_distribution() -> None:
    assert wheel.normalize_distribution("edgert-cu12") == "edgert_cu12"
    assert wheel.normalize_distribution("Edgert..CU13") == "edgert_cu13"


def _files() -> dict[str, tuple[bytes, int]]:
    return {"pkg/lib/libb.so": (b"\x7fELF b", 0o755), "pkg/a.py": (b"print(1)\n", 0o644),
            "pkg-1.0.dist-info/METADATA": (b"Name: pkg\n", 0o644)}


def test_writer_is_reproducible_and_sorted(tmp_path: Path) -> None:
    first, second = tmp_path / "1.whl", tmp_path / "2.whl"
    wheel.write_wheel(first, _files(), dist_info="pkg-1.0.dist-info", epoch=315532800)
    reordered = dict(reversed(list(_files().items())))
    wheel.write_wheel(second, reordered, dist_info="pkg-1.0.dist-info", epoch=315532800)
    assert first.read_bytes() == second.read_bytes()
    with zipfile.ZipFile(first) as archive:
        names = archive.namelist()
        assert names[-1] == "pkg-1.0.dist-info/RECORD"
        assert names[:2] == ["pkg/a.py", "pkg/lib/libb.so"]
        assert {info.date_time for info in archive.infolist()} == {(1980, 1, 1, 0, 0, 0)}
        assert (archive.getinfo("pkg/lib/libb.so").external_attr >> 16) & 0o777 == 0o755
        entries = {name: archive.read(name) for name in names}
    record = entries["pkg-1.0.dist-info/RECORD"].decode()
    assert_record_matches(entries, "pkg-1.0.dist-info/RECORD")
    # b"print(1)\n" digested outside Python: openssl dgst -sha256 -binary, base64, urlsafe, unpadded
    assert "pkg/a.py,sha256=zEIVUIj8pXMHWNtysqW8ozESqUHfqi1DCY7EIs5OohM,9\n" in record
    assert record.endswith("pkg-1.0.dist-info/RECORD,,\n")


def test_normalize_is_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:  # unsorted, current timestamps
        archive.writestr("pkg-1.0.dist-info/METADATA", "Name: pkg\n")
        archive.writestr("pkg/z.py", "z = 1\n")
    wheel.normalize(path, epoch=315532800)
    once = path.read_bytes()
    wheel.normalize(path, epoch=315532800)
    assert path.read_bytes() == once


def test_unsafe_entry_is_refused(tmp_path: Path) -> None:
    with pytest.raises(WheelError, match="unsafe"):
        wheel.write_wheel(tmp_path / "x.whl", {"../evil": (b"", 0o644)},
                          dist_info="x-1.dist-info", epoch=315532800)
    assert not list(tmp_path.iterdir())


def test_symlinks_are_refused(tmp_path: Path) -> None:
    (tmp_path / "lib.so.1").write_bytes(b"x")
    (tmp_path / "lib.so").symlink_to("lib.so.1")
    with pytest.raises(WheelError, match="symbolic link"):
        wheel.collect_tree(tmp_path)


def test_source_date_epoch() -> None:
    assert wheel.source_date_epoch({}) == 315532800
    assert wheel.source_date_epoch({"SOURCE_DATE_EPOCH": "1700000000"}) == 1700000000
    assert wheel.source_date_epoch({"SOURCE_DATE_EPOCH": "5"}) == 315532800
    with pytest.raises(WheelError):
        wheel.source_date_epoch({"SOURCE_DATE_EPOCH": "yesterday"})
