"""The CUDA provider's two checks (``coverage``, ``variant-properties``) read the device code
of the wheel's binaries through one shared analysis (``context.analysis(of_wheel)``):
every fatbinary is read once per verify run although both checks use it (counted, not
timed), and each check still says what it said when it read them itself."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from cuda import device_code
from cuda.record import DeviceCodeRecord
from release import manifest as manifest_module
from release.distribution import wheel
from release.distribution.buildrecord import RuntimeDependency
from release.distribution.wheel_variant import WheelVariant, dist_info_text
from release.verify import VerifyOptions, verify_wheel
from tests.conftest import ROOT

DIST_INFO = "demo-1.0.dist-info"
FIXTURES = ROOT / "tests" / "cuda" / "fixtures"


def _fixtures() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_fixtures",
                                                  FIXTURES / "make_fixtures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_fixtures = _fixtures()
RUNTIME = RuntimeDependency(requirement="nvidia-cuda-runtime-cu12>=12.0,<13",
                            distribution="nvidia-cuda-runtime-cu12",
                            library="libcudart.so.12", dir="nvidia/cuda_runtime/lib")
CLAIMS = ("7.5", "8.0", "8.6", "8.9", "9.0")
SASS = tuple(make_fixtures.kernel_cubin(sm) for sm in (75, 80, 86, 89, 90))


def _gpu_wheel(folder: Path, *, sm_arch: tuple[str, ...]) -> Path:
    """A variant wheel with two libraries carrying fatbinaries (SASS for sm_75..sm_90 and
    PTX compute_90 in .nv_fatbin; SASS for the same in relocatable device code's
    __nv_relfatbin), one without, a build record claiming 7.5..9.0 with PTX 9.0, and a
    variant.json claiming ``sm_arch``."""
    record = {"schema": 1, "package": "demo", "target": "linux-x86_64", "components": [],
              "providers": ["cuda"],
              "cuda": DeviceCodeRecord(major=12, claims=CLAIMS, ptx=("9.0",),
                                       runtime=RUNTIME).to_json()}
    providers = manifest_module.load(ROOT).variant_providers
    properties = tuple(sorted(
        [f"nvidia :: sm_arch :: {value}" for value in sm_arch]
        + ["nvidia :: cuda_version_lower_bound :: 12",
           "nvidia :: cuda_version_upper_bound :: 13"]))
    variant = dist_info_text(WheelVariant("cu12", properties), providers)
    files = {
        "demo/__init__.py": b"x = 1\n",
        "demo/_release.json": json.dumps(record).encode(),
        "demo/lib/libgpu.so": make_fixtures.FIXTURES["complete.elf"],
        "demo/lib/librdc.so": make_fixtures.elf_with_section("__nv_relfatbin", make_fixtures
                                                             .container(*SASS)),
        "demo/lib/libplain.so": make_fixtures.FIXTURES["no_device_code.elf"],
        f"{DIST_INFO}/METADATA": b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n"
                                 b"Requires-Dist: nvidia-cuda-runtime-cu12>=12.0,<13\n",
        f"{DIST_INFO}/WHEEL": wheel.wheel_text(["py3-none-manylinux_2_17_x86_64"]).encode(),
        f"{DIST_INFO}/variant.json": variant.encode()}
    path = folder / "demo-1.0-py3-none-manylinux_2_17_x86_64.whl"
    wheel.write_wheel(path, {name: (data, 0o644) for name, data in files.items()},
                      dist_info=DIST_INFO, epoch=315532800)
    return path


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[int]]:
    """Counts the fatbinary sections read (``read_containers``, where the analysis calls
    it) and the analysis computed."""
    reads: list[str] = []
    computed = [0]
    read_containers, of_wheel = device_code.read_containers, device_code.of_wheel

    def counted_read(data: object, **options: str) -> object:
        reads.append(options["where"])
        return read_containers(data, **options)  # type: ignore[arg-type]

    def counted_analysis(*arguments: object) -> object:
        computed[0] += 1
        return of_wheel(*arguments)  # type: ignore[arg-type]
    monkeypatch.setattr(device_code, "read_containers", counted_read)
    monkeypatch.setattr(device_code, "of_wheel", counted_analysis)
    return reads, computed


def test_each_fatbinary_is_read_once_per_run_for_both_checks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _gpu_wheel(tmp_path, sm_arch=("75_real", "80_real", "86_real", "89_real",
                                         "90_real", "90_virtual"))
    reads, computed = _count_reads(monkeypatch)
    report = verify_wheel(path, static=True, options=VerifyOptions(providers=("cuda",)))
    assert report.checks["coverage"] == "ran" and report.checks["variant-properties"] == "ran"
    assert sorted(reads) == ["demo/lib/libgpu.so section .nv_fatbin",
                             "demo/lib/librdc.so section __nv_relfatbin"]
    assert computed == [1]
    # both checks judged what was read: the coverage table, and nothing to say on the claims
    (table,) = [f for f in report.findings if f.check == "coverage" and "table" in f.details]
    assert sorted(table.details["table"]) == ["demo/lib/libgpu.so", "demo/lib/librdc.so"]
    assert not [f for f in report.findings if f.check in ("coverage", "variant-properties")
                and f.severity.value == "error"], report.render_text()
    verify_wheel(path, static=True, options=VerifyOptions(providers=("cuda",)))
    assert len(reads) == 4 and computed == [2], "a new run reads afresh"


def test_the_variant_check_judges_the_shared_device_code(tmp_path: Path) -> None:
    """variant-properties reads the SASS and PTX through the shared analysis: a claim the
    fatbinaries do not hold is still found."""
    path = _gpu_wheel(tmp_path, sm_arch=("75_real", "80_real", "86_real", "89_real",
                                         "90_real", "100_real", "90_virtual"))
    report = verify_wheel(path, static=True, options=VerifyOptions(providers=("cuda",)))
    problems = [f.what for f in report.findings if f.check == "variant-properties"]
    assert "sm_arch :: 100_real but no library ships SASS for sm_100" in problems, problems


def test_an_unreadable_fatbinary_is_one_coverage_error_and_no_variant_error(
        tmp_path: Path) -> None:
    read = device_code.read_all([("a.so", FIXTURES / "bad_magic.elf"),
                                 ("b.so", FIXTURES / "complete.elf")])
    assert [code.file for code in read.codes] == ["b.so"]
    (bad,) = read.unreadable
    assert bad.file == "a.so" and "bad magic" in bad.what and bad.fix
    assert read.sm_numbers(device_code.EntryKind.PTX) == {"90"}
    assert read.sm_numbers(device_code.EntryKind.CUBIN) == {"75", "80", "86", "89", "90"}
