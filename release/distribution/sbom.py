"""The wheel's software bill of materials: a CycloneDX 1.6 document in
``<name>.dist-info/sboms/<package>.cdx.json`` (PEP 770).

It names the distribution (``metadata.component``, with its purl and license), every native
component and the extension module the wheel ships (each with its file and sha256), how they
depend on each other, and the toolchain that built them (``formulation``: the compilers and
their versions as CMake found them, CMake, Ninja, the Python whose headers the extension was
compiled against, and what the variant and the platform brought: the CUDA toolchain's wheels,
zig). The document is a pure function of the build: no time but SOURCE_DATE_EPOCH's, a serial
number derived from its contents, and no path of the build machine.

``toolchain_from_cmake`` reads the compilers from CMake's File API (the ``toolchains-v1``
object the configure stage asks for); ``check_sbom`` is what ``check-set`` holds a wheel's
document to."""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from release.distribution.buildrecord import BuildRecord
from release.tool import Tool

SPEC_VERSION = "1.6"
FOLDER = "sboms"
FILE_API_QUERY = Path(".cmake/api/v1/query/client-edgert-release/query.json")
_QUERY = {"requests": [{"kind": "toolchains", "version": 1}]}
_NAMESPACE = uuid.UUID("6f1d3c52-2d7e-4d8f-9a43-5b0c8f1e2a77")


def file_name(package: str) -> str:
    return f"{FOLDER}/{package}.cdx.json"


def shipped_files(record: BuildRecord) -> list[str]:
    """The wheel paths the SBOM names: every component's file and the extension's."""
    files = [component.file for component in record.components]
    return files + ([record.extension.file] if record.extension is not None else [])


def write_file_api_query(build_dir: Path) -> None:
    """Asks CMake, before it configures ``build_dir``, to describe its toolchains."""
    query = build_dir / FILE_API_QUERY
    query.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(_QUERY, sort_keys=True)
    if not query.is_file() or query.read_text(encoding="utf-8") != text:
        query.write_text(text, encoding="utf-8")


def _reply(build_dir: Path) -> tuple[dict[str, Any], Path] | None:
    reply = build_dir / ".cmake/api/v1/reply"
    indexes = sorted(reply.glob("index-*.json"))
    if not indexes:
        return None
    index: dict[str, Any] = json.loads(indexes[-1].read_text(encoding="utf-8"))
    return index, reply


def toolchain_from_cmake(build_dir: Path) -> tuple[Tool, ...]:
    """CMake's version and each language's compiler (id, version, program name) from the
    File API's reply in ``build_dir``; () when CMake wrote none."""
    found = _reply(build_dir)
    if found is None:
        return ()
    index, reply = found
    tools = [Tool("cmake", str(index["cmake"]["version"]["string"]), "pkg:generic/cmake@"
                  + str(index["cmake"]["version"]["string"]))]
    client = index.get("reply", {}).get("client-edgert-release", {}).get("query.json", {})
    for response in client.get("responses", []):
        if response.get("kind") != "toolchains":
            continue
        data = json.loads((reply / response["jsonFile"]).read_text(encoding="utf-8"))
        for toolchain in data.get("toolchains", []):
            compiler = toolchain.get("compiler", {})
            program = PurePosixPath(str(compiler.get("path", "")).replace("\\", "/")).name
            tools.append(Tool(f"{compiler.get('id', '?')} {toolchain.get('language')} compiler "
                              f"({program})", str(compiler.get("version", "?"))))
    return tuple(tools)


def _component(ref: str, name: str, version: str, file: str, data: bytes) -> dict[str, Any]:
    return {"type": "library", "bom-ref": ref, "name": name, "version": version,
            "hashes": [{"alg": "SHA-256", "content": hashlib.sha256(data).hexdigest()}],
            "properties": [{"name": "edgert:file", "value": file}]}


def _tool(tool: Tool) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "application", "bom-ref": f"tool:{tool.name}",
                             "name": tool.name, "version": tool.version}
    if tool.purl:
        entry["purl"] = tool.purl
    return entry


