"""The fatbinary reader against cuobjdump on a real NVIDIA library from the package index
(cuRAND: 153 entries in 11 containers, LZ4-compressed cubins, one kernel-less container)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cuda import coverage_model, cuobjdump, fatbin
from cuda import gpu_variant as variant
from release.toolchain import pins, tools

pytestmark = [pytest.mark.integration, pytest.mark.index]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def curand() -> Path:
    """libcurand from its pinned wheel (tests/pinned-test-tools.toml)."""
    pin = pins.load(ROOT / "tests" / "pinned-test-tools.toml").python_pin("curand")
    return tools.pinned_folder(pin) / "nvidia" / "curand" / "lib" / "libcurand.so.10"


def test_reader_lists_what_cuobjdump_lists(curand: Path) -> None:
    expected = cuobjdump.listing(cuobjdump.provision(), curand)
    code = fatbin.read_device_code(curand)
    assert len(expected) > 100
    assert cuobjdump.reader_listing(code) == expected
    assert any(entry.compression == "lz4" for entry in code.entries)
    assert any(not container.has_kernels for container in code.containers)


def test_curand_covers_the_cu12_claims(curand: Path) -> None:
    cu12 = variant.load(variant.variants_dir() / "cu12.toml")
    report = coverage_model.judge([fatbin.read_device_code(curand, name="libcurand.so.10")],
                            claims=cu12.claims, ptx=cu12.ptx)
    row = report.table()["libcurand.so.10"]
    assert all(text.startswith("SASS sm_") for text in row.values()), row
    # cuRAND ships architectures edgert does not claim: reported, as the rule requires.
    assert any("no claimed compute capability uses" in f.what for f in report.findings)


def test_file_without_device_code_matches_cuobjdump_exit_255(tmp_path: Path) -> None:
    source = tmp_path / "plain.c"
    source.write_text("int plain(int x) { return x + 1; }\n")
    elf = tmp_path / "libplain.so"   # a shared library with no device code
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(elf), str(source)], check=True)
    assert cuobjdump.listing(cuobjdump.provision(), elf) == []
    assert fatbin.read_device_code(elf).containers == ()
