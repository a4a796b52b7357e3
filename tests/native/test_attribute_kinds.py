"""Operator attributes of the wrong kind are refused when a program is loaded, for every
operator, from one place: the attributes each operator declares in the registry
(EDGERT_OPERATOR_ATTRIBUTES, edgert/registry.hpp). Before, ``softmax(axis="str")`` and
``transpose(perm=[0.5, 1.5])`` ran with their defaults while other operators refused the
same mistake at run time (issue 35, item 9)."""

from __future__ import annotations

import sys
from types import ModuleType

import numpy as np
import pytest

from tests.native.support import NATIVE

sys.path.insert(0, str(NATIVE / "python"))
from edgert import export, program_format  # noqa: E402  (pure Python: no extension needed)

# A value of another kind for each declared kind (a float attribute takes an int too).
WRONG = {"int": "text", "float": "text", "string": 1, "ints": [0.5, 1.5], "floats": "text"}
ARTICLE = {"int": "an int", "float": "a float", "string": "a string", "ints": "a list of ints",
           "floats": "a list of floats"}
GIVEN = {str: "a string", int: "an int", list: "a list of floats"}


def _one_node(op: str, attributes: dict[str, program_format.AttributeValue]) -> bytes:
    builder = export.ProgramBuilder()
    x = builder.input("float32", (2, 3))
    builder.output(builder.op(op, [x], attributes))
    return builder.to_bytes()


@pytest.mark.parametrize(("op", "attributes", "words"), [
    ("edgert::softmax", {"axis": "str"},
     "node 0: edgert::softmax: attribute axis must be an int, not a string"),
    ("edgert::transpose", {"perm": [0.5, 1.5]},
     "node 0: edgert::transpose: attribute perm must be a list of ints, not a list of floats"),
    ("edgert::layer_norm", {"eps": "small"},
     "node 0: edgert::layer_norm: attribute eps must be a float, not a string"),
    ("edgert::concat", {"axis": 1.0},
     "node 0: edgert::concat: attribute axis must be an int, not a float"),
])
def test_the_issue_s_mistakes_are_refused_at_load(
        edgert: ModuleType, op: str, attributes: dict[str, program_format.AttributeValue],
        words: str) -> None:
    with pytest.raises(edgert.InvalidProgramError) as refused:
        edgert.load(_one_node(op, attributes))
    assert words in str(refused.value)


def test_every_shipped_operator_declares_its_attributes(edgert: ModuleType) -> None:
    declared = edgert.operator_attributes()
    shipped = [entry.name for entry in edgert.operators()
               if entry.name.startswith(("edgert::", "edgert_quantized::"))]
    assert len(shipped) >= 80
    assert [name for name in shipped if declared.get(name) is None] == []
    assert declared["edgert::softmax"] == {"axis": "int"}
    assert declared["edgert::transpose"] == {"perm": "ints"}
    assert declared["edgert::layer_norm"] == {"axis": "int", "eps": "float"}
    assert declared["edgert::add"] == {}
    kinds = {kind for attributes in declared.values() for kind in (attributes or {}).values()}
    assert kinds <= set(WRONG)


def test_every_declared_attribute_of_the_wrong_kind_is_refused_at_load(edgert: ModuleType) -> None:
    """For every operator and every attribute it reads: a value of another kind never loads,
    and the error names the node, the operator, the attribute and the kind expected."""
    checked = 0
    for op, attributes in sorted(edgert.operator_attributes().items()):
        for name, kind in (attributes or {}).items():
            wrong = WRONG[kind]
            with pytest.raises(edgert.InvalidProgramError) as refused:
                edgert.load(_one_node(op, {name: wrong}))
            expected = (f"node 0: {op}: attribute {name} must be {ARTICLE[kind]}, "
                        f"not {GIVEN[type(wrong)]}")
            assert expected in str(refused.value), (op, name, str(refused.value))
            checked += 1
    assert checked >= 60


def test_values_of_the_declared_kind_still_load_and_run(edgert: ModuleType) -> None:
    builder = export.ProgramBuilder()
    x = builder.input("float32", (2, 3))
    y = builder.op("edgert::softmax", [x], {"axis": 0})
    z = builder.op("edgert::clamp", [y], {"min": 0, "max": 0.75})   # an int for a float
    builder.output(builder.op("edgert::transpose", [z], {"perm": [1, 0]}))
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = edgert.load(builder.to_bytes()).run([data])[0]
    shifted = np.exp(data - data.max(axis=0))
    expected = np.minimum(shifted / shifted.sum(axis=0), 0.75).T
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_attributes_no_operator_declares_are_left_to_the_kernel(edgert: ModuleType) -> None:
    """Names the operator does not read (a newer exporter's extra) load as before."""
    program = edgert.load(_one_node("edgert::relu", {"i": -7, "s": "x", "floats": [0.5]}))
    data = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
    np.testing.assert_array_equal(program.run([data])[0], np.maximum(data, 0))


def test_a_wrong_kind_in_a_later_node_names_that_node(edgert: ModuleType) -> None:
    builder = export.ProgramBuilder()
    x = builder.input("float32", (2, 3))
    y = builder.op("edgert::relu", [x])
    builder.output(builder.op("edgert::softmax", [y], {"axis": [1]}))
    with pytest.raises(edgert.InvalidProgramError,
                       match=r"node 1: edgert::softmax: attribute axis must be an int, not "
                             r"a list of ints"):
        edgert.load(builder.to_bytes())
