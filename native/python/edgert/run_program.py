"""python -m edgert.run_program PROGRAM [INPUT.raw ...] [--backends a,b]

The Python twin of the C++ example ``native/examples/run_program.cpp``: the same inputs
(raw little-endian files, or the same deterministic pattern) and the same printed output, so
the two front ends can be compared byte for byte."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np
import numpy.typing as npt

import edgert
from edgert.export import dtype_name


def pattern(input_index: int, count: int, dtype: np.dtype[Any]) -> npt.NDArray[Any]:
    """Element k of input i, exactly as the C++ example computes it."""
    k = np.arange(count, dtype=np.int64)
    value = ((k * 7 + input_index * 3) % 17) / 8.0 - 1.0
    if dtype == np.float32:
        return value.astype(np.float32)
    if dtype == np.bool_:
        return value > 0
    if dtype == np.uint8:
        return (value * 8 + 8).astype(np.uint8)
    return (value * 8).astype(dtype)


def make_inputs(program: edgert.Program, files: list[str]) -> list[npt.NDArray[Any]]:
    inputs = []
    for index, info in enumerate(program.input_info):
        shape = tuple(1 if dim < 0 else dim for dim in info.shape)
        dtype = np.dtype(info.dtype)
        count = int(np.prod(shape, dtype=np.int64))
        if index < len(files):
            data = np.fromfile(files[index], dtype=dtype)
            if data.size != count:
                raise edgert.InvalidArgumentError(
                    f"{files[index]} holds {data.nbytes} bytes, input {index} needs "
                    f"{count * dtype.itemsize}")
        else:
            data = pattern(index, count, dtype)
        inputs.append(data.reshape(shape))
    return inputs


def format_output(index: int, array: npt.NDArray[Any]) -> str:
    lines = [f"output {index} {dtype_name(array.dtype)} [{','.join(map(str, array.shape))}]"]
    if array.dtype == np.float32:
        lines += [f"{float(value):.9g}" for value in array.reshape(-1)]
    else:
        lines += [str(int(value)) for value in array.reshape(-1)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m edgert.run_program", description=__doc__)
    parser.add_argument("program")
    parser.add_argument("inputs", nargs="*")
    parser.add_argument("--backends", help="comma-separated backend names")
    arguments = parser.parse_args(argv)
    try:
        program = edgert.load(arguments.program)
        if arguments.backends is not None:
            program.set_backends([n for n in arguments.backends.split(",") if n])
        outputs = program.run(make_inputs(program, arguments.inputs))
    except edgert.EdgertError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    sys.stdout.write("".join(format_output(i, out) for i, out in enumerate(outputs)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
