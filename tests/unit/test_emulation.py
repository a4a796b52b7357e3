"""Running another machine's binaries (platforms/linux/emulation.py) without running any: where
the root folder lives, when it counts as complete and intact, what runner it gives, how apt is
kept private, how a downloaded package is held to its pin, and how the root's absolute links
are made to stay inside it."""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import pytest

from platforms.linux import PLATFORM as LINUX
from platforms.linux import cross, emulation
from release.errors import ToolError
from release.host import Host, Runner
from release.toolchain import toolcache
from release.toolchain.pins import DebianPackage

AARCH64 = cross.cross_targets()["aarch64"]


def fake_path(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Only ``names`` are on PATH, in /opt/bin."""
    found = {name: f"/opt/bin/{name}" for name in names}
    monkeypatch.setattr(shutil, "which", found.get)


def complete_root(cache: Path) -> Path:
    root = emulation.root_folder(AARCH64, cache)
    (root / "usr/bin").mkdir(parents=True)
    (root / "usr/bin/python3.11").write_bytes(b"\x7fELF arm64 python")
    toolcache.seal(root, describes={})
    return root


def test_the_root_folder_is_named_after_its_entry(tmp_path: Path) -> None:
    root = emulation.root_folder(AARCH64, tmp_path)
    assert root.parent == tmp_path / "sysroots"
    assert root.name.startswith("linux-aarch64-python3.11-")
    assert emulation.root_folder(AARCH64, tmp_path) == root
    other = dataclasses.replace(AARCH64, wheels_pin="ninja")
    assert emulation.root_folder(other, tmp_path) != root, "other pins, another folder"
    elsewhere = dataclasses.replace(AARCH64, toolchain=Path("/elsewhere/aarch64.cmake"))
    assert emulation.root_folder(elsewhere, tmp_path) == root, "one folder for every checkout"


def test_runner_of_a_complete_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_path(monkeypatch, "qemu-aarch64-static", *AARCH64.compilers)
    root = complete_root(tmp_path)
    runner = emulation.existing_runner(AARCH64, tmp_path)
    assert runner == Runner(
        "aarch64", prefix=("/opt/bin/qemu-aarch64-static", "-L", str(root)),
        python=str(root / "usr/bin/python3.11"),
        cmake_arguments=(f"-DCMAKE_TOOLCHAIN_FILE={AARCH64.toolchain}",))
    assert runner.command("/w/run_program", "m.edgert") == [
        "/opt/bin/qemu-aarch64-static", "-L", str(root), "/w/run_program", "m.edgert"]
    fake_path(monkeypatch, "qemu-aarch64")
    without_compiler = emulation.existing_runner(AARCH64, tmp_path)
    assert without_compiler is not None and without_compiler.cmake_arguments is None


def test_no_runner_without_emulator_or_complete_root(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    fake_path(monkeypatch, "qemu-aarch64")
    root = emulation.root_folder(AARCH64, tmp_path)
    root.mkdir(parents=True)
    assert emulation.existing_runner(AARCH64, tmp_path) is None, "incomplete root"
    shutil.rmtree(root)
    complete_root(tmp_path)
    assert emulation.existing_runner(AARCH64, tmp_path) is not None
    fake_path(monkeypatch)
    assert emulation.existing_runner(AARCH64, tmp_path) is None, "no emulator"
    assert emulation.provision_runner(AARCH64, tmp_path) is None, "nothing to provision for"


def test_a_changed_root_is_not_used_but_byte_code_is_tolerated(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    fake_path(monkeypatch, "qemu-aarch64")
    root = complete_root(tmp_path)
    (root / "usr/lib/python3.11/__pycache__").mkdir(parents=True)
    (root / "usr/lib/python3.11/__pycache__/json.cpython-311.pyc").write_bytes(b"pyc")
    assert emulation.existing_runner(AARCH64, tmp_path) is not None
    (root / "usr/bin/python3.11").write_bytes(b"\x7fELF something else")
    assert emulation.existing_runner(AARCH64, tmp_path) is None
    assert "usr/bin/python3.11 is changed since it was installed" in caplog.text


def test_a_package_is_held_to_its_pin(tmp_path: Path) -> None:
    deb = tmp_path / "libffi8_3.4.4-1_arm64.deb"
    deb.write_bytes(b"a package")
    pinned = DebianPackage("libffi8", "3.4.4-1", toolcache.file_sha256(deb))
    emulation.check_package(pinned, [deb])
    deb.write_bytes(b"another package")
    with pytest.raises(ToolError, match="libffi8_3.4.4-1_arm64.deb has sha256 .* the pin of "
                                        "libffi8=3.4.4-1 says"):
        emulation.check_package(pinned, [deb])
    with pytest.raises(ToolError, match="0 files for libffi8"):
        emulation.check_package(pinned, [])


def test_the_platform_offers_only_what_is_in_place(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    fake_path(monkeypatch, "qemu-aarch64")
    here = Host("linux", "x86_64")
    assert LINUX.emulated(here, cache=tmp_path) == ()
    complete_root(tmp_path)
    (runner,) = LINUX.emulated(here, cache=tmp_path)
    # the handed Host decides, not the machine the test runs on
    assert LINUX.emulated(Host("darwin", "x86_64"), cache=tmp_path) == ()
    host = Host("linux", "x86_64", (runner,))
    assert host.runner("aarch64") is runner and host.runner("riscv64") is None
    assert host.runner("x86_64") == Runner("x86_64")


def test_apt_is_kept_private(tmp_path: Path) -> None:
    options = emulation._apt_options(AARCH64, tmp_path)
    settings = dict(option.split("=", 1) for option in options[1::2])
    assert set(options[::2]) == {"-o"}
    assert settings["APT::Architecture"] == settings["APT::Architectures::"] == "arm64"
    assert settings["Dir::State::Lists"] == str(tmp_path / "lists")
    assert settings["Dir::Cache"] == str(tmp_path / "cache")
    assert settings["Dir::State::status"] == "/dev/null"


def test_absolute_links_stay_inside_the_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "etc/python3.11").mkdir(parents=True)
    (root / "etc/python3.11/sitecustomize.py").write_text("")
    (root / "usr/lib/python3.11").mkdir(parents=True)
    link = root / "usr/lib/python3.11/sitecustomize.py"
    link.symlink_to("/etc/python3.11/sitecustomize.py")
    relative = root / "lib/ld-linux-aarch64.so.1"
    relative.parent.mkdir()
    relative.symlink_to("aarch64-linux-gnu/ld-linux-aarch64.so.1")
    emulation.relative_symlinks(root)
    assert os.readlink(link) == "../../../etc/python3.11/sitecustomize.py"
    assert link.resolve() == (root / "etc/python3.11/sitecustomize.py").resolve()
    assert os.readlink(relative) == "aarch64-linux-gnu/ld-linux-aarch64.so.1"
