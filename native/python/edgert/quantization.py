"""Post-training quantization of edgert programs.

``quantize_program`` rewrites every linear and conv2d layer with a constant float32 weight
into its ``edgert_quantized::`` form: int8 weights per output channel, and int8 activations
whose qparams come from running the program on calibration samples (``activations=
"static"``, the default) or are chosen for each row / image at run time (``"dynamic"``).
Inputs and outputs stay float32, so every other operator is unchanged (docs/operators.md).

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
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from edgert._errors import EdgertError, InvalidArgumentError, error_for
from edgert._native import load_library
from edgert._passes import fuse_activations, prune, unfuse_activations
from edgert.program_format import NodeDef, ProgramDef, ValueDef, read_program, write_program

__all__ = ["quantize_program", "quantize_linear_layers", "quantize_weights_per_channel",
           "reference_linear"]

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


def _pointer(array: npt.NDArray[Any] | None, kind: type) -> object:
    return None if array is None else array.ctypes.data_as(kind)


def quantize_weights_per_channel(
    weight: npt.NDArray[Any],
) -> tuple[npt.NDArray[Any], npt.NDArray[Any], npt.NDArray[Any]]:
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
    scales: npt.NDArray[Any],
    zero_points: np.ndarray,
    bias: np.ndarray | None = None,
) -> npt.NDArray[Any]:
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


def _add_constant(program: ProgramDef, array: npt.NDArray[Any]) -> int:
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
    # the quantized linear made here applies no activation: a fused one becomes its own node
    source = unfuse_activations(source, frozenset({"edgert::linear"}))
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


# ---------------------------------------------------------------------------- quantize_program

_QUANTIZED = {"edgert::linear": ("edgert_quantized::linear", 2),
              "edgert::conv2d": ("edgert_quantized::conv2d", 4)}
_INT8 = (-128, 127)


def _candidates(program: ProgramDef) -> list[int]:
    """Positions of the linear and conv2d nodes whose weight (and bias) are float32 constants."""
    found = []
    for position, node in enumerate(program.nodes):
        if node.op not in _QUANTIZED or len(node.inputs) < 2 or node.inputs[1] < 0:
            continue
        weight = program.values[node.inputs[1]]
        bias_index = node.inputs[2] if len(node.inputs) > 2 else -1
        bias_ok = bias_index < 0 or (program.values[bias_index].is_constant and
                                     program.values[bias_index].dtype == "float32")
        if (weight.is_constant and weight.dtype == "float32" and
                len(weight.shape) == _QUANTIZED[node.op][1] and bias_ok):
            found.append(position)
    return found


def _as_arrays(sample: object, count: int) -> list[npt.NDArray[Any]]:
    if hasattr(sample, "detach") or isinstance(sample, np.ndarray):
        sample = [sample]
    if not isinstance(sample, (Sequence, tuple)) or len(sample) != count:
        raise InvalidArgumentError(
            f"each calibration sample must be a sequence of {count} arrays (one per program "
            f"input), got {type(sample).__name__}")
    arrays = []
    for item in sample:
        if hasattr(item, "detach"):  # a torch tensor, without importing torch
            item = item.detach().cpu().numpy()
        arrays.append(np.asarray(item))
    return arrays


def _observed_ranges(program: ProgramDef, watched: list[int],
                     calibration: Iterable[object]) -> dict[int, tuple[float, float]]:
    """[min, max] of each watched value over every calibration sample, from running the
    program with those values as extra outputs."""
    import edgert

    probe = ProgramDef(values=program.values, nodes=program.nodes, inputs=program.inputs,
                       outputs=[*program.outputs, *watched])
    loaded = edgert.load(write_program(probe))
    ranges: dict[int, tuple[float, float]] = {}
    samples = 0
    for sample in calibration:
        outputs = loaded.run(_as_arrays(sample, len(program.inputs)))[len(program.outputs):]
        samples += 1
        for index, output in zip(watched, outputs):
            if output.size == 0:
                continue
            if not np.isfinite(output).all():
                raise InvalidArgumentError(f"calibration sample {samples - 1} gives a non-finite "
                                           f"value at a layer's input (value {index})")
            low, high = ranges.get(index, (0.0, 0.0))
            ranges[index] = (min(low, float(output.min())), max(high, float(output.max())))
    if samples == 0:
        raise InvalidArgumentError(
            "static activation quantization needs calibration samples (fix: pass "
            "calibration=[sample, ...] with inputs like the ones the model will see, or "
            "activations='dynamic')")
    return ranges


def activation_qparams(low: float, high: float) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """int8 qparams covering [min(0, low), max(0, high)], chosen as choose_qparams does."""
    low, high = min(0.0, low), max(0.0, high)
    scale = np.float32((high - low) / (_INT8[1] - _INT8[0]))
    if scale == 0:
        scale = np.float32(1.0)
    zero = _INT8[0] - np.rint(low / float(scale))
    zero_point = int(min(max(zero, _INT8[0]), _INT8[1]))
    return np.array([scale], np.float32), np.array([zero_point], np.int32)


def _quantized_node(program: ProgramDef, node: NodeDef,
                    qparams: tuple[npt.NDArray[Any], npt.NDArray[Any]] | None) -> NodeDef:
    op, _ = _QUANTIZED[node.op]
    weight = program.values[node.inputs[1]].data
    assert weight is not None
    rows = weight.reshape(weight.shape[0], -1)
    quantized, scales, zero_points = quantize_weights_per_channel(rows)
    inputs = [node.inputs[0], _add_constant(program, quantized.reshape(weight.shape)),
              _add_constant(program, scales), _add_constant(program, zero_points),
              node.inputs[2] if len(node.inputs) > 2 else -1]
    if qparams is not None:
        inputs += [_add_constant(program, qparams[0]), _add_constant(program, qparams[1])]
    return NodeDef(op, inputs, list(node.outputs), dict(node.attributes))


def quantize_program(program: bytes | ProgramDef, calibration: Iterable[object] = (), *,
                     activations: str = "static") -> bytes:
    """The program with its linear and conv2d layers quantized (the module docstring).

    ``calibration``: samples, each a sequence of arrays (numpy or torch), one per program
    input, like the inputs the model will see; used with ``activations="static"`` to fix
    each layer's input qparams (values outside the observed range clamp). ``"dynamic"``
    quantizes each row (linear) or image (conv2d) with its own qparams at run time: more
    accurate for inputs unlike the calibration set, at the cost of a pass over the input.
    The result needs the kernels_quantized component to load."""
    if activations not in ("static", "dynamic"):
        raise InvalidArgumentError(
            f"activations must be 'static' or 'dynamic', not {activations!r}")
    source = read_program(bytes(program)) if isinstance(program, (bytes, bytearray)) else program
    if not isinstance(source, ProgramDef):
        raise TypeError(f"expected program bytes or a ProgramDef, got {type(source).__name__}")
    # The quantized layers apply relu only: any other fused activation becomes its own node
    # again (and relu is fused back by fuse_activations below).
    source = unfuse_activations(source, frozenset(_QUANTIZED), frozenset({"none", "relu"}))
    result = ProgramDef(values=list(source.values), nodes=list(source.nodes),
                        inputs=list(source.inputs), outputs=list(source.outputs))
    positions = _candidates(result)
    ranges: dict[int, tuple[float, float]] = {}
    if activations == "static" and positions:
        watched = sorted({result.nodes[p].inputs[0] for p in positions})
        ranges = _observed_ranges(result, watched, calibration)
    for position in positions:
        node = result.nodes[position]
        observed = ranges.get(node.inputs[0], (0.0, 0.0))
        qparams = activation_qparams(*observed) if activations == "static" else None
        result.nodes[position] = _quantized_node(result, node, qparams)
    try:
        return write_program(prune(fuse_activations(result)))
    except ValueError as error:
        raise EdgertError(f"cannot write the quantized program: {error}") from None
