"""One release of the manifest, resolved: a target x variant with every fact the stages, the
release matrix (``plan``), ``check-set`` and the PEP 517 backend read about it, each worked
out once, here, and handed on:

- the variant as its provider builds it (``build_variant``, the only caller of
  ``load_variant``; ``load_variants`` loads each declared variant once for the matrix);
- the distribution name (``distribution_of``);
- the shipped binaries' search paths and the build record (docs/build-record.md);
- how the host builds it (``route``: the platform's build route, unless the variant cannot be
  cross-built);
- its core metadata (METADATA, entry points, license files: ``metadata``).

Nothing here does work: no tool is looked up for the route beyond what the platform's
``build_route`` reads, nothing is installed or compiled, nothing is written."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from release.build_options import Form
from release.distribution.buildrecord import (
    BuildRecord,
    ComponentRecord,
    ExampleRecord,
    ExtensionRecord,
)
from release.distribution.core_metadata import CoreMetadata
from release.host import Host
from release.manifest import Component, Manifest, Selection, Target, Variant
from release.platform import BuildRoute, Platform, Route, SearchPath, get_platform
from release.variants import BuildVariant, load_variant


def build_variant(declared: Variant) -> BuildVariant:
    """A manifest variant as its provider builds it."""
    return load_variant(declared.name, provider=declared.provider, config=declared.config)


def load_variants(manifest: Manifest) -> dict[str, BuildVariant]:
    """Every declared variant, each loaded from its provider once (name -> variant)."""
    return {declared.name: build_variant(declared) for declared in manifest.variants}


def distribution_of(manifest: Manifest, declared: Variant, form: Form = Form.SEPARATE) -> str:
    """The distribution a wheel of ``declared`` belongs to: the variant's own (the separate
    form), or the project's one distribution for a variant wheel (PEP 825)."""
    if form is Form.VARIANT:
        return manifest.distribution
    return declared.distribution or manifest.distribution


def build_route(platform: Platform, target: Target, variant: BuildVariant,
                host: Host) -> BuildRoute:
    """How ``host`` builds ``variant`` for ``target``: the platform's route, unless the
    variant cannot be cross-built and the route is a cross build."""
    route = platform.build_route(target, host)
    reason = variant.native_only
    if route.route is not Route.CROSS or not reason:
        return route
    return BuildRoute(Route.ELSEWHERE, f"variant {variant.name} is not cross-built: {reason}",
                      fix=f"build it natively, on {target.arch} hardware (the release "
                          "workflow does, on the target's runner)")


def component_file(manifest: Manifest, platform: Platform, component: Component) -> str:
    return f"{manifest.package}/lib/{platform.library_file(component.library)}"


def extension_file(manifest: Manifest, platform: Platform) -> str:
    package, _, module = manifest.extension.rpartition(".")
    return f"{package.replace('.', '/')}/{platform.extension_file(module)}"


def search_paths(manifest: Manifest, platform: Platform, variant: BuildVariant,
                 components: tuple[Component, ...]) -> tuple[SearchPath, ...]:
    """The one decision of where each shipped binary finds its dependencies: the package's
    lib/ folder, plus the variant's runtime folder for components that link it, written by
    the platform's rule. CMake links with these; the fix-up stage checks and applies them."""
    lib = f"{manifest.package}/lib"
    runtime = variant.runtime
    wanted = [(extension_file(manifest, platform), (lib,))]
    for component in components:
        extra = (runtime.dir,) if component.variant_runtime and runtime is not None else ()
        wanted.append((component_file(manifest, platform, component), (lib, *extra)))
    return tuple(SearchPath(binary=binary, folders=folders,
                            entries=platform.search_entries(binary, folders))
                 for binary, folders in wanted)


def build_record(manifest: Manifest, platform: Platform, variant: BuildVariant, *,
                 target: Target, distribution: str, components: tuple[Component, ...],
                 providers: tuple[str, ...] = ()) -> BuildRecord:
    """The facts verify reads from the wheel (docs/build-record.md)."""
    package = manifest.package
    return BuildRecord(
        package=package, distribution=distribution, version=manifest.version,
        target=target.name, variant=variant.name,
        extension=ExtensionRecord(module=manifest.extension,
                                  file=extension_file(manifest, platform),
                                  depends=manifest.extension_depends),
        components=tuple(ComponentRecord(
            name=c.name, kind=c.kind, file=component_file(manifest, platform, c),
            cmake_component=c.cmake_component, cmake_variable=c.cmake_variable,
            opt_in=c.opt_in, depends=c.depends, registers=c.registers, markers=c.markers)
            for c in components),
        cmake_package=f"{package}/lib/cmake/{package}",
        example=ExampleRecord(consumer=f"{package}/examples/consumer",
                              program=f"{package}/models/mlp.edgert",
                              python_module=f"{package}.run_program"),
        providers=providers,
        runtime_dependencies=() if variant.runtime is None else (variant.runtime,),
        sections=_sections(providers, variant.record()))


def _sections(providers: tuple[str, ...], section: Mapping[str, Any] | None
              ) -> dict[str, Mapping[str, Any]]:
    """The variant's own section of the record, under its provider's name."""
    return {providers[0]: section} if providers and section is not None else {}


@dataclass(frozen=True)
class ResolvedRelease:
    """One target x variant of the manifest with the facts every consumer shares. Made by
    ``resolve``; the route and the core metadata are worked out on first use (the backend's
    metadata hook needs no route, ``plan`` no metadata) and then kept."""

    manifest: Manifest
    host: Host
    target: Target
    platform: Platform
    declared: Variant                 # the manifest's entry
    variant: BuildVariant             # as its provider builds it
    form: Form
    distribution: str
    components: tuple[Component, ...]
    search_paths: tuple[SearchPath, ...]
    record: BuildRecord

    @property
    def name(self) -> str:
        """The release matrix's name of the entry: ``linux-x86_64-cu12``."""
        return f"{self.target.name}-{self.declared.name}"

    @cached_property
    def route(self) -> BuildRoute:
        return build_route(self.platform, self.target, self.variant, self.host)

    @cached_property
    def metadata(self) -> CoreMetadata:
        """METADATA for the distribution: every [project] key as the manifest validated it
        (read once, when it was loaded), the distribution name, and the variant's run-time
        requirement appended to Requires-Dist."""
        runtime = self.variant.runtime
        return self.manifest.metadata.for_distribution(
            self.distribution, [] if runtime is None else [runtime.requirement])

    @property
    def extension_file(self) -> str:
        return extension_file(self.manifest, self.platform)

    def component_file(self, component: Component) -> str:
        return component_file(self.manifest, self.platform, component)


def resolve(manifest: Manifest, selection: Selection, *, host: Host,
            form: Form = Form.SEPARATE, variants: Mapping[str, BuildVariant] | None = None
            ) -> ResolvedRelease:
    """The manifest's ``selection`` (``Manifest.select``) as ``host`` builds it.
    ``variants`` are variants already loaded (``load_variants``), so a matrix of many
    targets loads each one once."""
    target, declared, components = selection.target, selection.variant, selection.components
    variant = build_variant(declared) if variants is None else variants[declared.name]
    platform = get_platform(target.platform)
    distribution = distribution_of(manifest, declared, form)
    return ResolvedRelease(
        manifest=manifest, host=host, target=target, platform=platform, declared=declared,
        variant=variant, form=form, distribution=distribution, components=components,
        search_paths=search_paths(manifest, platform, variant, components),
        record=build_record(manifest, platform, variant, target=target,
                            distribution=distribution, components=components,
                            providers=(declared.provider,) if declared.provider else ()))

