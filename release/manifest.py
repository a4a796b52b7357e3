"""The manifest: what the wheel ships, read from ``[tool.release]`` in pyproject.toml.

Parsed once at the edge into frozen dataclasses; unknown keys and wrong types are
ConfigurationErrors naming the key (``tool.release.components.kernels.opt-in``). Every value
is bounded before it is used: a text longer than its field could need (a version of
thousands of digits, a name longer than a file name allows), a list or key out of proportion,
or a job count beyond any machine is one line too, with the value cut short in it."""

from __future__ import annotations

import functools
import importlib.util
import keyword
import pkgutil
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from release._toml import read_toml
from release.build_options import KEYS as OPTION_KEYS
from release.build_options import check_default, shown
from release.distribution.core_metadata import ProjectMetadata, project_metadata
from release.distribution.wheel_variant import (
    NULL_LABEL,
    VariantProvider,
    WheelVariant,
    check_label,
    parse_properties,
)
from release.errors import ConfigurationError

COMPONENT_KINDS = ("library", "plugin")
REGISTRATION_KINDS = ("operators", "backends")


@functools.cache
def platform_names() -> tuple[str, ...]:
    """The platforms a manifest may name: each package in the ``platforms`` folder beside
    release/ (found, not imported: release/ imports no platform), so a platform is added by
    its folder alone."""
    spec = importlib.util.find_spec("platforms")
    locations = spec.submodule_search_locations if spec is not None else None
    return tuple(sorted(module.name for module in pkgutil.iter_modules(locations or [])
                        if module.ispkg))


MAX_TEXT = 1024          # any string of the manifest but the readme's and license's text
MAX_ITEMS = 1000         # any list of the manifest (classifiers, dependencies, depends...)
MAX_KEY = 128            # a table key (a component, variant or target name, a URL label)
MAX_NAME = 64            # a distribution, component, library, variant or target name
MAX_VERSION = 100        # project.version (PEP 440 sets no bound; no real one nears it)


@dataclass(frozen=True)
class Component:
    name: str
    library: str                      # base name: "edgert_kernels" -> libedgert_kernels.so
    kind: str = "library"             # "library" (a CMake SDK component) or "plugin"
    cmake_component: str | None = None
    cmake_variable: str | None = None  # opt-in components are offered through this variable
    depends: tuple[str, ...] = ()
    opt_in: bool = False
    registers: tuple[str, ...] = ()
    markers: tuple[str, ...] = ()
    variants: tuple[str, ...] = ()    # empty: shipped by every variant
    variant_runtime: bool = False     # links the variant's run-time dependency (libcudart)

    def shipped_by(self, variant: str) -> bool:
        return not self.variants or variant in self.variants


@dataclass(frozen=True)
class Variant:
    name: str
    distribution: str | None = None   # distribution name; None: the project's own name
    provider: str | None = None       # package implementing it (release.variants); None: CPU
    config: Path | None = None        # the provider's data file (cuda/variants/cu12.toml)
    platforms: tuple[str, ...] = ()   # released for targets of these platforms; empty: all
    properties: tuple[str, ...] = ()  # what its variant wheel claims (PEP 825); none: null

    @property
    def label(self) -> str:
        """Its variant wheel's label: its name, or ``null`` for the variant without
        properties."""
        return self.name if self.properties else NULL_LABEL

    @property
    def wheel_variant(self) -> WheelVariant:
        return WheelVariant(self.label, self.properties)

    def ships_on(self, platform: str) -> bool:
        return not self.platforms or platform in self.platforms


@dataclass(frozen=True)
class Target:
    name: str                         # "linux-x86_64"
    platform: str                     # "linux" | "macos" | "windows"
    arch: str
    runner: str | None = None         # the CI machine that builds it natively (docs/release.md)


