"""How arrays cross into the extension: numpy's pieces and the converter it calls for any input
it cannot read in place (``edgert._C.configure``)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from edgert._errors import InvalidArgumentError
from edgert.program_format import DTYPE_CODES, DTYPE_NAMES, dtype_name

# numpy's dtype of each edgert dtype code, little-endian (the runtime's byte order).
DTYPES = tuple(np.dtype(DTYPE_NAMES[code]).newbyteorder("<") for code in sorted(DTYPE_NAMES))


def input_array(array: object) -> npt.NDArray[Any]:
    """``array`` as the runtime reads an input: C-contiguous, little-endian, of an edgert
    dtype (a copy only when it is not already); an unsupported dtype is InvalidArgumentError."""
    value = np.asarray(array)
    try:
        name = dtype_name(value.dtype)
    except ValueError as error:
        raise InvalidArgumentError(str(error)) from None
    return np.asarray(value, dtype=DTYPES[DTYPE_CODES[name]], order="C")  # keeps 0-d shapes


def configure(module: ModuleType, buffer_protocol: bool = True) -> bool:
    """Gives the extension numpy and the converter; True when it reads and writes arrays in
    place (the buffer protocol), False when it copies through bytes."""
    return bool(module.configure(np.ndarray, np.empty, np.frombuffer, DTYPES, input_array,
                                 buffer_protocol))


# What a Python value (list, tuple, scalar) converts to without changing what kind of number it
# holds: bool to anything, integers to integers and floats, floats to floats (numpy's
# "same_kind" casting). Lossless: integers must keep their values (no wrap-around, no float
# rounding), finite floats must stay finite; floats to float32 round to nearest, the one
# documented loss (a Python float is a float64).
def _python_input(value: object, expected: np.dtype[Any], where: str
                  ) -> npt.NDArray[Any]:
    try:
        natural = np.asarray(value)
    except (ValueError, TypeError) as error:   # ragged nesting, ...
        raise InvalidArgumentError(
            f"{where} is {_a(type(value).__name__)} numpy cannot read as one array ({error}); "
            f"pass a {expected.name} array of the input's shape") from None
    if natural.size == 0:   # no value to change: numpy's float64 says nothing about them
        return np.empty(natural.shape, expected)
    kind = type(value).__name__
    if natural.dtype.kind in "fO" and all(
            isinstance(item, int) for item in np.asarray(value, dtype=object).flat):
        # integers beyond int64 and uint64: numpy holds them as floats (rounded) or objects
        raise InvalidArgumentError(
            f"{where} is {_a(kind)} of integers too large for a 64-bit integer dtype, which "
            f"{expected.name} does not hold exactly; pass {expected.name} values")
    if natural.dtype.kind not in "biuf":
        raise InvalidArgumentError(
            f"{where} is {_a(kind)} numpy reads as {natural.dtype}, not as numbers; pass "
            f"{expected.name} values, e.g. np.asarray(x, dtype=np.{expected.name})")
    if not np.can_cast(natural.dtype, expected, casting="same_kind"):
        raise InvalidArgumentError(
            f"{where} is {_a(kind)} of {_kind_words(natural.dtype)}, but the program expects "
            f"{expected.name}: pass {expected.name} values, e.g. "
            f"np.asarray(x).astype(np.{expected.name}) if that conversion is what you mean")
    with np.errstate(over="ignore", invalid="ignore"):
        converted = natural.astype(expected)
    if expected.kind == "f" and natural.dtype.kind == "f":
        lost = bool(np.any(np.isfinite(natural) & ~np.isfinite(converted)))
    else:
        lost = not np.array_equal(converted.astype(natural.dtype), natural)
    if lost:
        raise InvalidArgumentError(
            f"{where} is {_a(kind)} whose values do not fit {expected.name} (they would "
            f"{_loss(natural.dtype, expected)} in the conversion); pass "
            f"values {expected.name} holds, or a {expected.name} array made as you intend")
    return converted


def _a(words: str) -> str:
    return f"{'an' if words[:1] in 'aeiou' else 'a'} {words}"


def _loss(given: np.dtype[Any], expected: np.dtype[Any]) -> str:
    if expected.kind != "f":
        return "wrap around"
    return "overflow to infinity" if given.kind == "f" else "round"


def _kind_words(dtype: np.dtype[Any]) -> str:
    return {"b": "booleans", "i": "integers", "u": "integers", "f": "floats"}.get(
        dtype.kind, f"{dtype} values")


def conform(inputs: list[object] | tuple[object, ...],
            expected: list[np.dtype[Any]]) -> list[object] | None:
    """``inputs`` made to match the program's declared input dtypes ``expected``, or None
    when there is nothing to change. A Python list, tuple or scalar becomes an array of its
    input's declared dtype when that keeps what kind of number it holds (``_python_input``);
    an array (numpy, or anything numpy reads through ``__array__``) of another dtype is never
    converted: that is an InvalidArgumentError naming the input, the dtype given and the one
    expected, with the conversion to write."""
    if len(inputs) != len(expected):
        return None   # the runtime's own message says how many inputs it takes
    changed = False
    result: list[object] = []
    for index, (value, wanted) in enumerate(zip(inputs, expected)):
        where = f"input {index}"
        if isinstance(value, (list, tuple, int, float, str, bytes)) and not isinstance(
                value, np.generic):
            result.append(_python_input(value, wanted, where))
            changed = True
            continue
        try:
            given = value.dtype if isinstance(value, (np.ndarray, np.generic)) else (
                np.asarray(value).dtype)
        except (ValueError, TypeError):
            result.append(value)
            continue
        if given.name != wanted.name:
            what = "scalar" if isinstance(value, np.generic) else "array"
            raise InvalidArgumentError(
                f"{where} is {_a(given.name)} {what}, but the program expects {wanted.name}: pass "
                f"{wanted.name}, e.g. x.astype(np.{wanted.name})")
        result.append(value)
    return result if changed else None
