"""The verify corpus: real wheels from the package index, each with an expected-findings file
(tests/fixtures/<corpus>/<case>.json) whose every warning and error was reviewed by hand.
One download rule, one comparison, one way to see linkage's resolutions, for the Linux,
Windows and macOS corpora (test_corpus.py, test_corpus_windows.py, test_corpus_macos.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from release import tools
from release.findings import Finding
from release.platform import all_platforms
from release.verify.checks import linkage
from release.verify.context import VerifyContext
from release.verify.report import Report
from release.verify.run import run_verify
from release.verify.wheel import WheelModel
from tests.conftest import ROOT

_SAMPLE = re.compile(r"'/tmp/pip-build-env-[^']*'|e\.g\. .*$")


def cases(corpus: str) -> list[str]:
    return sorted(path.stem for path in (ROOT / "tests" / "fixtures" / corpus).glob("*.json"))


def expected(corpus: str, case: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(
        (ROOT / "tests" / "fixtures" / corpus / f"{case}.json").read_text())
    return loaded


def wheel(corpus: str, case: str) -> Path:
    """The reviewed wheel, downloaded once into the tool cache: for the expectation's
    ``platform`` and ``python_version`` when it names them (any host gets the same file), else
    for this interpreter (skipped when that is another file than the reviewed one)."""
    wanted = expected(corpus, case)
    folder = tools.cache_dir() / "wheels" / corpus
    path = folder / wanted["wheel"]
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        target = (["--platform", str(wanted["platform"]), "--python-version",
                   str(wanted["python_version"])] if "platform" in wanted else [])
        completed = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--only-binary=:all:", *target, "--dest", str(folder), wanted["requirement"]],
            capture_output=True, text=True, check=False)
        assert completed.returncode == 0, f"cannot download {wanted['requirement']}: " \
            f"{completed.stderr.strip()[-500:]}"
    assert path.exists() or "platform" not in wanted, \
        f"pip downloaded another file than {path.name}"
    if not path.exists():
        pytest.skip(f"this interpreter ({sys.version_info[:2]}, {sys.platform}) gets another "
                    f"wheel of {wanted['requirement']} than the reviewed {wanted['wheel']}")
    return path


def key(row: dict[str, str]) -> tuple[str, str, str, str]:
    """What a finding is compared by: the sample after "e.g." varies, the rest may not."""
    return row["severity"], row["check"], row["file"], _SAMPLE.sub("", row["what"]).strip() \
        .rstrip(",")


def assert_matches(report: Report, wanted: dict[str, Any]) -> None:
    """Every warning and error is one the expectation lists (and reviewed), and every listed
    one is still found; the binaries read per format, when the expectation counts them; and
    every note the expectation names (how the class the wheel exercises is modelled: a
    library provided by a dependency's import, an extra's library, a vendor's build path) is
    among the report's info findings."""
    if "binaries" in wanted:
        assert report.binaries == wanted["binaries"]
    notes = [(f.check, f.what) for f in report.findings if f.severity.value == "info"]
    for note in wanted.get("notes", ()):
        assert any(check == note["check"] and note["what"] in what for check, what in notes), \
            f"missing note {note}; the notes: {notes}"
    actual = sorted(key(f.to_json()) for f in report.findings if f.severity.value != "info")
    rows = wanted["findings"]
    listed = sorted(key(row) for row in rows)
    new = [row for row in actual if row not in listed]
    lost = [row for row in listed if row not in actual]
    assert not new and not lost, (f"new (unreviewed) findings: {new}\n"
                                  f"expected findings no longer found: {lost}")
    assert all(row["review"] for row in rows)


class _Resolutions:
    """A check that keeps linkage's resolutions of the wheel it runs on."""

    NAME = "test-resolutions"
    RUNS_PROGRAMS = False
    found: list[linkage.Resolution] = []

    @classmethod
    def check(cls, wheel: WheelModel, context: VerifyContext) -> list[Finding]:
        cls.found = linkage.resolve(wheel, context)
        return []


def resolutions(path: Path) -> list[linkage.Resolution]:
    """How linkage resolves every needed library of the wheel at ``path`` (static)."""
    run_verify(path, static=True, platforms=all_platforms(), extra_checks=[_Resolutions])
    return _Resolutions.found
