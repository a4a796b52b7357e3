"""The pinned tools (release/toolchain/pinned-tools.toml): one data file names every tool the
pipeline fetches by exact version and sha256, everything that fetches names an entry of it, and a
malformed entry is refused naming its key."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from cuda import cuobjdump
from cuda import gpu_variant as cuda_variant
from platforms.linux import cross
from release._compat import tomllib
from release.errors import ConfigurationError
from release.toolchain import pins, tools, zig
from tests.conftest import ROOT

LOADED = pins.load()


def test_every_fetched_tool_names_an_entry() -> None:
    named = {tools.CMAKE_OLD.pin, tools.CMAKE_NEW.pin, "ninja", zig.PIN, cuobjdump.PIN}
    for path in sorted(cuda_variant.variants_dir().glob("*.toml")):
        loaded = cuda_variant.load(path)
        named |= {loaded.toolchain_pin, loaded.runtime.pin}
    for target in cross.cross_targets().values():
        named.add(target.wheels_pin)
        assert target.packages.architecture == target.debian_architecture
    assert named == set(LOADED.python), "every [python] entry is used, and only those"
    assert {pin.compiler for pin in LOADED.built.values()} <= named


@pytest.mark.parametrize("name", sorted(LOADED.python))
def test_every_package_is_an_exact_pin_with_a_wheel_for_each_linux_machine(name: str) -> None:
    pin = LOADED.python[name]
    for package in pin.packages:
        assert re.fullmatch(r"[A-Za-z0-9._-]+==[0-9][\w.]*", package)
        wheels = [f.file for f in pin.files if pins._wheel_of(f.file, package)]
        machines = {"x86_64" if "x86_64" in wheel else "aarch64" if "aarch64" in wheel else ""
                    for wheel in wheels}
        assert {"aarch64"} <= machines, f"{package}: no aarch64 wheel (the arm64 runners)"
        if not pin.platform:
            assert "x86_64" in machines, f"{package}: no x86_64 wheel"
    requirements = pin.requirements_text().splitlines()
    assert len(requirements) == len(pin.packages)
    assert all("--hash=sha256:" in line for line in requirements)


def test_what_only_the_tests_fetch_is_pinned_the_same_way() -> None:
    tested = pins.load(ROOT / "tests" / "pinned-test-tools.toml")
    assert set(tested.python) == {"actionlint", "abi3info", "curand"}
    for pin in tested.python.values():
        assert all("--hash=sha256:" in line for line in pin.requirements_text().splitlines())


def test_the_tools_other_hosts_fetch_have_their_wheels() -> None:
    for name in ("cmake-old", "cmake-new", "ninja", "zig"):
        files = " ".join(f.file for f in LOADED.python[name].files)
        assert "win_amd64" in files and "macosx" in files, name


def test_built_programs_name_their_sources() -> None:
    for pin in LOADED.built.values():
        assert all((ROOT / source).is_file() for source in pin.sources)


def _data() -> dict[str, Any]:
    return tomllib.loads(pins.DATA.read_text(encoding="utf-8"))


@pytest.mark.parametrize("change, words", [
    (lambda d: d["python"]["ninja"].update(packages=["ninja>=1.11"]), "not an exact pin"),
    (lambda d: d["python"]["ninja"]["files"][0].update(sha256="ABC"), "64 lowercase hex"),
    (lambda d: d["python"]["ninja"].update(colour="red"), "python.ninja.colour is not a known"),
    (lambda d: d["python"]["ninja"].update(packages=["ninja==1.12.0"]), "no file is a wheel of"),
    (lambda d: d["debian"]["aarch64-root"]["packages"][0].pop("version"), "version must be"),
    (lambda d: d["built"]["windows-helpers"].update(compiler="gcc"), "no [python.gcc] entry"),
    (lambda d: d.update(schema=2), "expected schema = 1"),
])
def test_a_malformed_entry_is_refused_naming_its_key(change: Any, words: str) -> None:
    data = _data()
    change(data)
    with pytest.raises(ConfigurationError, match=re.escape(words)):
        pins.parse(data)


def test_an_unreadable_file_is_a_configuration_error(tmp_path: Path) -> None:
    broken = tmp_path / "pinned-tools.toml"
    broken.write_text("schema = 1\n[python.x\n")
    with pytest.raises(ConfigurationError, match="is not valid TOML"):
        pins.load(broken)
