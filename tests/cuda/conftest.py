"""Builds of the CUDA delegate, shared by the integration tests of tests/cuda."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from cuda import gpu_variant as variant

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class CudaBuild:
    variant: variant.CudaVariant
    site: Path        # a fresh site-packages: edgert/lib/* + the declared runtime wheel
    library: Path     # <site>/edgert/lib/libedgert_backend_cuda.so
    build_dir: Path   # the pipeline's build folder (its CMakeCache names the toolkit)


def build_variant(name: str, work: Path) -> CudaBuild:
    """The release pipeline's own build of variant ``name`` (shared with the wheel tests),
    run up to its install stage, copied into a fresh site with the declared runtime wheel:
    the file pinned for it by name and sha256 (release/toolchain/pinned-tools.toml, the variant's
    ``runtime.pin``), whatever else the index serves for the declared range today."""
    from release import manifest
    from release.building.pipeline import BuildOptions, Stage, run
    from release.host import Host
    from release.toolchain import pins, toolcache, tools

    loaded = variant.load(variant.variants_dir() / f"{name}.toml")
    options = BuildOptions(platform="linux", variant=name, last_stage=Stage.INSTALL,
                           out_dir=work / "out")
    build_dir = run(manifest.load(ROOT), options, host=Host.current()).build_dir
    site = work / "site"
    shutil.copytree(build_dir / "install", site)
    pinned = tools.pinned_folder(pins.load().python_pin(loaded.runtime.pin))
    shutil.copytree(pinned, site, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(toolcache.MANIFEST))
    return CudaBuild(variant=loaded, site=site,
                     library=site / "edgert" / "lib" / "libedgert_backend_cuda.so",
                     build_dir=build_dir)


@pytest.fixture(scope="session", params=["cu12", "cu13"])
def cuda_build(request: pytest.FixtureRequest,
               tmp_path_factory: pytest.TempPathFactory) -> CudaBuild:
    if os.environ.get("EDGERT_SKIP_CUDA_BUILD"):
        pytest.skip("EDGERT_SKIP_CUDA_BUILD is set")
    return build_variant(request.param, tmp_path_factory.mktemp(request.param))
