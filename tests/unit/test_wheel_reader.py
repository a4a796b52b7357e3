"""The pipeline's rewrite paths (release/distribution/wheel.py: ``read_entries``, used by the
variant relabel, and ``normalize``, the re-pack after repair) read wheels through the one wheel
reader (release/distribution/archive.py): what verify refuses is refused there too, and a refused
wheel is left as it was, with nothing half-written beside it."""

from __future__ import annotations

import random
import zipfile
from pathlib import Path

import pytest

from release.distribution import archive, wheel
from release.distribution.archive import Limits
from release.errors import WheelError
from tests.verify import crafted


def _listing(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


def test_entries_and_modes_are_what_the_zip_holds(tmp_path: Path) -> None:
    path = tmp_path / "demo-1.0-py3-none-any.whl"
    payload = random.Random(7).randbytes(3 << 20)   # incompressible: three chunks and more
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        out.writestr(zipfile.ZipInfo("demo-1.0.dist-info/METADATA"), "Name: demo\n")
        program = zipfile.ZipInfo("demo/bin/tool")
        program.external_attr = 0o100755 << 16
        out.writestr(program, payload)
        out.writestr(zipfile.ZipInfo("demo/"), "")          # a folder entry: no file
    entries = wheel.read_entries(path)
    # (zipfile's writestr records 0o600 for an entry given no mode)
    assert entries == {"demo-1.0.dist-info/METADATA": (b"Name: demo\n", 0o600),
                       "demo/bin/tool": (payload, 0o755)}


def test_member_chunks_stream_a_member_in_bounded_pieces(tmp_path: Path) -> None:
    path = tmp_path / "demo-1.0-py3-none-any.whl"
    payload = random.Random(8).randbytes(5 << 20)
    crafted.wheel(path, {"demo/lib/libbig.so": payload})
    (member,) = [m for m in archive.list_members(path, Limits()) if m.name.endswith(".so")]
    chunks = list(archive.member_chunks(path, member))
    assert b"".join(chunks) == payload and len(chunks) >= 5
    assert max(len(chunk) for chunk in chunks) <= 1 << 20


@pytest.mark.parametrize(("make", "words"), [
    (crafted.wrong_crc, "fails its CRC-32 check"),
    (crafted.local_name_differs, "unsafe to unpack"),
])
def test_normalize_refuses_what_verify_refuses_and_leaves_the_wheel(
        tmp_path: Path, make: object, words: str) -> None:
    assert callable(make)
    path = make(tmp_path)
    before = path.read_bytes()
    with pytest.raises(WheelError, match=words) as caught:
        wheel.normalize(path, epoch=315532800)
    assert path.name in caught.value.what and caught.value.fix
    assert path.read_bytes() == before and _listing(tmp_path) == [path.name]
    with pytest.raises(WheelError, match=words):
        wheel.read_entries(path)


def test_normalize_of_a_sound_wheel_keeps_every_byte_and_mode(tmp_path: Path) -> None:
    path = tmp_path / "demo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as out:
        out.writestr("demo-1.0.dist-info/METADATA", "Name: demo\n")
        program = zipfile.ZipInfo("demo/run.sh")
        program.external_attr = 0o100755 << 16
        out.writestr(program, "#!/bin/sh\n")
    wheel.normalize(path, epoch=315532800)
    with zipfile.ZipFile(path) as result:
        assert result.read("demo/run.sh") == b"#!/bin/sh\n"
        assert (result.getinfo("demo/run.sh").external_attr >> 16) & 0o777 == 0o755
        assert result.namelist()[-1] == "demo-1.0.dist-info/RECORD"
        assert all(info.compress_type == zipfile.ZIP_DEFLATED for info in result.infolist())


def test_a_file_that_is_not_a_zip(tmp_path: Path) -> None:
    path = tmp_path / "demo-1.0-py3-none-any.whl"
    path.write_bytes(b"not a zip\n" * 10)
    assert archive.has_zip_directory(path) is False
    for call in (wheel.read_entries, lambda p: wheel.normalize(p, epoch=315532800)):
        with pytest.raises(WheelError, match="not a readable zip archive") as caught:
            call(path)
        assert "\n" not in caught.value.message
    assert _listing(tmp_path) == [path.name]
    assert archive.has_zip_directory(tmp_path / "absent.whl") is False   # zipfile's rule
