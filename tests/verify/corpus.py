"""The verify corpus: real wheels from the package index, each with an expected-findings file
(tests/fixtures/<corpus>/<case>.json) whose every warning and error was reviewed by hand.
One download rule, one comparison, one way to see linkage's resolutions, for the Linux,
Windows and macOS corpora (test_corpus.py, test_corpus_windows.py, test_corpus_macos.py)."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from packaging.tags import sys_tags
from packaging.utils import parse_wheel_filename

from release import tools
from release.findings import Finding
from release.platform import all_platforms
from release.verify.checks import linkage
from release.verify.context import VerifyContext
from release.verify.report import Report
from release.verify.run import run_verify
from release.verify.wheel_model import WheelModel
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
    for this interpreter. The file must be the reviewed one, byte for byte: the expectation's
    ``sha256``. A changed corpus is a finding, so the test fails, naming the reviewed and the
    served file and digest, when the index serves another file (under the same name, or under
    another name to an interpreter that can install the reviewed one). Only an interpreter
    that cannot install the reviewed file (another Python for a cp311 wheel) skips: the
    index rightly serves it another wheel, which nobody has reviewed."""
    wanted = expected(corpus, case)
    folder = tools.cache_dir() / "wheels" / corpus
    path = folder / str(wanted["wheel"])
    if not path.exists():
        _download(wanted, folder)
    served = _digest(path)
    assert served == wanted["sha256"], (
        f"{corpus}/{case}: the index served {path.name} with sha256 {served}, not the "
        f"reviewed file's {wanted['sha256']}: review the new file's findings in "
        f"tests/fixtures/{corpus}/{case}.json (delete {path} if the cached copy is damaged)")
    return path


def _download(wanted: dict[str, Any], folder: Path) -> None:
    """``pip download`` of the expectation's requirement into ``folder``, by way of a fresh
    folder so that what pip chose is known; fails or skips (as ``wheel`` says) when it chose
    another file than the reviewed one."""
    folder.mkdir(parents=True, exist_ok=True)
    target = (["--platform", str(wanted["platform"]), "--python-version",
               str(wanted["python_version"])] if "platform" in wanted else [])
    with tempfile.TemporaryDirectory(dir=folder, prefix=".download-") as fresh:
        completed = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--only-binary=:all:", *target, "--dest", fresh, wanted["requirement"]],
            capture_output=True, text=True, check=False)
        assert completed.returncode == 0, f"cannot download {wanted['requirement']}: " \
            f"{completed.stderr.strip()[-500:]}"
        (got,) = Path(fresh).glob("*.whl")
        if got.name != wanted["wheel"]:
            installable = "platform" in wanted or bool(
                parse_wheel_filename(wanted["wheel"])[3] & set(sys_tags()))
            message = (f"the index served {got.name} (sha256 {_digest(got)}) for "
                       f"{wanted['requirement']}, not the reviewed {wanted['wheel']} (sha256 "
                       f"{wanted['sha256']})")
            if installable:
                pytest.fail(f"{message}: review the new file, or pin the expectation's "
                            "'platform' and 'python_version'", pytrace=False)
            pytest.skip(f"this interpreter ({sys.version_info[:2]}, {sys.platform}) cannot "
                        f"install the reviewed file: {message}")
        os.replace(got, folder / got.name)


def _digest(path: Path) -> str:
    status = path.stat()
    return _digest_of(str(path), status.st_size, status.st_mtime_ns)


@functools.cache
def _digest_of(path: str, _size: int, _mtime: int) -> str:
    """The file's sha256, once per file and version (the corpus tests ask several times)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


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
    found: tuple[linkage.Resolution, ...] = ()

    @classmethod
    def check(cls, wheel: WheelModel, context: VerifyContext) -> list[Finding]:
        cls.found = linkage.resolutions(context)
        return []


def resolutions(path: Path) -> tuple[linkage.Resolution, ...]:
    """How linkage resolves every needed library of the wheel at ``path`` (static)."""
    run_verify(path, static=True, platforms=all_platforms(), extra_checks=[_Resolutions])
    return _Resolutions.found