@dataclass(frozen=True)
class Manifest:
    root: Path                        # the project folder holding pyproject.toml
    distribution: str
    version: str
    package: str
    native_source: Path
    python_source: Path
    extension: str
    extension_depends: tuple[str, ...]
    components: tuple[Component, ...]
    variants: tuple[Variant, ...]
    targets: tuple[Target, ...]
    # the [project] table, for METADATA (release/distribution/core_metadata.py)
    project: dict[str, Any]
    defaults: dict[str, object] = field(default_factory=dict)  # [tool.release.defaults]
    # [tool.release.variant-providers]: the provider plugin of each property namespace
    variant_providers: tuple[VariantProvider, ...] = ()
    # [project] validated by parse (release/distribution/core_metadata.py): read through
    # ``metadata``
    validated_project: ProjectMetadata | None = field(default=None, repr=False, compare=False)

    @property
    def metadata(self) -> ProjectMetadata:
        """``[project]`` as parse validated it, kept so a build reads it once (a copy of the
        manifest with another [project] table must be parsed again, not reuse it)."""
        if self.validated_project is None or self.validated_project.project != self.project:
            raise ConfigurationError("this manifest's [project] is not the one that was "
                                     "validated", fix="make the manifest with "
                                     "release.manifest.load or parse")
        return self.validated_project

    def component(self, name: str) -> Component:
        for component in self.components:
            if component.name == name:
                return component
        raise ConfigurationError(f"unknown component '{name}'",
                                 fix=f"use one of: {', '.join(c.name for c in self.components)}")

    def components_for(self, variant: str) -> tuple[Component, ...]:
        return tuple(c for c in self.components if c.shipped_by(variant))

    def variant(self, name: str) -> Variant:
        for variant in self.variants:
            if variant.name == name:
                return variant
        raise ConfigurationError(f"unknown variant '{name}'",
                                 fix=f"use one of: {', '.join(v.name for v in self.variants)}")

    @property
    def providers(self) -> tuple[str, ...]:
        """The variant provider packages the manifest names, each once."""
        return tuple(dict.fromkeys(v.provider for v in self.variants if v.provider))

    def select(self, platform: str, arch: str | None, variant: str, *,
               own_arch: str = "") -> Selection:
        """What a build of ``variant`` for ``platform`` makes: the target of ``arch``, or
        with none the host's own (``own_arch``) when there is a target for it, else the
        platform's first; refused when the variant is not released on the platform."""
        target = self.target(platform, arch or self.default_arch(platform, own_arch))
        declared = self.variant(variant)
        if not declared.ships_on(target.platform):
            raise ConfigurationError(
                f"variant '{declared.name}' is not released for {target.platform} targets",
                fix=f"build it for one of: {', '.join(declared.platforms)} (the platforms of "
                    f"[tool.release.variants.{declared.name}])")
        return self.selection(target, declared)

    def selection(self, target: Target, declared: Variant) -> Selection:
        return Selection(target, declared, self.components_for(declared.name))

    def selections(self) -> tuple[Selection, ...]:
        """Every (target, variant) the manifest releases, in manifest order (targets
        outer)."""
        return tuple(self.selection(target, declared) for target in self.targets
                     for declared in self.variants if declared.ships_on(target.platform))

    def default_arch(self, platform: str, own_arch: str) -> str:
        """``own_arch`` (the host's) when the manifest has a target for it, else the
        platform's first target's."""
        arches = [t.arch for t in self.targets if t.platform == platform]
        if not arches:
            self.target(platform, "")  # raises the unknown-platform error
        return own_arch if own_arch in arches else arches[0]

    def target(self, platform: str, arch: str) -> Target:
        known = [t for t in self.targets if t.platform == platform]
        if not known:
            raise ConfigurationError(
                f"unknown platform '{platform}'",
                fix=f"use one of: {', '.join(sorted({t.platform for t in self.targets}))}")
        for target in known:
            if target.arch == arch:
                return target
        raise ConfigurationError(f"unknown arch '{arch}' for platform '{platform}'",
                                 fix=f"use one of: {', '.join(t.arch for t in known)}")


@dataclass(frozen=True)
class Selection:
    """What one build makes, as the manifest declares it: a target, a variant released on
    its platform, and the components that variant ships."""

    target: Target
    variant: Variant
    components: tuple[Component, ...]


