"""The CUDA variants as the pipeline sees them (release.variants.BuildVariant): provisioning
the pinned toolchain in the configure stage, the configure arguments it yields, the runtime
wheel dependency and the build record's ``cuda`` section; plus the verify checks CUDA adds."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cuda import coverage, variant_properties
from cuda import gpu_variant as variants
from cuda.toolchain import CudaToolchain, provision
from release.distribution.buildrecord import RuntimeDependency
from release.tool import Tool
from release.variants import Toolchain

CHECKS = (coverage, variant_properties)


@dataclass(frozen=True)
class _Configured:
    toolchain: CudaToolchain
    variant: variants.CudaVariant

    def cmake_arguments(self) -> list[str]:
        return self.toolchain.cmake_arguments(self.variant)

    def tools(self) -> tuple[Tool, ...]:
        return self.toolchain.tools(self.variant)


@dataclass(frozen=True)
class CudaBuildVariant:
    data: variants.CudaVariant

    @property
    def name(self) -> str:
        return self.data.name

    @property
    def runtime(self) -> RuntimeDependency:
        return self.data.runtime

    @property
    def native_only(self) -> str:
        return (f"the {self.name} toolchain from the package index is installed for the build "
                "machine, and the runtime library it links is that machine's")

    def provision(self, *, environ: Mapping[str, str], cache: Path) -> Toolchain:
        return _Configured(provision(self.data, environ=environ, cache=cache), self.data)

    def record(self) -> dict[str, object]:
        return self.data.to_record().to_json()


def build_variant(config: Path) -> CudaBuildVariant:
    """The variant described by ``config`` (cuda/variants/<name>.toml)."""
    return CudaBuildVariant(variants.load(config))
