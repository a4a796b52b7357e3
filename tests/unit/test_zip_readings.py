"""One reading of a wheel's zip, the same as every installer's (release/distribution/archive.py):
what some installers or file systems would read differently is refused, startup hooks outside the
package are errors unless declared, and RECORD is written and read with the csv module."""

from __future__ import annotations

import csv
import io
import struct
import unicodedata
import zipfile
from pathlib import Path

import pytest

from release.distribution import archive, wheel
from release.distribution.archive import Limits
from release.errors import WheelError
from tests.conftest import verify_main as main

DIST_INFO = "demo-1.0.dist-info"
METADATA = b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n"


def _zip(path: Path, members: dict[str, bytes], *, extra: dict[str, bytes] | None = None
         ) -> Path:
    with zipfile.ZipFile(path, "w") as out:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0))
            info.extra = (extra or {}).get(name, b"")
            out.writestr(info, data)
    return path


def _refusal(path: Path) -> str:
    with pytest.raises(WheelError) as refused:
        archive.list_members(path, Limits())
    return refused.value.what


def test_an_info_zip_unicode_path_field_is_refused(tmp_path: Path) -> None:
    """Python >= 3.12's zipfile (pip there) installs such a member under the field's name;
    3.11's ignores it: two installers, two files."""
    other = b"evil/__init__.py"
    field = struct.pack("<BI", 1, 0) + other
    path = _zip(tmp_path / "unicode.whl", {"demo/__init__.py": b"x = 1\n"},
                extra={"demo/__init__.py": struct.pack("<HH", 0x7075, len(field)) + field})
    assert "Unicode Path extra field (0x7075)" in _refusal(path)


def test_a_member_only_a_local_header_shows_is_refused(tmp_path: Path) -> None:
    hidden = _zip(tmp_path / "hidden.zip", {"demo/hidden.py": b"import os\n"})
    with zipfile.ZipFile(hidden) as opened:
        local = hidden.read_bytes()[:opened.start_dir]
    path = tmp_path / "local-only.whl"
    path.write_bytes(local)
    with zipfile.ZipFile(path, "a") as out:   # appended: the directory lists only these
        out.writestr("demo/__init__.py", b"x = 1\n")
    with zipfile.ZipFile(path) as opened:
        assert opened.namelist() == ["demo/__init__.py"]
    assert "a member that the central directory does not list" in _refusal(path)


def test_overlapping_members_are_refused(tmp_path: Path) -> None:
    """b.py's directory entry points into a.py's bytes, which hold a copy of b.py's local
    header and data: two members, one region of the file."""
    inner = _zip(tmp_path / "inner.zip", {"demo/b.py": b"y = 2\n"})
    with zipfile.ZipFile(inner) as opened:
        b_member = inner.read_bytes()[:opened.start_dir]
    path = _zip(tmp_path / "overlap.whl", {"demo/a.py": b_member, "demo/b.py": b"y = 2\n"})
    data = bytearray(path.read_bytes())
    a_data = 30 + len("demo/a.py")
    entry = data.rindex(b"PK\x01\x02", 0, data.rindex(b"demo/b.py"))   # b.py's entry
    struct.pack_into("<I", data, entry + 42, a_data)
    path.write_bytes(bytes(data))
    with zipfile.ZipFile(path) as opened:
        assert opened.read("demo/b.py") == b"y = 2\n"   # zipfile reads it from inside a.py
    assert "overlap" in _refusal(path)


@pytest.mark.parametrize(("names", "words"), [
    (["demo/A.py", "demo/a.py"], "are one file on case-insensitive"),
    ([unicodedata.normalize("NFC", "demo/é.py"), unicodedata.normalize("NFD", "demo/é.py")],
     "are one file on case-insensitive or normalising"),
    (["demo/Sub", "demo/sub/x.py"], "are one name on case-insensitive"),
    (["demo/a.py."], "ending in a dot or space"),
    (["demo/con.py"], "reserves for a device"),
    (["demo/a\x1b[2J.py"], "holds a control character"),
    (["demo/a\n.py"], "holds a control character"),
    (["demo/\u202egnp.py"], "holds a control character"),
])
def test_names_file_systems_or_terminals_read_differently_are_refused(
        tmp_path: Path, names: list[str], words: str) -> None:
    path = _zip(tmp_path / "names.whl", {name: b"" for name in ["demo/__init__.py", *names]})
    what = _refusal(path)
    assert words in what and "\x1b" not in what and "\n" not in what


def _wheel(path: Path, files: dict[str, bytes]) -> Path:
    entries = {name: (data, 0o644) for name, data in files.items()}
    entries[f"{DIST_INFO}/METADATA"] = (METADATA, 0o644)
    entries[f"{DIST_INFO}/WHEEL"] = (wheel.wheel_text(["py3-none-any"]).encode(), 0o644)
    wheel.write_wheel(path, entries, dist_info=DIST_INFO, epoch=315532800)
    return path


@pytest.mark.parametrize("hook", ["demo-hook.pth", "sitecustomize.py", "usercustomize.py",
                                  "demo-1.0.data/scripts/python3", "demo-1.0.data/purelib/x.pth"])
def test_startup_hooks_are_errors_unless_declared(tmp_path: Path, hook: str) -> None:
    path = _wheel(tmp_path / "demo-1.0-py3-none-any.whl",
                  {"demo/__init__.py": b"x = 1\n", hook: b"import os\n"})
    out = io.StringIO()
    assert main([str(path), "--static"], stdout=out, stderr=io.StringIO()) == 7
    assert f"error   [archive] {hook}:" in out.getvalue(), out.getvalue()
    out = io.StringIO()
    assert main([str(path), "--static", "--allow-startup-hook", hook], stdout=out,
                stderr=io.StringIO()) == 0, out.getvalue()
    assert "(declared)" in out.getvalue()


def test_a_hook_inside_the_package_is_no_startup_hook(tmp_path: Path) -> None:
    path = _wheel(tmp_path / "demo-1.0-py3-none-any.whl",
                  {"demo/__init__.py": b"", "demo/paths.pth": b"", "demo/sitecustomize.py": b"",
                   "demo-1.0.data/scripts/demo-python": b"#!python\n"})
    assert main([str(path), "--static"], stdout=io.StringIO(), stderr=io.StringIO()) == 0


def test_record_rows_are_written_as_csv_and_read_back_by_verify(tmp_path: Path) -> None:
    names = ["demo/data,v2.txt", 'demo/say "hi".txt']
    path = _wheel(tmp_path / "demo-1.0-py3-none-any.whl",
                  {"demo/__init__.py": b"", **{name: b"x" for name in names}})
    with zipfile.ZipFile(path) as opened:
        rows = list(csv.reader(io.StringIO(opened.read(f"{DIST_INFO}/RECORD").decode())))
    assert {row[0] for row in rows} >= set(names)
    assert all(len(row) == 3 for row in rows)
    out = io.StringIO()
    assert main([str(path), "--static"], stdout=out, stderr=io.StringIO()) == 0, out.getvalue()
    # the reproducible rewrite (repair's, the pack stage's) writes the same rows
    wheel.normalize(path, epoch=315532800)
    with zipfile.ZipFile(path) as opened:
        again = list(csv.reader(io.StringIO(opened.read(f"{DIST_INFO}/RECORD").decode())))
    assert again == rows
