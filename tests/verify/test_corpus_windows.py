"""verify --static on real Windows wheels from the package index (numpy, pandas, scipy and
shapely, repaired by delvewheel; pillow; pyarrow, whose DLLs sit beside its modules), read
through the PE reader and the Windows loader model: every DLL and .pyd is read, bundled DLLs
resolve into <name>.libs (or the loading file's folder), and the findings match the reviewed
expectations in tests/fixtures/corpus-windows/ (as tests/verify/test_corpus.py does for Linux
wheels): build folders found with their drive letters, one finding per build machine, a
vendor's redistributable's path a note, no interposition between DLLs. Downloaded once into
the tool cache."""

from __future__ import annotations

import pytest

from release.verify import linkage_model, verify_wheel
from tests.verify import corpus

pytestmark = pytest.mark.index

CORPUS = "corpus-windows"


@pytest.mark.parametrize("case", corpus.cases(CORPUS))
def test_findings_match_the_reviewed_expectations(case: str) -> None:
    # binaries: every DLL and .pyd read as PE
    corpus.assert_matches(verify_wheel(corpus.wheel(CORPUS, case), static=True),
                          corpus.expected(CORPUS, case))


@pytest.mark.parametrize("case", corpus.cases(CORPUS))
def test_bundled_dlls_resolve_into_the_wheel(case: str) -> None:
    resolved = {(item.binary, item.needed): item
                for item in corpus.resolutions(corpus.wheel(CORPUS, case))}
    assert resolved and all(item.kind in (linkage_model.IN_WHEEL, linkage_model.SYSTEM)
                            for item in resolved.values()), \
        [item for item in resolved.values() if item.kind not in ("wheel", "system")]
    wanted = corpus.expected(CORPUS, case)["resolved"]
    assert isinstance(wanted, dict)
    for binary, names in wanted.items():
        for name, place in names.items():
            # the folder a package adds (delvewheel's <name>.libs), or as given: [target, via]
            target, via = place if isinstance(place, list) else (place, "os.add_dll_directory")
            item = resolved[(binary, name)]
            assert (item.kind, item.target, item.via) == (linkage_model.IN_WHEEL, target, via)
