"""The release matrix comes from the manifest: every target x variant it releases is either a
job of the release workflow or reported as not buildable yet; adding a target or a variant
changes the jobs without touching the workflow, and a buildable target without a runner is
an error rather than a silent gap. How this host builds each entry is the platform's answer."""

from __future__ import annotations

import copy
import json
import logging
import shutil
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from release import manifest
from release.build_options import BuildOptions
from release.building import matrix
from release.building.pipeline import make_plan
from release.building.resolved import ResolvedRelease
from release.errors import CommandError, ConfigurationError, ToolError
from release.host import Host
from release.platform import Route
from tests.conftest import ROOT, release_in_process

X86_64 = Host("linux", "x86_64")
CROSS_TOOLS = {"aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++", "qemu-aarch64", "cc", "c++",
               "llvm-install-name-tool-14", "llvm-lipo-14", "llvm-otool-14"}


@pytest.fixture
def x86_64_host_with_cross_tools(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This host as an x86_64 Linux machine with the aarch64 cross compilers and qemu, and
    LLVM's Mach-O tools (macOS is cross-built with zig, which comes from the index)."""
    monkeypatch.setattr(Host, "current", classmethod(lambda cls, **_: X86_64))
    monkeypatch.setattr(shutil, "which",
                        lambda name, *args, **kwargs: f"/usr/bin/{name}"
                        if name in CROSS_TOOLS else None)
    yield


def project_data() -> dict[str, Any]:
    return copy.deepcopy(tomllib.loads((ROOT / "pyproject.toml").read_text()))


def entries_by_name(loaded: manifest.Manifest) -> dict[str, matrix.MatrixEntry]:
    return {entry.name: entry for entry in matrix.release_matrix(loaded, Host.current())}


def test_every_declared_pair_is_built_or_reported(x86_64_host_with_cross_tools: None) -> None:
    loaded = manifest.load(ROOT)
    entries = entries_by_name(loaded)
    expected = {f"{t.name}-{v.name}" for t in loaded.targets for v in loaded.variants
                if v.ships_on(t.platform)}
    assert set(entries) == expected
    built = {job["name"] for job in matrix.workflow_jobs(loaded, list(entries.values()))}
    reported = {name for name, entry in entries.items() if not entry.route.buildable}
    assert built | reported == expected and not built & reported
    assert built == {f"linux-{arch}-{variant}" for arch in ("x86_64", "aarch64")
                     for variant in ("cpu", "cu12", "cu13")} | {
        "macos-arm64-cpu", "macos-x86_64-cpu", "macos-universal2-cpu", "windows-amd64-cpu"}
    assert reported == set()


def test_gpu_variants_are_released_for_linux_only() -> None:
    entries = entries_by_name(manifest.load(ROOT))
    assert "linux-aarch64-cu13" in entries
    assert not [name for name in entries if name.startswith(("macos", "windows"))
                and not name.endswith("-cpu")]


def test_how_this_host_builds_each_entry(x86_64_host_with_cross_tools: None) -> None:
    entries = entries_by_name(manifest.load(ROOT))
    assert entries["linux-x86_64-cu12"].route.route is Route.NATIVE
    cross = entries["linux-aarch64-cpu"].route
    assert cross.route is Route.CROSS and cross.reachable
    assert "aarch64-linux-gnu-g++" in cross.detail and "qemu-aarch64" in cross.detail
    gpu = entries["linux-aarch64-cu12"].route
    assert gpu.route is Route.ELSEWHERE and not gpu.reachable and gpu.buildable
    assert "toolchain" in gpu.detail and "aarch64 hardware" in gpu.fix
    mac = entries["macos-universal2-cpu"].route
    assert mac.route is Route.CROSS and mac.reachable
    assert "aarch64-macos.11.0, x86_64-macos.10.13" in mac.detail
    assert "programs not run" in mac.detail


def test_a_cross_build_without_compilers_says_what_to_install(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name, *args, **kwargs: None)
    route = {entry.name: entry for entry in matrix.release_matrix(
        manifest.load(ROOT), X86_64)}["linux-aarch64-cpu"].route
    assert route.route is Route.CROSS and not route.reachable
    assert route.fix == "apt-get install g++-aarch64-linux-gnu"


def test_jobs_carry_what_the_workflow_reads(x86_64_host_with_cross_tools: None) -> None:
    loaded = manifest.load(ROOT)
    entries = matrix.release_matrix(loaded, Host.current())
    jobs = {job["name"]: job for job in matrix.workflow_jobs(loaded, entries)}
    assert jobs["linux-aarch64-cu12"] == {
        "name": "linux-aarch64-cu12", "target": "linux-aarch64", "platform": "linux",
        "arch": "aarch64", "archs": "aarch64", "variant": "cu12", "distribution": "edgert-cu12",
        "runner": "ubuntu-24.04-arm", "python": "3.9"}


def test_cibuildwheel_spells_windows_architectures_in_capitals() -> None:
    assert matrix.cibuildwheel_archs(manifest.Target("w", "windows", "amd64")) == "AMD64"
    assert matrix.cibuildwheel_archs(manifest.Target("m", "macos", "universal2")) == "universal2"


def test_a_new_target_without_a_runner_cannot_drop_out_silently() -> None:
    data = project_data()
    data["tool"]["release"]["targets"]["linux-riscv64"] = {"platform": "linux",
                                                           "arch": "riscv64"}
    loaded = manifest.parse(data, ROOT)
    entries = matrix.release_matrix(loaded, Host.current())
    with pytest.raises(ConfigurationError, match="linux-riscv64.runner is missing"):
        matrix.workflow_jobs(loaded, entries)
    data["tool"]["release"]["targets"]["linux-riscv64"]["runner"] = "riscv-runner"
    loaded = manifest.parse(data, ROOT)
    jobs = matrix.workflow_jobs(loaded, matrix.release_matrix(loaded, Host.current()))
    assert {job["name"] for job in jobs if job["target"] == "linux-riscv64"} == {
        "linux-riscv64-cpu", "linux-riscv64-cu12", "linux-riscv64-cu13"}


def test_a_new_variant_is_a_job_on_every_platform_it_ships_on() -> None:
    data = project_data()
    data["tool"]["release"]["variants"]["cu14"] = {
        "distribution": "edgert-cu14", "provider": "cuda",
        "config": "cuda/variants/cu13.toml", "platforms": ["linux"]}
    loaded = manifest.parse(data, ROOT)
    jobs = matrix.workflow_jobs(loaded, matrix.release_matrix(loaded, Host.current()))
    assert {job["target"] for job in jobs if job["variant"] == "cu14"} == {
        "linux-x86_64", "linux-aarch64"}


def test_a_variant_names_only_known_platforms() -> None:
    data = project_data()
    data["tool"]["release"]["variants"]["cu12"]["platforms"] = ["beos"]
    with pytest.raises(ConfigurationError, match="variants.cu12.platforms has 'beos'"):
        manifest.parse(data, ROOT)


def test_the_pipeline_refuses_what_the_matrix_leaves_out(
        x86_64_host_with_cross_tools: None) -> None:
    loaded = manifest.load(ROOT)
    with pytest.raises(ConfigurationError, match="not released for macos"):
        make_plan(loaded, BuildOptions(platform="macos", arch="arm64", variant="cu12"),
                  environ={},
                  host=Host.current())
    with pytest.raises(ToolError, match="variant cu12 is not cross-built") as refused:
        make_plan(loaded, BuildOptions(platform="linux", arch="aarch64", variant="cu12"),
                  environ={},
                  host=Host.current())
    assert "aarch64 hardware" in refused.value.fix
    assert make_plan(loaded, BuildOptions(platform="linux", arch="aarch64"), environ={},
                  host=Host.current())


def test_the_oldest_python_comes_from_requires_python() -> None:
    data = project_data()
    data["project"]["requires-python"] = ">=3.10"
    assert matrix.lowest_python(manifest.parse(data, ROOT)) == "3.10"
    assert matrix.lowest_python(manifest.load(ROOT)) == "3.9"


def test_the_text_names_each_entry_and_its_route(x86_64_host_with_cross_tools: None) -> None:
    loaded = manifest.load(ROOT)
    text = matrix.render_text(loaded, matrix.release_matrix(loaded, Host.current()))
    lines = text.splitlines()
    assert lines[0].startswith("edgert 0.1.0: 10 wheels in the release matrix; 10 built by the "
                               "release, 0 not buildable yet; 8 buildable on this host")
    row = next(line for line in lines if line.startswith("linux-aarch64     cpu"))
    assert "ubuntu-24.04-arm" in row and "cross+emulated" in row
    assert sum("not buildable yet" in line for line in lines) == 1   # the heading only


def test_build_builds_what_this_host_reaches_and_goes_on_after_a_failure(
        x86_64_host_with_cross_tools: None, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    loaded = manifest.load(ROOT)
    asked: list[tuple[str, str | None, str]] = []

    class Result:
        def __init__(self, wheel: Path) -> None:
            self.wheel = wheel

    def fake_run(given: manifest.Manifest, options: BuildOptions, *, host: Host,
                 resolved: ResolvedRelease) -> Result:
        assert host is resolved.host
        asked.append((options.platform, options.arch, options.variant))
        # the entry's resolved release is handed on, not resolved again
        assert (resolved.target.arch, resolved.declared.name) == (options.arch, options.variant)
        if options.variant == "cu13":
            raise CommandError("native build failed", command=["ninja"], returncode=1,
                               output="", fix="read the log")
        return Result(tmp_path / f"{options.arch}-{options.variant}.whl")

    monkeypatch.setattr(matrix, "run_pipeline", fake_run)
    caplog.set_level(logging.INFO, logger="release")
    outcomes = matrix.build_reachable(
        loaded, matrix.release_matrix(loaded, Host.current()),
        lambda entry: BuildOptions(platform=entry.target.platform, arch=entry.target.arch,
                                   variant=entry.variant.name))
    assert asked == [("linux", "x86_64", "cpu"), ("linux", "x86_64", "cu12"),
                     ("linux", "x86_64", "cu13"), ("linux", "aarch64", "cpu"),
                     ("macos", "arm64", "cpu"), ("macos", "x86_64", "cpu"),
                     ("macos", "universal2", "cpu"), ("windows", "amd64", "cpu")]
    status = {outcome.entry.name: outcome.status for outcome in outcomes}
    assert status["linux-x86_64-cu13"] == "failed: native build failed (fix: read the log)"
    assert status["linux-aarch64-cpu"] == "built aarch64-cpu.whl"
    assert status["linux-aarch64-cu12"].startswith("not built here (needs another host")
    assert status["macos-universal2-cpu"] == "built universal2-cpu.whl"
    assert status["windows-amd64-cpu"] == "built amd64-cpu.whl"
    # before the first build, what it is about to do and how long that takes; then each
    # wheel says which of how many it is
    messages = [record.getMessage() for record in caplog.records]
    assert messages[0].startswith("building 8 wheels, one after the other: linux-x86_64-cpu, ")
    assert "about 22 minutes" in messages[0]
    assert "=== linux-aarch64-cpu (cross+emulated): wheel 4 of 8 ===" in messages


def test_plan_cli_prints_the_matrix_and_the_jobs() -> None:
    completed = release_in_process("plan", "--json", "--project", str(ROOT))
    assert completed.returncode == 0, completed.stderr
    plan = json.loads(completed.stdout)
    assert plan["version"] == 1 and plan["release_version"] == "0.1.0"
    assert len(plan["entries"]) == 10 and len(plan["build"]) == 10
    assert plan["not_buildable"] == []
    assert {job["runner"] for job in plan["build"] if job["name"].startswith("macos")} == {
        "macos-15", "macos-15-intel"}
    text = release_in_process("plan", "--project", str(ROOT))
    assert text.returncode == 0 and "windows-amd64" in text.stdout
