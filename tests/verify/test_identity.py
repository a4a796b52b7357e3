"""Plain lies a wheel can tell: METADATA that is not metadata, a file name whose tags differ
from WHEEL's, Linux binaries under another platform's tag."""

from __future__ import annotations

import os
from pathlib import Path

from release.distribution import wheel as wheel_module
from release.findings import Severity
from release.verify import verify_wheel
from tests.verify.test_wheel_safety import DIST, make_wheel


def _errors(path: Path) -> list[tuple[str, str]]:
    report = verify_wheel(path, static=True)
    return [(f.check, f.what) for f in report.findings if f.severity is Severity.ERROR]


def test_random_bytes_as_metadata(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "demo-1.0-py3-none-any.whl",
                       {f"{DIST}/METADATA": os.urandom(64).replace(b":", b";")})
    assert ("identity", "METADATA has no Metadata-Version, Name, Version") in _errors(wheel)


def test_metadata_that_disagrees_with_the_file_name(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "demo-1.0-py3-none-any.whl", {
        f"{DIST}/METADATA": b"Metadata-Version: 2.1\nName: other\nVersion: 2.0\n"})
    found = [what for check, what in _errors(wheel) if check == "identity"]
    assert any("names 'other'" in what for what in found)
    assert any("version '2.0'" in what for what in found)


def _retagged(source: Path, folder: Path, *, file_tag: str, wheel_tag: str | None) -> Path:
    entries = wheel_module.read_entries(source)
    dist_info = wheel_module.dist_info_of(entries)
    name = wheel_module.WheelName.parse(source.name)
    if wheel_tag is not None:
        text = entries[f"{dist_info}/WHEEL"][0].decode()
        text = "".join(line for line in text.splitlines(keepends=True)
                       if not line.startswith("Tag:")) + f"Tag: {wheel_tag}\n"
        entries[f"{dist_info}/WHEEL"] = (text.encode(), 0o644)
    python, abi, platform = file_tag.split("-")
    target = folder / wheel_module.WheelName(name.distribution, name.version, python, abi,
                                             platform).filename
    folder.mkdir(parents=True, exist_ok=True)
    wheel_module.write_wheel(target, entries, dist_info=dist_info, epoch=315532800)
    return target


def test_file_name_tags_that_wheel_does_not_list(fixture_wheels: dict[str, Path],
                                                 tmp_path: Path) -> None:
    good = fixture_wheels["good"]
    lying = _retagged(good, tmp_path, file_tag="py2-none-win_amd64", wheel_tag=None)
    found = _errors(lying)
    assert any(check == "identity" and "file name says py2-none-win_amd64" in what
               for check, what in found), found


def test_linux_binaries_under_another_platforms_tag(fixture_wheels: dict[str, Path],
                                                    tmp_path: Path) -> None:
    good = fixture_wheels["good"]
    lying = _retagged(good, tmp_path, file_tag="cp311-abi3-win_amd64",
                      wheel_tag="cp311-abi3-win_amd64")
    found = _errors(lying)
    assert ("platform", "ships elf binaries but its platform tag is win_amd64") in found, found
    assert not any(check == "identity" for check, _ in found)