class _Table:
    """Typed reads from one TOML table that remember the key path for error messages."""

    def __init__(self, data: Any, path: str) -> None:
        if not isinstance(data, dict):
            raise ConfigurationError(f"{path} must be a table, not {type(data).__name__}",
                                     fix=f"write [{path}] as a TOML table")
        for key in data:
            if len(key) > MAX_KEY:
                raise ConfigurationError(f"{path} has a key of {len(key)} characters "
                                         f"('{shown(key)}')",
                                         fix=f"keep keys to {MAX_KEY} characters")
        self.data = data
        self.path = path
        self.used: set[str] = set()

    def _get(self, key: str, kind: type | tuple[type, ...], default: Any,
             limit: int = MAX_TEXT) -> Any:
        self.used.add(key)
        if key not in self.data:
            if default is _REQUIRED:
                raise ConfigurationError(f"{self.path}.{key} is missing",
                                         fix=f"add '{key} = ...' to [{self.path}]")
            return default
        value = self.data[key]
        if not isinstance(value, kind) or (kind is str and isinstance(value, bool)):
            kinds = kind if isinstance(kind, tuple) else (kind,)
            expected = "/".join(k.__name__ for k in kinds)
            raise ConfigurationError(
                f"{self.path}.{key} must be a {expected}, not {type(value).__name__} "
                f"({shown(repr(value))})", fix=f"correct '{key}' in [{self.path}]")
        _bounded(f"{self.path}.{key}", value, limit)
        return value

    def string(self, key: str, default: Any = None, limit: int = MAX_TEXT) -> Any:
        return self._get(key, str, default, limit)

    def boolean(self, key: str, default: bool = False) -> bool:
        return bool(self._get(key, bool, default))

    def strings(self, key: str) -> tuple[str, ...]:
        values = self._get(key, list, [])
        for index, value in enumerate(values):
            if not isinstance(value, str):
                raise ConfigurationError(f"{self.path}.{key}[{index}] must be a str, not "
                                         f"{type(value).__name__}", fix=f"correct '{key}'")
            _bounded(f"{self.path}.{key}[{index}]", value)
        return tuple(values)

    def choice(self, key: str, choices: tuple[str, ...], default: Any) -> str:
        value = self.string(key, default)
        if value not in choices:
            raise ConfigurationError(f"{self.path}.{key} is '{value}'",
                                     fix=f"use one of: {', '.join(choices)}")
        return str(value)

    def table(self, key: str) -> _Table:
        return _Table(self._get(key, dict, {}), f"{self.path}.{key}")

    def finish(self) -> None:
        unknown = sorted(set(self.data) - self.used)
        if unknown:
            raise ConfigurationError(f"unknown key {self.path}.{unknown[0]}",
                                     fix="remove it or check its spelling")


_REQUIRED = object()


def _bounded(path: str, value: object, limit: int = MAX_TEXT) -> None:
    """A string of at most ``limit`` characters, a list of at most MAX_ITEMS items."""
    if isinstance(value, str) and len(value) > limit:
        raise ConfigurationError(f"{path} is {len(value)} characters long ('{shown(value)}')",
                                 fix=f"keep it to {limit} characters")
    if isinstance(value, list) and len(value) > MAX_ITEMS:
        raise ConfigurationError(f"{path} has {len(value)} items",
                                 fix=f"keep it to {MAX_ITEMS}")


def _component(name: str, table: _Table) -> Component:
    registers = table.strings("registers")
    for kind in registers:
        if kind not in REGISTRATION_KINDS:
            raise ConfigurationError(f"{table.path}.registers has '{kind}'",
                                     fix=f"use: {', '.join(REGISTRATION_KINDS)}")
    component = Component(
        name=name,
        library=table.string("library", _REQUIRED),
        kind=table.choice("kind", COMPONENT_KINDS, "library"),
        cmake_component=table.string("cmake-component"),
        cmake_variable=table.string("cmake-variable"),
        depends=table.strings("depends"),
        opt_in=table.boolean("opt-in"),
        registers=registers,
        markers=table.strings("markers"),
        variants=table.strings("variants"),
        variant_runtime=table.boolean("variant-runtime"),
    )
    table.finish()
    if component.kind == "library" and not component.cmake_component:
        raise ConfigurationError(f"{table.path}.cmake-component is missing",
                                 fix="a library component needs its CMake component name")
    if component.opt_in and not component.cmake_variable:
        raise ConfigurationError(f"{table.path}.cmake-variable is missing",
                                 fix="an opt-in component is offered through a CMake variable")
    return component


