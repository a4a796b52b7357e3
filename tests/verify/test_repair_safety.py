"""repair reads its input through verify's safe reader: a wheel verify refuses (duplicate
entries, a file whose hash no longer matches RECORD, a symbolic link, a zip bomb) is refused
before anything is rewritten, with one error and nothing in the output folder."""

from __future__ import annotations

import stat
import zipfile
from pathlib import Path

import pytest

from release.errors import WheelError
from release.repair import repair_wheel
from tests.verify.test_wheel_safety import DIST, _digest, make_wheel


def _refused(wheel: Path, tmp_path: Path, words: str) -> None:
    out = tmp_path / "out"
    with pytest.raises(WheelError, match=words):
        repair_wheel(wheel, out, environ={})
    assert not out.exists() or not any(out.iterdir())


def test_a_changed_file_is_not_laundered(tmp_path: Path) -> None:
    files = {f"{DIST}/METADATA": b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
             f"{DIST}/WHEEL": b"Wheel-Version: 1.0\nTag: py3-none-any\n",
             "demo/__init__.py": b"x = 1\n"}
    record = "".join(f"{name},sha256={_digest(data.replace(b'1', b'2'))},{len(data)}\n"
                     for name, data in files.items()) + f"{DIST}/RECORD,,\n"
    wheel = make_wheel(tmp_path / "demo-1.0-py3-none-any.whl", files, record=record)
    _refused(wheel, tmp_path, "sha256 is")


def test_duplicate_entries_are_not_laundered(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "demo-1.0-py3-none-any.whl", {"demo/__init__.py": b"x = 1\n"})
    with zipfile.ZipFile(wheel, "a") as archive, pytest.warns(UserWarning):
        archive.writestr("demo/__init__.py", b"x = 2\n")
    _refused(wheel, tmp_path, "appears 2 times")


def test_a_symbolic_link_is_not_laundered(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "demo-1.0-py3-none-any.whl", {"demo/__init__.py": b"x = 1\n"})
    link = zipfile.ZipInfo("demo/link.py")
    link.create_system = 3
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    with zipfile.ZipFile(wheel, "a") as archive:
        archive.writestr(link, "/etc/passwd")
    _refused(wheel, tmp_path, "symbolic link")


def test_a_zip_bomb_is_refused_while_streaming(tmp_path: Path) -> None:
    """A member whose stream holds more than its header declares (8 MiB against 100 bytes)."""
    wheel = make_wheel(tmp_path / "demo-1.0-py3-none-any.whl", {"demo/zeros.bin": bytes(8 << 20)})
    data = bytearray(wheel.read_bytes())
    central = data.find(b"demo/zeros.bin", data.find(b"PK\x01\x02")) - 46
    data[central + 24:central + 28] = (100).to_bytes(4, "little")
    wheel.write_bytes(bytes(data))
    _refused(wheel, tmp_path, "expands past its declared")


def test_false_file_name_tags_are_not_carried_into_the_output(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "demo-1.0-py2-none-win_amd64.whl",
                       {"demo/__init__.py": b"x = 1\n"})
    _refused(wheel, tmp_path, "the file name says py2-none-win_amd64 but WHEEL says")
