"""The wheel's ``.dist-info`` folder, from a resolved release (release/building/resolved.py).

The lay-out stage writes what depends on the project alone: METADATA, top_level.txt,
entry_points.txt (when [project] declares any), licenses/ (PEP 639) and WHEEL; the PEP 517
backend's ``prepare_metadata_for_build_wheel`` writes the same files but WHEEL. The pack
stage adds the SBOM, which hashes the shipped binaries as the fix-up left them, and the
wheel writer adds RECORD (release/distribution/wheel.py)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from release.building.resolved import ResolvedRelease
from release.distribution import sbom, wheel
from release.tool import Tool


def folder_name(release: ResolvedRelease) -> str:
    """``edgert_cu12-0.1.0.dist-info``."""
    return (f"{wheel.normalize_distribution(release.distribution)}-"
           f"{release.manifest.version}.dist-info")


def metadata_files(release: ResolvedRelease) -> dict[str, bytes]:
    """The .dist-info files but WHEEL, RECORD and the SBOM: METADATA, top_level.txt,
    entry_points.txt when [project] declares any, and licenses/ (PEP 639)."""
    manifest, metadata = release.manifest, release.metadata
    files = {"METADATA": metadata.text.encode("utf-8"),
             "top_level.txt": (manifest.package + "\n").encode("utf-8")}
    if metadata.entry_points is not None:
        files["entry_points.txt"] = metadata.entry_points.encode("utf-8")
    for license_file in metadata.license_files:
        files[f"licenses/{license_file}"] = (manifest.root / license_file).read_bytes()
    return files


def wheel_name(release: ResolvedRelease) -> wheel.WheelName:
    """The wheel's name before repair (the repair tool may change its platform tag)."""
    python, abi = release.platform.python_tag().split("-")
    return wheel.WheelName(wheel.normalize_distribution(release.distribution),
                           release.manifest.version, python, abi,
                           release.platform.wheel_platform_tag(release.target))


def layout_files(release: ResolvedRelease) -> dict[str, bytes]:
    """What the lay-out stage writes: ``metadata_files`` and WHEEL with the platform tag."""
    tag = f"{release.platform.python_tag()}-{release.platform.wheel_platform_tag(release.target)}"
    return {**metadata_files(release), "WHEEL": wheel.wheel_text([tag]).encode()}


def sbom_file(release: ResolvedRelease, root: Path, *, toolchain: tuple[Tool, ...],
              epoch: int) -> tuple[str, bytes]:
    """The SBOM (its name inside .dist-info, its bytes) of the files under ``root``."""
    license_expression = release.manifest.project.get("license")
    document = sbom.document(release.record,
                             files={path: (root / path).read_bytes()
                                    for path in sbom.shipped_files(release.record)},
                             toolchain=toolchain,
                             license_expression=license_expression
                             if isinstance(license_expression, str) else None,
                             epoch=epoch, generator=wheel.GENERATOR)
    return sbom.file_name(release.manifest.package), sbom.to_bytes(document)


def write_files(folder: Path, files: Mapping[str, bytes]) -> None:
    """Writes ``files`` (relative '/'-separated name -> bytes) under ``folder``."""
    for file_name, data in files.items():
        path = folder / file_name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