def _check_references(manifest: Manifest) -> None:
    names = {c.name for c in manifest.components}
    variants = {v.name for v in manifest.variants}
    for component in manifest.components:
        for dependency in component.depends:
            if dependency not in names:
                raise ConfigurationError(
                    f"tool.release.components.{component.name}.depends names unknown "
                    f"component '{dependency}'", fix=f"use one of: {', '.join(sorted(names))}")
        for variant in component.variants:
            if variant not in variants:
                raise ConfigurationError(
                    f"tool.release.components.{component.name}.variants names unknown "
                    f"variant '{variant}'", fix=f"use one of: {', '.join(sorted(variants))}")
    for dependency in manifest.extension_depends:
        if dependency not in names:
            raise ConfigurationError(
                f"tool.release.extension-depends names unknown component '{dependency}'",
                fix=f"use one of: {', '.join(sorted(names))}")


_NAME = re.compile(r"^([A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9])$", re.IGNORECASE)


def _one_line(path: str, value: object, limit: int = MAX_TEXT) -> None:
    if not isinstance(value, str):
        raise ConfigurationError(f"{path} must be a string, not {type(value).__name__}",
                                 fix=f"write {path} as a quoted string")
    _bounded(path, value, limit)
    if "\n" in value or "\r" in value:
        raise ConfigurationError(f"{path} contains a line break",
                                 fix="keep it on one line (it becomes a METADATA header)")


def _strings_of(path: str, value: object) -> list[str]:
    if not isinstance(value, list):
        raise ConfigurationError(f"{path} must be a list of strings, not "
                                 f"{type(value).__name__} ({shown(repr(value))})",
                                 fix=f'write {path} = ["..."]')
    _bounded(path, value)
    for index, item in enumerate(value):
        _one_line(f"{path}[{index}]", item)
    return value


def _check_project(project: dict[str, Any]) -> None:
    """[project] values that become METADATA: typed, one line each, valid names."""
    name, version = project.get("name"), project.get("version")
    _one_line("project.name", name, MAX_NAME)
    _one_line("project.version", version, MAX_VERSION)
    _check_texts("project", project)
    if not _NAME.match(str(name)):
        raise ConfigurationError(f"project.name '{name}' is not a valid distribution name",
                                 fix="use letters, digits, '.', '_' and '-' (PEP 508)")
    try:
        Version(str(version))
    except (InvalidVersion, ValueError):   # (ValueError: a number int() will not convert)
        raise ConfigurationError(f"project.version '{version}' is not a valid version",
                                 fix="use a PEP 440 version such as 1.2.0") from None
    for key in ("description", "requires-python", "license"):
        if key in project and not (key == "license" and isinstance(project[key], dict)):
            _one_line(f"project.{key}", project[key])
    _strings_of("project.classifiers", project.get("classifiers", []))
    for index, text in enumerate(_strings_of("project.dependencies",
                                             project.get("dependencies", []))):
        try:
            Requirement(text)
        except InvalidRequirement as error:
            raise ConfigurationError(f"project.dependencies[{index}] '{text}' is not a valid "
                                     f"requirement ({error})", fix="use PEP 508 syntax") from None
    urls = project.get("urls", {})
    if not isinstance(urls, dict):
        raise ConfigurationError("project.urls must be a table", fix="write [project.urls]")
    for label, url in urls.items():
        _one_line(f"project.urls.{label}", url)
        _one_line(f"project.urls key '{label}'", label)


_LONG_TEXTS = ("project.readme.text", "project.license.text")   # a whole file's text


