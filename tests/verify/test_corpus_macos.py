"""verify on other people's macOS wheels: real wheels from the package index (numpy arm64,
delocated with its OpenBLAS in numpy/.dylibs; pillow arm64, with about twenty bundled
libraries; markupsafe universal2, a fat extension module),
read by the Mach-O reader and resolved by the dyld loader model. Each has an
expected-findings file in tests/fixtures/corpus-macos/ whose every warning and error was
reviewed by hand, the number of binaries read and how many needed libraries resolve into the
wheel. Downloaded once into the tool cache (pip download --platform, so any host gets the
same file)."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from release import tools
from release.loader import Host, loader_for
from release.platform import all_platforms
from release.verify import VerifyOptions, verify_wheel
from release.verify.checks import linkage
from release.verify.context import VerifyContext
from release.verify.data import load_distribution_dirs
from release.verify.wheel import open_wheel
from tests.conftest import ROOT
from tests.verify.test_corpus import _key

pytestmark = pytest.mark.index

EXPECTED = ROOT / "tests" / "fixtures" / "corpus-macos"
CASES = sorted(path.stem for path in EXPECTED.glob("*.json"))


def _expected(case: str) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((EXPECTED / f"{case}.json").read_text())
    return loaded


def _wheel(case: str) -> Path:
    expected = _expected(case)
    folder = tools.cache_dir() / "wheels" / "corpus-macos"
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
    assert path.exists(), f"pip downloaded another file than {path.name}"
    return path


@pytest.mark.parametrize("case", CASES)
def test_findings_match_the_reviewed_expectations(case: str) -> None:
    expected = _expected(case)
    report = verify_wheel(_wheel(case), static=True)
    assert report.binaries == expected["binaries"]
    actual = sorted(_key(f.to_json()) for f in report.findings if f.severity.value != "info")
    rows = expected["findings"]
    assert isinstance(rows, list)
    wanted = sorted(_key(row) for row in rows)
    new = [row for row in actual if row not in wanted]
    lost = [row for row in wanted if row not in actual]
    assert not new and not lost, (f"new (unreviewed) findings: {new}\n"
                                  f"expected findings no longer found: {lost}")
    assert all(row["review"] for row in rows)
    assert report.checks["linkage"] == "ran" and report.checks["search-path"] == "ran"


@pytest.mark.parametrize("case", CASES)
def test_bundled_libraries_resolve_into_the_wheel(case: str) -> None:
    """Every needed library is in the wheel (through @loader_path / @rpath) or the system."""
    platforms = all_platforms()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "site-packages"
        root.mkdir()
        wheel = open_wheel(_wheel(case), root, extract_all=False, prefixes=(),
                           options=VerifyOptions(),
                           readers=tuple(p.reader for p in platforms if p.reader is not None))
        platform = loader_for(platforms, wheel.platforms)
        assert platform is not None and platform.name == "macos"
        loader = platform.loader
        assert loader is not None
        context = VerifyContext(options=VerifyOptions(), static=True,
                                host=Host("linux", "x86_64"), loader=loader,
                                policy=loader.policy(wheel.platforms),
                                distribution_dirs=load_distribution_dirs(),
                                workdir=Path(scratch) / "work")
        kinds = [item.kind for item in linkage.resolve(wheel, context)]
    assert set(kinds) <= {linkage.IN_WHEEL, linkage.SYSTEM}
    assert kinds.count(linkage.IN_WHEEL) == _expected(case)["in_wheel"]
