"""Post-training quantization of edgert programs.

``quantize_linear_layers`` rewrites every ``edgert::linear`` whose weight is a float32
constant into ``edgert_quantized::linear``:

- weights become int8, quantized symmetrically per output channel (one scale per row,
  zero point 0) by the export plugin (libedgert_export_plugin), which runs the registered
  ``edgert_quantized::quantize_per_channel`` kernel;
- activations stay float32 between layers; ``edgert_quantized::linear`` quantizes its input
  per tensor to int8 at run time (asymmetric, ``choose_qparams``), multiplies in exact integer
  arithmetic and returns float32, so the other operators (relu, softmax, ...) are unchanged.

The quantized program therefore needs the kernels_quantized component at run time.
"""

from __future__ import annotations

import ctypes
import functools
from dataclasses import replace

import numpy as np

from edgert._errors import EdgertError, error_for
from edgert._native import load_library
from edgert.export import NodeDef, ProgramDef, ValueDef, read_program, write_program

__all__ = ["quantize_linear_layers", "quantize_weights_per_channel", "reference_linear"]

_FLOAT_P = ctypes.POINTER(ctypes.c_float)
_INT8_P = ctypes.POINTER(ctypes.c_int8)
_INT32_P = ctypes.POINTER(ctypes.c_int32)


@functools.cache
def _plugin() -> ctypes.CDLL:
    library = load_library("export_plugin")
    library.edgert_export_last_error.restype = ctypes.c_char_p
    library.edgert_export_quantize_weights_per_channel.argtypes = [
        _FLOAT_P,
        ctypes.c_int64,
        ctypes.c_int64,
        _INT8_P,
        _FLOAT_P,
        _INT32_P,
    ]
    library.edgert_export_quantized_linear.argtypes = [
        _FLOAT_P,
        ctypes.c_int64,
        ctypes.c_int64,
        _INT8_P,
        _FLOAT_P,
        _INT32_P,
        _FLOAT_P,
        ctypes.c_int64,
        _FLOAT_P,
    ]
    return library


def _check(code: int) -> None:
    if code != 0:
        message = _plugin().edgert_export_last_error().decode("utf-8", errors="replace")
        raise error_for(code, f"export plugin: {message}")


def _pointer(array: np.ndarray | None, kind: type) -> object:  # type: ignore[type-arg]
    return None if array is None else array.ctypes.data_as(kind)


