"""The build record (``<package>/_release.json``, docs/build-record.md): one typed value
written by the pipeline and read by repair and verify.

``to_json`` gives the dict the pipeline writes (sorted keys, two-space indent);
``from_json`` parses what a wheel carries and raises one WheelError for anything malformed."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from release.errors import WheelError


@dataclass(frozen=True)
class RuntimeDependency:
    """A library a variant's binaries load from another distribution's wheel."""

    requirement: str    # the wheel's Requires-Dist entry
    distribution: str   # the distribution that provides the library
    library: str        # its file name, e.g. libcudart.so.12
    dir: str            # its folder relative to site-packages, e.g. nvidia/cuda_runtime/lib
    pin: str = ""       # the release/pinned-tools.toml entry verify installs it from


@dataclass(frozen=True)
class DeviceCodeRecord:
    """The build record's device-code section (JSON key ``cuda``): the compute capabilities
    the wheel claims, the PTX it ships, and the runtime its device code needs."""

    major: int
    claims: tuple[str, ...]
    ptx: tuple[str, ...]
    runtime: RuntimeDependency

    def to_json(self) -> dict[str, object]:
        runtime = self.runtime
        return {"major": self.major, "claims": list(self.claims), "ptx": list(self.ptx),
                "runtime_requirement": runtime.requirement,
                "runtime_distribution": runtime.distribution,
                "runtime_library": runtime.library, "runtime_dir": runtime.dir}

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
    cuda: DeviceCodeRecord | None
    # the variant provider packages whose verify checks judge this wheel (release/variants.py)
    providers: tuple[str, ...] = ()
    path: str = ""                   # where the record sits in the wheel (when read from one)

    @property
    def platform(self) -> str:
        """The platform part of the target ("linux" of "linux-x86_64")."""
        return self.target.split("-", 1)[0]

    @property
    def runtime_dependencies(self) -> tuple[RuntimeDependency, ...]:
        """Libraries the wheel's binaries load from other distributions' wheels."""
        return () if self.cuda is None else (self.cuda.runtime,)

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
            "cuda": None if self.cuda is None else self.cuda.to_json(),
            "providers": list(self.providers),
        }

    def to_text(self) -> str:
        return json.dumps(self.to_json(), indent=2, sort_keys=True) + "\n"

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


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, found {type(value).__name__} ({value!r})")
    return value


def _optional_text(value: object) -> str | None:
    return None if value is None else _text(value)


def _texts(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise TypeError(f"expected a list, found {type(value).__name__}")
    return tuple(_text(item) for item in value)


def _component(item: dict[str, Any]) -> ComponentRecord:
    return ComponentRecord(
        name=_text(item["name"]), kind=_text(item.get("kind", "library")),
        file=_text(item["file"]), cmake_component=_optional_text(item.get("cmake_component")),
        cmake_variable=_optional_text(item.get("cmake_variable")),
        opt_in=bool(item.get("opt_in", False)), depends=_texts(item.get("depends")),
        registers=_texts(item.get("registers")), markers=_texts(item.get("markers")))


def _device(item: dict[str, Any]) -> DeviceCodeRecord:
    major = item["major"]
    if not isinstance(major, int) or isinstance(major, bool):
        raise TypeError(f"cuda.major must be an integer, found {major!r}")
    return DeviceCodeRecord(
        major=major, claims=_texts(item.get("claims")), ptx=_texts(item.get("ptx")),
        runtime=RuntimeDependency(
            requirement=_text(item["runtime_requirement"]),
            distribution=_text(item["runtime_distribution"]),
            library=_text(item["runtime_library"]), dir=_text(item["runtime_dir"])))


def _parse(data: dict[str, Any], where: str) -> BuildRecord:
    extension, example, cuda = data.get("extension"), data.get("example"), data.get("cuda")
    return BuildRecord(
        path=where, package=_text(data.get("package", "")),
        distribution=_text(data.get("distribution", "")),
        version=_text(data.get("version", "")), target=_text(data.get("target", "")),
        variant=_text(data.get("variant", "")),
        extension=None if not extension else ExtensionRecord(
            module=_text(extension["module"]), file=_text(extension["file"]),
            depends=_texts(extension.get("depends"))),
        components=tuple(_component(item) for item in data.get("components") or ()),
        cmake_package=_text(data.get("cmake_package") or ""),
        example=None if not example else ExampleRecord(
            consumer=_text(example.get("consumer", "")),
            program=_text(example.get("program", "")),
            python_module=_text(example.get("python", ""))),
        cuda=None if cuda is None else _device(cuda),
        providers=_texts(data.get("providers")))
