"""A real third-party wheel: torch 2.13.0 (136 ELF files), downloaded once into
release.tools.cache_dir()/wheels. verify --static reads every ELF and lists findings."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from release.findings import Severity
from release.verify import VerifyOptions, verify_wheel

pytestmark = [pytest.mark.torch_wheel, pytest.mark.index]


def test_static_reads_every_elf(torch_wheel: Path) -> None:
    with zipfile.ZipFile(torch_wheel) as archive:
        elves = [info.filename for info in archive.infolist()
                 if not info.is_dir() and archive.open(info).read(4) == b"\x7fELF"]
    assert len(elves) == 136
    report = verify_wheel(torch_wheel, static=True,
                          options=VerifyOptions(heuristic_ownership=True))
    assert not [f for f in report.findings if f.check == "binary"]  # every ELF parsed
    assert report.checks["linkage"] == "ran" and report.checks["load-matrix"] == "not run"
    linkage = [f for f in report.findings if f.check == "linkage"]
    assert all(f.severity is Severity.ERROR and f.file.startswith("torch/bin/")
               for f in linkage)  # test programs that expect a build tree
    ownership = next(f for f in report.findings if f.check == "ownership"
                     and f.severity is Severity.INFO)
    measured = ownership.details["measurement"]
    assert measured["operators"] > 2000
    assert measured["string_scan_pairs"] > measured["heuristic_pairs"] >= measured["operators"]
    owners = {path for paths in ownership.details["table"].values() for path in paths}
    assert "torch/lib/libtorch_cpu.so" in owners
    assert not any(f.check == "record" for f in report.findings)
