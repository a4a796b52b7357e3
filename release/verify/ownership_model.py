"""The ownership model: which shipped library registers each operator and backend.

Our wheels (build record present) are read exactly: every registration leaves a record
"op:<name>" / "backend:<name>" in the library's ``edgert_reg`` section. Other wheels, or
``--heuristic-ownership``, use the rule in data/registration.json (see docs/verify.md).
Computed once per verify run (``context.analyses``); the ownership and load-matrix checks
read it."""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from release.verify.context import VerifyContext
from release.verify.wheel_model import REGISTRATION_SECTIONS, BinaryFile, WheelModel

_SCHEMA = re.compile(rb"(?<=\x00)((?:[a-z_][a-z0-9_]*::)?[a-z_][A-Za-z0-9_]*)"
                     rb"(?:\.[A-Za-z0-9_]+)?\([^\x00]*\) -> ")
_TOKEN = re.compile(rb"[A-Za-z_][A-Za-z0-9_:]*")


@dataclass(frozen=True)
class Ownership:
    mode: str                                   # "exact", "heuristic" or "none"
    owners: dict[str, list[str]]                # "op:add" -> wheel paths of its registrars
    measurement: dict[str, int] = field(default_factory=dict)  # heuristic vs string scanning

    @property
    def registrars(self) -> set[str]:
        return {path for paths in self.owners.values() for path in paths}


def records(data: bytes) -> list[str]:
    """The registration records of an ``edgert_reg`` section."""
    return [item.decode("utf-8", "replace") for item in data.split(b"\0")
            if item.startswith((b"op:", b"backend:"))]


def _exact(wheel: WheelModel) -> Ownership:
    owners: dict[str, list[str]] = {}
    for binary in wheel.binaries:
        # one section per file: the first of the formats' spellings it has (a reader may
        # answer to more than one spelling of the same section)
        data = next((found for name in REGISTRATION_SECTIONS
                     if (found := binary.info.section_data.get(name))), b"")
        for record in records(data):
            owners.setdefault(record, []).append(binary.path)
    return Ownership("exact", owners)


def _machinery() -> list[str]:
    path = Path(__file__).parent / "data" / "registration.json"
    return list(json.loads(path.read_text())["machinery"])


def _uses_machinery(binary: BinaryFile, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(symbol.name, pattern) for symbol in binary.info.dynamic_symbols
               for pattern in patterns)


def _heuristic(wheel: WheelModel) -> Ownership:
    patterns = _machinery()
    owners: dict[str, list[str]] = {}
    tokens: dict[str, set[bytes]] = {}
    for binary in wheel.binaries:
        if binary.info.file_type != "shared":
            continue
        data = binary.read_section(".rodata")
        tokens[binary.path] = set(_TOKEN.findall(data))
        if not _uses_machinery(binary, patterns):
            continue
        for name in sorted({m.group(1).decode() for m in _SCHEMA.finditer(data)}):
            owners.setdefault("op:" + name, []).append(binary.path)
    # What plain string scanning would claim: every library whose strings contain the name.
    plain = sum(1 for name in owners for found in tokens.values() if name[3:].encode() in found)
    measured = {"operators": len(owners), "heuristic_pairs": sum(map(len, owners.values())),
                "string_scan_pairs": plain}
    return Ownership("heuristic", owners, measured)


def analyze(wheel: WheelModel, context: VerifyContext) -> Ownership:
    """Who registers what. Checks read it through ``of(context)``: computed once per run
    (``context.analysis``)."""
    if wheel.build_record is not None and not context.options.heuristic_ownership:
        return _exact(wheel)
    if context.options.heuristic_ownership:
        return _heuristic(wheel)
    return Ownership("none", {})


def of(context: VerifyContext) -> Ownership:
    """Who registers what in the run's wheel (computed once)."""
    return context.analysis(analyze)
