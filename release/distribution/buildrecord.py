"""The build record (``<package>/_release.json``, docs/build-record.md): one typed value
written by the pipeline and read by repair and verify.

``to_json`` gives the dict the pipeline writes (sorted keys, two-space indent);
``from_json`` parses what a wheel carries and raises one WheelError for anything malformed.
A variant provider's section (the CUDA provider's ``cuda``: claims, PTX) is the provider's
own: the record keeps it as JSON under the provider's name and the provider reads and
validates it (its checks); what every variant has in common, the libraries its binaries load
from other distributions, is the record's own ``runtime_dependencies``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from release.errors import WheelError


@dataclass(frozen=True)
class RuntimeDependency:
    """A library a variant's binaries load from another distribution's wheel."""

    requirement: str    # the wheel's Requires-Dist entry
    distribution: str   # the distribution that provides the library
    library: str        # its file name, e.g. libcudart.so.12
    dir: str            # its folder relative to site-packages, e.g. nvidia/cuda_runtime/lib
    pin: str = ""       # the release/toolchain/pinned-tools.toml entry verify installs it from


RECORD_FILE = "_release.json"
SCHEMA = 1


@dataclass(frozen=True)
class ComponentRecord:
    name: str
    kind: str                        # "library" or "plugin"
    file: str                        # path in the wheel, "/"-separated
    cmake_component: str | None
    cmake_variable: str | None
    opt_in: bool
    depends: tuple[str, ...]
    registers: tuple[str, ...]
    markers: tuple[str, ...]


@dataclass(frozen=True)
class ExtensionRecord:
    module: str
    file: str
    depends: tuple[str, ...]


@dataclass(frozen=True)
class ExampleRecord:
    consumer: str
    program: str
    python_module: str   # run as `python -m <module> <program>`; "" when not given


@dataclass(frozen=True)
class BuildRecord:
    package: str
    distribution: str
    version: str
    target: str
    variant: str
    extension: ExtensionRecord | None
    components: tuple[ComponentRecord, ...]
    cmake_package: str
    example: ExampleRecord | None
    # the variant provider packages whose verify checks judge this wheel (release/variants.py)
    providers: tuple[str, ...] = ()
    path: str = ""                   # where the record sits in the wheel (when read from one)
    # libraries the wheel's binaries load from other distributions' wheels
    runtime_dependencies: tuple[RuntimeDependency, ...] = ()
    # each provider's own section (JSON, under the provider's name), read by that provider
    sections: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def platform(self) -> str:
        """The platform part of the target ("linux" of "linux-x86_64")."""
        return self.target.split("-", 1)[0]

    def section(self, provider: str) -> Mapping[str, Any] | None:
        """The section ``provider`` wrote (None: none)."""
        return self.sections.get(provider)

    def component_for_file(self, path: str) -> ComponentRecord | None:
        return next((c for c in self.components if c.file == path), None)

    def to_json(self) -> dict[str, object]:
        extension = self.extension
        example = self.example
        return {
            "schema": SCHEMA, "package": self.package, "distribution": self.distribution,
            "version": self.version, "target": self.target, "variant": self.variant,
            "extension": None if extension is None else {
                "module": extension.module, "file": extension.file,
                "depends": list(extension.depends)},
            "components": [{
                "name": c.name, "kind": c.kind, "file": c.file,
                "cmake_component": c.cmake_component, "cmake_variable": c.cmake_variable,
                "opt_in": c.opt_in, "depends": list(c.depends), "registers": list(c.registers),
                "markers": list(c.markers)} for c in self.components],
            "cmake_package": self.cmake_package,
            "example": None if example is None else {
                "consumer": example.consumer, "program": example.program,
                "python": example.python_module},
            "providers": list(self.providers),
            "runtime_dependencies": [{
                "requirement": r.requirement, "distribution": r.distribution,
                "library": r.library, "dir": r.dir} for r in self.runtime_dependencies],
            **{name: dict(section) for name, section in sorted(self.sections.items())},
        }

    def to_text(self) -> str:
        return json.dumps(self.to_json(), indent=2, sort_keys=True) + "\n"

    @classmethod
    def in_texts(cls, texts: Mapping[str, str]) -> BuildRecord | None:
        """The record among a wheel's member ``texts`` (``<package>/RECORD_FILE``; the
        first by name when there are several), or None."""
        names = sorted(name for name in texts if name.endswith("/" + RECORD_FILE)
                       and not name.split("/")[0].endswith(".dist-info"))
        return cls.from_json(texts[names[0]], where=names[0]) if names else None

    @classmethod
    def from_json(cls, text: str | bytes, *, where: str) -> BuildRecord:
        try:
            data = json.loads(text)
            if not isinstance(data, dict):
                raise TypeError(f"the record is a {type(data).__name__}, not an object")
            schema = data.get("schema", SCHEMA)
            if schema != SCHEMA:
                raise ValueError(f"schema {schema!r}; this tool reads schema {SCHEMA}")
            return _parse(data, where)
        except RecursionError:   # (json nests by recursion: '[[[[…' 100k deep)
            raise WheelError(f"{where}: unreadable build record (nested too deeply to read)",
                             fix="rebuild the wheel; the record is written by the release "
                                 "pipeline") from None
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise WheelError(f"{where}: unreadable build record ({error!r})",
                             fix="rebuild the wheel; the record is written by the release "
                                 "pipeline") from None


def json_text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, found {type(value).__name__} ({value!r})")
    return value


def _optional_text(value: object) -> str | None:
    return None if value is None else json_text(value)


def json_texts(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise TypeError(f"expected a list, found {type(value).__name__}")
    return tuple(json_text(item) for item in value)


def _component(item: dict[str, Any]) -> ComponentRecord:
    return ComponentRecord(
        name=json_text(item["name"]), kind=json_text(item.get("kind", "library")),
        file=json_text(item["file"]), cmake_component=_optional_text(item.get("cmake_component")),
        cmake_variable=_optional_text(item.get("cmake_variable")),
        opt_in=bool(item.get("opt_in", False)), depends=json_texts(item.get("depends")),
        registers=json_texts(item.get("registers")), markers=json_texts(item.get("markers")))


def _runtime(item: object) -> RuntimeDependency:
    if not isinstance(item, dict):
        raise TypeError(f"a runtime dependency is a {type(item).__name__}, not an object")
    return RuntimeDependency(requirement=json_text(item["requirement"]),
                             distribution=json_text(item["distribution"]),
                             library=json_text(item["library"]), dir=json_text(item["dir"]))


def _sections(data: dict[str, Any], providers: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """Each provider's section, as it wrote it (an object, or absent)."""
    found = {}
    for name in providers:
        section = data.get(name)
        if section is None:
            continue
        if not isinstance(section, dict):
            raise TypeError(f"the {name} section is a {type(section).__name__}, not an object")
        found[name] = section
    return found


def _parse(data: dict[str, Any], where: str) -> BuildRecord:
    extension, example = data.get("extension"), data.get("example")
    providers = json_texts(data.get("providers"))
    return BuildRecord(
        path=where, package=json_text(data.get("package", "")),
        distribution=json_text(data.get("distribution", "")),
        version=json_text(data.get("version", "")), target=json_text(data.get("target", "")),
        variant=json_text(data.get("variant", "")),
        extension=None if not extension else ExtensionRecord(
            module=json_text(extension["module"]), file=json_text(extension["file"]),
            depends=json_texts(extension.get("depends"))),
        components=tuple(_component(item) for item in data.get("components") or ()),
        cmake_package=json_text(data.get("cmake_package") or ""),
        example=None if not example else ExampleRecord(
            consumer=json_text(example.get("consumer", "")),
            program=json_text(example.get("program", "")),
            python_module=json_text(example.get("python", ""))),
        providers=providers,
        runtime_dependencies=tuple(_runtime(item)
                                   for item in data.get("runtime_dependencies") or ()),
        sections=_sections(data, providers))
