"""A new binary format is a reader plus a platform module, with no edit to any check.

"toy" is a made-up format defined only here: a file starting ``TOY1\\n`` followed by JSON
(needed libraries, search-path entries written ``@here/...``, exported symbols). Its loader
model knows one system library. verify's unchanged checks (linkage, search-path, metadata,
duplicates) judge toy wheels through that model alone."""

from __future__ import annotations

import json
import mmap
import posixpath
from collections.abc import Collection, Sequence
from pathlib import Path

import pytest

from release.binary.model import GLOBAL, BinaryInfo, Symbol
from release.distribution import wheel
from release.errors import BinaryFormatError
from release.findings import Severity
from release.host import Host, Runner
from release.loader import (
    Entry,
    EntryKind,
    LoaderModel,
    LoaderWords,
    LoadItem,
    Problem,
    SearchFolder,
    SystemPolicy,
)
from release.verify.argument import classify
from release.verify.report import Report
from release.verify.run import run_verify

MAGIC = b"TOY1\n"
TAG = "toyos_1_any"
TOKEN = "@here"


class ToyReader:
    name = "toy"

    def matches(self, head: bytes) -> bool:
        return head.startswith(MAGIC)

    def read(self, data: bytes | mmap.mmap, *, where: str, sections: Collection[str] = (),
             static_symbols: bool = False) -> BinaryInfo:
        try:
            body = json.loads(bytes(data[len(MAGIC):]))
        except ValueError as error:
            raise BinaryFormatError(f"{where}: bad toy file ({error})", fix="rebuild") from None
        exports = tuple(Symbol(name, GLOBAL, "default", True, "func")
                        for name in body.get("exports", ()))
        return BinaryInfo(format="toy", machine="any", bits=64, little_endian=True,
                          file_type="shared", size=len(data), needed=tuple(body["needed"]),
                          runpath=tuple(body["search"]), dynamic_symbols=exports)


class ToyLoader(LoaderModel):
    words = LoaderWords(search_path="TOY_SEARCH", relative_entry="@here-relative",
                        how_to_set="toy-link --search @here/...")

    def claims_tag(self, platform_tag: str) -> bool:
        return platform_tag.startswith("toyos_")

    def search_entry(self, binary: str, folder: str) -> str:
        relative = posixpath.relpath(folder or ".", posixpath.dirname(binary) or ".")
        return TOKEN if relative == "." else f"{TOKEN}/{relative}"

    def entries(self, info: BinaryInfo) -> tuple[str, ...]:
        return info.runpath

    def classify(self, entry: str, folder: str) -> Entry:
        if not entry:
            return Entry(entry, EntryKind.EMPTY)
        if not entry.startswith(TOKEN):
            return Entry(entry, EntryKind.ABSOLUTE)
        joined = posixpath.normpath(posixpath.join("/site", folder) + entry[len(TOKEN):])
        if joined != "/site" and not joined.startswith("/site/"):
            return Entry(entry, EntryKind.OUTSIDE)
        return Entry(entry, EntryKind.INSIDE, joined[len("/site/"):])

    def search_folders(self, info: BinaryInfo, folder: str,
                       inherited: Sequence[SearchFolder]) -> list[SearchFolder]:
        return [SearchFolder(entry.folder, "TOY_SEARCH") for text in info.runpath
                if (entry := self.classify(text, folder)).kind is EntryKind.INSIDE]

    def passes_down(self, info: BinaryInfo, folder: str, path: str) -> list[SearchFolder]:
        return []

    def search_path_problems(self, info: BinaryInfo) -> list[Problem]:
        return [Problem("warning", "searches too many folders")] if len(info.runpath) > 3 else []

    def policy(self, platform_tags: Sequence[str]) -> SystemPolicy:
        return SystemPolicy(name="toyos 1", libraries=frozenset({"toysys"}))

    def is_system(self, name: str, policy: SystemPolicy) -> bool:
        return name in policy.libraries

    def is_loadable_library(self, info: BinaryInfo) -> bool:
        return info.file_type == "shared"

    def binds_by_name(self, info: BinaryInfo) -> bool:
        return True

    def runner(self, platform_tags: Sequence[str], host: Host) -> Runner | None:
        return None

    def unloadable(self, info: BinaryInfo, runner: Runner) -> str:
        return ""

    def load_command(self, items: Sequence[LoadItem], runner: Runner,
                     imports: Sequence[str] = ()) -> list[str]:
        raise AssertionError("toy binaries are never loaded here")


