"""Rewrites of a ``ProgramDef`` that keep what it computes: folding batch norm into the
convolution before it, fusing an activation into the node that produces its input, and
pruning nodes and constants nothing reads. Pure numpy; used by the PyTorch front end
(``edgert.export.from_torch``) and by ``edgert.quantization``."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from edgert.program_format import NodeDef, ProgramDef, ValueDef

__all__ = [
    "fold_batch_norm",
    "fuse_activations",
    "unfuse_activations",
    "prune",
    "readers",
    "producers",
]

# What an operator's `activation` attribute may take over, per operator: the float conv2d and
# linear apply relu, clamp, hardswish, hardsigmoid, silu and sigmoid with the separate
# operator's arithmetic (the same bytes, docs/operators.md); the quantized conv2d and linear
# know relu only. A relu after a float linear is left to the CPU delegate, which runs
# linear → relu chains fused itself.
_FLOAT_ACTIVATIONS = frozenset(
    {"edgert::clamp", "edgert::hardswish", "edgert::hardsigmoid", "edgert::silu", "edgert::sigmoid"}
)
_ACTIVATION_HOSTS: dict[str, frozenset[str]] = {
    "edgert::conv2d": _FLOAT_ACTIVATIONS | {"edgert::relu"},
    "edgert::linear": _FLOAT_ACTIVATIONS,
    "edgert_quantized::conv2d": frozenset({"edgert::relu"}),
    "edgert_quantized::linear": frozenset({"edgert::relu"}),
}
# The operator each `activation` value stands for, and clamp's bounds as attributes.
_ACTIVATION_OPERATORS = {
    "relu": "edgert::relu",
    "clamp": "edgert::clamp",
    "hardswish": "edgert::hardswish",
    "hardsigmoid": "edgert::hardsigmoid",
    "silu": "edgert::silu",
    "sigmoid": "edgert::sigmoid",
}
_ACTIVATION_NAMES = {op: name for name, op in _ACTIVATION_OPERATORS.items()}
_BOUNDS = (("min", "activation_min"), ("max", "activation_max"))


def readers(program: ProgramDef) -> Counter[int]:
    """How often each value is read: node inputs plus graph-output listings."""
    counts: Counter[int] = Counter(i for node in program.nodes for i in node.inputs if i >= 0)
    counts.update(program.outputs)
    return counts


def producers(program: ProgramDef) -> dict[int, int]:
    """Value index -> position of the node that writes it."""
    return {
        value: position for position, node in enumerate(program.nodes) for value in node.outputs
    }


def _constant(program: ProgramDef, index: int) -> npt.NDArray[Any] | None:
    if index < 0:
        return None
    return program.values[index].data


def _add_constant(program: ProgramDef, array: npt.NDArray[Any]) -> int:
    program.values.append(
        ValueDef(array.dtype.name, tuple(array.shape), np.ascontiguousarray(array))
    )
    return len(program.values) - 1


_FOLD_BLOCK = 1 << 16  # elements of a weight folded at once


def _folded_convolution(
    program: ProgramDef, conv: NodeDef, norm: NodeDef
) -> tuple[npt.NDArray[Any], npt.NDArray[Any]] | None:
    """The conv2d weight and bias that compute conv2d followed by batch_norm, in float64
    rounded once to float32; None when an operand is not a float32 constant."""
    weight = _constant(program, conv.inputs[1])
    bias = _constant(program, conv.inputs[2]) if len(conv.inputs) > 2 else None
    has_bias = len(conv.inputs) > 2 and conv.inputs[2] >= 0
    if weight is None or weight.dtype != np.float32 or (has_bias and bias is None):
        return None
    parts = [_constant(program, i) if i >= 0 else None for i in norm.inputs[1:5]]
    scale_in, shift, mean, variance = parts
    if (
        mean is None
        or variance is None
        or any(norm.inputs[1 + k] >= 0 and parts[k] is None for k in range(4))
    ):
        return None
    channels = weight.shape[0]
    eps = float(norm.attributes.get("eps", 1e-5))  # type: ignore[arg-type]
    gamma = np.ones(channels) if scale_in is None else scale_in.astype(np.float64)
    beta = np.zeros(channels) if shift is None else shift.astype(np.float64)
    factor = gamma / np.sqrt(variance.astype(np.float64) + eps)
    conv_bias = np.zeros(channels) if bias is None else bias.astype(np.float64)
    new_weight = np.empty(weight.shape, np.float32)
    # a few output channels at a time: the float64 products stay small (a large model's
    # weights would otherwise make one float64 copy of each weight, twice its size)
    rows = max(1, _FOLD_BLOCK // max(1, weight[0].size))
    for start in range(0, channels, rows):
        block = slice(start, start + rows)
        np.multiply(weight[block], factor[block].reshape(-1, 1, 1, 1), out=new_weight[block],
                    dtype=np.float64, casting="same_kind")
    new_bias = (conv_bias - mean.astype(np.float64)) * factor + beta
    return new_weight, new_bias.astype(np.float32)


def fold_batch_norm(program: ProgramDef) -> ProgramDef:
    """Every ``edgert::batch_norm`` whose input is an ``edgert::conv2d`` (no activation)
    with constant weight and bias, read by nothing else, becomes part of that convolution:
    ``w' = w·γ/√(σ²+ε)``, ``b' = (b - μ)·γ/√(σ²+ε) + β``. Run ``prune`` after it."""
    result = replace(program, values=list(program.values), nodes=list(program.nodes))
    made_by = producers(result)
    counts = readers(result)
    renamed: dict[int, int] = {}
    dropped: set[int] = set()
    for position, node in enumerate(result.nodes):
        source = node.inputs[0] if node.inputs else -1
        conv_position = made_by.get(source)
        if node.op != "edgert::batch_norm" or conv_position is None or counts[source] != 1:
            continue
        conv = result.nodes[conv_position]
        if conv.op != "edgert::conv2d" or conv.attributes.get("activation", "none") != "none":
            continue
        folded = _folded_convolution(result, conv, node)
        if folded is None:
            continue
        inputs = [
            conv.inputs[0],
            _add_constant(result, folded[0]),
            _add_constant(result, folded[1]),
        ]
        result.nodes[conv_position] = replace(conv, inputs=inputs)
        renamed[node.outputs[0]] = source
        dropped.add(position)
    return _without(result, dropped, renamed)


def _without(program: ProgramDef, dropped: set[int], renamed: dict[int, int]) -> ProgramDef:
    """``program`` without the nodes at ``dropped``, reading ``renamed[v]`` wherever it read v."""
    program.nodes = [
        replace(node, inputs=[renamed.get(i, i) for i in node.inputs])
        for position, node in enumerate(program.nodes)
        if position not in dropped
    ]
    program.outputs = [renamed.get(i, i) for i in program.outputs]
    return program


def fuse_activations(program: ProgramDef) -> ProgramDef:
    """An activation node (relu, clamp, hardswish, hardsigmoid, silu, sigmoid) whose input
    comes from an operator that can apply it (``_ACTIVATION_HOSTS``) and is read by nothing
    else is folded into that operator's ``activation`` attribute (clamp's ``min`` and ``max``
    become ``activation_min`` and ``activation_max``). The fused node computes the same bytes."""
    result = replace(program, nodes=list(program.nodes))
    made_by = producers(result)
    counts = readers(result)
    renamed: dict[int, int] = {}
    dropped: set[int] = set()
    for position, node in enumerate(result.nodes):
        kind = _ACTIVATION_NAMES.get(node.op)
        if kind is None or len(node.inputs) != 1 or counts[node.inputs[0]] != 1:
            continue
        host_position = made_by.get(node.inputs[0])
        if host_position is None:
            continue
        host = result.nodes[host_position]
        if node.op not in _ACTIVATION_HOSTS.get(host.op, frozenset()):
            continue
        if host.attributes.get("activation", "none") != "none" or len(host.outputs) != 1:
            continue
        if result.values[node.inputs[0]].dtype != "float32":
            continue
        attributes = {**host.attributes, "activation": kind}
        for bound, name in _BOUNDS:
            if kind == "clamp" and bound in node.attributes:
                attributes[name] = node.attributes[bound]
        result.nodes[host_position] = replace(host, attributes=attributes)
        renamed[node.outputs[0]] = node.inputs[0]
        dropped.add(position)
    return _without(result, dropped, renamed)


def unfuse_activations(
    program: ProgramDef, ops: frozenset[str], keep: frozenset[str] = frozenset({"none"})
) -> ProgramDef:
    """The inverse of ``fuse_activations`` for the nodes of ``ops`` whose ``activation`` is not
    in ``keep``: the node computes without it, into a new value, and a node of the activation's
    operator after it writes the original output (the same bytes)."""
    result = replace(program, values=list(program.values), nodes=[])
    for node in program.nodes:
        kind = node.attributes.get("activation", "none")
        if node.op not in ops or kind in keep or not isinstance(kind, str):
            result.nodes.append(node)
            continue
        output = node.outputs[0]
        hidden = len(result.values)
        result.values.append(ValueDef(result.values[output].dtype, result.values[output].shape))
        names = {"activation", *(name for _, name in _BOUNDS)}
        attributes = {key: item for key, item in node.attributes.items() if key not in names}
        result.nodes.append(
            replace(node, outputs=[hidden, *node.outputs[1:]], attributes=attributes)
        )
        bounds = {bound: node.attributes[n] for bound, n in _BOUNDS if n in node.attributes}
        result.nodes.append(NodeDef(_ACTIVATION_OPERATORS[kind], [hidden], [output], bounds))
    return result


def prune(program: ProgramDef) -> ProgramDef:
    """Drops nodes whose outputs nothing reads (graph outputs count as read), then every
    value no remaining node or graph listing mentions; renumbers the rest in order."""
    nodes = list(program.nodes)
    while True:
        counts = Counter(i for node in nodes for i in node.inputs if i >= 0)
        counts.update(program.outputs)
        live = [node for node in nodes if any(counts[o] for o in node.outputs)]
        if len(live) == len(nodes):
            break
        nodes = live
    used = {i for node in nodes for i in (*node.inputs, *node.outputs) if i >= 0}
    used |= set(program.inputs) | set(program.outputs)
    kept = [i for i in range(len(program.values)) if i in used]
    renumber = {old: new for new, old in enumerate(kept)}

    def remap(indices: list[int]) -> list[int]:
        return [renumber[i] if i >= 0 else -1 for i in indices]

    return ProgramDef(
        values=[program.values[i] for i in kept],
        nodes=[
            replace(node, inputs=remap(node.inputs), outputs=remap(node.outputs)) for node in nodes
        ],
        inputs=remap(program.inputs),
        outputs=remap(program.outputs),
    )