def _check_texts(path: str, value: object) -> None:
    """Every string, list and key under ``path`` bounded (the readme's and the license's own
    text aside): nothing in [project] reaches the libraries that parse it (versions,
    specifiers, URLs) at a size they were never written for."""
    pending = [(path, value)]
    while pending:
        where, item = pending.pop()
        if where in _LONG_TEXTS and isinstance(item, str):
            continue
        _bounded(where, item)
        if isinstance(item, dict):
            for key, child in item.items():
                _bounded(f"{where} key", key, MAX_KEY)
                pending.append((f"{where}.{key}", child))
        elif isinstance(item, list):
            pending.extend((f"{where}[{index}]", child) for index, child in enumerate(item))


def _check_dependency_graph(manifest: Manifest) -> None:
    """No component depends on itself, directly or through others."""
    graph = {c.name: c.depends for c in manifest.components}
    state: dict[str, int] = {}   # 1: on the current path, 2: done

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            cycle = " -> ".join(path[path.index(name):] + [name])
            raise ConfigurationError(f"tool.release.components: dependency cycle {cycle}",
                                     fix="a component cannot depend on itself, directly or "
                                         "through others")
        state[name] = 1
        for dependency in graph.get(name, ()):
            visit(dependency, [*path, name])
        state[name] = 2

    for name in graph:
        visit(name, [])


_IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*"
_DOTTED = re.compile(rf"^{_IDENTIFIER}(?:\.{_IDENTIFIER})*$")
_SYMBOL = re.compile(rf"^{_IDENTIFIER}$")
_FILE_BASE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_+-]*(?:\.[A-Za-z0-9_+-]+)*$")
_FOLDER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")   # a target or variant name


def _refuse(root: Path, key: str, what: str, fix: str) -> ConfigurationError:
    return ConfigurationError(f"{root / 'pyproject.toml'}: {key} {what}", fix=fix)


def _inside(root: Path, key: str, value: str) -> None:
    """``value`` (a path the manifest names) is relative and stays inside the project."""
    if not value or Path(value).is_absolute() or "\\" in value or ":" in value:
        raise _refuse(root, key, f"is '{value}', not a relative path",
                      fix=f"name a folder of the project, relative to {root}")
    base = root.resolve()
    try:
        (base / value).resolve().relative_to(base)
    except ValueError:
        raise _refuse(root, key, f"'{value}' leads outside the project folder {base}",
                      fix="name a folder inside the project (no '..' out of it, no link "
                          "leading out)") from None


