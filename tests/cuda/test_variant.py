"""Variant data files and their validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuda import gpu_variant as variant
from release.errors import ConfigurationError

VARIANTS = variant.variants_dir()


def test_shipped_variants_load_and_produce_the_build_record() -> None:
    cu12 = variant.load(VARIANTS / "cu12.toml")
    assert cu12.to_record().to_json() == {
        "major": 12, "claims": ["7.5", "8.0", "8.6", "8.9", "9.0"], "ptx": ["9.0"],
        "runtime_requirement": "nvidia-cuda-runtime-cu12>=12.8,<13; sys_platform == 'linux'",
        "runtime_distribution": "nvidia-cuda-runtime-cu12", "runtime_library": "libcudart.so.12",
        "runtime_dir": "nvidia/cuda_runtime/lib"}
    assert cu12.sass_architectures == (75, 80, 86, 89, 90) and cu12.ptx_architectures == (90,)
    cu13 = variant.load(VARIANTS / "cu13.toml")
    assert cu13.major == 13 and cu13.sass_architectures[-2:] == (100, 120)
    assert cu13.runtime.library == "libcudart.so.13" and cu13.compiler == "nvcc"
    assert cu13.runtime.dir == "nvidia/cu13/lib"


def test_toolchain_requirements_are_pinned() -> None:
    for name in ("cu12", "cu13"):
        loaded = variant.load(VARIANTS / f"{name}.toml")
        assert loaded.toolchain_requirements
        assert all("==" in requirement for requirement in loaded.toolchain_requirements)


def write(tmp_path: Path, text: str) -> Path:
    original = (VARIANTS / "cu12.toml").read_text()
    path = tmp_path / "variant.toml"
    path.write_text(text(original) if callable(text) else text)
    return path


@pytest.mark.parametrize(("edit", "message"), [
    (lambda t: "extra = 1\n" + t, "variant.toml.extra is not a known key"),
    (lambda t: t.replace("major = 12", 'major = "12"'), "variant.toml.major must be an integer"),
    (lambda t: t.replace('"8.6"', '"8.x"'),
     "variant.toml.claims: '8.x' is not a compute capability"),
    (lambda t: t.replace('library = "libcudart.so.12"', "library = 12"),
     "variant.toml.runtime.library must be a string"),
    (lambda t: t.replace('compiler = "nvrtc"', 'compiler = "clang"'), "'clang' is unknown"),
    (lambda t: t.replace('dir = "nvidia/cuda_runtime/lib"', 'dir = "/usr/lib"'),
     "variant.toml.runtime.dir must be relative"),
    (lambda t: t.replace('ptx = ["9.0"]', 'ptx = ["5.0"]'), "older than every claim"),
    (lambda t: t.replace("[toolchain]", "[toolchain]\nextra = 1"),
     "variant.toml.toolchain.extra is not a known key"),
])
def test_invalid_variant_names_the_key(tmp_path: Path, edit, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigurationError) as error:
        variant.load(write(tmp_path, edit))
    assert message in str(error.value)


def test_missing_file_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="cannot read CUDA variant file"):
        variant.load(tmp_path / "absent.toml")
