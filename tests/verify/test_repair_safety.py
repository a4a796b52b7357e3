"""repair reads its input through verify's safe reader: a wheel verify refuses (duplicate
entries, a file whose hash no longer matches RECORD, a symbolic link, a zip bomb, what pip
refuses) is refused before anything is rewritten, with one error and nothing in the output
folder; and what it runs follows the wheel's tags and binaries, never its build record."""

from __future__ import annotations

import json
import stat
import subprocess
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from release.building.repair import repair_wheel
from release.distribution.buildrecord import SCHEMA
from release.errors import WheelError
from release.verify import verify_wheel
from tests.verify import crafted
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


# --- what repair runs is decided by the wheel's tags and binaries, never by its record ---

def _record(target: str) -> bytes:
    return json.dumps({"schema": SCHEMA, "package": "demo", "distribution": "demo",
                       "version": "1.0", "target": target, "variant": "cpu",
                       "components": [{"name": "runtime", "file": "demo/lib/libdemo.so"}]}
                      ).encode()


def _shared_library(folder: Path) -> bytes:
    source, output = folder / "demo.c", folder / "libdemo.so"
    source.write_text("int demo_entry(void) { return 1; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(output), str(source)], check=True)
    return output.read_bytes()


def test_a_linux_wheel_whose_record_says_macos_is_repaired_as_linux(tmp_path: Path) -> None:
    """The record's target would pick the macOS repair (a plain copy); the tag and the ELF
    binary pick auditwheel, which gives the wheel its manylinux tag."""
    library = _shared_library(tmp_path)
    wheel = crafted.wheel(tmp_path, {"demo/lib/libdemo.so": library,
                                     "demo/_release.json": _record("macos-arm64")},
                          tag="py3-none-linux_x86_64")
    repaired = repair_wheel(wheel, tmp_path / "out", environ={})
    assert "-py3-none-manylinux" in repaired.name, repaired.name
    with zipfile.ZipFile(repaired) as archive:
        tags = archive.read("demo-1.0.dist-info/WHEEL").decode()
    assert "manylinux" in tags


def test_tags_that_disagree_with_the_binaries_are_refused(tmp_path: Path) -> None:
    """A macOS tag on a wheel of ELF files (and a record saying linux) is not copied through."""
    wheel = crafted.wheel(tmp_path, {"demo/lib/libdemo.so": crafted.dense_dynsym_elf(3),
                                     "demo/_release.json": _record("linux-x86_64")},
                          tag="py3-none-macosx_11_0_arm64")
    _refused(wheel, tmp_path, r"tagged macosx_11_0_arm64 \(macos\) but ships elf binaries")


def test_binaries_under_no_platform_tag_are_refused(tmp_path: Path) -> None:
    wheel = crafted.wheel(tmp_path, {"demo/lib/libdemo.so": crafted.dense_dynsym_elf(3),
                                     "demo/_release.json": _record("linux-x86_64")},
                          tag="py3-none-any")
    _refused(wheel, tmp_path, "ships elf binaries but has no platform tag")


# --- RECORD: the signature exemption only where the specification puts it, one row a file ---

def test_signature_files_outside_dist_info_must_be_in_record(tmp_path: Path) -> None:
    _refused(crafted.signature_elsewhere(tmp_path), tmp_path,
             r"demo/payload.p7s: not listed in RECORD \(and 1 more\)")


def test_record_signatures_beside_record_are_exempt(tmp_path: Path) -> None:
    wheel = crafted.wheel(tmp_path, {"demo/__init__.py": b""}, tag="py3-none-any")
    with zipfile.ZipFile(wheel, "a") as archive:
        archive.writestr(f"{DIST}/RECORD.jws", b"{}")
    report = verify_wheel(wheel, static=True)
    assert not [f for f in report.findings if f.check == "record"], report.render_text()


def test_contradicting_record_rows_are_refused(tmp_path: Path) -> None:
    _refused(crafted.contradicting_record(tmp_path), tmp_path,
             "RECORD line 4 lists 'demo/a.py' again")


# --- the shared reader's zip rules hold for repair as for verify ---

@pytest.mark.parametrize(("write", "words"), [
    (crafted.local_name_differs, "is named '../../evil.py' in its local header"),
    (crafted.wrong_crc, "fails its CRC-32 check"),
    (crafted.other_project_dist_info, "not named for the file name's project"),
    (crafted.future_wheel_version, "Wheel-Version 9.0 is a newer major version"),
    (crafted.long_component, "has a 303-byte component"),
])
def test_what_pip_refuses_is_not_repaired(tmp_path: Path, write: Callable[[Path], Path],
                                          words: str) -> None:
    _refused(write(tmp_path), tmp_path, words)