def _check_names(manifest: Manifest, release: dict[str, Any]) -> None:
    """Every name the manifest hands to paths, CMake and the import system, checked before
    any work: import names are (dotted) identifiers, paths stay inside the project, and no
    library, CMake component, CMake variable or marker belongs to two components."""
    root = manifest.root
    names = [("tool.release.package", manifest.package),
             *((f"tool.release.variants.{v.name}.distribution", v.distribution)
               for v in manifest.variants),
             *((f"tool.release.targets.{t.name}.arch", t.arch) for t in manifest.targets),
             *((f"tool.release.components.{c.name}.{key}", value)
               for c in manifest.components
               for key, value in (("library", c.library), ("cmake-component", c.cmake_component),
                                  ("cmake-variable", c.cmake_variable)))]
    names += [(f"tool.release.{kind}.{name}", name) for kind, table in
              (("components", manifest.components), ("variants", manifest.variants),
               ("targets", manifest.targets)) for name in (entry.name for entry in table)]
    for key, value in names:
        if value is not None and len(value) > MAX_NAME:
            raise _refuse(root, key, f"is a name of {len(value)} characters ('{shown(value)}')",
                          fix=f"keep names to {MAX_NAME} characters (they name files, folders "
                              "and distributions)")
    if (not _DOTTED.match(manifest.package)
            or any(keyword.iskeyword(part) for part in manifest.package.split("."))):
        raise _refuse(root, "tool.release.package", f"'{manifest.package}' is not an import "
                      "package name", fix="use a Python identifier (letters, digits, '_'; "
                      "dots between parts), e.g. 'edgert'")
    if (not _DOTTED.match(manifest.extension)
            or not manifest.extension.startswith(manifest.package + ".")):
        raise _refuse(root, "tool.release.extension", f"'{manifest.extension}' is not a "
                      f"module of the package '{manifest.package}'",
                      fix=f"name it '{manifest.package}.<module>' (identifiers only)")
    for key in ("native-source", "python-source"):
        _inside(root, f"tool.release.{key}", str(release[key]))
    for variant in manifest.variants:
        key = f"tool.release.variants.{variant.name}"
        if not _FOLDER_NAME.match(variant.name):
            raise _refuse(root, key, "has a name that is not a plain word",
                          fix="use letters, digits, '_', '-' and '.' (it names a build folder)")
        if variant.distribution is not None and not _NAME.match(variant.distribution):
            raise _refuse(root, f"{key}.distribution", f"'{variant.distribution}' is not a "
                          "valid distribution name", fix="use letters, digits, '.', '_' and "
                          "'-' (PEP 508)")
        if variant.config is not None:
            _inside(root, f"{key}.config", str(release["variants"][variant.name]["config"]))
    for target in manifest.targets:
        key = f"tool.release.targets.{target.name}"
        if not _FOLDER_NAME.match(target.name) or not _FOLDER_NAME.match(target.arch):
            raise _refuse(root, key, "has a name or arch that is not a plain word",
                          fix="use letters, digits, '_', '-' and '.' (they name build folders)")
    owners: dict[tuple[str, str], str] = {}
    for component in manifest.components:
        key = f"tool.release.components.{component.name}"
        if not _SYMBOL.match(component.name):
            raise _refuse(root, key, "has a name that is not an identifier",
                          fix="use letters, digits and '_' (it names CMake variables)")
        if not _FILE_BASE.match(component.library):
            raise _refuse(root, f"{key}.library", f"'{component.library}' is not a library "
                          "base name", fix="give the name without folder, prefix or suffix "
                          "(e.g. 'edgert_kernels' for libedgert_kernels.so)")
        named = [("library", component.library), ("cmake-component", component.cmake_component),
                 ("cmake-variable", component.cmake_variable),
                 *(("markers", marker) for marker in component.markers)]
        for field_name, value in named:
            if value is None:
                continue
            if field_name != "library" and not _SYMBOL.match(value):
                raise _refuse(root, f"{key}.{field_name}", f"has '{value}', not an identifier",
                              fix="use letters, digits and '_'")
            other = owners.setdefault((field_name, value), component.name)
            if other != component.name:
                raise _refuse(root, f"{key}.{field_name}", f"'{value}' is also "
                              f"tool.release.components.{other}'s",
                              fix=f"give each component its own {field_name.rstrip('s')}")


def parse(pyproject: dict[str, Any], root: Path) -> Manifest:
    """Validates a parsed pyproject.toml; ``root`` is the folder it came from."""
    project = _Table(pyproject.get("project", {}), "project")
    release = _Table(pyproject.get("tool", {}).get("release", _MISSING), "tool.release")
    components = release.table("components")
    variants = release.table("variants")
    targets = release.table("targets")
    manifest = Manifest(
        root=root,
        distribution=project.string("name", _REQUIRED, MAX_NAME),
        version=project.string("version", _REQUIRED, MAX_VERSION),
        package=release.string("package", _REQUIRED),
        native_source=root / release.string("native-source", _REQUIRED),
        python_source=root / release.string("python-source", _REQUIRED),
        extension=release.string("extension", _REQUIRED),
        extension_depends=release.strings("extension-depends"),
        components=tuple(_component(name, components.table(name)) for name in components.data),
        variants=tuple(_variant(name, variants.table(name), root) for name in variants.data),
        targets=tuple(_target(name, targets.table(name)) for name in targets.data),
        project=dict(project.data),
        defaults=_defaults(release.table("defaults")),
        variant_providers=_providers(release.table("variant-providers")),
    )
    release.finish()
    if not manifest.variants or not manifest.targets or not manifest.components:
        raise ConfigurationError("tool.release needs components, variants and targets",
                                 fix="see docs/concepts.md for a complete example")
    _check_names(manifest, release.data)
    _check_references(manifest)
    _check_dependency_graph(manifest)
    _check_project(manifest.project)
    _check_variant_providers(manifest)
    # every [project] key, validated before any work; kept for the wheels' METADATA
    return replace(manifest, validated_project=project_metadata(manifest.project, root))


