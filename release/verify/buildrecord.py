"""The build record (``<package>/_release.json``, see docs/build-record.md) as typed values."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from release.errors import WheelError


@dataclass(frozen=True)
class Component:
    name: str
    kind: str                  # "library" or "plugin"
    file: str                  # path in the wheel
    cmake_component: str
    cmake_variable: str
    opt_in: bool
    depends: tuple[str, ...]
    registers: tuple[str, ...]
    markers: tuple[str, ...]


@dataclass(frozen=True)
class Extension:
    module: str
    file: str
    depends: tuple[str, ...]


@dataclass(frozen=True)
class Example:
    consumer: str
    program: str
    python_module: str   # module run as `python -m <module> <program>`; "" when not given


@dataclass(frozen=True)
class BuildRecord:
    path: str                  # where the record sits in the wheel
    package: str
    variant: str
    extension: Extension | None
    components: tuple[Component, ...]
    cmake_package: str
    example: Example | None
    cuda: dict[str, Any] | None

    def component_for_file(self, path: str) -> Component | None:
        return next((c for c in self.components if c.file == path), None)


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(item) for item in value or ())


def parse_build_record(text: str, *, where: str) -> BuildRecord:
    try:
        data = json.loads(text)
        components = tuple(Component(
            name=str(item["name"]), kind=str(item.get("kind", "library")),
            file=str(item["file"]), cmake_component=str(item.get("cmake_component") or ""),
            cmake_variable=str(item.get("cmake_variable") or ""),
            opt_in=bool(item.get("opt_in", False)), depends=_strings(item.get("depends")),
            registers=_strings(item.get("registers")), markers=_strings(item.get("markers")))
            for item in data.get("components", []))
        extension = data.get("extension")
        example = data.get("example")
        return BuildRecord(
            path=where, package=str(data.get("package", "")),
            variant=str(data.get("variant", "")),
            extension=Extension(str(extension["module"]), str(extension["file"]),
                                _strings(extension.get("depends"))) if extension else None,
            components=components, cmake_package=str(data.get("cmake_package") or ""),
            example=Example(str(example.get("consumer", "")), str(example.get("program", "")),
                            str(example.get("python", ""))) if example else None,
            cuda=data.get("cuda"))
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise WheelError(f"{where}: unreadable build record ({error!r})",
                         fix="rebuild the wheel; the record is written by the release pipeline"
                         ) from None
