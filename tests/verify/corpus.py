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
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from packaging.utils import parse_wheel_filename

from release.findings import Finding
from release.platform import all_platforms
from release.toolchain import tools
from release.verify import linkage_model
from release.verify.argument import classify
from release.verify.context import VerifyContext
from release.verify.report import Report
from release.verify.run import run_verify
from release.verify.wheel_model import WheelModel
from tests import downloads
from tests.conftest import ROOT

_SAMPLE = re.compile(r"'/tmp/pip-build-env-[^']*'|e\.g\. .*$")


def cases(corpus: str) -> list[str]:
    return sorted(path.stem for path in (ROOT / "tests" / "fixtures" / corpus).glob("*.json"))


def expected(corpus: str, case: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(
        (ROOT / "tests" / "fixtures" / corpus / f"{case}.json").read_text())
    return loaded


def wheel(corpus: str, case: str) -> Path:
    """The reviewed wheel, downloaded once into the tool cache: exactly the file the
    expectation pins, by its ``url`` (the index's address of that one file, written by
    ``python -m tests.verify.pin_corpus``) and its ``sha256``, which pip checks while it
    downloads (the URL's ``#sha256=``) and which is checked again on every use of the cached
    copy. Nothing is resolved: a newer or better-matching file on the index (cryptography
    50.0.2 later gained a manylinux_2_34 wheel beside the reviewed manylinux_2_28 one) is
    never fetched in its place, and any host gets the same file."""
    wanted = expected(corpus, case)
    folder = tools.cache_dir() / "wheels" / corpus
    path = folder / str(wanted["wheel"])
    if not path.exists():
        _download(wanted, folder)
    served = _digest(path)
    assert served == wanted["sha256"], (
        f"{corpus}/{case}: the cached {path} has sha256 {served}, not the reviewed file's "
        f"{wanted['sha256']}: delete it to download the pinned file again")
    return path


def download_command(wanted: dict[str, Any], folder: Path) -> list[str]:
    """``pip download`` of the one pinned file: its URL with the reviewed digest, for the
    interpreter, ABI and platforms its own file name names (so a wheel of another system is
    accepted on this one)."""
    tags = parse_wheel_filename(str(wanted["wheel"]))[3]
    target: list[str] = []
    for platform in sorted({tag.platform for tag in tags} - {"any"}):
        target += ["--platform", platform]
    for abi in sorted({tag.abi for tag in tags} - {"none"}):
        target += ["--abi", abi]
    versions = sorted(tag.interpreter for tag in tags if tag.interpreter.startswith("cp"))
    if target and versions:   # a generic py3 wheel installs on this interpreter's Python
        target += ["--implementation", "cp", "--python-version", versions[0][2:]]
    return [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
            "--only-binary=:all:", *target, "--dest", str(folder),
            f"{wanted['url']}#sha256={wanted['sha256']}"]


def _download(wanted: dict[str, Any], folder: Path) -> None:
    """Downloads the pinned file into ``folder`` by way of a fresh folder, so that a broken
    download never leaves a file under the reviewed name."""
    assert "url" in wanted, (f"{wanted['wheel']} is not pinned to a file: run "
                             "python -m tests.verify.pin_corpus on its expectation")
    folder.mkdir(parents=True, exist_ok=True)
    local = downloads.local_copies(str(wanted["wheel"]))
    if local:   # the machine's own wheelhouse holds that file: copied, checked by the caller
        with tempfile.TemporaryDirectory(dir=folder, prefix=".copy-") as fresh:
            copy = Path(fresh) / local[0].name
            shutil.copyfile(local[0], copy)
            os.replace(copy, folder / copy.name)
        return
    with tempfile.TemporaryDirectory(dir=folder, prefix=".download-") as fresh:
        completed = subprocess.run(download_command(wanted, Path(fresh)),
                                   capture_output=True, text=True, check=False)
        assert completed.returncode == 0, f"cannot download {wanted['url']}: " \
            f"{completed.stderr.strip()[-500:]}"
        got = Path(fresh) / str(wanted["wheel"])
        assert got.exists(), f"pip download of {wanted['url']} wrote no {wanted['wheel']}"
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
    found: tuple[linkage_model.Resolution, ...] = ()

    @classmethod
    def check(cls, wheel: WheelModel, context: VerifyContext) -> list[Finding]:
        cls.found = linkage_model.resolutions(context)
        return []


def resolutions(path: Path) -> tuple[linkage_model.Resolution, ...]:
    """How linkage resolves every needed library of the wheel at ``path`` (static)."""
    run_verify(classify(path), static=True, platforms=all_platforms(), extra_checks=[_Resolutions])
    return _Resolutions.found
