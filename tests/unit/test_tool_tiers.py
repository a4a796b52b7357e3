"""The tool tiers (tests/tools.toml, tests/tool_tiers.py): every test they name exists, a tier
is missing exactly when one of its tools is, the installer installs what is missing when it
can and says what will not run when it cannot, and no test skips itself for a missing tool."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

from tests import tool_tiers
from tests.conftest import ROOT

LOADED = tool_tiers.load()
TIERS = {tier.name: tier for tier in LOADED.tiers}


def _functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


@pytest.mark.parametrize("prefix", [prefix for tier in LOADED.tiers for prefix in tier.tests])
def test_every_listed_test_exists(prefix: str) -> None:
    path, _, name = prefix.partition("::")
    assert (ROOT / path).exists(), f"tests/tools.toml names {path}, which does not exist"
    if name:
        assert name in _functions(ROOT / path), f"tests/tools.toml names {prefix}: no such test"


def test_a_tier_is_missing_exactly_when_one_of_its_tools_is() -> None:
    aarch64 = TIERS["aarch64"]
    everything = {"aarch64-linux-gnu-g++", "qemu-aarch64-static", "apt-get"}
    assert aarch64.missing(lambda name: name if name in everything else None) == []
    assert aarch64.missing(lambda name: name if name in everything - {"apt-get"} else None) \
        == ["apt-get"]
    assert aarch64.missing(lambda name: None) == [
        "aarch64-linux-gnu-g++", "qemu-aarch64 or qemu-aarch64-static", "apt-get"]


def test_a_probe_decides_when_the_command_is_there() -> None:
    gpu = TIERS["gpu"]
    present = {"nvidia-smi": "/usr/bin/nvidia-smi"}.get
    assert gpu.missing(present, probe=lambda command: (0, "GPU 0: NVIDIA H100 (UUID: x)\n")) == []
    assert gpu.missing(present, probe=lambda command: (0, "No devices found\n")) == [
        "a working `nvidia-smi -L`"]
    assert gpu.missing(present, probe=lambda command: (9, "")) == ["a working `nvidia-smi -L`"]


def test_every_tier_says_how_to_install_it() -> None:
    for tier in LOADED.tiers:
        assert tier.install_line(), tier.name
    assert TIERS["reproducible"].install_line().startswith(
        "apt-get install --no-install-recommends ")
    assert TIERS["wine"].install_line() == "apt-get install wine64"


def test_node_ids_select_a_test_and_its_parameters_not_its_namesakes() -> None:
    tier = tool_tiers.Tier(name="t", what="w", commands=(), tests=(
        "tests/a/test_x.py::test_one", "tests/b/"))
    assert tier.selects("tests/a/test_x.py::test_one")
    assert tier.selects("tests/a/test_x.py::test_one[cu12]")
    assert not tier.selects("tests/a/test_x.py::test_one_more")
    assert tier.selects("tests/b/test_y.py::test_any")
    assert not tier.selects("tests/a/test_x.py::test_two")


def test_ci_requires_the_tiers_it_can_install_and_no_other() -> None:
    assert tool_tiers.required(TIERS["wine"], "1")
    assert not tool_tiers.required(TIERS["gpu"], "1")
    assert tool_tiers.required(TIERS["gpu"], "gpu, wine")
    assert not tool_tiers.required(TIERS["wine"], "")


def _tiers(*names: str) -> tool_tiers.Tiers:
    return tool_tiers.Tiers(tiers=tuple(TIERS[name] for name in names), speedups=("ccache",))


def test_install_runs_apt_get_once_per_group_as_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tool_tiers.os, "geteuid", lambda: 0)
    installed: set[str] = {"apt-get"}
    calls: list[list[str]] = []

    def run(command: list[str], **options: object) -> subprocess.CompletedProcess[str]:
        calls.append(command)
        if command[1] == "install":
            installed.update({"wine64": "wine", "faketime": "faketime",
                              "diffoscope-minimal": "diffoscope", "unzip": "zipinfo",
                              "ccache": "ccache"}.get(word, word) for word in command)
        return subprocess.CompletedProcess(command, 0, "", "")

    said: list[str] = []
    left = tool_tiers.install(_tiers("wine", "reproducible", "gpu"),
                              which=lambda name: name if name in installed else None,
                              run=run, out=said.append)
    assert calls == [
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "ccache", "wine64"],
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "reprotest",
         "diffoscope-minimal", "disorderfs", "faketime", "unzip"]]
    assert [tier.name for tier in left] == ["gpu"]
    assert any("NOT RUN tier 'gpu'" in line for line in said)


def test_install_says_what_will_not_run_where_it_cannot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tool_tiers.os, "geteuid", lambda: 1000)
    said: list[str] = []

    def run(command: list[str], **options: object) -> subprocess.CompletedProcess[str]:
        raise AssertionError(f"ran {command}")

    left = tool_tiers.install(_tiers("wine"), which=lambda name: None, run=run,
                              out=said.append)
    assert [tier.name for tier in left] == ["wine"]
    assert said == ["test tools: cannot install here (no apt-get)",
                    "test tools: NOT RUN tier 'wine' (needs wine or wine64): "
                    "apt-get install wine64"]


def test_install_does_nothing_where_every_tier_is_here() -> None:
    said: list[str] = []

    def run(command: list[str], **options: object) -> subprocess.CompletedProcess[str]:
        raise AssertionError(f"ran {command}")

    assert tool_tiers.install(_tiers("wine"), which=lambda name: f"/usr/bin/{name}", run=run,
                              out=said.append) == []
    assert said == ["test tools: every tier is here (wine)"]


# A test may skip for what no tool changes (another machine's architecture, an opt-out the
# user set, the corpus's other interpreters), never for a tool: that is a tier.
ALLOWED_SKIPS = {
    "tests/integration/test_aarch64.py": "this machine is aarch64",
    "tests/cuda/conftest.py": "EDGERT_SKIP_CUDA_BUILD is set",
    "tests/native/test_int8_gemm_programs.py": "the x86-64 levels",
    "tests/verify/corpus.py": "this interpreter",
}
SKIP = re.compile(r"pytest\.skip\(|skipif\(|importorskip\(")


def test_no_test_skips_for_a_missing_tool() -> None:
    for path in sorted((ROOT / "tests").rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith("tests/fixtures/") or path == Path(__file__):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if SKIP.search(line):
                allowed = ALLOWED_SKIPS.get(relative)
                assert allowed and allowed in line, (
                    f"{relative}:{number} skips: a test needing a tool belongs to a tool tier "
                    "(tests/tools.toml), reported as not run where the tool is missing")
