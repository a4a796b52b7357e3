"""verify --static on real Windows wheels from the package index (numpy, repaired by
delvewheel, and pillow), read through the PE reader and the Windows loader model: every
DLL and .pyd is read, bundled DLLs resolve into <name>.libs, and the findings match the
reviewed expectations in tests/fixtures/corpus-windows/ (as tests/verify/test_corpus.py
does for Linux wheels). Downloaded once into the tool cache."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from release import tools
from release.findings import Finding
from release.verify import verify_wheel
from release.verify.checks import linkage
from release.verify.context import VerifyContext
from release.verify.run import run_verify
from release.verify.wheel import WheelModel
from tests.conftest import ROOT
from tests.verify.test_corpus import _key

pytestmark = pytest.mark.index

EXPECTED = ROOT / "tests" / "fixtures" / "corpus-windows"
CASES = sorted(path.stem for path in EXPECTED.glob("*.json"))


def _expected(case: str) -> dict[str, object]:
    found: dict[str, object] = json.loads((EXPECTED / f"{case}.json").read_text())
    return found


def _wheel(case: str) -> Path:
    expected = _expected(case)
    folder = tools.cache_dir() / "wheels" / "corpus-windows"
    path = folder / str(expected["wheel"])
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        completed = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--only-binary=:all:", "--platform", str(expected["platform"]),
             "--python-version", str(expected["python_version"]), "--dest", str(folder),
             str(expected["requirement"])], capture_output=True, text=True, check=False)
        assert completed.returncode == 0, f"cannot download {expected['requirement']}: " \
            f"{completed.stderr.strip()[-500:]}"
    assert path.exists(), f"pip downloaded another wheel than {path.name}"
    return path


@pytest.mark.parametrize("case", CASES)
def test_findings_match_the_reviewed_expectations(case: str) -> None:
    expected = _expected(case)
    report = verify_wheel(_wheel(case), static=True)
    assert report.binaries == expected["binaries"]   # every DLL and .pyd read as PE
    actual = sorted(_key(f.to_json()) for f in report.findings if f.severity.value != "info")
    rows = expected["findings"]
    assert isinstance(rows, list)
    wanted = sorted(_key(row) for row in rows)
    new = [row for row in actual if row not in wanted]
    lost = [row for row in wanted if row not in actual]
    assert not new and not lost, (f"new (unreviewed) findings: {new}\n"
                                  f"expected findings no longer found: {lost}")
    assert all(row["review"] for row in rows)


class _Resolutions:
    """A check that keeps linkage's resolutions of the wheel."""

    NAME = "test-resolutions"
    RUNS_PROGRAMS = False
    found: list[linkage.Resolution] = []

    @classmethod
    def check(cls, wheel: WheelModel, context: VerifyContext) -> list[Finding]:
        cls.found = linkage.resolve(wheel, context)
        return []


@pytest.mark.parametrize("case", CASES)
def test_bundled_dlls_resolve_into_the_wheel(case: str) -> None:
    from release.platform import all_platforms
    expected = _expected(case)
    run_verify(_wheel(case), static=True, platforms=all_platforms(),
               extra_checks=[_Resolutions])
    resolved = {(item.binary, item.needed): item for item in _Resolutions.found}
    assert resolved and all(item.kind in (linkage.IN_WHEEL, linkage.SYSTEM)
                            for item in resolved.values()), \
        [item for item in resolved.values() if item.kind not in ("wheel", "system")]
    wanted = expected["resolved"]
    assert isinstance(wanted, dict)
    for binary, names in wanted.items():
        for name, target in names.items():
            item = resolved[(binary, name)]
            assert (item.kind, item.target, item.via) == \
                (linkage.IN_WHEEL, target, "os.add_dll_directory")
