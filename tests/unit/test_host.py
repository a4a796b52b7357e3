"""One Host value: the machine is read once (Host.current), its architecture named in each
platform's own target words, and the default target follows it whatever the manifest's order.
Planning looks up no compiler: the unit tier runs with none on PATH."""

from __future__ import annotations

import copy
import platform as host_platform
import shutil
import tomllib
from pathlib import Path

import pytest

from release import manifest
from release.build_options import BuildOptions
from release.building.pipeline import make_plan
from release.host import Host, Runner, provide_once
from tests.conftest import ROOT


def project_data(*, reversed_targets: bool = False) -> manifest.Manifest:
    data = copy.deepcopy(tomllib.loads((ROOT / "pyproject.toml").read_text()))
    if reversed_targets:
        targets = data["tool"]["release"]["targets"]
        data["tool"]["release"]["targets"] = dict(reversed(list(targets.items())))
    return manifest.parse(data, ROOT)


@pytest.mark.parametrize(("system", "machine", "linux", "macos", "windows"), [
    ("Darwin", "arm64", "aarch64", "arm64", "arm64"),
    ("Linux", "aarch64", "aarch64", "arm64", "arm64"),
    ("Linux", "x86_64", "x86_64", "x86_64", "amd64"),
    ("Windows", "AMD64", "x86_64", "x86_64", "amd64"),
])
def test_the_host_architecture_is_named_per_platform(
        monkeypatch: pytest.MonkeyPatch, system: str, machine: str, linux: str, macos: str,
        windows: str) -> None:
    monkeypatch.setattr(host_platform, "system", lambda: system)
    monkeypatch.setattr(host_platform, "machine", lambda: machine)
    host = Host.current()
    assert host.system == system.lower()
    assert (host.arch("linux"), host.arch("macos"), host.arch("windows")) == \
        (linux, macos, windows)


@pytest.mark.parametrize("reversed_targets", [False, True])
def test_an_apple_silicon_mac_defaults_to_arm64_whatever_the_target_order(
        reversed_targets: bool) -> None:
    loaded = project_data(reversed_targets=reversed_targets)
    macos = [t.arch for t in loaded.targets if t.platform == "macos"]
    assert macos[0] == ("universal2" if reversed_targets else "arm64")   # the order differs
    assert loaded.default_arch("macos", Host("darwin", "aarch64").arch("macos")) == "arm64"
    assert loaded.default_arch("macos", Host("darwin", "x86_64").arch("macos")) == "x86_64"
    assert loaded.default_arch("linux", Host("linux", "aarch64").arch("linux")) == "aarch64"
    # a host with no target of its own builds the manifest's first
    assert loaded.default_arch("linux", Host("linux", "riscv64").arch("linux")) == \
        [t.arch for t in loaded.targets if t.platform == "linux"][0]


def test_the_plan_holds_the_host_it_was_made_for() -> None:
    host = Host.current()
    plan = make_plan(manifest.load(ROOT), BuildOptions(platform="linux"), environ={}, host=host)
    assert plan.release.host is host and plan.release.target.arch == host.arch("linux")


def test_plans_are_made_with_no_compiler_on_path(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    """Every plan the unit tier makes, with PATH an empty folder: no tool is looked up."""
    monkeypatch.setenv("PATH", str(tmp_path))
    assert shutil.which("cc") is None and shutil.which("c++") is None
    loaded = manifest.load(ROOT)
    for variant in ("cpu", "cu12", "cu13"):
        plan = make_plan(loaded, BuildOptions(platform="linux", variant=variant), environ={},
                         host=Host.current())
        release = plan.release
        assert release.target.arch == release.host.arch("linux") and release.variant.name == variant


def test_the_platform_s_runners_are_provisioned_once_and_only_when_asked() -> None:
    """A Host is a value (frozen, no state of its own): the runners its platform provisions
    are made on the first request no runner of its own answers, and remembered by the
    callable it was given."""
    made: list[str] = []

    def provision() -> list[Runner]:
        made.append("wine")
        return [Runner("x86_64", system="windows")]

    qemu = Runner("aarch64", prefix=("qemu-aarch64",))
    host = Host("linux", "x86_64", emulated=(qemu,), provide=provide_once(provision))
    assert host.runner("x86_64") == Runner("x86_64") and host.runner("aarch64") == qemu
    assert made == []                                  # answered without provisioning
    assert host.runner("x86_64", "windows") == Runner("x86_64", system="windows")
    assert host.runner("x86_64", "windows") is not None and host.runner("riscv64") is None
    assert made == ["wine"]
    assert host == Host("linux", "x86_64", emulated=(qemu,))   # compared as a value
