"""Fixture wheels, each broken in one way, are reported with the right finding; the good one
passes clean. Static checks run in the fast suite; running programs is marked integration."""

from __future__ import annotations

from pathlib import Path

import pytest

from release.findings import Severity
from release.verify import Report, VerifyOptions, verify_wheel


def errors(report: Report) -> set[tuple[str, str]]:
    return {(f.check, f.file) for f in report.findings if f.severity is Severity.ERROR}


def test_good_wheel_passes_static(fixture_wheels: dict[str, Path]) -> None:
    report = verify_wheel(fixture_wheels["good"], static=True)
    assert report.ok, report.render_text()
    table = next(f for f in report.findings if f.check == "ownership").details["table"]
    assert table["op:add"] == ["edgert/lib/libedgert_kernels.so"]
    assert table["op:quantized_matmul"] == ["edgert/lib/libedgert_kernels_quantized.so"]
    assert table["backend:cpu"] == ["edgert/lib/libedgert_backend_cpu.so"]
    assert report.checks["load-matrix"] == "not run" and report.checks["sdk-routes"] == "not run"


def test_old_layout_plugin_static(fixture_wheels: dict[str, Path]) -> None:
    found = errors(verify_wheel(fixture_wheels["old_layout_plugin"], static=True))
    plugin = "edgert/lib/libedgert_export_plugin.so"
    assert ("ownership", plugin) in found
    assert ("private-copies", plugin) in found


def test_escaping_search_path(fixture_wheels: dict[str, Path]) -> None:
    report = verify_wheel(fixture_wheels["escaping_search_path"], static=True)
    assert errors(report) == {("search-path", "edgert/lib/libedgert_kernels.so")}
    assert any("leaves site-packages" in f.what for f in report.findings)


def test_missing_library(fixture_wheels: dict[str, Path]) -> None:
    report = verify_wheel(fixture_wheels["missing_library"], static=True)
    assert ("components", "edgert/lib/libedgert_kernels_quantized.so") in errors(report)
    (missing,) = [f for f in report.findings if f.check == "linkage" and f.severity == "error"]
    assert missing.details["needed"] == "libedgert_kernels_quantized.so"
    assert "edgert/_C.abi3.so" in missing.details["files"]   # one finding, every file named


def test_undeclared_dependency(fixture_wheels: dict[str, Path]) -> None:
    report = verify_wheel(fixture_wheels["undeclared_dependency"], static=True)
    backend = "edgert/lib/libedgert_backend_cpu.so"
    linkage = [f for f in report.findings if f.check == "linkage" and f.file == backend]
    assert [f.severity for f in linkage] == [Severity.WARNING]   # the rule for every wheel
    assert linkage[0].details["distribution"] == "nvidia-cuda-runtime-cu12"
    assert ("search-path", backend) in errors(report)    # our build record's promise


def test_build_path_leak(fixture_wheels: dict[str, Path], fixture_build_dir: Path) -> None:
    options = VerifyOptions(build_paths=(str(fixture_build_dir),))
    report = verify_wheel(fixture_wheels["build_path_leak"], static=True, options=options)
    assert errors(report) == {("leaks", "edgert/lib/libedgert_kernels.so")}
    clean = verify_wheel(fixture_wheels["good"], static=True, options=options)
    assert clean.ok


@pytest.mark.integration
def test_good_wheel_passes_everything(fixture_wheels: dict[str, Path]) -> None:
    report = verify_wheel(fixture_wheels["good"])
    assert report.ok, report.render_text()
    assert report.checks["load-matrix"] == "ran" and report.checks["sdk-routes"] == "ran"


@pytest.mark.integration
def test_old_layout_plugin_aborts_in_the_load_matrix(fixture_wheels: dict[str, Path]) -> None:
    report = verify_wheel(fixture_wheels["old_layout_plugin"])
    plugin = "edgert/lib/libedgert_export_plugin.so"
    quantized = "edgert/lib/libedgert_kernels_quantized.so"
    failures = [f for f in report.findings if f.check == "load-matrix"
                and f.severity is Severity.ERROR and len(f.details["order"]) == 2]
    orders = {tuple(f.details["order"]) for f in failures}
    assert (plugin, quantized) in orders and (quantized, plugin) in orders
    assert all("Re-registering op:quantized_matmul" in f.details["stderr"] for f in failures)


@pytest.mark.integration
def test_optin_leak_into_default_cmake_set(fixture_wheels: dict[str, Path]) -> None:
    report = verify_wheel(fixture_wheels["optin_leak"])
    leaks = [f for f in report.findings if f.check == "sdk-routes"
             and f.severity is Severity.ERROR]
    assert len(leaks) == 1 and "opt-in component 'kernels_quantized'" in leaks[0].what


@pytest.mark.integration
def test_cmake_routes_disagree(fixture_wheels: dict[str, Path]) -> None:
    report = verify_wheel(fixture_wheels["routes_disagree"])
    default = [f for f in report.findings if f.check == "sdk-routes"
               and f.details.get("request") == "default"]
    assert default and default[0].severity is Severity.ERROR
    assert "libedgert_backend_cpu.so" not in default[0].details["old"]
    assert "libedgert_backend_cpu.so" in default[0].details["new"]


@pytest.mark.integration
def test_load_matrix_pair_cap_is_reported(fixture_wheels: dict[str, Path]) -> None:
    report = verify_wheel(fixture_wheels["good"], options=VerifyOptions(max_pairs=1))
    capped = [f for f in report.findings if f.check == "load-matrix"
              and f.severity is Severity.WARNING]
    assert len(capped) == 1 and "over the cap of 2" in capped[0].what
    ran = next(f for f in report.findings if f.check == "load-matrix"
               and f.severity is Severity.INFO)
    assert ran.what.startswith("8 load combinations run, 5 collision candidates")
