"""Bounded fuzzing of the build record and manifest readers (hypothesis, a second in all;
the long run is benchmarks/fuzz_readers.py --target buildrecord|manifest): any input ends in
a value or in the reader's own one-line error, never a traceback.

Each test runs a seed set of inputs and 50 generated examples. The seeds reach every case
that 200 generated examples reached (measured: the lines of release/ each example ran and
the error it ended in, for the derandomized run of 200), so the shorter run loses none of
them; the seeds are written against the text, not against positions, so they keep their
meaning when pyproject.toml changes."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.verify import fuzz_properties

_BUDGET = settings(max_examples=50, deadline=None, derandomize=True, database=None,
                   suppress_health_check=[HealthCheck.too_slow])
_RECORD = fuzz_properties.build_record_seed()
_MANIFEST = fuzz_properties.MANIFEST_SEED

_Test = TypeVar("_Test", bound=Callable[..., None])


def _seeds(*cases: tuple[Any, ...]) -> Callable[[_Test], _Test]:
    """``@example(*case)`` for each case, in order."""
    def apply(test: _Test) -> _Test:
        for case in reversed(cases):
            test = example(*case)(test)
        return test
    return apply


def _edited(seed: str, edits: list[tuple[int, str]], cut: int) -> str:
    text = list(seed)
    for position, character in edits:
        text[position % len(text)] = character
    return "".join(text)[:cut]


def _at(text: str, offset: int = 0) -> int:
    """The position in the manifest seed where ``text`` starts, plus ``offset``."""
    return _MANIFEST.index(text) + offset


# One edit per way the manifest's generated examples end: each TOML error tomllib names,
# a line break in a classifier (an escape), a marker that is no identifier (two ways), and
# the manifest as written (its license file is not in the scratch folder).
_MANIFEST_CASES = (
    [],
    [(0, '"')],                                                        # a string never closed
    [(_at('"Programming Language', 9), "\\")],                        # "Programm\ng"
    [(_at('markers = ["edgert_runtime_component"]', 14), "-")],
    [(_at('markers = ["edgert_threadpool_component"]', 14), "'")],
    [(_at('license-files = ["LICENSE"]', 26), " ")],                   # unclosed array
    [(_at('version = "0.1.0"', 10), "=")],                             # invalid value
    [(_at('\nname = "edgert"', 1), "=")],                              # invalid statement
    [(_at('\nname = "edgert"', 6), "-")],                              # expected '='
    [(_at('version = "0.1.0"', 17), "a")],                             # expected newline
    [(_at('version = "0.1.0"', 11), "\0")],                            # illegal character
    [(_at("# ", 2), "\0")],                                            # invalid in a comment
    [(_at('\nname = "edgert"', 5), ".")],                              # invalid key part
)


@_BUDGET
@_seeds(([], 0), ([], len(_RECORD)))
@given(st.lists(st.tuples(st.integers(0, len(_RECORD)), st.characters()), max_size=12),
       st.integers(0, len(_RECORD)))
def test_build_record_mutations(edits: list[tuple[int, str]], cut: int) -> None:
    fuzz_properties.build_record_property(_edited(_RECORD, edits, cut))


@_BUDGET
@_seeds((None,), ({},), (json.loads(_RECORD),))
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20))
def test_build_record_shapes(value: object) -> None:
    fuzz_properties.build_record_property(json.dumps(value))


def test_build_record_nested_far_too_deep() -> None:
    fuzz_properties.build_record_property("[" * 100_000 + "]" * 100_000)
    fuzz_properties.build_record_property('{"package": ' + "[" * 100_000)


@_BUDGET
@_seeds(*((case,) for case in _MANIFEST_CASES))
@given(st.lists(st.tuples(st.integers(0, len(_MANIFEST)), st.sampled_from(
    list("\"'[]{}=.,-_/\\\n 0aZ") + ["..", "../", "\u00e9", "\0"])), max_size=8))
def test_manifest_mutations(edits: list[tuple[int, str]]) -> None:
    fuzz_properties.manifest_property(_edited(_MANIFEST, edits, len(_MANIFEST)))
