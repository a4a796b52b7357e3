"""A throw-away consumer project that asks CMake, through its File API, which libraries a
``find_package`` request links: one subfolder per request, one configure per CMake route."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from release.verify.sandbox import list_back, read_back

_REPLY_LIMIT = 4 << 20   # bytes of one File API reply file; CMake writes a few KiB
_MAIN = "int main(void) { return 0; }\n"

_REQUEST = """\
set(_probe_args)
if(NOT "{component}" STREQUAL "")
  set(_probe_args COMPONENTS {component})
endif()
find_package({package} CONFIG QUIET ${{_probe_args}} PATHS "{folder}" NO_DEFAULT_PATH)
string(TOUPPER "{package}" _probe_upper)
file(WRITE "${{CMAKE_BINARY_DIR}}/found-{label}.txt" "${{{package}_FOUND}}")
if({package}_FOUND)
  add_executable(probe_{label} "${{CMAKE_SOURCE_DIR}}/main.c")
  set(_probe_links ${{${{_probe_upper}}_LIBRARIES}})
  if(NOT "{variable}" STREQUAL "" AND DEFINED {variable})
    list(APPEND _probe_links ${{{variable}}})
  endif()
  target_link_libraries(probe_{label} PRIVATE ${{_probe_links}})
endif()
"""


@dataclass(frozen=True)
class Request:
    label: str          # "default" or the component name
    component: str      # "" for the default request
    variable: str = ""  # the component's own variable (opt-in components)


@dataclass(frozen=True)
class Answer:
    found: bool
    libraries: tuple[str, ...]   # file names of the shared libraries on the link line


def libraries_in(fragment: str) -> list[str]:
    """Shared library file names a link-line fragment names: a path, or one wrapped in linker
    flags (``-Wl,--push-state,--no-as-needed,/x/libfoo.so,--pop-state``, ``-lfoo``). A
    Windows import library (``foo.lib``, ``libfoo.dll.a``) stands for its DLL (``foo.dll``,
    ``libfoo.dll``): the file the program loads."""
    names = []
    for token in re.split(r"[\s,]+", fragment.strip().strip('"')):
        token = token.strip('"')
        name = Path(token).name
        if token.startswith("-l") and len(token) > 2 and "/" not in token:
            names.append(f"lib{token[2:]}.so")
        elif token.startswith("-"):
            continue
        elif re.search(r"\.so(?:\.[0-9]+)*$|\.dylib$", token):
            names.append(name)
        elif name.lower().endswith(".dll.a"):
            names.append(name[:-2])
        elif name.lower().endswith(".lib"):
            names.append(name[:-4] + ".dll")
    return names


def write_probe(folder: Path, *, package: str, package_dir: Path,
                requests: list[Request]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "main.c").write_text(_MAIN)
    lines = ["cmake_minimum_required(VERSION 3.24)", "project(release_verify_probe C)"]
    for request in requests:
        sub = folder / f"request_{request.label}"
        sub.mkdir(exist_ok=True)
        (sub / "CMakeLists.txt").write_text(_REQUEST.format(
            package=package, folder=package_dir.as_posix(), component=request.component,
            label=request.label, variable=request.variable))
        lines.append(f"add_subdirectory(request_{request.label})")
    (folder / "CMakeLists.txt").write_text("\n".join(lines) + "\n")


def configure(cmake: Path, source: Path, build: Path, *, timeout: float,
              run: Callable[..., str], arguments: Sequence[str] = ()) -> None:
    """Configures the probe; ``arguments`` select the machine (a cross toolchain file);
    ``run`` runs CMake (full verify: in the sandbox, since it runs the package's code, with
    ``build`` the one folder it may write)."""
    query = build / ".cmake" / "api" / "v1" / "query" / "codemodel-v2"
    query.parent.mkdir(parents=True, exist_ok=True)
    query.touch()
    run([cmake, "-S", source, "-B", build, "-G", "Unix Makefiles", *arguments],
        what=f"configure of the CMake probe with {cmake}", timeout=timeout,
        fix="read the CMake output in the finding", machine_faults=True, writable=(build,))


class ReplyError(ValueError):
    """The probe's build folder holds no reply CMake could have written (the package's code
    wrote there)."""


def _json(build: Path, relative: str) -> Any:
    """A JSON file of the probe's build folder, read back safely (release/verify/sandbox.py:
    the package's code ran there): no link followed, a regular file, bounded."""
    data = read_back(build, relative, limit=_REPLY_LIMIT)
    if data is None:
        raise ReplyError(f"{relative} is missing, or not a regular file")
    try:
        value = json.loads(data)
    except ValueError as error:
        raise ReplyError(f"{relative} is not JSON ({error})") from None
    if not isinstance(value, dict):
        raise ReplyError(f"{relative} is not a JSON object")
    return value


def _targets(build: Path) -> dict[str, tuple[str, ...]]:
    reply = ".cmake/api/v1/reply"
    indexes = sorted(name for name, mode in list_back(build / reply)
                     if name.startswith("index-") and name.endswith(".json"))
    targets: dict[str, tuple[str, ...]] = {}
    if not indexes:
        return targets
    try:
        index = _json(build, f"{reply}/{indexes[-1]}")
        codemodel = _json(build, f"{reply}/{index['reply']['codemodel-v2']['jsonFile']}")
        for target in codemodel["configurations"][0]["targets"]:
            detail = _json(build, f"{reply}/{target['jsonFile']}")
            fragments = detail.get("link", {}).get("commandFragments", [])
            targets[str(target["name"])] = tuple(sorted({
                name for item in fragments if item.get("role") == "libraries"
                for name in libraries_in(str(item["fragment"]))}))
    except (KeyError, IndexError, TypeError, AttributeError) as error:
        raise ReplyError(f"the File API reply is not CMake's ({type(error).__name__}: "
                         f"{error})") from None
    return targets


def read_answers(build: Path, requests: list[Request]) -> dict[str, Answer]:
    """The answers the probe wrote into ``build``; ReplyError when they are not CMake's."""
    targets = _targets(build)
    answers = {}
    for request in requests:
        found_file = read_back(build, f"found-{request.label}.txt", limit=64) or b""
        found = found_file.decode("ascii", "replace").strip().upper() in (
            "1", "TRUE", "ON", "YES")
        answers[request.label] = Answer(found, targets.get(f"probe_{request.label}", ()))
    return answers
