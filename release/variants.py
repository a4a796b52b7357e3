"""The interface a build variant implements, the CPU variant, and the registry that finds
the others through the manifest.

A variant is what a wheel carries beyond the CPU build. It adds configure arguments (after
provisioning its toolchain, in the configure stage), may bring a run-time dependency from
another distribution (its requirement, library and site-packages folder), writes its section
of the build record, and may contribute verify checks. ``[tool.release.variants.<name>]``
names the package that provides it (``provider = "cuda"``) and that package's data file
(``config``); this module imports the provider by that name, the way ``release.platform``
imports ``platforms.<os>``, and never by a name of its own."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from release.distribution.buildrecord import RuntimeDependency
from release.errors import ConfigurationError
from release.tool import Tool


class Toolchain(Protocol):
    """What provisioning a variant produced: the configure arguments it needs, and what it
    brings to the toolchain (the SBOM's formulation)."""

    def cmake_arguments(self) -> list[str]: ...

    def tools(self) -> tuple[Tool, ...]: ...


class BuildVariant(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def runtime(self) -> RuntimeDependency | None:
        """The run-time dependency from another distribution, if any."""

    @property
    def native_only(self) -> str | None:
        """Why the variant is built only on a machine of the target's architecture (e.g. its
        toolchain is installed for the build machine and links its libraries); None when it
        can be cross-built."""

    def provision(self, *, environ: Mapping[str, str], cache: Path) -> Toolchain:
        """Installs or finds the variant's toolchain (may run pip; raises ToolError)."""

    def record(self) -> Mapping[str, Any] | None:
        """The variant's own section of the build record (JSON), written under its
        provider's name and read back by the provider's checks; None: no section."""


class Provider(Protocol):
    """A package that provides variants: ``build_variant(config)`` and the checks it adds."""

    CHECKS: Sequence[object]    # verify checks (release.verify.checks.Check)

    def build_variant(self, config: Path) -> BuildVariant: ...


@dataclass(frozen=True)
class _NoToolchain:
    def cmake_arguments(self) -> list[str]:
        return []

    def tools(self) -> tuple[Tool, ...]:
        return ()


@dataclass(frozen=True)
class CpuVariant:
    """The CPU build: nothing to provision, no run-time dependency, nothing to record."""

    name: str = "cpu"
    runtime: RuntimeDependency | None = None
    native_only: str | None = None

    def provision(self, *, environ: Mapping[str, str], cache: Path) -> Toolchain:
        return _NoToolchain()

    def record(self) -> Mapping[str, Any] | None:
        return None


def load_provider(name: str) -> Provider:
    """Imports the provider package ``name`` (a top-level package of the project)."""
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError:
        raise ConfigurationError(f"no variant provider package '{name}'",
                                 fix="correct the variant's `provider` in [tool.release] "
                                     "(a package next to pyproject.toml)") from None
    if not callable(getattr(module, "build_variant", None)) or not hasattr(module, "CHECKS"):
        raise ConfigurationError(f"package '{name}' is not a variant provider",
                                 fix="a provider defines build_variant(config) and CHECKS")
    provider: Provider = module
    return provider


def load_variant(name: str, *, provider: str | None, config: Path | None) -> BuildVariant:
    """The variant ``name`` as its provider builds it from ``config`` (the CPU variant when
    the manifest names no provider)."""
    if provider is None:
        return CpuVariant(name)
    if config is None:
        raise ConfigurationError(f"variant '{name}' names provider '{provider}' but no config",
                                 fix=f"add config = \"...\" to [tool.release.variants.{name}]")
    return load_provider(provider).build_variant(config)