def document(record: BuildRecord, *, files: Mapping[str, bytes], toolchain: Sequence[Tool],
             license_expression: str | None, epoch: int, generator: str) -> dict[str, Any]:
    """The CycloneDX document of a wheel whose build record is ``record``; ``files`` maps
    wheel paths to the bytes of at least every component's file."""
    main = f"pkg:pypi/{record.distribution}@{record.version}"
    components = [_component(f"component:{c.name}", c.name, record.version, c.file,
                             files[c.file]) for c in record.components]
    if record.extension is not None:
        components.append(_component("component:extension", record.extension.module,
                                     record.version, record.extension.file,
                                     files[record.extension.file]))
    known = {c.name for c in record.components}
    dependencies = [{"ref": main, "dependsOn": sorted(c["bom-ref"] for c in components)}]
    dependencies += [{"ref": f"component:{c.name}",
                      "dependsOn": sorted(f"component:{d}" for d in c.depends if d in known)}
                     for c in record.components]
    if record.extension is not None:
        dependencies.append({"ref": "component:extension", "dependsOn": sorted(
            f"component:{d}" for d in record.extension.depends if d in known)})
    metadata: dict[str, Any] = {
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch)),
        "tools": {"components": [{"type": "application", "name": generator}]},
        "component": {"type": "library", "bom-ref": main, "name": record.distribution,
                      "version": record.version, "purl": main},
        "properties": [{"name": "edgert:target", "value": record.target},
                       {"name": "edgert:variant", "value": record.variant}]}
    if license_expression:
        metadata["component"]["licenses"] = [{"expression": license_expression}]
    body = {"bomFormat": "CycloneDX", "specVersion": SPEC_VERSION, "version": 1,
            "metadata": metadata, "components": components,
            "formulation": [{"bom-ref": "formula:build",
                             "components": [_tool(tool) for tool in sorted(set(toolchain))]}],
            "dependencies": dependencies}
    serial = uuid.uuid5(_NAMESPACE, json.dumps(body, sort_keys=True))
    return {"bomFormat": "CycloneDX", "specVersion": SPEC_VERSION,
            "serialNumber": f"urn:uuid:{serial}", **body}


def to_bytes(sbom: Mapping[str, Any]) -> bytes:
    return (json.dumps(sbom, indent=1, sort_keys=True) + "\n").encode("utf-8")


def check_sbom(data: bytes, record: BuildRecord, digests: Mapping[str, str]) -> list[str]:
    """What is wrong with a wheel's SBOM, as sentences; [] when it names the distribution,
    every shipped component with the sha256 of the file the wheel holds (``digests``: wheel
    path -> hex sha256), and a toolchain."""
    try:
        sbom = json.loads(data)
    except ValueError as error:
        return [f"is not JSON ({error})"]
    except RecursionError:
        return ["is nested too deeply to read"]
    if not isinstance(sbom, dict) or sbom.get("bomFormat") != "CycloneDX":
        return ["is not a CycloneDX document"]
    problems = []
    main = sbom.get("metadata", {}).get("component", {})
    if (main.get("name"), main.get("version")) != (record.distribution, record.version):
        problems.append(f"describes {main.get('name')} {main.get('version')}, the wheel is "
                        f"{record.distribution} {record.version}")
    listed = {prop.get("value"): component for component in sbom.get("components", [])
              for prop in component.get("properties", []) if prop.get("name") == "edgert:file"}
    shipped = [c.file for c in record.components]
    if record.extension is not None:
        shipped.append(record.extension.file)
    for path in shipped:
        component = listed.get(path)
        if component is None:
            problems.append(f"does not name {path}")
            continue
        listed_hashes = {h.get("alg"): h.get("content") for h in component.get("hashes", [])}
        actual = digests.get(path)
        if listed_hashes.get("SHA-256") != actual:
            problems.append(f"gives {path} the sha256 {listed_hashes.get('SHA-256')}, the "
                            f"wheel's file has {actual}")
    formulation = sbom.get("formulation") or [{}]
    tools = [tool.get("name", "") for tool in formulation[0].get("components", [])]
    if not any(" compiler " in name for name in tools) or "cmake" not in tools:
        problems.append("names no compiler or no CMake in its formulation (the toolchain)")
    return problems
