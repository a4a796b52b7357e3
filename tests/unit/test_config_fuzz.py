"""Bounded fuzzing of the build record and manifest readers (hypothesis, a few seconds each;
the long run is benchmarks/fuzz_readers.py --target buildrecord|manifest): any input ends in
a value or in the reader's own one-line error, never a traceback."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.verify import fuzz_properties

_BUDGET = settings(max_examples=200, deadline=None, derandomize=True, database=None,
                   suppress_health_check=[HealthCheck.too_slow])
_RECORD = fuzz_properties.build_record_seed()
_MANIFEST = fuzz_properties.MANIFEST_SEED


def _edited(seed: str, edits: list[tuple[int, str]], cut: int) -> str:
    text = list(seed)
    for position, character in edits:
        text[position % len(text)] = character
    return "".join(text)[:cut]


@_BUDGET
@given(st.lists(st.tuples(st.integers(0, len(_RECORD)), st.characters()), max_size=12),
       st.integers(0, len(_RECORD)))
def test_build_record_mutations(edits: list[tuple[int, str]], cut: int) -> None:
    fuzz_properties.build_record_property(_edited(_RECORD, edits, cut))


@_BUDGET
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20))
def test_build_record_shapes(value: object) -> None:
    import json
    fuzz_properties.build_record_property(json.dumps(value))


def test_build_record_nested_far_too_deep() -> None:
    fuzz_properties.build_record_property("[" * 100_000 + "]" * 100_000)
    fuzz_properties.build_record_property('{"package": ' + "[" * 100_000)


@_BUDGET
@given(st.lists(st.tuples(st.integers(0, len(_MANIFEST)), st.sampled_from(
    list("\"'[]{}=.,-_/\\\n 0aZ") + ["..", "../", "\u00e9", "\0"])), max_size=8))
def test_manifest_mutations(edits: list[tuple[int, str]]) -> None:
    fuzz_properties.manifest_property(_edited(_MANIFEST, edits, len(_MANIFEST)))
