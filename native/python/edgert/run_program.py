"""python -m edgert.run_program PROGRAM [INPUT.raw ...] [--backends a,b] [--shape I=D,D...]
[--seed N] [--runs N]

The Python twin of the C++ example ``native/examples/run_program.cpp``: the same inputs
(raw little-endian files, or the same deterministic pattern) and the same printed output, so
the two front ends can be compared byte for byte.

Inputs without a file are generated: element k of input i is ((7k + 3i) mod 17) / 8 - 1
(float32, in [-1, 1)), that times 8 for integers (in [-8, 8)), above 0 for bool, that times 8
plus 8 for uint8. An integer input the program uses as indices (of embedding, embedding_byte,
index_select or gather, directly or through a reshape, cast or the like) gets the same pattern
modulo the size of the table it indexes, so every index is valid. ``--seed N`` draws them at
random instead, in the same ranges. A dimension the program leaves to run time (-1) takes its
size from ``--shape I=D0,D1,...``, else from the input file's size (when it decides it, or it
is refused naming the flag), else 1, as the C++ example runs it, with a note on stderr naming
the flag.

``--runs N`` runs it N times on the same inputs; with ``EDGERT_PROFILE=1`` in the environment
the program then writes to stderr where the time of the runs after the first went, per
operator and per slowest node (docs/kernels.md, "Where a program's time goes")."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

import edgert
from edgert.program_format import ProgramDef, dtype_name, read_program

# Operators reading an integer input as indices: (position of the indices, position of the
# table they index, the attribute naming its axis, or "" for axis 0).
INDEXING = {"edgert::embedding": (1, 0, ""), "edgert_quantized::embedding_byte": (3, 0, ""),
            "edgert::index_select": (1, 0, "axis"), "edgert::gather": (1, 0, "axis")}
# Operators whose first input's values reach their output unchanged (rearranged, converted).
PASSING_VALUES = {"edgert::reshape", "edgert::squeeze", "edgert::unsqueeze", "edgert::cast",
                  "edgert::expand", "edgert::slice", "edgert::transpose"}


class UsageError(Exception):
    """A command line or input file this program cannot run with: one line, exit 2."""


def pattern(input_index: int, count: int, dtype: np.dtype[Any]) -> npt.NDArray[Any]:
    """Element k of input i, exactly as the C++ example computes it."""
    k = np.arange(count, dtype=np.int64)
    value = ((k * 7 + input_index * 3) % 17) / 8.0 - 1.0
    return _scaled(value, dtype)


def _scaled(value: npt.NDArray[Any], dtype: np.dtype[Any]) -> npt.NDArray[Any]:
    """Values in [-1, 1) as ``dtype``, in the documented range of each dtype."""
    if dtype == np.float32:
        return value.astype(np.float32)
    if dtype == np.bool_:
        return value > 0
    if dtype == np.uint8:
        return (value * 8 + 8).astype(np.uint8)
    return (value * 8).astype(dtype)


def index_bounds(definition: ProgramDef) -> dict[int, int]:
    """For each program input used as indices: the size of the smallest table it indexes."""
    bounds: dict[int, int] = {}
    for position, value in enumerate(definition.inputs):
        reached, frontier = {value}, [value]
        while frontier:
            current = frontier.pop()
            for node in definition.nodes:
                if node.op in PASSING_VALUES and node.inputs[:1] == [current]:
                    fresh = [out for out in node.outputs if out not in reached]
                    reached.update(fresh)
                    frontier.extend(fresh)
        for node in definition.nodes:
            if node.op not in INDEXING:
                continue
            index_at, table_at, axis_name = INDEXING[node.op]
            if len(node.inputs) <= index_at or node.inputs[index_at] not in reached:
                continue
            shape = definition.values[node.inputs[table_at]].shape
            axis = node.attributes.get(axis_name, 0) if axis_name else 0
            if (isinstance(axis, int) and shape and -len(shape) <= axis < len(shape)
                    and shape[axis] > 0):
                bounds[position] = min(bounds.get(position, shape[axis]), shape[axis])
    return bounds


def _shapes(given: Sequence[str]) -> dict[int, tuple[int, ...]]:
    shapes = {}
    for text in given:
        index, _, dims = text.partition("=")
        try:
            shapes[int(index)] = tuple(int(dim) for dim in dims.split(","))
        except ValueError:
            message = f"--shape {text}: write INPUT=D0,D1,... (e.g. --shape 0=4,16)"
            raise UsageError(message) from None
    return shapes


def _shape_of(index: int, declared: tuple[int, ...], given: tuple[int, ...] | None,
              file_elements: int | None) -> tuple[int, ...]:
    """Input ``index``'s shape: the declared one, its run-time dimensions from --shape or
    from its file's size (when exactly one is left to run time); otherwise 1, as the C++
    example runs them, said on stderr with the flag that gives another size."""
    listed = ",".join(map(str, declared))
    if given is not None:
        if (len(given) != len(declared) or any(
                want >= 0 and got != want for want, got in zip(declared, given))
                or min(given, default=0) < 0):
            raise UsageError(f"--shape {index}={','.join(map(str, given))} does not fit input "
                             f"{index}'s declared shape [{listed}] (-1: any size)")
        return given
    unknown = [axis for axis, dim in enumerate(declared) if dim < 0]
    if not unknown:
        return declared
    known = int(np.prod([dim for dim in declared if dim >= 0], dtype=np.int64))
    if file_elements is not None:
        if len(unknown) == 1 and known and file_elements % known == 0:
            return tuple(file_elements // known if dim < 0 else dim for dim in declared)
        example = ",".join("4" if dim < 0 else str(dim) for dim in declared)
        raise UsageError(f"input {index} has shape [{listed}]: its file does not decide the "
                         f"run-time dimensions (-1); give them with --shape {index}={example}")
    shape = tuple(1 if dim < 0 else dim for dim in declared)
    print(f"note: input {index} has shape [{listed}]: its run-time dimensions (-1) ran as 1, "
          f"as in the C++ example; another size: --shape {index}="
          f"{','.join('4' if dim < 0 else str(dim) for dim in declared)}", file=sys.stderr)
    return shape


def _read(path: str, dtype: np.dtype[Any]) -> npt.NDArray[Any]:
    try:
        with open(path, "rb") as file:
            data = file.read()
    except OSError as error:
        raise UsageError(f"input file {path}: {error.strerror}") from None
    if len(data) % dtype.itemsize:
        raise UsageError(f"input file {path} holds {len(data)} bytes, not a whole number of "
                         f"{dtype_name(dtype)} values ({dtype.itemsize} bytes each)")
    return np.frombuffer(data, dtype=dtype.newbyteorder("<")).astype(dtype)


def make_inputs(program: edgert.Program, files: Sequence[str], *,
                shapes: dict[int, tuple[int, ...]] | None = None,
                bounds: dict[int, int] | None = None,
                seed: int | None = None) -> list[npt.NDArray[Any]]:
    """One array per input: read from its file, else generated (the pattern, or ``seed``'s
    random values) within each input's valid range."""
    shapes, bounds = shapes or {}, bounds or {}
    if len(files) > program.input_count:
        raise UsageError(f"{len(files)} input files for a program of {program.input_count} "
                         "inputs")
    random = np.random.default_rng(seed) if seed is not None else None
    inputs = []
    for index, info in enumerate(program.input_info):
        dtype = np.dtype(info.dtype)
        data = _read(files[index], dtype) if index < len(files) else None
        shape = _shape_of(index, tuple(info.shape), shapes.get(index),
                          None if data is None else data.size)
        count = int(np.prod(shape, dtype=np.int64))
        if data is not None:
            if data.size != count:
                raise UsageError(
                    f"input file {files[index]} holds {data.nbytes} bytes, input {index} "
                    f"({dtype_name(dtype)} [{','.join(map(str, shape))}]) needs "
                    f"{count * dtype.itemsize}")
        elif random is not None:
            data = _scaled(random.uniform(-1.0, 1.0, count), dtype)
        else:
            data = pattern(index, count, dtype)
        if data is not None and index in bounds and index >= len(files):
            data = (data.astype(np.int64) % bounds[index]).astype(dtype)
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
    parser = argparse.ArgumentParser(prog="python -m edgert.run_program", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("program", help="an .edgert program file")
    parser.add_argument("inputs", nargs="*", help="raw little-endian input files, in order")
    parser.add_argument("--backends", help="comma-separated backend names")
    parser.add_argument("--shape", action="append", default=[], metavar="I=D0,D1,...",
                        help="the shape of input I, for dimensions left to run time")
    parser.add_argument("--seed", type=int,
                        help="random generated inputs from this seed, instead of the pattern")
    parser.add_argument("--runs", type=int, default=1, metavar="N",
                        help="run the program N times on the same inputs and print the last "
                             "outputs (with EDGERT_PROFILE=1: where the time of the runs after "
                             "the first went, on stderr)")
    arguments = parser.parse_args(argv)
    if arguments.runs < 1:
        parser.error("--runs must be at least 1")
    try:
        program = edgert.load(arguments.program)
    except edgert.EdgertError as error:
        print(f"error: {_naming(arguments.program, error)}", file=sys.stderr)
        return 1
    try:
        if arguments.backends is not None:
            program.set_backends([n for n in arguments.backends.split(",") if n])
        with open(arguments.program, "rb") as file:
            bounds = index_bounds(read_program(file.read()))
        inputs = make_inputs(program, arguments.inputs, shapes=_shapes(arguments.shape),
                             bounds=bounds, seed=arguments.seed)
        for _ in range(arguments.runs):
            outputs = program.run(inputs)
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except edgert.EdgertError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    sys.stdout.write("".join(format_output(i, out) for i, out in enumerate(outputs)))
    sys.stdout.flush()
    del program   # its profile (EDGERT_PROFILE) is written now, after the outputs
    return 0


def _naming(path: str, error: Exception) -> str:
    """A loading error's message, with the program file in front when it does not name it."""
    message = str(error)
    return message if path in message else f"{path}: {message}"


if __name__ == "__main__":
    raise SystemExit(main())
