"""The CUDA delegate builds for both variants, carries exactly the claimed device code, links
libcudart dynamically from the runtime wheel and loads without a GPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cuda import coverage_model, cuobjdump, fatbin
from cuda.fatbin import EntryKind
from platforms.linux.loader import origin_relative
from tests.native.support import EXPORTED_API, defined_dynamic_symbols, standard_library_entity

pytestmark = [pytest.mark.integration, pytest.mark.index]
PROBE = Path(__file__).resolve().parent / "load_probe.py"


def dynamic_entries(library: Path) -> str:
    return subprocess.run(["readelf", "-dW", str(library)], capture_output=True, text=True,
                          check=True).stdout


def test_device_code_matches_the_claims(cuda_build) -> None:  # type: ignore[no-untyped-def]
    code = fatbin.read_device_code(cuda_build.library)
    assert code.section == ".nv_fatbin" and len(code.containers) == 1
    cubins = [e.sm for e in code.entries if e.kind is EntryKind.CUBIN]
    ptx = [e.sm for e in code.entries if e.kind is EntryKind.PTX]
    assert sorted(cubins) == list(cuda_build.variant.sass_architectures)
    assert ptx == list(cuda_build.variant.ptx_architectures)
    report = coverage_model.judge([code], claims=cuda_build.variant.claims,
                                  ptx=cuda_build.variant.ptx)
    assert report.ok, report.findings
    row = next(iter(report.table().values()))
    assert all(text.startswith("SASS sm_") for text in row.values())


def test_reader_agrees_with_cuobjdump(cuda_build) -> None:  # type: ignore[no-untyped-def]
    tool = cuobjdump.provision()
    expected = cuobjdump.listing(tool, cuda_build.library)
    listing = cuobjdump.reader_listing(fatbin.read_device_code(cuda_build.library))
    assert expected and listing == expected


def test_links_the_runtime_wheel_dynamically_with_a_relative_search_path(cuda_build) -> None:  # type: ignore[no-untyped-def]
    dynamic = dynamic_entries(cuda_build.library)
    assert f"[{cuda_build.variant.runtime.library}]" in dynamic
    runpath = origin_relative("edgert/lib/x.so", cuda_build.variant.runtime.dir)
    assert f"runpath: [$ORIGIN:{runpath}]" in dynamic
    symbols = defined_dynamic_symbols(cuda_build.library)
    assert "edgert_backend_cuda_component" in symbols
    assert not any("cudaLibraryLoadData" in name for name in symbols)  # no static cudart inside
    # Only its API (cmake/edgert.map), as for the CPU libraries (tests/native/test_host_safety.py)
    assert [name for name in symbols if not EXPORTED_API.match(name)] == []
    assert [name for name in symbols if standard_library_entity(name)] == []


def test_loads_without_a_gpu_and_resolves_cudart_from_the_wheel(cuda_build) -> None:  # type: ignore[no-untyped-def]
    completed = subprocess.run([sys.executable, str(PROBE), str(cuda_build.library)],
                               capture_output=True, text=True, check=False,
                               env={"PATH": "/usr/bin:/bin"})
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout)
    expected = (cuda_build.site / cuda_build.variant.runtime.dir /
                cuda_build.variant.runtime.library).resolve()
    assert [Path(path).resolve() for path in report["cudart"]] == [expected]
    assert report["marker"] == "backend_cuda"
    assert Path(report["backends"]["cuda"]).resolve() == cuda_build.library.resolve()
