"""verify on other people's macOS wheels: real wheels from the package index (numpy arm64,
delocated with its OpenBLAS in numpy/.dylibs; pillow arm64, with about twenty bundled
libraries; markupsafe universal2, a fat extension module),
read by the Mach-O reader and resolved by the dyld loader model. Each has an
expected-findings file in tests/fixtures/corpus-macos/ whose every warning and error was
reviewed by hand, the number of binaries read and how many needed libraries resolve into the
wheel. Downloaded once into the tool cache (pip download --platform, so any host gets the
same file)."""

from __future__ import annotations

import pytest

from release.verify import linkage_model, verify_wheel
from tests.verify import corpus

pytestmark = pytest.mark.index

CORPUS = "corpus-macos"


@pytest.mark.parametrize("case", corpus.cases(CORPUS))
def test_findings_match_the_reviewed_expectations(case: str) -> None:
    report = verify_wheel(corpus.wheel(CORPUS, case), static=True)
    corpus.assert_matches(report, corpus.expected(CORPUS, case))
    assert report.checks["linkage"] == "ran" and report.checks["search-path"] == "ran"


@pytest.mark.parametrize("case", corpus.cases(CORPUS))
def test_bundled_libraries_resolve_into_the_wheel(case: str) -> None:
    """Every needed library is in the wheel (through @loader_path / @rpath) or the system."""
    kinds = [item.kind for item in corpus.resolutions(corpus.wheel(CORPUS, case))]
    assert set(kinds) <= {linkage_model.IN_WHEEL, linkage_model.SYSTEM}
    assert kinds.count(linkage_model.IN_WHEEL) == corpus.expected(CORPUS, case)["in_wheel"]