_MISSING: dict[str, Any] = {"__missing__": True}


def _variant(name: str, table: _Table, root: Path) -> Variant:
    provider = table.string("provider")
    config = table.string("config")
    distribution = table.string("distribution")
    platforms = table.strings("platforms")
    properties = parse_properties(table.strings("properties"), where=f"{table.path}.properties")
    table.finish()
    if properties:
        check_label(name, where=f"{table.path} (the variant's name is its wheels' label)")
    for platform in platforms:
        if platform not in platform_names():
            raise ConfigurationError(f"{table.path}.platforms has '{platform}'",
                                     fix=f"use: {', '.join(platform_names())}")
    if (provider is None) != (config is None):
        raise ConfigurationError(f"{table.path} needs both provider and config, or neither",
                                 fix="a GPU variant names its provider package and data file; "
                                     "the CPU variant names neither")
    return Variant(name=name, distribution=distribution, provider=provider,
                   config=root / config if config else None, platforms=platforms,
                   properties=properties)


def _providers(table: _Table) -> tuple[VariantProvider, ...]:
    """[tool.release.variant-providers.<namespace>]: requires (and plugin-api)."""
    providers = []
    for namespace in table.data:
        entry = table.table(namespace)
        requires = entry.strings("requires")
        plugin_api = entry.string("plugin-api")
        entry.finish()
        if not requires:
            raise ConfigurationError(f"{entry.path}.requires is empty",
                                     fix="name the provider plugin's distribution, e.g. "
                                         "\"nvidia-variant-provider>=0.0.1,<1\"")
        providers.append(VariantProvider(namespace, requires, plugin_api))
    return tuple(providers)


def _check_variant_providers(manifest: Manifest) -> None:
    known = {provider.namespace for provider in manifest.variant_providers}
    for variant in manifest.variants:
        for namespace in variant.wheel_variant.namespaces:
            if namespace not in known:
                raise ConfigurationError(
                    f"tool.release.variants.{variant.name}.properties use namespace "
                    f"'{namespace}', which no provider judges",
                    fix=f"add [tool.release.variant-providers.{namespace}] with requires = "
                        "[the provider plugin]")


def _defaults(table: _Table) -> dict[str, object]:
    """[tool.release.defaults]: option defaults for this project
    (release/build_options.py)."""
    unknown = sorted(set(table.data) - set(OPTION_KEYS))
    if unknown:
        raise ConfigurationError(f"unknown key {table.path}.{unknown[0]}",
                                 fix=f"use one of: {', '.join(OPTION_KEYS)}")
    values: dict[str, object] = {}
    for key, value in table.data.items():
        if not isinstance(value, (str, int, bool)):
            raise ConfigurationError(f"{table.path}.{key} must be a string, integer or bool",
                                     fix=f"correct '{key}' in [{table.path}]")
        check_default(key, value, f"{table.path}.{key}")   # (jobs = 10**20: refused here)
        values[key] = value
    return values


def _target(name: str, table: _Table) -> Target:
    target = Target(name=name, platform=table.choice("platform", platform_names(), _REQUIRED),
                    arch=table.string("arch", _REQUIRED), runner=table.string("runner"))
    table.finish()
    return target


def load(root: Path) -> Manifest:
    """Reads and validates ``root/pyproject.toml``."""
    path = root / "pyproject.toml"
    data = read_toml(path, fix="correct the syntax at the position shown",
                     unreadable_fix="check the path and its permissions",
                     missing_fix="run from the project folder or pass --project")
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigurationError(f"{path}: tool must be a table, not {type(tool).__name__}",
                                 fix="write [tool.release] as a table")
    if tool.get("release") is None:
        raise ConfigurationError(f"{path} has no [tool.release] table",
                                 fix="describe the shipped components there (docs/concepts.md)")
    return parse(data, root)
