"""Coverage rules: SASS by major/minor, `a` exactly, `f` by family, PTX forward with the
driver its ISA needs; missing and unclaimed architectures are errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuda import coverage_model, fatbin
from cuda.gpu_variant import ComputeCapability
from cuda.record import DeviceCodeRecord
from release.distribution.buildrecord import RuntimeDependency
from release.findings import Severity

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CU12_CLAIMS = ("7.5", "8.0", "8.6", "8.9", "9.0")


def claims(*texts: str) -> tuple[ComputeCapability, ...]:
    return tuple(ComputeCapability.parse(text) for text in texts)


def judge(name: str, claimed: tuple[str, ...],
          ptx: tuple[str, ...] = ()) -> coverage_model.CoverageReport:
    code = fatbin.read_device_code(FIXTURES / name, name=name)
    return coverage_model.judge([code], claims=claims(*claimed), ptx=claims(*ptx))


def device(claimed: tuple[str, ...], ptx: tuple[str, ...] = ()) -> DeviceCodeRecord:
    """The build record's device-code section, typed as the wheel's record carries it."""
    return DeviceCodeRecord(major=12, claims=claimed, ptx=ptx, runtime=RuntimeDependency(
        requirement="nvidia-cuda-runtime-cu12>=12.0,<13", distribution="nvidia-cuda-runtime-cu12",
        library="libcudart.so.12", dir="nvidia/cuda_runtime/lib"))


def errors(report: coverage_model.CoverageReport) -> list[str]:
    return [f.what for f in report.findings if f.severity is Severity.ERROR]


def test_complete_library_passes_with_sass_and_ptx_jit() -> None:
    report = judge("complete.elf", (*CU12_CLAIMS, "12.0"), ("9.0",))
    assert report.ok, errors(report)
    row = report.table()["complete.elf"]
    assert row["8.6"] == "SASS sm_86" and row["9.0"] == "SASS sm_90"
    assert row["12.0"] == "PTX-JIT compute_90 (driver >= 12.9)"


def test_missing_claimed_arch_fails_and_minor_forward_sass_counts() -> None:
    report = judge("missing_arch.elf", CU12_CLAIMS)
    row = report.table()["missing_arch.elf"]
    assert row["7.5"] == "missing" and row["8.6"] == "SASS sm_80" and row["8.9"] == "SASS sm_80"
    assert errors(report) == ["no device code runs on claimed compute capability 7.5"]


def test_arch_specific_cubin_does_not_cover_another_minor() -> None:
    report = judge("arch_specific.elf", ("10.0", "10.3"))
    assert report.table()["arch_specific.elf"] == {"10.0": "SASS sm_100a", "10.3": "missing"}
    assert not report.ok


def test_family_cubin_covers_later_minors_of_its_major_only() -> None:
    report = judge("family_specific.elf", ("10.0", "10.3"))
    assert report.ok
    assert report.table()["family_specific.elf"]["10.3"] == "SASS sm_100f"
    assert judge("family_specific.elf", ("10.0", "12.0")).table()[
        "family_specific.elf"]["12.0"] == "missing"


def test_compressed_entries_are_judged_from_headers() -> None:
    report = judge("compressed.elf", ("8.6", "8.9", "9.0"), ("8.6",))
    row = report.table()["compressed.elf"]
    assert row == {"8.6": "SASS sm_86", "8.9": "SASS sm_86",
                   "9.0": "PTX-JIT compute_86 (driver >= 13.0)"}
    assert report.ok


def test_unclaimed_architecture_is_an_error() -> None:
    report = judge("complete.elf", ("8.0", "8.6", "8.9", "9.0"), ("9.0",))
    assert errors(report) == ["ships sm_75 code that no claimed compute capability uses"]
    report = judge("complete.elf", ("7.5", "8.0", "8.6", "8.9"))
    assert errors(report) == ["ships sm_90 code that no claimed compute capability uses",
                              "ships compute_90 code that no claimed compute capability uses"]


def test_kernel_less_dlink_container_is_not_judged() -> None:
    report = judge("with_dlink.elf", ("9.0", "12.0"), ("9.0",))
    assert report.ok, errors(report)
    assert report.table()["with_dlink.elf"]["12.0"] == "PTX-JIT compute_90 (driver >= 13.0)"


def test_libraries_without_device_code_are_skipped_but_claims_need_one() -> None:
    report = judge("no_device_code.elf", CU12_CLAIMS)
    assert report.rows == ()
    assert errors(report) == ["compute capabilities are claimed but no library carries device code"]


@pytest.mark.parametrize(("entry_flags", "gpu", "expected"), [
    (0x1, "8.6", True), (0x1, "9.0", False), (0x100001, "8.0", True), (0x100001, "8.6", False),
    (0x200001, "8.9", True), (0x200001, "7.5", False)])
def test_runs_on_rules(entry_flags: int, gpu: str, expected: bool) -> None:
    entry = fatbin.FatbinEntry(kind=fatbin.EntryKind.CUBIN, kind_code=2, sm=80, version=(1, 8),
                               flags=entry_flags, offset=0, header_size=64, payload_size=0,
                               uncompressed_size=None, has_kernels=True)
    assert coverage_model.runs_on(entry, ComputeCapability.parse(gpu)) is expected


def test_ptx_driver_table() -> None:
    assert coverage_model.minimum_driver((8, 8)) == "12.9"
    assert coverage_model.minimum_driver((9, 0)) == "13.0"
    assert coverage_model.minimum_driver((99, 0)) is None


def test_table_text_lists_every_claim() -> None:
    text = judge("missing_arch.elf", CU12_CLAIMS).table_text()
    assert text.splitlines()[0].split() == ["library", *CU12_CLAIMS]
    assert "missing" in text.splitlines()[1]


def test_check_wheel_judges_against_the_build_record() -> None:
    files = [("edgert/lib/libedgert_backend_cuda.so", FIXTURES / "complete.elf"),
             ("edgert/lib/libedgert.so", FIXTURES / "no_device_code.elf")]
    findings = coverage_model.check_wheel(files, device(CU12_CLAIMS, ptx=("9.0",)))
    assert [f.severity for f in findings] == [Severity.INFO]
    assert list(findings[0].details["table"]) == ["edgert/lib/libedgert_backend_cuda.so"]


def test_check_wheel_reports_instead_of_raising() -> None:
    files = [("a.so", FIXTURES / "bad_magic.elf"), ("b.so", FIXTURES / "complete.elf")]
    cpu = coverage_model.check_wheel(files, None)
    assert [(f.file, f.severity) for f in cpu] == [("a.so", Severity.ERROR),
                                                   ("b.so", Severity.ERROR)]
    assert "unreadable fatbinary" in cpu[0].what and "claims no compute capability" in cpu[1].what
    broken = coverage_model.check_wheel(files[1:], device(("eight",)))
    assert broken[0].what.startswith("build record: cuda.claims")