def quantize_weights_per_channel(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # type: ignore[type-arg]
    """Symmetric per-row int8 quantization of a float32 [rows, cols] weight.

    Returns (int8 weight, float32 scales [rows], int32 zero points [rows])."""
    weight = np.ascontiguousarray(weight, dtype=np.float32)
    if weight.ndim != 2:
        raise ValueError(
            f"weight must be 2-D [out_features, in_features], got shape {weight.shape}"
        )
    rows, cols = weight.shape
    quantized = np.zeros((rows, cols), np.int8)
    scales = np.zeros(rows, np.float32)
    zero_points = np.zeros(rows, np.int32)
    _check(
        _plugin().edgert_export_quantize_weights_per_channel(
            _pointer(weight, _FLOAT_P),
            rows,
            cols,
            _pointer(quantized, _INT8_P),
            _pointer(scales, _FLOAT_P),
            _pointer(zero_points, _INT32_P),
        )
    )
    return quantized, scales, zero_points


def reference_linear(
    x: np.ndarray,
    weight: np.ndarray,
    scales: np.ndarray,  # type: ignore[type-arg]
    zero_points: np.ndarray,
    bias: np.ndarray | None = None,
) -> np.ndarray:  # type: ignore[type-arg]
    """What ``edgert_quantized::linear`` computes for a float32 [rows, in] input, run at
    export time through the plugin."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    weight = np.ascontiguousarray(weight, dtype=np.int8)
    scales = np.ascontiguousarray(scales, dtype=np.float32)
    zero_points = np.ascontiguousarray(zero_points, dtype=np.int32)
    bias = None if bias is None else np.ascontiguousarray(bias, dtype=np.float32)
    if x.ndim != 2 or weight.ndim != 2 or x.shape[1] != weight.shape[1]:
        raise ValueError(
            f"input {x.shape} and weight {weight.shape} do not match ([rows, K], [N, K])"
        )
    out_features = weight.shape[0]
    if (
        scales.shape != (out_features,)
        or zero_points.shape != (out_features,)
        or (bias is not None and bias.shape != (out_features,))
    ):
        raise ValueError(f"scales, zero points and bias must have shape ({out_features},)")
    output = np.zeros((x.shape[0], out_features), np.float32)
    _check(
        _plugin().edgert_export_quantized_linear(
            _pointer(x, _FLOAT_P),
            x.shape[0],
            x.shape[1],
            _pointer(weight, _INT8_P),
            _pointer(scales, _FLOAT_P),
            _pointer(zero_points, _INT32_P),
            _pointer(bias, _FLOAT_P),
            out_features,
            _pointer(output, _FLOAT_P),
        )
    )
    return output


def _quantizable_weight(program: ProgramDef, node: NodeDef) -> bool:
    if node.op != "edgert::linear" or len(node.inputs) < 2 or node.inputs[1] < 0:
        return False
    weight = program.values[node.inputs[1]]
    return weight.is_constant and weight.dtype == "float32" and len(weight.shape) == 2


def _add_constant(program: ProgramDef, array: np.ndarray) -> int:  # type: ignore[type-arg]
    program.values.append(ValueDef(array.dtype.name, tuple(array.shape), array))
    return len(program.values) - 1


def _drop_unused_constants(program: ProgramDef) -> ProgramDef:
    """Removes constants no node reads (the replaced float weights) and renumbers values."""
    used = {index for node in program.nodes for index in node.inputs if index >= 0}
    used |= set(program.inputs) | set(program.outputs)
    used |= {index for node in program.nodes for index in node.outputs}
    kept = [i for i, value in enumerate(program.values) if not value.is_constant or i in used]
    renumber = {old: new for new, old in enumerate(kept)}

    def remap(indices: list[int]) -> list[int]:
        return [renumber[i] if i >= 0 else -1 for i in indices]

    return ProgramDef(
        values=[program.values[i] for i in kept],
        nodes=[
            replace(node, inputs=remap(node.inputs), outputs=remap(node.outputs))
            for node in program.nodes
        ],
        inputs=remap(program.inputs),
        outputs=remap(program.outputs),
    )


def quantize_linear_layers(program: bytes | ProgramDef) -> bytes:
    """Rewrites every float ``edgert::linear`` with a constant weight into
    ``edgert_quantized::linear`` (see the module docstring); returns the program's bytes."""
    source = read_program(bytes(program)) if isinstance(program, (bytes, bytearray)) else program
    if not isinstance(source, ProgramDef):
        raise TypeError(f"expected program bytes or a ProgramDef, got {type(source).__name__}")
    result = ProgramDef(
        values=list(source.values),
        nodes=[],
        inputs=list(source.inputs),
        outputs=list(source.outputs),
    )
    for node in source.nodes:
        if not _quantizable_weight(result, node):
            result.nodes.append(replace(node, inputs=list(node.inputs), outputs=list(node.outputs)))
            continue
        weight = result.values[node.inputs[1]].data
        assert weight is not None
        quantized, scales, zero_points = quantize_weights_per_channel(weight)
        inputs = [
            node.inputs[0],
            _add_constant(result, quantized),
            _add_constant(result, scales),
            _add_constant(result, zero_points),
        ]
        if len(node.inputs) > 2 and node.inputs[2] >= 0:
            inputs.append(node.inputs[2])
        result.nodes.append(NodeDef("edgert_quantized::linear", inputs, list(node.outputs), {}))
    try:
        return write_program(_drop_unused_constants(result))
    except ValueError as error:
        raise EdgertError(f"cannot write the quantized program: {error}") from None