class ToyPlatform:   # only what verify asks of a platform (release.loader.HasLoader)
    name = "toyos"
    loader = ToyLoader()
    reader = ToyReader()

    def emulated(self, *, cache: Path) -> tuple[Runner, ...]:
        return ()


def toy(needed: Sequence[str] = (), search: Sequence[str] = (),
        exports: Sequence[str] = ()) -> bytes:
    return MAGIC + json.dumps({"needed": list(needed), "search": list(search),
                               "exports": list(exports)}).encode()


def toy_wheel(path: Path, binaries: dict[str, bytes]) -> Path:
    dist_info = "toy-1.0.dist-info"
    files = {name: (data, 0o755) for name, data in binaries.items()}
    files[f"{dist_info}/METADATA"] = (b"Metadata-Version: 2.1\nName: toy\nVersion: 1.0\n", 0o644)
    files[f"{dist_info}/WHEEL"] = (f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\n"
                                   f"Tag: py3-none-{TAG}\n".encode(), 0o644)
    wheel.write_wheel(path, files, dist_info=dist_info, epoch=315532800)
    return path


def verify(path: Path) -> Report:
    return run_verify(classify(path), static=True, platforms=[ToyPlatform()])


def errors(report: Report) -> list[tuple[str, str, str]]:
    return sorted((f.check, f.file, f.what) for f in report.findings
                  if f.severity is Severity.ERROR)


def test_a_good_toy_wheel_passes_every_check(tmp_path: Path) -> None:
    loader = ToyLoader()
    report = verify(toy_wheel(tmp_path / f"toy-1.0-py3-none-{TAG}.whl", {
        "toy/_C.toy": toy(["core", "toysys"], [loader.search_entry("toy/_C.toy", "toy/lib")]),
        "toy/lib/core": toy([], [TOKEN], exports=["core_run"]),
    }))
    assert errors(report) == []
    assert {report.checks[name] for name in ("linkage", "search-path", "metadata")} == {"ran"}


def test_the_unchanged_checks_find_toy_mistakes(tmp_path: Path) -> None:
    report = verify(toy_wheel(tmp_path / f"toy-1.0-py3-none-{TAG}.whl", {
        "toy/_C.toy": toy(["core", "missing"], ["@here/lib", "/opt/toolchain/lib"],
                          exports=["shared_symbol"]),
        "toy/lib/core": toy([], ["@here/../../.."], exports=["shared_symbol"]),
        "toy/lib/wide": toy([], ["@here"] * 4),
    }))
    found = errors(report)
    assert ("linkage", "toy/_C.toy", "needs missing, which is not found after installation") \
        in found
    # a third-party wheel (no build record): dead or absolute search paths are warnings
    warned = {(f.check, f.file, f.what) for f in report.findings
              if f.severity is Severity.WARNING}
    assert ("search-path", "toy/_C.toy", "search path '/opt/toolchain/lib' is absolute") in warned
    assert ("search-path", "toy/lib/core", "search path '@here/../../..' leaves site-packages") \
        in warned
    fix = next(f.fix for f in report.findings if f.check == "linkage")
    assert "TOY_SEARCH" in fix and "@here-relative" in fix   # the platform's own words
    warnings = [(f.check, f.file) for f in report.findings if f.severity is Severity.WARNING]
    assert ("search-path", "toy/lib/wide") in warnings        # the loader model's own problem
    assert ("duplicates", "toy/lib/core") in warnings or ("duplicates", "toy/_C.toy") in warnings


@pytest.mark.parametrize("platforms", [[], [ToyPlatform()]])
def test_without_its_platform_a_toy_wheel_is_reported_not_passed(
        tmp_path: Path, platforms: list[ToyPlatform]) -> None:
    path = toy_wheel(tmp_path / f"toy-1.0-py3-none-{TAG}.whl",
                     {"toy/_C.toy": toy(["missing"], [])})
    report = run_verify(classify(path), static=True, platforms=platforms)
    unclaimed = [f for f in report.findings if f.check == "platform"]
    if platforms:
        assert unclaimed == [] and errors(report)
    else:
        assert report.checks["linkage"] == "not run"
        assert [f.severity for f in unclaimed] == [Severity.WARNING]
        assert TAG in unclaimed[0].what
