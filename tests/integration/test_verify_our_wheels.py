"""verify on our own wheels, each changed in one way the pipeline would never produce: the
finding must name the right check, file and cause."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from release.distribution import wheel as wheel_module
from release.verify import verify_wheel
from tests.conftest import BuiltWheel

pytestmark = pytest.mark.integration


def _rewrite(source: Path, folder: Path, *, platform: str | None = None,
             drop_requirement: str | None = None, drop_file: str | None = None) -> Path:
    """A copy of ``source`` with its platform tag, a Requires-Dist or a file changed."""
    entries = wheel_module.read_entries(source)
    dist_info = wheel_module.dist_info_of(entries)
    name = wheel_module.WheelName.parse(source.name)
    if platform is not None:
        text = entries[f"{dist_info}/WHEEL"][0].decode().replace(name.platform, platform)
        entries[f"{dist_info}/WHEEL"] = (text.encode(), 0o644)
        name = wheel_module.WheelName(name.distribution, name.version, name.python, name.abi,
                                      platform)
    if drop_requirement is not None:
        lines = entries[f"{dist_info}/METADATA"][0].decode().splitlines(keepends=True)
        kept = [line for line in lines
                if not line.startswith(f"Requires-Dist: {drop_requirement}")]
        assert len(kept) < len(lines)
        entries[f"{dist_info}/METADATA"] = ("".join(kept).encode(), 0o644)
    if drop_file is not None:
        del entries[drop_file]
    target = folder / name.filename
    wheel_module.write_wheel(target, entries, dist_info=dist_info, epoch=315532800)
    return target


def _errors(path: Path) -> list[tuple[str, str, str]]:
    report = verify_wheel(path, static=True)
    return [(f.check, f.file, f.what) for f in report.findings if f.severity == "error"]


def test_the_cpu_wheel_verifies_clean(cpu_wheel: BuiltWheel) -> None:
    assert _errors(cpu_wheel.path) == []


def test_a_tag_older_than_the_symbols_is_an_error(cpu_wheel: BuiltWheel, tmp_path: Path) -> None:
    retagged = _rewrite(cpu_wheel.path, tmp_path, platform="manylinux_2_17_x86_64")
    report = verify_wheel(retagged, static=True)
    (promise,) = [f for f in report.findings if f.check == "metadata" and f.severity == "error"]
    assert "edgert/lib/libedgert.so" in promise.details["files"], promise   # one root cause
    assert "GLIBC_2.34" in promise.details["by_file"]["edgert/lib/libedgert.so"]
    assert "manylinux_2_17" in promise.what


def test_a_missing_component_library_is_an_error(cpu_wheel: BuiltWheel,
                                                 tmp_path: Path) -> None:
    broken = _rewrite(cpu_wheel.path, tmp_path,
                      drop_file="edgert/lib/libedgert_kernels_quantized.so")
    checks = {check for check, _, _ in _errors(broken)}
    assert {"components", "linkage"} <= checks, checks


def test_cuda_runtime_must_be_declared(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A cu12 wheel whose METADATA lost its CUDA runtime requirement: libcudart then resolves
    only through an undeclared distribution."""
    from release import manifest
    from release.building.pipeline import BuildOptions, VerifyMode, run
    from release.host import Host
    from tests.conftest import ROOT
    result = run(manifest.load(ROOT), BuildOptions(
        platform="linux", variant="cu12", out_dir=tmp_path_factory.mktemp("cu12"),
        verify=VerifyMode.STATIC), host=Host.current())
    assert result.wheel is not None
    broken = _rewrite(result.wheel, tmp_path_factory.mktemp("broken"),
                      drop_requirement="nvidia-cuda-runtime-cu12")
    report = verify_wheel(broken, static=True)
    linkage = [f for f in report.findings if f.check == "linkage" and f.severity == "warning"]
    assert [f.file for f in linkage] == ["edgert/lib/libedgert_backend_cuda.so"], linkage
    assert "nvidia-cuda-runtime-cu12" in linkage[0].what    # the rule for every wheel
    errors = _errors(broken)                                # ours: the build record's promise
    assert any(e[0] == "metadata" and "not in Requires-Dist" in e[2] for e in errors), errors


def test_json_report_is_versioned(cpu_wheel: BuiltWheel) -> None:
    report = verify_wheel(cpu_wheel.path, static=True).to_json()
    assert report["version"] == 1 and report["ok"] is True
    assert json.loads(json.dumps(report)) == report


def test_an_unreachable_index_is_the_environment_not_the_wheel(cpu_wheel: BuiltWheel,
                                                                tmp_path: Path) -> None:
    """sdk-routes needs CMake 3.24 from the index: with the index unreachable and an empty
    cache the check is "not run (environment)" and verify exits 8, not 7."""
    from tests.conftest import run_release
    completed = run_release(
        "verify", str(cpu_wheel.path), "--json",
        env={"RELEASE_CACHE_DIR": str(tmp_path / "cache"),
             "PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_RETRIES": "0",
             "PIP_TIMEOUT": "2", "PIP_NO_CACHE_DIR": "1", "PIP_FIND_LINKS": "",
             "PIP_EXTRA_INDEX_URL": "", "PIP_CONFIG_FILE": "/dev/null"})
    report = json.loads(completed.stdout)
    assert completed.returncode == 8, completed.stderr[-2000:]
    assert report["ok"] is True
    assert report["checks"]["sdk-routes"] == "not run (environment)"
    assert not [f for f in report["findings"] if f["severity"] == "error"]
