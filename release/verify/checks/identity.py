"""Identity: the wheel says the same thing everywhere. METADATA has a Metadata-Version, a
Name and a Version, and they match the file name; so does the .dist-info folder's name
(normalised as the wheel specification says: pip refuses a wheel whose .dist-info names
another project); WHEEL has a Wheel-Version whose major is 1 (pip refuses newer majors) and
names at least one tag, and the tags
in the file name are exactly the tags WHEEL lists. pip installs by the file name's tags, and
every check judges the binaries against those; a WHEEL file that lists others is this
check's own finding."""

from __future__ import annotations

from packaging.tags import Tag
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from release.findings import Finding, Severity
from release.verify.argument import variant_label
from release.verify.checks._common import finding
from release.verify.context import VerifyContext
from release.verify.wheel_model import WheelModel

NAME = "identity"
RUNS_PROGRAMS = False


def _metadata_findings(wheel: WheelModel, name: str, version: str) -> list[Finding]:
    metadata = wheel.metadata
    missing = [field for field, value in (("Metadata-Version", metadata.metadata_version),
                                          ("Name", metadata.name), ("Version", metadata.version))
               if not value.strip()]
    if missing:
        return [finding(NAME, Severity.ERROR, "METADATA", f"METADATA has no {', '.join(missing)}",
                        why="pip cannot tell what it installs", fix="rebuild the wheel")]
    findings = []
    if canonicalize_name(metadata.name) != canonicalize_name(name):
        findings.append(finding(NAME, Severity.ERROR, "METADATA", f"METADATA names "
                                f"'{metadata.name}' but the file name says '{name}'",
                                fix="rebuild the wheel; do not rename wheel files"))
    try:
        same = Version(metadata.version) == Version(version)
    except InvalidVersion:
        same = False
    if not same:
        findings.append(finding(NAME, Severity.ERROR, "METADATA", f"METADATA says version "
                                f"'{metadata.version}' but the file name says '{version}'",
                                fix="rebuild the wheel; do not rename wheel files"))
    return findings


def _dist_info_findings(wheel: WheelModel, name: str, version: str) -> list[Finding]:
    if not wheel.dist_info:
        return []
    stem = wheel.dist_info[:-len(".dist-info")]
    project, _, folder_version = stem.partition("-")
    try:
        same_version = Version(folder_version) == Version(version)
    except InvalidVersion:
        same_version = False
    if (canonicalize_name(project) == canonicalize_name(name) and same_version
            and "-" not in folder_version):
        return []
    return [finding(NAME, Severity.ERROR, wheel.dist_info,
                    f"the .dist-info folder '{wheel.dist_info}' is not named for the file "
                    f"name's project and version ('{name}' {version})",
                    why="pip refuses the wheel (and installers that trust the folder install "
                        "another project's metadata)",
                    fix="rebuild the wheel; do not rename wheel files or their folders")]


def _wheel_version_findings(wheel: WheelModel) -> list[Finding]:
    text = wheel.wheel_version
    try:
        major = int(text.split(".")[0])
    except ValueError:
        return [finding(NAME, Severity.ERROR, "WHEEL",
                        f"WHEEL has no valid Wheel-Version ({text!r})" if text else
                        "WHEEL has no Wheel-Version", why="pip refuses the wheel",
                        fix="rebuild the wheel with a PEP 427 builder")]
    if major > 1:
        return [finding(NAME, Severity.ERROR, "WHEEL",
                        f"Wheel-Version {text} is a newer major version than 1",
                        why="pip refuses wheels of a format it does not know",
                        fix="rebuild the wheel with a builder writing Wheel-Version 1.0")]
    return []


def _tag_findings(wheel: WheelModel, named: frozenset[Tag]) -> list[Finding]:
    listed = frozenset(wheel.wheel_file_tags)
    if not listed:
        return [finding(NAME, Severity.ERROR, "WHEEL", "WHEEL lists no Tag",
                        why="the platform the wheel is for cannot be checked",
                        fix="rebuild the wheel with a PEP 427 builder")]
    if listed == named:
        return []
    return [finding(NAME, Severity.ERROR, "WHEEL",
                    f"the file name says {'.'.join(sorted(map(str, named)))} but WHEEL says "
                    f"{'.'.join(sorted(map(str, listed)))}",
                    why="pip installs by the file name's tags (the binaries are judged against "
                        "them); tools that read WHEEL are told something else",
                    fix="rebuild (or repair) the wheel so both name the same tags",
                    file_tags=sorted(map(str, named)), wheel_tags=sorted(map(str, listed)))]


def check(wheel: WheelModel, context: VerifyContext) -> list[Finding]:
    return identity_findings(wheel)


def identity_findings(wheel: WheelModel) -> list[Finding]:
    """The check's findings; it needs nothing but the wheel (repair uses it on its input)."""
    filename = wheel.filename
    label = variant_label(filename)
    if label is not None:    # a variant wheel (PEP 825): its name less the label
        filename = filename[:-len(f"-{label}.whl")] + ".whl"
    try:
        name, version, _, tags = parse_wheel_filename(filename)
    except (InvalidWheelFilename, InvalidVersion) as error:
        return [finding(NAME, Severity.ERROR, "", f"'{wheel.filename}' is not a valid wheel "
                        f"file name ({error})", fix="use the name the builder gave the wheel")]
    return (_metadata_findings(wheel, str(name), str(version))
            + _dist_info_findings(wheel, str(name), str(version))
            + _wheel_version_findings(wheel) + _tag_findings(wheel, tags))
