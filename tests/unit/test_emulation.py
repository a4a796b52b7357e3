"""Running another machine's binaries (platforms/linux/emulation.py) without running any: where
the root folder lives, when it counts as complete, what runner it gives, how apt is kept
private, and how the root's absolute links are made to stay inside it."""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import pytest

from platforms.linux import PLATFORM as LINUX
from platforms.linux import cross, emulation
from release.loader import Host, Runner
from release.tools import COMPLETE_MARKER

AARCH64 = cross.cross_targets()["aarch64"]


def fake_path(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Only ``names`` are on PATH, in /opt/bin."""
    found = {name: f"/opt/bin/{name}" for name in names}
    monkeypatch.setattr(shutil, "which", found.get)


def complete_root(cache: Path) -> Path:
    root = emulation.root_folder(AARCH64, cache)
    root.mkdir(parents=True)
    (root / COMPLETE_MARKER).write_text("{}\n")
    return root


def test_the_root_folder_is_named_after_its_entry(tmp_path: Path) -> None:
    root = emulation.root_folder(AARCH64, tmp_path)
    assert root.parent == tmp_path / "sysroots"
    assert root.name.startswith("linux-aarch64-python3.11-")
    assert emulation.root_folder(AARCH64, tmp_path) == root
    more = dataclasses.replace(AARCH64, packages=(*AARCH64.packages, "libuuid1"))
    assert emulation.root_folder(more, tmp_path) != root, "other packages, another folder"
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
    (root / COMPLETE_MARKER).write_text("{}\n")
    assert emulation.existing_runner(AARCH64, tmp_path) is not None
    fake_path(monkeypatch)
    assert emulation.existing_runner(AARCH64, tmp_path) is None, "no emulator"
    assert emulation.provision_runner(AARCH64, tmp_path) is None, "nothing to provision for"


def test_the_platform_offers_only_what_is_in_place(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(LINUX, "host_arch", lambda: "x86_64")
    fake_path(monkeypatch, "qemu-aarch64")
    assert LINUX.emulated(cache=tmp_path) == ()
    complete_root(tmp_path)
    (runner,) = LINUX.emulated(cache=tmp_path)
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
