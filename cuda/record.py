"""The CUDA provider's section of the build record (JSON key ``cuda``, docs/build-record.md):
the compute capabilities the wheel claims, the PTX it ships, and the runtime its device code
needs. The pipeline writes it (``DeviceCodeRecord.to_json``); the record keeps it as the
provider's JSON and the provider's checks read it back here (``device_code_record``), a
malformed section being one WheelError."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from release.distribution.buildrecord import BuildRecord, RuntimeDependency, json_text, json_texts
from release.errors import WheelError

SECTION = "cuda"   # the provider package's name, the record's key for its section


@dataclass(frozen=True)
class DeviceCodeRecord:
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


def device_code_record(record: BuildRecord | None) -> DeviceCodeRecord | None:
    """The CUDA section of ``record`` (None: no record, or a record without one)."""
    if record is None:
        return None
    section = record.section(SECTION)
    if section is None:
        return None
    try:
        return _parse(section)
    except (KeyError, TypeError, ValueError) as error:
        raise WheelError(f"{record.path}: unreadable {SECTION} section of the build record "
                         f"({error!r})",
                         fix="rebuild the wheel; the record is written by the release "
                             "pipeline") from None


def _parse(section: Mapping[str, Any]) -> DeviceCodeRecord:
    major = section["major"]
    if not isinstance(major, int) or isinstance(major, bool):
        raise TypeError(f"cuda.major must be an integer, found {major!r}")
    return DeviceCodeRecord(
        major=major, claims=json_texts(section.get("claims")), ptx=json_texts(section.get("ptx")),
        runtime=RuntimeDependency(
            requirement=json_text(section["runtime_requirement"]),
            distribution=json_text(section["runtime_distribution"]),
            library=json_text(section["runtime_library"]), dir=json_text(section["runtime_dir"])))
