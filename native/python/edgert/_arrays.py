"""How arrays cross into the extension: numpy's pieces and the converter it calls for any input
it cannot read in place (``edgert._C.configure``)."""

from __future__ import annotations

from types import ModuleType

import numpy as np

from edgert._errors import InvalidArgumentError
from edgert.export import DTYPE_CODES, DTYPE_NAMES, dtype_name

# numpy's dtype of each edgert dtype code, little-endian (the runtime's byte order).
DTYPES = tuple(np.dtype(DTYPE_NAMES[code]).newbyteorder("<") for code in sorted(DTYPE_NAMES))


def input_array(array: object) -> np.ndarray:  # type: ignore[type-arg]
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
