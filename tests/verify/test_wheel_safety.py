"""Hostile wheels: the reader refuses them with a WheelError or reports findings; it never
writes outside its folder, never trusts declared sizes and never raises anything else."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import resource
import stat
import tempfile
import types
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from release.errors import WheelError
from release.findings import Severity
from release.verify import Limits, VerifyOptions, verify_wheel
from tests.verify import crafted

DIST = "demo-1.0.dist-info"


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel(path: Path, files: dict[str, bytes], *, record: str | None = None,
               tag: str = "py3-none-any", name: str = "demo", metadata: str = "") -> Path:
    """A wheel of ``files`` plus METADATA (Name ``name``, then the ``metadata`` lines), WHEEL
    (``tag``) and a correct RECORD unless ``record`` is given; the tests' one wheel writer."""
    dist = f"{name}-1.0.dist-info"
    wheel = (f"Wheel-Version: 1.0\nTag: {tag}\n" if tag.endswith("-any") else
             f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {tag}\n")
    files = {f"{dist}/METADATA": (f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\n"
                                  f"Version: 1.0\n{metadata}").encode(),
             f"{dist}/WHEEL": wheel.encode(), **files}
    if record is None:
        record = "".join(f"{entry},sha256={_digest(data)},{len(data)}\n"
                         for entry, data in files.items()) + f"{dist}/RECORD,,\n"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for entry, data in files.items():
            archive.writestr(entry, data)
        archive.writestr(f"{dist}/RECORD", record)
    return path


def test_clean_wheel_has_no_errors(tmp_path: Path) -> None:
    report = verify_wheel(make_wheel(tmp_path / "demo-1.0-py3-none-any.whl",
                                     {"demo/__init__.py": b"x = 1\n"}), static=True)
    assert report.ok, report.render_text()


@pytest.fixture
def kept_scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """verify's scratch folders made under ``<tmp_path>/scratch`` and kept after the run, so
    that whatever an extraction wrote, inside its scratch folder or beside it, can be seen."""
    from release.verify import run
    parent = tmp_path / "scratch"
    parent.mkdir()

    @contextlib.contextmanager
    def kept(prefix: str = "") -> Iterator[str]:
        yield tempfile.mkdtemp(prefix=prefix, dir=parent)

    monkeypatch.setattr(run, "tempfile", types.SimpleNamespace(TemporaryDirectory=kept))
    return parent


def _written(folder: Path, word: str) -> list[Path]:
    return sorted(path for path in folder.rglob(f"*{word}*") if not path.suffix == ".whl")


def test_the_kept_scratch_shows_what_extraction_writes(tmp_path: Path,
                                                       kept_scratch: Path) -> None:
    """The observation the escape tests rely on: a full run's extraction is seen there."""
    wheel = make_wheel(tmp_path / "demo-1.0-py3-none-any.whl", {"demo/evil_twin.py": b"x = 1\n"})
    verify_wheel(wheel, static=False)
    (written,) = _written(tmp_path, "evil")
    assert written.relative_to(kept_scratch).parts[1:] == ("site-packages", "demo",
                                                          "evil_twin.py")


@pytest.mark.parametrize("name", ["../evil.py", "../../evil.py", "{outside}/evil.py",
                                  "C:/evil.py", "a/../../evil.py", "demo\\..\\evil.py"])
def test_escaping_entries_are_refused(tmp_path: Path, kept_scratch: Path, name: str) -> None:
    """Refused before anything is written: no file of the name is left in the (kept) scratch
    folder, beside it, or at the absolute path the entry names."""
    name = name.replace("{outside}", str(tmp_path / "outside"))
    wheel = make_wheel(tmp_path / "demo-1.0-py3-none-any.whl", {name: b"boom = 1\n"})
    try:
        verify_wheel(wheel, static=False)
    except WheelError as error:
        refused: WheelError | None = error
    else:
        refused = None
    assert _written(tmp_path, "evil") == []
    assert refused is not None and "unsafe to unpack" in refused.message


def test_symlink_entry_is_refused(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "demo.whl", {})
    with zipfile.ZipFile(wheel, "a") as archive:
        info = zipfile.ZipInfo("demo/link")
        info.create_system = 3
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(info, "/etc/passwd")
    with pytest.raises(WheelError, match="symbolic link"):
        verify_wheel(wheel, static=True)


def test_duplicate_entries_are_refused(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "demo.whl", {"demo/a.py": b"1"})
    with pytest.warns(UserWarning), zipfile.ZipFile(wheel, "a") as archive:
        archive.writestr("demo/a.py", b"2")
    with pytest.raises(WheelError, match="appears 2 times"):
        verify_wheel(wheel, static=True)


def test_bad_record_hash_and_size_are_findings(tmp_path: Path) -> None:
    record = (f"demo/a.py,sha256={_digest(b'other')},99\n"
              f"demo/gone.py,sha256={_digest(b'x')},1\n{DIST}/RECORD,,\n")
    wheel = make_wheel(tmp_path / "demo.whl", {"demo/a.py": b"1", "demo/b.py": b"2"},
                       record=record)
    report = verify_wheel(wheel, static=True)
    errors = {(f.file, f.what.split(" ")[0]) for f in report.findings
              if f.check == "record" and f.severity is Severity.ERROR}
    assert ("demo/a.py", "sha256") in errors
    assert ("demo/a.py", "size") in errors
    assert ("demo/b.py", "not") in errors          # not listed in RECORD
    assert ("demo/gone.py", "listed") in errors    # listed but absent
    assert not report.ok


def test_missing_record_is_a_finding(tmp_path: Path) -> None:
    wheel = tmp_path / "demo.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(f"{DIST}/METADATA", "Name: demo\nVersion: 1.0\n")
        archive.writestr(f"{DIST}/WHEEL", "Tag: py3-none-any\n")
    report = verify_wheel(wheel, static=True)
    assert any(f.check == "record" and "no RECORD" in f.what for f in report.findings)


def test_zip_bomb_declared_size_is_refused(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "demo.whl", {"demo/zeros.bin": bytes(64 << 20),
                                               "demo/more.bin": bytes(1 << 20)})
    small = Limits(max_member_size=32 << 20)
    with pytest.raises(WheelError, match="over the limit of 33554432 for one member"):
        verify_wheel(wheel, static=True, options=VerifyOptions(limits=small))
    with pytest.raises(WheelError, match=r"members claim \d+ bytes in all"):
        verify_wheel(wheel, static=True, options=VerifyOptions(limits=Limits(
            max_total_size=64 << 20)))


def test_a_library_of_zero_padding_is_no_bomb(tmp_path: Path) -> None:
    """Real libraries that are mostly zero padding compress far beyond 200x; the limits are
    absolute sizes, so such a wheel verifies."""
    padded = b"\x7fELF" + bytes(2 << 20)
    wheel = make_wheel(tmp_path / "demo-1.0-py3-none-any.whl", {"demo/padded.bin": padded})
    assert wheel.stat().st_size * 200 < len(padded)
    report = verify_wheel(wheel, static=True)
    assert not [f for f in report.findings if "bomb" in f.what]


def test_zip_bomb_lying_header_is_stopped_while_streaming(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "demo.whl", {"demo/zeros.bin": bytes(8 << 20)})
    data = bytearray(wheel.read_bytes())
    with zipfile.ZipFile(wheel) as archive:
        info = archive.getinfo("demo/zeros.bin")
    # Claim 100 bytes in the central directory; the stream holds 8 MiB.
    assert info.file_size == 8 << 20
    central = data.find(b"demo/zeros.bin", data.find(b"PK\x01\x02")) - 46
    data[central + 24:central + 28] = (100).to_bytes(4, "little")
    wheel.write_bytes(bytes(data))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(WheelError, match="expands past its declared"):
        verify_wheel(wheel, static=True)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 64 << 10  # KiB


def test_too_many_entries_are_refused(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "demo.whl", {f"demo/f{i}.py": b"" for i in range(50)})
    options = VerifyOptions(limits=Limits(max_entries=20))
    with pytest.raises(WheelError, match="exceed the limit"):
        verify_wheel(wheel, static=True, options=options)


def test_not_a_zip(tmp_path: Path) -> None:
    path = tmp_path / "demo.whl"
    path.write_bytes(b"PK\x03\x04 this is not a zip")
    with pytest.raises(WheelError, match="not a readable zip"):
        verify_wheel(path, static=True)


def test_entry_with_an_empty_name_is_refused(tmp_path: Path) -> None:
    path = make_wheel(tmp_path / "demo-1.0-py3-none-any.whl", {"demo/a.py": b"a = 1\n"})
    data = path.read_bytes()
    central = data.rindex(b"PK\x01\x02" )  # the last central directory entry: RECORD
    name_length = int.from_bytes(data[central + 28:central + 30], "little")
    assert data[central + 46:central + 46 + name_length] == f"{DIST}/RECORD".encode()
    patched = bytearray(data)
    patched[central + 46:central + 46 + name_length] = b"\0" * name_length
    patched[central + 28:central + 30] = (0).to_bytes(2, "little")
    del patched[central + 46:central + 46 + name_length]
    end = patched.rindex(b"PK\x05\x06")  # central directory size shrinks by the name
    size = int.from_bytes(patched[end + 12:end + 16], "little") - name_length
    patched[end + 12:end + 16] = size.to_bytes(4, "little")
    path.write_bytes(bytes(patched))
    with pytest.raises(WheelError, match="empty name"):
        verify_wheel(path, static=True)


def test_member_pointing_outside_the_archive_is_refused(tmp_path: Path) -> None:
    """An end record claiming the central directory starts later than it does makes every
    member's offset negative once zipfile corrects for prepended data."""
    path = make_wheel(tmp_path / "demo-1.0-py3-none-any.whl", {"demo/a.py": b"a = 1\n"})
    patched = bytearray(path.read_bytes())
    end = patched.rindex(b"PK\x05\x06")
    start = int.from_bytes(patched[end + 16:end + 20], "little")
    patched[end + 16:end + 20] = (start + 100).to_bytes(4, "little")
    path.write_bytes(bytes(patched))
    with pytest.raises(WheelError, match="outside the archive|no valid local header"):
        verify_wheel(path, static=True)


@pytest.mark.parametrize("scheme", ["platlib", "purelib"])
@pytest.mark.parametrize("static", [True, False])
def test_an_absolute_path_behind_data_never_leaves_the_scratch_folder(
        tmp_path: Path, scheme: str, static: bool) -> None:
    """``<name>.data/platlib//<absolute path>`` passes a check on the entry name alone; it is
    installed to an absolute path, so it is refused before anything is written."""
    from tests.conftest import verify_main as main
    victim = tmp_path / "victim.so"
    victim.write_bytes(b"untouched")
    payload = b"\x7fELF" + b"\0" * 60
    entry = f"demo-1.0.data/{scheme}/{victim}"  # ".../platlib//tmp/..."
    wheel = make_wheel(tmp_path / "demo-1.0-py3-none-any.whl", {entry: payload})
    with pytest.raises(WheelError, match="unsafe to unpack"):
        verify_wheel(wheel, static=static)
    code = main([str(wheel), *(["--static"] if static else [])])
    assert code == WheelError.exit_code == 5
    assert victim.read_bytes() == b"untouched"


@pytest.mark.parametrize("entry", ["demo/a//b.py", "demo/./b.py",
                                   "demo-1.0.data/purelib/../x.py"])
def test_empty_dot_and_climbing_components_are_refused(tmp_path: Path, entry: str) -> None:
    wheel = make_wheel(tmp_path / "demo-1.0-py3-none-any.whl", {entry: b"x = 1\n"})
    with pytest.raises(WheelError, match="unsafe to unpack"):
        verify_wheel(wheel, static=False)


def test_two_entries_installed_to_one_path_are_refused(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "demo-1.0-py3-none-any.whl", {
        "demo/__init__.py": b"x = 1\n", "demo-1.0.data/purelib/demo/__init__.py": b"x = 2\n"})
    with pytest.raises(WheelError, match="2 entries install to 'demo/__init__.py'"):
        verify_wheel(wheel, static=False)


# --- what pip and installers check (crafted by tests/verify/crafted.py) ---

@pytest.mark.parametrize(("write", "words"), [
    (crafted.local_name_differs, "is named '../../evil.py' in its local header"),
    (crafted.wrong_crc, "fails its CRC-32 check"),
    (crafted.invalid_utf8_name, "a member name flagged as UTF-8 is not UTF-8"),
])
def test_what_pip_refuses_to_unpack_is_refused(tmp_path: Path, write: Callable[[Path], Path],
                                               words: str) -> None:
    from tests.conftest import verify_main as main
    wheel = write(tmp_path)
    with pytest.raises(WheelError, match=words):
        verify_wheel(wheel, static=True)
    assert main([str(wheel), "--static"]) == 5
    assert not _written(tmp_path, "evil")   # nothing extracted, under either name


@pytest.mark.parametrize("write", [crafted.local_name_differs, crafted.invalid_utf8_name])
def test_a_refused_member_is_not_extracted_by_a_full_run(
        tmp_path: Path, kept_scratch: Path, write: Callable[[Path], Path]) -> None:
    """A full run (which extracts every member) refuses these wheels on their names, before
    extracting anything: the kept scratch holds no file."""
    wheel = write(tmp_path)
    with pytest.raises(WheelError):
        verify_wheel(wheel, static=False)
    assert not [path for path in kept_scratch.rglob("*") if path.is_file()]


def test_a_local_header_zip_slip_is_refused_by_check_set_too(tmp_path: Path) -> None:
    """check-set opens wheels with verify's reader (a CRC-32 is checked on what it reads,
    and its verify of each wheel reads the rest)."""
    from release.release_set.set_model import read_wheel
    for write in (crafted.local_name_differs, crafted.invalid_utf8_name):
        folder = tmp_path / write.__name__
        folder.mkdir()
        with pytest.raises(WheelError):
            read_wheel(write(folder), "demo")


@pytest.mark.parametrize(("write", "file", "words"), [
    (crafted.other_project_dist_info, "other-1.0.dist-info",
     "is not named for the file name's project and version ('demo' 1.0)"),
    (crafted.other_version_dist_info, "demo-2.0.dist-info",
     "is not named for the file name's project and version"),
    (crafted.future_wheel_version, "WHEEL", "Wheel-Version 9.0 is a newer major version"),
])
def test_what_pip_refuses_to_install_is_an_identity_error(
        tmp_path: Path, write: Callable[[Path], Path], file: str, words: str) -> None:
    report = verify_wheel(write(tmp_path), static=True)
    assert [(f.file, f.severity) for f in report.findings
            if f.check == "identity" and words in f.what] == [(file, Severity.ERROR)]
    assert not report.ok


def test_a_normalised_dist_info_name_is_accepted(tmp_path: Path) -> None:
    """``My.Project-1.0`` ships ``my_project-1.0.dist-info``: the same project, normalised."""
    wheel = crafted.wheel(tmp_path / "my_project-1.0-py3-none-any.whl", {"my_project/a.py": b""},
                          name="My.Project", dist_info="my_project-1.0.dist-info",
                          tag="py3-none-any")
    report = verify_wheel(wheel, static=True)
    assert not [f for f in report.findings if f.check == "identity"], report.render_text()


@pytest.mark.parametrize("static", [True, False])
def test_a_300_byte_component_is_the_same_finding_static_or_full(tmp_path: Path,
                                                                static: bool) -> None:
    report = verify_wheel(crafted.long_component(tmp_path), static=static)
    found = [f for f in report.findings if f.check == "archive"]
    assert len(found) == 1 and "303-byte component" in found[0].what, report.render_text()
    assert found[0].severity is Severity.ERROR
    assert not [f for f in report.findings if "environment" in f.what]
    assert not report.ok


def test_signatures_are_exempt_only_beside_record(tmp_path: Path) -> None:
    report = verify_wheel(crafted.signature_elsewhere(tmp_path), static=True)
    unlisted = sorted(f.file for f in report.findings
                      if f.check == "record" and f.what == "not listed in RECORD")
    assert unlisted == ["demo/payload.p7s", "demo/run.jws"]


def test_a_file_listed_twice_in_record_is_an_error(tmp_path: Path) -> None:
    report = verify_wheel(crafted.contradicting_record(tmp_path), static=True)
    assert any(f.check == "record" and "lists 'demo/a.py' again" in f.what
               for f in report.findings), report.render_text()
    assert not report.ok


@pytest.mark.parametrize("case", sorted(set(crafted.CASES) - {"symbols-at-budget"}))
def test_no_crafted_case_passes_as_clean(tmp_path: Path, case: str) -> None:
    """Every hostile wheel the generator writes is refused (a one-line error) or fails;
    none is reported OK."""
    from tests.conftest import verify_main as main
    code = main([str(crafted.CASES[case](tmp_path)), "--static", "--json"])
    assert code in (5, 6, 7), code
