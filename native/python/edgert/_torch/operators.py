"""How each ATen operator of an exported (and decomposed) graph becomes edgert nodes.

``LOWERINGS`` maps an ATen operator overload to a function ``(ctx, node, args) -> item``,
where ``args`` holds the node's arguments by their schema names (defaults filled in) as
items (context.py). The table is also what docs/bring-your-model.md's operator list is
generated from (``supported_operators``)."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import torch

from edgert._torch.context import (
    FLOAT,
    INT64_MAX,
    MERGED_FIX,
    MERGED_REASON,
    Lowering,
    Merged,
    Missing,
    Value,
    same_size,
    shape_of_meta,
    static_int,
)

aten = torch.ops.aten
Args = dict[str, Any]
Lower = Callable[[Lowering, torch.fx.Node, Args], Any]
LOWERINGS: dict[object, Lower] = {}
# edgert operator(s) each ATen operator lowers to, for the generated operator table.
TARGETS: dict[object, str] = {}
_Lowering = TypeVar("_Lowering", bound=Lower)


def lowers(*targets: object, to: str) -> Callable[[_Lowering], _Lowering]:
    """Registers a lowering for the given ATen overloads (``to``: the edgert operators); the
    function keeps its own signature."""

    def register(function: _Lowering) -> _Lowering:
        for target in targets:
            LOWERINGS[target] = function
            TARGETS[target] = to
        return function

    return register


def meta(node: torch.fx.Node) -> tuple[torch.dtype, tuple[int | None, ...]]:
    """dtype and shape (None: dynamic) of a single-tensor node's output."""
    value = node.meta["val"]
    return value.dtype, shape_of_meta(value)


def like(
    ctx: Lowering,
    node: torch.fx.Node,
    op: str,
    inputs: Sequence[object | None],
    attributes: dict[str, Any] | None = None,
    *,
    input_dtypes: Sequence[torch.dtype | None] | None = None,
) -> Value:
    """One edgert node whose output has the dtype and shape of ``node``'s."""
    dtype, shape = meta(node)
    return ctx.emit(op, inputs, attributes, dtype=dtype, shape=shape, input_dtypes=input_dtypes)


def ints(ctx: Lowering, items: Sequence[object], what: str) -> list[int]:
    """A list of static ints (sizes, axes); a run-time size is refused."""
    result = []
    for item in items:
        value = static_int(item)
        if value is None:
            raise ctx.refuse(
                f"its {what} depends on a size known only at run time",
                "keep that dimension static in dynamic_shapes",
            )
        result.append(value)
    return result


def axes_of(items: object, rank: int) -> list[int]:
    """Dimension arguments (an int, a list or None) as a list of non-negative axes."""
    if items is None:
        return list(range(rank))
    listed = [items] if isinstance(items, int) else list(items)  # type: ignore[call-overload]
    return [axis % rank if rank else 0 for axis in listed]


def value(ctx: Lowering, item: object, what: str = "input") -> Value:
    """``item`` as a run-time value (constants reach lowerings only beside values)."""
    if isinstance(item, Value):
        return item
    if isinstance(item, torch.Tensor):
        dtype = item.dtype
        return Value(ctx.constant(item), dtype, tuple(item.shape))
    if isinstance(item, Missing):
        raise ctx.refuse(f"it reads {item.what}, which the program does not compute")
    if isinstance(item, Merged):
        return ctx.merged_value(item)
    raise ctx.refuse(f"its {what} is {type(item).__name__}, not a tensor")


# ---------------------------------------------------------------------------- arithmetic


def _scaled(ctx: Lowering, node: torch.fx.Node, item: object, alpha: object) -> object:
    if alpha in (None, 1):
        return item
    if isinstance(item, (int, float)):
        return item * alpha  # type: ignore[operator]
    dtype, _ = meta(node)
    operand = value(ctx, item)
    return ctx.emit(
        "edgert::mul",
        [operand, alpha],
        dtype=dtype,
        shape=operand.shape,
        input_dtypes=[dtype, dtype],
    )


def _binary(op: str) -> Lower:
    def lower(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
        dtype, _ = meta(node)
        other = _scaled(ctx, node, args["other"], args.get("alpha"))
        return like(ctx, node, op, [args["self"], other], input_dtypes=[dtype, dtype])

    return lower


for _name, _op in (("add", "edgert::add"), ("sub", "edgert::sub"), ("mul", "edgert::mul")):
    lowers(getattr(aten, _name).Tensor, getattr(aten, _name).Scalar, to=_op)(_binary(_op))
lowers(aten.maximum.default, to="edgert::maximum")(_binary("edgert::maximum"))
lowers(aten.minimum.default, to="edgert::minimum")(_binary("edgert::minimum"))


@lowers(aten.rsub.Scalar, aten.rsub.Tensor, to="edgert::sub")
def _rsub(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    dtype, _ = meta(node)
    scaled = _scaled(ctx, node, args["self"], args.get("alpha"))
    return like(ctx, node, "edgert::sub", [args["other"], scaled], input_dtypes=[dtype, dtype])


def _trunc(ctx: Lowering, node: torch.fx.Node, quotient: Value) -> Value:
    shape = quotient.shape
    down = ctx.emit("edgert::floor", [quotient], dtype=FLOAT, shape=shape)
    up = ctx.emit("edgert::ceil", [quotient], dtype=FLOAT, shape=shape)
    positive = ctx.emit(
        "edgert::greater_equal",
        [quotient, 0.0],
        dtype=torch.bool,
        shape=shape,
        input_dtypes=[FLOAT, FLOAT],
    )
    return like(ctx, node, "edgert::where", [positive, down, up])


@lowers(
    aten.div.Tensor, aten.div.Scalar, aten.div.Tensor_mode, aten.div.Scalar_mode, to="edgert::div"
)
def _div(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    dtype, shape = meta(node)
    mode = args.get("rounding_mode")
    operands = [args["self"], args["other"]]
    if mode is None or not dtype.is_floating_point and mode == "floor":
        return like(ctx, node, "edgert::div", operands, input_dtypes=[dtype, dtype])
    if not dtype.is_floating_point:
        raise ctx.refuse(
            "integer division rounding toward zero has no edgert operator",
            "use rounding_mode='floor' or divide floats",
        )
    quotient = ctx.emit(
        "edgert::div", operands, dtype=dtype, shape=shape, input_dtypes=[dtype, dtype]
    )
    if mode == "floor":
        return like(ctx, node, "edgert::floor", [quotient])
    return _trunc(ctx, node, quotient)


@lowers(aten.pow.Tensor_Scalar, aten.pow.Tensor_Tensor, aten.pow.Scalar, to="edgert::pow")
def _pow(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    dtype, _ = meta(node)
    base = args["self"]
    exponent = args["exponent"]
    simple = {
        1.0: None,
        2.0: "edgert::mul",
        0.5: "edgert::sqrt",
        -0.5: "edgert::rsqrt",
        -1.0: "edgert::reciprocal",
    }
    if isinstance(exponent, (int, float)) and float(exponent) in simple:
        op = simple[float(exponent)]
        if op is None:
            return ctx.cast(value(ctx, base), dtype)
        inputs = [base, base] if op == "edgert::mul" else [base]
        if op != "edgert::mul" and not dtype.is_floating_point:
            raise ctx.refuse("a fractional or negative power of an integer tensor")
        return like(ctx, node, op, inputs, input_dtypes=[dtype] * len(inputs))
    if dtype != FLOAT:
        raise ctx.refuse(
            f"pow computes {dtype} here; edgert's pow is float32",
            "convert the operands to float32 first",
        )
    return like(ctx, node, "edgert::pow", [base, exponent], input_dtypes=[FLOAT, FLOAT])


def _unary(op: str, *, floating: bool = True) -> Lower:
    def lower(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
        dtype, _ = meta(node)
        return like(ctx, node, op, [args["self"]], input_dtypes=[dtype])

    return lower


for _name, _op in (
    ("relu", "relu"),
    ("sigmoid", "sigmoid"),
    ("tanh", "tanh"),
    ("exp", "exp"),
    ("log", "log"),
    ("sqrt", "sqrt"),
    ("rsqrt", "rsqrt"),
    ("abs", "abs"),
    ("neg", "neg"),
    ("reciprocal", "reciprocal"),
    ("erf", "erf"),
    ("sin", "sin"),
    ("cos", "cos"),
    ("floor", "floor"),
    ("ceil", "ceil"),
    ("silu", "silu"),
    ("hardswish", "hardswish"),
    ("hardsigmoid", "hardsigmoid"),
):
    lowers(getattr(aten, _name).default, to=f"edgert::{_op}")(_unary(f"edgert::{_op}"))


@lowers(aten.round.default, aten.round.decimals, to="edgert::round")
def _round(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    if args.get("decimals", 0):
        raise ctx.refuse("rounding to decimals", "round to an integer (decimals=0)")
    return like(ctx, node, "edgert::round", [args["self"]], input_dtypes=[meta(node)[0]])


@lowers(aten.gelu.default, to="edgert::gelu")
def _gelu(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    return like(
        ctx,
        node,
        "edgert::gelu",
        [args["self"]],
        {"approximate": args.get("approximate") or "none"},
        input_dtypes=[FLOAT],
    )


@lowers(aten.leaky_relu.default, to="edgert::where")
def _leaky_relu(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    x = value(ctx, args["self"])
    slope = float(args.get("negative_slope", 0.01))
    positive = ctx.emit(
        "edgert::greater", [x, 0.0], dtype=torch.bool, shape=x.shape, input_dtypes=[FLOAT, FLOAT]
    )
    scaled = ctx.emit(
        "edgert::mul", [x, slope], dtype=FLOAT, shape=x.shape, input_dtypes=[FLOAT, FLOAT]
    )
    return like(ctx, node, "edgert::where", [positive, x, scaled])


def _bound(item: object) -> float | None:
    return None if item is None else float(item)  # type: ignore[arg-type]


@lowers(
    aten.clamp.default,
    aten.clamp_min.default,
    aten.clamp_max.default,
    aten.hardtanh.default,
    to="edgert::clamp",
)
def _clamp(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    dtype, _ = meta(node)
    if node.target is aten.hardtanh.default:
        low, high = args.get("min_val"), args.get("max_val")
    elif node.target is aten.clamp_min.default:
        low, high = args.get("min"), None
    elif node.target is aten.clamp_max.default:
        low, high = None, args.get("max")
    else:
        low, high = args.get("min"), args.get("max")
    attributes = {
        name: _bound(bound) for name, bound in (("min", low), ("max", high)) if bound is not None
    }
    return like(ctx, node, "edgert::clamp", [args["self"]], attributes, input_dtypes=[dtype])


@lowers(aten.clamp.Tensor, to="edgert::maximum, edgert::minimum")
def _clamp_tensor(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    dtype, shape = meta(node)
    result: object = args["self"]
    for bound, op in ((args.get("min"), "edgert::maximum"), (args.get("max"), "edgert::minimum")):
        if bound is not None:
            result = ctx.emit(
                op, [result, bound], dtype=dtype, shape=shape, input_dtypes=[dtype, dtype]
            )
    return ctx.cast(value(ctx, result), dtype)


# ---------------------------------------------------------------------------- logic


def _comparison(op: str) -> Lower:
    def lower(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
        operand = ctx.result_type(args["self"], args["other"])
        return like(ctx, node, op, [args["self"], args["other"]], input_dtypes=[operand, operand])

    return lower


for _name, _op in (
    ("eq", "equal"),
    ("ne", "not_equal"),
    ("lt", "less"),
    ("le", "less_equal"),
    ("gt", "greater"),
    ("ge", "greater_equal"),
):
    target = getattr(aten, _name)
    lowers(target.Tensor, target.Scalar, to=f"edgert::{_op}")(_comparison(f"edgert::{_op}"))


def _logical(op: str) -> Lower:
    def lower(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
        names = ("self", "other") if "other" in args else ("self",)
        operands = [args[name] for name in names]
        if node.target in _BITWISE and any(ctx.dtype_of(o) != torch.bool for o in operands):
            raise ctx.refuse("bitwise operations on integers have no edgert operator")
        return like(ctx, node, op, operands, input_dtypes=[torch.bool] * len(operands))

    return lower


_BITWISE = {
    aten.bitwise_and.Tensor,
    aten.bitwise_or.Tensor,
    aten.bitwise_xor.Tensor,
    aten.bitwise_not.default,
}
for _targets, _op in (
    ((aten.logical_and.default, aten.bitwise_and.Tensor), "logical_and"),
    ((aten.logical_or.default, aten.bitwise_or.Tensor), "logical_or"),
    ((aten.logical_xor.default, aten.bitwise_xor.Tensor), "logical_xor"),
    ((aten.logical_not.default, aten.bitwise_not.default), "logical_not"),
):
    lowers(*_targets, to=f"edgert::{_op}")(_logical(f"edgert::{_op}"))


@lowers(
    aten.where.self,
    aten.where.ScalarSelf,
    aten.where.ScalarOther,
    aten.where.Scalar,
    to="edgert::where",
)
def _where(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    dtype, _ = meta(node)
    return like(
        ctx,
        node,
        "edgert::where",
        [args["condition"], args["self"], args["other"]],
        input_dtypes=[torch.bool, dtype, dtype],
    )


@lowers(aten.masked_fill.Scalar, aten.masked_fill.Tensor, to="edgert::where")
def _masked_fill(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    dtype, _ = meta(node)
    return like(
        ctx,
        node,
        "edgert::where",
        [args["mask"], args["value"], args["self"]],
        input_dtypes=[torch.bool, dtype, dtype],
    )


# ---------------------------------------------------------------------------- dtypes, copies


@lowers(aten._to_copy.default, aten.to.dtype, aten.to.dtype_layout, to="edgert::cast")
def _to_copy(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    dtype, _ = meta(node)
    return ctx.cast(value(ctx, args["self"]), dtype)


@lowers(
    aten.clone.default,
    aten.alias.default,
    aten.detach.default,
    aten.lift_fresh_copy.default,
    aten.contiguous.default,
    to="(nothing: the value itself)",
)
def _identity(ctx: Lowering, node: torch.fx.Node, args: Args) -> object:
    return args["self"]


@lowers(aten.dropout.default, aten.native_dropout.default, to="(nothing: the value itself)")
def _dropout(ctx: Lowering, node: torch.fx.Node, args: Args) -> object:
    if args.get("train"):
        raise ctx.refuse("dropout in training mode draws random numbers", "call model.eval()")
    if node.target is aten.native_dropout.default:
        return (args["input"], Missing("dropout's mask"))
    return args["input"]


# ---------------------------------------------------------------------------- shapes


def _target_shape(
    ctx: Lowering, source: Value, sizes: Sequence[object], known: Sequence[int | None] = ()
) -> tuple[list[int], list[int], list[int]]:
    """A reshape's ``shape``, ``keep`` and ``scaled`` attributes: static sizes as they are
    (those of the result's ``known`` shape too, a -1 torch resolved), a size equal to the
    input's (symbolic) size at the same index kept, one that is an input size times a
    constant scaled (a batch merged with static dimensions), at most one other inferred."""
    shape: list[int] = []
    keep: list[int] = []
    scaled: list[int] = []
    inferred = 0
    for position, size in enumerate(sizes):
        resolved = known[position] if position < len(known) else None
        fixed = static_int(size) if resolved is None else resolved
        if fixed is not None:
            shape.append(fixed)
            inferred += fixed == -1
            continue
        source_size = source.shape[position] if position < source.rank else 0
        if source_size is None and same_size(size, _meta_size(ctx, source, position)):
            shape.append(1)
            keep.append(position)
            continue
        multiple = _multiple_of_input_size(ctx, source, size)
        if multiple is not None:
            shape.append(1)
            scaled += [position, *multiple]
            continue
        shape.append(-1)
        inferred += 1
    if inferred > 1:
        raise ctx.refuse(
            "it reshapes into more than one dimension known only at run time",
            "keep at most one dimension of the reshape dynamic",
        )
    return shape, keep, scaled


def _multiple_of_input_size(ctx: Lowering, source: Value, size: object) -> tuple[int, int] | None:
    """(input index, factor) when the symbolic ``size`` is the input's size at that index
    times a whole number (``4*s0`` of an input whose first size is ``s0``), else None."""
    if not isinstance(size, torch.SymInt):
        return None
    for position in range(source.rank):
        known = _meta_size(ctx, source, position)
        if source.shape[position] is not None or not isinstance(known, torch.SymInt):
            continue
        ratio = size.node.expr / known.node.expr  # sympy cancels the common symbol
        if getattr(ratio, "is_Integer", False) and int(ratio) >= 1:
            return position, int(ratio)
    return None


def _meta_size(ctx: Lowering, source: Value, position: int) -> object:
    return ctx.symbolic_sizes.get(source.index, (None,) * source.rank)[position]


@lowers(
    aten.view.default,
    aten._unsafe_view.default,
    aten.reshape.default,
    aten.view_copy.default,
    to="edgert::reshape, edgert::squeeze, edgert::unsqueeze",
)
def _view(ctx: Lowering, node: torch.fx.Node, args: Args) -> object:
    if "size" not in args:  # aten.reshape names it shape
        args = {**args, "size": args["shape"]}
    if isinstance(args["self"], Merged):
        merged = args["self"]
        if _same_sizes(ctx, merged.source, list(args["size"])):
            return merged.source
    source = value(ctx, args["self"])
    dtype, shape = meta(node)
    if None not in shape and shape == source.shape:
        return source
    sizes = list(args["size"])
    inserted = _ones_moved(ctx, node, source, sizes)
    if inserted is not None:
        return inserted
    unflattened = ctx.flattened.get(source.index)
    if unflattened is not None and _same_sizes(ctx, unflattened, sizes):
        return unflattened  # [B·S, N] back to the [B, S, N] it was computed from
    merging = _merged_leading(ctx, source, sizes)
    if merging:
        return Merged(source, merging)
    target, keep, scaled = _target_shape(ctx, source, sizes, shape)
    attributes: dict[str, Any] = {"shape": target}
    if keep:
        attributes["keep"] = keep
    if scaled:
        attributes["scaled"] = scaled
    result = like(ctx, node, "edgert::reshape", [source], attributes)
    if (
        len(sizes) == 2
        and source.rank > 2
        and sum(d is None for d in source.shape[:-1]) > 1
        and same_size(sizes[1], _meta_size(ctx, source, source.rank - 1))
    ):
        # Leading dimensions, two or more of them known only at run time, merged into one:
        # [B, S, K] to [B·S, K]. The reshape back cannot be written with run-time sizes, so
        # the product that follows is computed on the unmerged value (_product).
        ctx.flattened[result.index] = source
    return result


def _merged_leading(ctx: Lowering, source: Value, sizes: Sequence[object]) -> int:
    """How many leading dimensions of ``source`` the view to ``sizes`` merges into one when
    one of them is known only at run time and the rest stay as they are, a run-time size
    among them (a reshape cannot write such a view: two sizes to infer); 0 otherwise."""
    had = ctx.symbolic_sizes.get(source.index)
    if had is None or len(sizes) < 2 or len(sizes) > len(had):
        return 0
    count = len(had) - len(sizes) + 1
    rest_same = all(same_size(a, b) for a, b in zip(had[count:], sizes[1:], strict=True))
    leading_dynamic = sum(static_int(size) is None for size in had[:count])
    rest_dynamic = any(static_int(size) is None for size in sizes[1:])
    if count < 2 or not rest_same or leading_dynamic < 1 or not rest_dynamic:
        return 0
    return count


def _same_sizes(ctx: Lowering, item: Value, sizes: Sequence[object]) -> bool:
    had = ctx.symbolic_sizes.get(item.index)
    return (
        had is not None
        and len(had) == len(sizes)
        and all(same_size(a, b) for a, b in zip(had, sizes, strict=True))
    )


def _ones_moved(
    ctx: Lowering, node: torch.fx.Node, source: Value, sizes: list[object]
) -> Value | None:
    """A view that only removes and inserts dimensions of size 1 around dimensions known only
    at run time ([B, S] to [B, 1, S]): a squeeze then unsqueezes, which need no sizes. None
    for any other view (and for one without two run-time dimensions: reshape takes it)."""
    if sum(static_int(size) is None for size in sizes) < 2:
        return None
    had = ctx.symbolic_sizes.get(source.index)
    if had is None:
        return None
    kept_source = [(axis, size) for axis, size in enumerate(had) if static_int(size) != 1]
    kept_target = [(axis, size) for axis, size in enumerate(sizes) if static_int(size) != 1]
    if len(kept_source) != len(kept_target) or not all(
        same_size(a, b) for (_, a), (_, b) in zip(kept_source, kept_target, strict=True)
    ):
        return None
    dtype, shape = meta(node)
    current = source
    ones = [axis for axis, size in enumerate(had) if static_int(size) == 1]
    if ones:
        current = ctx.emit(
            "edgert::squeeze",
            [current],
            {"axes": ones},
            dtype=dtype,
            shape=[d for axis, d in enumerate(source.shape) if axis not in ones],
        )
    for axis, size in enumerate(sizes):
        if static_int(size) == 1:
            grown = list(current.shape)
            grown.insert(axis, 1)
            current = ctx.emit(
                "edgert::unsqueeze", [current], {"axis": axis}, dtype=dtype, shape=grown
            )
    return current


@lowers(aten.flatten.using_ints, aten.reshape_as.default, aten.unflatten.int, to="edgert::reshape")
def _flatten(ctx: Lowering, node: torch.fx.Node, args: Args) -> object:
    """flatten, reshape_as and unflatten as torch.export records them before decomposition:
    a view to the sizes it traced."""
    return _view(ctx, node, {"self": args["self"], "size": list(node.meta["val"].shape)})


@lowers(aten.permute.default, aten.permute_copy.default, to="edgert::transpose")
def _permute(ctx: Lowering, node: torch.fx.Node, args: Args) -> object:
    source = value(ctx, args["self"])
    perm = axes_of(args["dims"], source.rank)
    if perm == list(range(source.rank)):
        return source
    return like(ctx, node, "edgert::transpose", [source], {"perm": perm})


@lowers(aten.t.default, aten.transpose.int, to="edgert::transpose")
def _transpose(ctx: Lowering, node: torch.fx.Node, args: Args) -> object:
    source = value(ctx, args["self"])
    perm = list(range(source.rank))
    if source.rank >= 2:
        first, second = (
            axes_of([args["dim0"], args["dim1"]], source.rank) if "dim0" in args else [0, 1]
        )
        perm[first], perm[second] = perm[second], perm[first]
    if perm == list(range(source.rank)):
        return source
    return like(ctx, node, "edgert::transpose", [source], {"perm": perm})


@lowers(aten.expand.default, aten.expand_copy.default, to="edgert::expand")
def _expand(ctx: Lowering, node: torch.fx.Node, args: Args) -> object:
    source = value(ctx, args["self"])
    sizes = list(args["size"])
    offset = len(sizes) - source.rank
    shape = []
    for position, size in enumerate(sizes):
        fixed = static_int(size)
        inner = position - offset
        if fixed is not None:
            shape.append(-1 if inner >= 0 and fixed == source.shape[inner] else fixed)
        elif inner >= 0 and same_size(size, _meta_size(ctx, source, inner)):
            shape.append(-1)
        else:  # a run-time size the input does not have (a constant expanded to the batch)
            kept = [
                wanted
                if static_int(wanted) != -1
                else source.shape[at - offset]
                if source.shape[at - offset] is not None
                else _meta_size(ctx, source, at - offset)
                for at, wanted in enumerate(sizes)
            ]
            return ctx.broadcast_to(source, kept)
    if offset == 0 and all(size == -1 for size in shape):
        return source
    return like(ctx, node, "edgert::expand", [source], {"shape": shape})


@lowers(aten.unsqueeze.default, aten.unsqueeze_copy.default, to="edgert::unsqueeze")
def _unsqueeze(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    source = value(ctx, args["self"])
    return like(ctx, node, "edgert::unsqueeze", [source], {"axis": int(args["dim"])})


@lowers(
    aten.squeeze.default,
    aten.squeeze.dim,
    aten.squeeze.dims,
    aten.squeeze_copy.dims,
    to="edgert::squeeze",
)
def _squeeze(ctx: Lowering, node: torch.fx.Node, args: Args) -> object:
    source = value(ctx, args["self"])
    dims = args.get("dim")
    axes = (
        [a for a in axes_of(dims, source.rank) if source.shape[a] == 1]
        if dims is not None
        else [a for a in range(source.rank) if source.shape[a] == 1]
    )
    if not axes:
        return source
    return like(ctx, node, "edgert::squeeze", [source], {"axes": axes})


def _slice_bound(ctx: Lowering, item: object, size: int | None, default: int) -> int:
    if item is None:
        return default
    fixed = static_int(item)
    if fixed is not None:
        return fixed
    raise ctx.refuse("it slices at a position known only at run time", "slice at static positions")


@lowers(aten.slice.Tensor, aten.slice_copy.Tensor, to="edgert::slice, edgert::index_select")
def _slice(ctx: Lowering, node: torch.fx.Node, args: Args) -> object:
    source = value(ctx, args["self"])
    axis = axes_of(args.get("dim", 0), source.rank)[0]
    size = source.shape[axis]
    end_item = args.get("end")
    if (
        end_item is not None
        and static_int(end_item) is None
        and same_size(end_item, _meta_size(ctx, source, axis))
    ):
        end_item = None
    step = int(args.get("step") or 1)
    if end_item is not None and static_int(end_item) is None:
        start_at = static_int(args.get("start") or 0)
        if step == 1 and start_at is not None and start_at >= 0:
            # x[start:n] for a run-time n that is not x's size (a buffer cut to the length
            # of the input): the rows start..n-1 picked by index.
            positions = _counting(ctx, end_item, start_at)
            return like(ctx, node, "edgert::index_select", [source, positions], {"axis": axis})
    start = _slice_bound(ctx, args.get("start"), size, 0)
    end = _slice_bound(ctx, end_item, size, INT64_MAX)
    if start == 0 and step == 1 and (end == INT64_MAX or (size is not None and end >= size)):
        return source
    return like(
        ctx,
        node,
        "edgert::slice",
        [source],
        {"axis": axis, "start": start, "end": min(end, INT64_MAX), "step": step},
    )


@lowers(aten.select.int, aten.select_copy.int, to="edgert::slice, edgert::squeeze")
def _select(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    source = value(ctx, args["self"])
    axis = axes_of(args["dim"], source.rank)[0]
    index = int(args["index"])
    end = INT64_MAX if index == -1 else index + 1
    sliced_shape = list(source.shape)
    sliced_shape[axis] = 1
    sliced = ctx.emit(
        "edgert::slice",
        [source],
        {"axis": axis, "start": index, "end": end},
        dtype=source.dtype,
        shape=sliced_shape,
    )
    return like(ctx, node, "edgert::squeeze", [sliced], {"axes": [axis]})


def _split(
    ctx: Lowering, node: torch.fx.Node, source: Value, axis: int, sizes: list[int]
) -> list[Value]:
    outputs = []
    for piece in node.meta["val"]:
        outputs.append((piece.dtype, shape_of_meta(piece)))
    return ctx.emit_many("edgert::split", [source], {"axis": axis, "sizes": sizes}, outputs)


@lowers(aten.split_with_sizes.default, aten.split_with_sizes_copy.default, to="edgert::split")
def _split_with_sizes(ctx: Lowering, node: torch.fx.Node, args: Args) -> list[Value]:
    source = value(ctx, args["self"])
    axis = axes_of(args.get("dim", 0), source.rank)[0]
    return _split(ctx, node, source, axis, ints(ctx, args["split_sizes"], "split sizes"))


@lowers(aten.split.Tensor, aten.split_copy.Tensor, to="edgert::split")
def _split_tensor(ctx: Lowering, node: torch.fx.Node, args: Args) -> list[Value]:
    source = value(ctx, args["self"])
    axis = axes_of(args.get("dim", 0), source.rank)[0]
    sizes = [shape_of_meta(piece)[axis] for piece in node.meta["val"]]
    return _split(ctx, node, source, axis, ints(ctx, sizes, "split sizes"))


@lowers(aten.chunk.default, to="edgert::split")
def _chunk(ctx: Lowering, node: torch.fx.Node, args: Args) -> list[Value]:
    return _split_tensor(ctx, node, args)


@lowers(aten.unbind.int, aten.unbind_copy.int, to="edgert::split, edgert::squeeze")
def _unbind(ctx: Lowering, node: torch.fx.Node, args: Args) -> list[Value]:
    source = value(ctx, args["self"])
    axis = axes_of(args.get("dim", 0), source.rank)[0]
    count = ints(ctx, [source.shape[axis]], "size along the unbound dimension")[0]
    piece_shape = [1 if d == axis else s for d, s in enumerate(source.shape)]
    pieces = ctx.emit_many(
        "edgert::split",
        [source],
        {"axis": axis, "sizes": [1] * count},
        [(source.dtype, piece_shape)] * count,
    )
    results = []
    for piece, fake in zip(pieces, node.meta["val"], strict=True):
        results.append(
            ctx.emit(
                "edgert::squeeze",
                [piece],
                {"axes": [axis]},
                dtype=fake.dtype,
                shape=shape_of_meta(fake),
            )
        )
    return results


@lowers(aten.cat.default, aten.concat.default, to="edgert::concat")
def _cat(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    dtype, shape = meta(node)
    tensors = [
        t
        for t in args["tensors"]
        if not (isinstance(t, torch.Tensor) and t.numel() == 0 and t.dim() == 1)
    ]
    axis = axes_of(args.get("dim", 0), len(shape))[0]
    return like(
        ctx, node, "edgert::concat", tensors, {"axis": axis}, input_dtypes=[dtype] * len(tensors)
    )


@lowers(aten.constant_pad_nd.default, aten.pad.default, to="edgert::pad")
def _pad(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    if (args.get("mode") or "constant") != "constant":
        return _edge_pad(ctx, node, args["self"], args["pad"], str(args["mode"]))
    pads = ints(ctx, args["pad"], "padding")
    return like(
        ctx,
        node,
        "edgert::pad",
        [args["self"]],
        {"pads": pads, "value": float(args.get("value") or 0.0)},
    )


def _full_like(fill: float | None) -> Lower:
    def lower(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
        dtype, _ = meta(node)
        amount = fill if fill is not None else args["fill_value"]
        return like(
            ctx,
            node,
            "edgert::full_like",
            [args["self"]],
            {"value": float(amount), "dtype": ctx.edgert_dtype(dtype)},
        )

    return lower


def _new_tensor(fill: float | None) -> Lower:
    """full/zeros/ones/empty (and their new_* forms) of a size known only at run time: a
    constant of the static sizes broadcast against the run-time ones (``extent``)."""

    def lower(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
        dtype, _ = meta(node)
        sizes = list(args["size"])
        amount = fill if fill is not None else args["fill_value"]
        if (
            isinstance(amount, (Value, torch.Tensor))
            or static_int(amount) is None
            and not (isinstance(amount, (int, float, bool)))
        ):
            raise ctx.refuse("a fill value known only at run time", "fill with a constant")
        static = [static_int(size) for size in sizes]
        constant = torch.full([1 if s is None else s for s in static], amount, dtype=dtype)
        ctx.edgert_dtype(dtype)
        return ctx.broadcast_to(constant, sizes)

    return lower


lowers(aten.full.default, aten.new_full.default, to="edgert::full_like, edgert::where")(
    _new_tensor(None)
)
lowers(
    aten.zeros.default,
    aten.new_zeros.default,
    aten.empty.memory_format,
    aten.new_empty.default,
    to="edgert::full_like, edgert::where",
)(_new_tensor(0.0))
lowers(aten.ones.default, aten.new_ones.default, to="edgert::full_like, edgert::where")(
    _new_tensor(1.0)
)
lowers(aten.full_like.default, to="edgert::full_like")(_full_like(None))
lowers(aten.zeros_like.default, to="edgert::full_like")(_full_like(0.0))
lowers(aten.ones_like.default, to="edgert::full_like")(_full_like(1.0))


@lowers(aten.cumsum.default, to="edgert::cumsum")
def _cumsum(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    dtype, _ = meta(node)
    source = value(ctx, args["self"])
    axis = axes_of(args["dim"], max(source.rank, 1))[0]
    return like(ctx, node, "edgert::cumsum", [source], {"axis": axis}, input_dtypes=[dtype])


@lowers(
    aten.arange.default,
    aten.arange.start,
    aten.arange.start_step,
    to="edgert::full_like, edgert::cumsum, edgert::add",
)
def _arange(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    """arange up to a size known only at run time (a static one is folded): the running sum
    of ones over the extent of that size, from ``start``."""
    dtype, shape = meta(node)
    end = args["end"]
    start = static_int(args.get("start") or 0)
    step = static_int(args.get("step") or 1)
    if start is None or step != 1 or start < 0 or static_int(end) is not None:
        raise ctx.refuse(
            "arange with a start or step known only at run time, or a step other than 1",
            "count from a constant start in steps of 1",
        )
    counted = _counting(ctx, end, start)
    return ctx.cast(counted, dtype) if counted.dtype != dtype else counted


def _counting(ctx: Lowering, end: object, start: int) -> Value:
    """int64 ``start, start + 1, ..., end - 1`` for an ``end`` known only at run time."""
    ones = ctx.emit(
        "edgert::full_like",
        [ctx.extent(end, torch.int64)],
        {"value": 1.0, "dtype": "int64"},
        dtype=torch.int64,
        shape=(None,),
    )
    if start:
        ones = ctx.emit(
            "edgert::slice",
            [ones],
            {"axis": 0, "start": start, "end": INT64_MAX, "step": 1},
            dtype=torch.int64,
            shape=(None,),
        )
    counted = ctx.emit("edgert::cumsum", [ones], {"axis": 0}, dtype=torch.int64, shape=(None,))
    if start == 1:
        return counted
    return ctx.emit(
        "edgert::add",
        [counted, start - 1],
        dtype=torch.int64,
        shape=(None,),
        input_dtypes=[torch.int64, torch.int64],
    )


# ---------------------------------------------------------------------------- indexing


@lowers(aten.embedding.default, to="edgert::embedding")
def _embedding(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    return like(ctx, node, "edgert::embedding", [args["weight"], args["indices"]])


@lowers(aten.index_select.default, to="edgert::index_select")
def _index_select(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    source = args["self"]
    rank = source.rank if isinstance(source, Value) else source.dim()
    return like(
        ctx,
        node,
        "edgert::index_select",
        [source, args["index"]],
        {"axis": axes_of(args["dim"], rank)[0]},
    )


@lowers(aten.gather.default, to="edgert::gather")
def _gather(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    source = args["self"]
    rank = source.rank if isinstance(source, Value) else source.dim()
    return like(
        ctx,
        node,
        "edgert::gather",
        [source, args["index"]],
        {"axis": axes_of(args["dim"], rank)[0]},
    )


@lowers(aten.index.Tensor, to="edgert::embedding, edgert::index_select, edgert::add")
def _index(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    indices = list(args["indices"])
    used = [(axis, index) for axis, index in enumerate(indices) if index is not None]
    if len(used) > 1:
        return _index_several(ctx, node, args["self"], indices)
    if not used:
        raise ctx.refuse("indexing with no index tensor", "index at least one dimension")
    axis, index = used[0]
    if ctx.dtype_of(index) == torch.bool:
        raise ctx.refuse(
            "boolean-mask indexing gives a shape that depends on the data",
            "use torch.where to keep the shape",
        )
    source = args["self"]
    rank = source.rank if isinstance(source, Value) else source.dim()
    index_rank = index.rank if isinstance(index, Value) else index.dim()
    if axis == 0 and rank == 2:
        return like(ctx, node, "edgert::embedding", [source, index])
    if index_rank != 1:
        raise ctx.refuse(
            "indexing a dimension other than the first of a matrix with a "
            "tensor of several dimensions",
            "use torch.gather or index_select",
        )
    return like(ctx, node, "edgert::index_select", [source, index], {"axis": axis})


def _index_several(
    ctx: Lowering, node: torch.fx.Node, source: object, indices: list[object]
) -> Value:
    """x[i0, i1, ..., ik-1] over the leading dimensions: one flat index
    (sum of i_j times the stride of dimension j, broadcast) into x seen as a table of rows
    [d0·...·dk-1, rest] (an embedding lookup). Dimensions 1..k-1 and the rest must be static."""
    dtype, shape = meta(node)
    x = value(ctx, source)
    count = len(indices)
    if any(index is None for index in indices) or count > x.rank:
        raise ctx.refuse(
            "indexing several dimensions that are not the leading ones",
            "index the leading dimensions, or one dimension at a time",
        )
    if any(ctx.dtype_of(index) == torch.bool for index in indices):
        raise ctx.refuse(
            "boolean-mask indexing gives a shape that depends on the data",
            "use torch.where to keep the shape",
        )
    orthogonal = _index_orthogonal(ctx, node, x, indices)
    if orthogonal is not None:
        return orthogonal
    inner = ints(ctx, x.shape[1:count], "indexed dimensions after the first")
    rest = ints(ctx, x.shape[count:], "dimensions after the indexed ones")
    width = 1
    for size in rest:
        width *= size
    flat: object = None
    stride = width
    for position in reversed(range(count)):
        term: object = indices[position]
        multiplier = stride // width
        if multiplier != 1:
            term = ctx.emit(
                "edgert::mul",
                [term, multiplier],
                dtype=torch.int64,
                shape=_item_shape(term),
                input_dtypes=[torch.int64, torch.int64],
            )
        flat = (
            term
            if flat is None
            else ctx.emit(
                "edgert::add",
                [flat, term],
                dtype=torch.int64,
                shape=_broadcast_shape(_item_shape(flat), _item_shape(term)),
                input_dtypes=[torch.int64, torch.int64],
            )
        )
        if position > 0:
            stride *= inner[position - 1]
    assert flat is not None
    table = ctx.emit(
        "edgert::reshape",
        [x],
        {"shape": [-1, width]},
        dtype=x.dtype,
        shape=(None, width),
    )
    if not isinstance(flat, Value):
        flat = value(ctx, flat)
    index_shape = list(shape[: len(shape) - len(rest)])
    if flat.shape != tuple(index_shape):  # a lone index tensor broadcast by the others
        flat = ctx.broadcast_to(flat, _meta_sizes(node)[: len(index_shape)])
    rows = ctx.emit(
        "edgert::embedding",
        [table, flat],
        dtype=x.dtype,
        shape=(*index_shape, width),
    )
    if rest == [width]:
        return ctx.cast(rows, dtype)
    if not rest:
        return like(ctx, node, "edgert::squeeze", [rows], {"axes": [len(index_shape)]})
    keep = list(range(len(index_shape)))
    return like(
        ctx,
        node,
        "edgert::reshape",
        [rows],
        {"shape": [1] * len(index_shape) + rest, "keep": keep},
    )


def _index_orthogonal(
    ctx: Lowering, node: torch.fx.Node, x: Value, indices: list[object]
) -> Value | None:
    """x[i0, ..., ik-1] where index j varies along broadcast dimension j only (i0 of shape
    [n0, 1], i1 of shape [n1], as a vmap over the batch makes): one index_select per
    dimension, in place. None when the indices are not of that form."""
    count = len(indices)
    shapes = [_item_shape(index) for index in indices]
    for position, shape in enumerate(shapes):
        padded = (1,) * (count - len(shape)) + shape
        if len(shape) > count or any(
            size != 1 for axis, size in enumerate(padded) if axis != position
        ):
            return None
    result = x
    for position, index in enumerate(indices):
        flat = value(ctx, index)
        if flat.rank != 1:
            flat = ctx.emit(
                "edgert::reshape",
                [flat],
                {"shape": [-1]},
                dtype=flat.dtype,
                shape=(flat.shape[-1] if flat.rank else 1,),
            )
        out_shape = list(result.shape)
        out_shape[position] = flat.shape[0]
        result = ctx.emit(
            "edgert::index_select",
            [result, flat],
            {"axis": position},
            dtype=x.dtype,
            shape=out_shape,
        )
    return result


def _broadcast_shape(
    first: tuple[int | None, ...], second: tuple[int | None, ...]
) -> tuple[int | None, ...]:
    rank = max(len(first), len(second))
    a = (1,) * (rank - len(first)) + first
    b = (1,) * (rank - len(second)) + second
    return tuple(
        y if x == 1 else x if y == 1 else (x if x == y else None) for x, y in zip(a, b, strict=True)
    )


def _item_shape(item: object) -> tuple[int | None, ...]:
    if isinstance(item, Value):
        return item.shape
    if isinstance(item, torch.Tensor):
        return tuple(item.shape)
    return ()


def _meta_sizes(node: torch.fx.Node) -> list[object]:
    return list(node.meta["val"].shape)


# ---------------------------------------------------------------------------- reductions


def _reduction(op: str, *, input_dtype: Callable[[torch.dtype], torch.dtype | None]) -> Lower:
    def lower(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
        source = value(ctx, args["self"])
        dims = args.get("dim")
        axes = axes_of(dims if dims not in ((), []) else None, source.rank)
        attributes = {"axes": axes, "keepdim": int(bool(args.get("keepdim", False)))}
        wanted = args.get("dtype") or input_dtype(meta(node)[0])
        return like(ctx, node, op, [source], attributes, input_dtypes=[wanted])

    return lower


_same = lambda out: out  # noqa: E731  (the input is converted to the output's dtype)
_none = lambda out: None  # noqa: E731
lowers(aten.sum.dim_IntList, aten.sum.default, to="edgert::sum")(
    _reduction("edgert::sum", input_dtype=_same)
)
lowers(aten.mean.dim, aten.mean.default, to="edgert::mean")(
    _reduction("edgert::mean", input_dtype=_same)
)
lowers(aten.amax.default, aten.max.default, to="edgert::max")(
    _reduction("edgert::max", input_dtype=_none)
)
lowers(aten.amin.default, aten.min.default, to="edgert::min")(
    _reduction("edgert::min", input_dtype=_none)
)
lowers(aten.any.dim, aten.any.dims, aten.any.default, to="edgert::any")(
    _reduction("edgert::any", input_dtype=_none)
)
lowers(aten.all.dim, aten.all.dims, aten.all.default, to="edgert::all")(
    _reduction("edgert::all", input_dtype=_none)
)


def _extreme_with_index(op: str, arg_op: str) -> Lower:
    def lower(ctx: Lowering, node: torch.fx.Node, args: Args) -> tuple[Value, Value]:
        source = value(ctx, args["self"])
        axis = axes_of(args["dim"], source.rank)[0]
        keepdim = int(bool(args.get("keepdim", False)))
        values, indices = node.meta["val"]
        extreme = ctx.emit(
            op,
            [source],
            {"axes": [axis], "keepdim": keepdim},
            dtype=values.dtype,
            shape=shape_of_meta(values),
        )
        position = ctx.emit(
            arg_op,
            [source],
            {"axis": axis, "keepdim": keepdim},
            dtype=indices.dtype,
            shape=shape_of_meta(indices),
        )
        return extreme, position

    return lower


lowers(aten.max.dim, to="edgert::max, edgert::argmax")(
    _extreme_with_index("edgert::max", "edgert::argmax")
)
lowers(aten.min.dim, to="edgert::min, edgert::argmin")(
    _extreme_with_index("edgert::min", "edgert::argmin")
)


def _arg_extreme(op: str) -> Lower:
    def lower(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
        source = value(ctx, args["self"])
        attributes: dict[str, Any] = {"keepdim": int(bool(args.get("keepdim", False)))}
        if args.get("dim") is not None:
            attributes["axis"] = axes_of(args["dim"], source.rank)[0]
        return like(ctx, node, op, [source], attributes)

    return lower


lowers(aten.argmax.default, to="edgert::argmax")(_arg_extreme("edgert::argmax"))
lowers(aten.argmin.default, to="edgert::argmin")(_arg_extreme("edgert::argmin"))


@lowers(aten.var.correction, aten.var.dim, to="edgert::mean, edgert::sub, edgert::mul, edgert::sum")
def _var(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    source = value(ctx, args["self"])
    axes = axes_of(args.get("dim"), source.rank)
    count = 1
    for axis in axes:
        count *= ints(ctx, [source.shape[axis]], "reduced size")[0]
    correction = args.get("correction")
    correction = (1 if args.get("unbiased", True) else 0) if correction is None else correction
    keep_shape = [1 if d in axes else s for d, s in enumerate(source.shape)]
    mean = ctx.emit(
        "edgert::mean",
        [source],
        {"axes": axes, "keepdim": 1},
        dtype=FLOAT,
        shape=keep_shape,
        input_dtypes=[FLOAT],
    )
    centred = ctx.emit(
        "edgert::sub", [source, mean], dtype=FLOAT, shape=source.shape, input_dtypes=[FLOAT, FLOAT]
    )
    squares = ctx.emit("edgert::mul", [centred, centred], dtype=FLOAT, shape=source.shape)
    _, shape = meta(node)
    total = ctx.emit(
        "edgert::sum",
        [squares],
        {"axes": axes, "keepdim": int(bool(args.get("keepdim", False)))},
        dtype=FLOAT,
        shape=shape,
    )
    divisor = max(count - float(correction), 0.0)
    return like(ctx, node, "edgert::div", [total, divisor], input_dtypes=[FLOAT, FLOAT])


# ---------------------------------------------------------------------------- networks


def _pair(items: object, fill: int) -> list[int]:
    listed = [items] if isinstance(items, int) else list(items or [])  # type: ignore[call-overload]
    if not listed:
        return [fill, fill]
    return listed * 2 if len(listed) == 1 else listed[:2]


@lowers(
    aten.convolution.default,
    aten.conv2d.default,
    aten.conv1d.default,
    to="edgert::conv2d, edgert::pad, edgert::reshape",
)
def _convolution(ctx: Lowering, node: torch.fx.Node, args: Args) -> object:
    if args.get("transposed"):
        return _transposed_convolution(ctx, node, args)
    source = value(ctx, args["input"])
    attributes = {
        "stride": _pair(args.get("stride"), 1),
        "padding": _pair(args.get("padding"), 0),
        "dilation": _pair(args.get("dilation"), 1),
        "groups": int(args.get("groups") or 1),
    }
    if isinstance(args.get("padding"), str):
        raise ctx.refuse("string padding ('same'/'valid')", "give the padding as numbers")
    if source.rank == 4:
        return like(
            ctx,
            node,
            "edgert::conv2d",
            [source, args["weight"], args.get("bias")],
            attributes,
            input_dtypes=[FLOAT, FLOAT, FLOAT],
        )
    if source.rank != 3:
        raise ctx.refuse(
            f"a convolution over {source.rank - 2} dimensions",
            "edgert runs 1-D and 2-D convolutions",
        )
    return _convolution_1d(ctx, node, source, args, attributes)


def _convolution_1d(
    ctx: Lowering, node: torch.fx.Node, source: Value, args: Args, attributes: dict[str, Any]
) -> Value:
    """conv1d as conv2d over [N, C, 1, L] (the same sums in the same order)."""
    for name, fill in (("stride", 1), ("padding", 0), ("dilation", 1)):
        attributes[name] = [fill, _pair(args.get(name), fill)[0]]
    wide = ctx.emit(
        "edgert::unsqueeze",
        [source],
        {"axis": 2},
        dtype=FLOAT,
        shape=(source.shape[0], source.shape[1], 1, source.shape[2]),
    )
    weight = args["weight"]
    if isinstance(weight, torch.Tensor):
        weight = weight.unsqueeze(2)
    else:
        weight_value = value(ctx, weight)
        weight = ctx.emit(
            "edgert::unsqueeze",
            [weight_value],
            {"axis": 2},
            dtype=FLOAT,
            shape=(*weight_value.shape[:2], 1, weight_value.shape[2]),
        )
    dtype, shape = meta(node)
    convolved = ctx.emit(
        "edgert::conv2d",
        [wide, weight, args.get("bias")],
        attributes,
        dtype=dtype,
        shape=(shape[0], shape[1], 1, shape[2]),
        input_dtypes=[FLOAT, FLOAT, FLOAT],
    )
    return like(ctx, node, "edgert::squeeze", [convolved], {"axes": [2]})


def _transposed_convolution(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    """conv_transpose1d/2d as the convolution it is the adjoint of: the input with stride - 1
    zeros between its elements, padded by dilation·(kernel - 1) - padding on each side (and
    output_padding after), convolved with stride 1 by the weight with its kernel flipped and
    its input and output channels exchanged within each group."""
    source = value(ctx, args["input"])
    weight = args["weight"]
    if not isinstance(weight, torch.Tensor):
        raise ctx.refuse(
            "a transposed convolution whose weight is computed at run time",
            "give the layer a parameter as its weight",
        )
    if source.rank not in (3, 4):
        raise ctx.refuse(
            f"a transposed convolution over {source.rank - 2} dimensions",
            "edgert runs 1-D and 2-D transposed convolutions",
        )
    spatial = source.rank - 2
    groups = int(args.get("groups") or 1)

    def per_dim(name: str, fill: int) -> list[int]:
        listed = args.get(name)
        items = [listed] if isinstance(listed, int) else list(listed or [])
        items = items or [fill]
        return [int(items[0])] * spatial if len(items) == 1 else [int(i) for i in items]

    stride, padding = per_dim("stride", 1), per_dim("padding", 0)
    dilation, extra = per_dim("dilation", 1), per_dim("output_padding", 0)
    kernel = list(weight.shape[2:])
    sizes = ints(ctx, source.shape[2:], "spatial size")
    dtype, shape = meta(node)
    x = source
    if spatial == 1:  # [N, C, L] as [N, C, 1, L]
        x = ctx.emit(
            "edgert::unsqueeze",
            [x],
            {"axis": 2},
            dtype=FLOAT,
            shape=(x.shape[0], x.shape[1], 1, x.shape[2]),
        )
        weight = weight.unsqueeze(2)
        stride, dilation = [1, *stride], [1, *dilation]
        padding, extra = [0, *padding], [0, *extra]
        kernel, sizes = [1, *kernel], [1, *sizes]
    batch, channels = x.shape[0], x.shape[1]
    if stride != [1, 1]:
        # [N, C, H, W] -> [N, C, H, 1, W, 1] -> padded to [N, C, H, sh, W, sw] -> merged
        # to [N, C, H·sh, W·sw] -> the trailing zeros cut: (H - 1)·sh + 1 by (W - 1)·sw + 1.
        height, width = sizes
        spread = ctx.emit(
            "edgert::reshape",
            [x],
            {"shape": [1, channels, height, 1, width, 1], "keep": [0]},
            dtype=FLOAT,
            shape=(batch, channels, height, 1, width, 1),
        )
        spread = ctx.emit(
            "edgert::pad",
            [spread],
            {"pads": [0, stride[1] - 1, 0, 0, 0, stride[0] - 1], "value": 0.0},
            dtype=FLOAT,
            shape=(batch, channels, height, stride[0], width, stride[1]),
        )
        x = ctx.emit(
            "edgert::reshape",
            [spread],
            {"shape": [1, channels, height * stride[0], width * stride[1]], "keep": [0]},
            dtype=FLOAT,
            shape=(batch, channels, height * stride[0], width * stride[1]),
        )
        sizes = [height * stride[0], width * stride[1]]
    pads = []  # (before, after), the last dimension first; a negative pad crops
    for d in reversed(range(2)):
        before = dilation[d] * (kernel[d] - 1) - padding[d]
        # after: less the stride - 1 zeros that follow the last element
        pads += [before, before + extra[d] - (stride[d] - 1)]
    padded_shape = (
        batch,
        channels,
        sizes[0] + pads[2] + pads[3],
        sizes[1] + pads[0] + pads[1],
    )
    x = ctx.emit("edgert::pad", [x], {"pads": pads, "value": 0.0}, dtype=FLOAT, shape=padded_shape)
    in_channels, out_per_group = int(weight.shape[0]), int(weight.shape[1])
    flipped = (
        weight.detach()
        .reshape(groups, in_channels // groups, out_per_group, *kernel)
        .transpose(1, 2)
        .reshape(groups * out_per_group, in_channels // groups, *kernel)
        .flip(-1, -2)
        .contiguous()
    )
    out_shape = (
        batch,
        groups * out_per_group,
        padded_shape[2] - dilation[0] * (kernel[0] - 1),
        padded_shape[3] - dilation[1] * (kernel[1] - 1),
    )
    convolved = ctx.emit(
        "edgert::conv2d",
        [x, flipped, args.get("bias")],
        {"stride": [1, 1], "padding": [0, 0], "dilation": dilation, "groups": groups},
        dtype=dtype,
        shape=out_shape,
        input_dtypes=[FLOAT, FLOAT, FLOAT],
    )
    if spatial == 1:
        return like(ctx, node, "edgert::squeeze", [convolved], {"axes": [2]})
    return convolved


def _pool_input(ctx: Lowering, args: Args, name: str = "self") -> Value:
    source = value(ctx, args[name])
    if source.rank != 4:
        raise ctx.refuse(
            "pooling an input without a batch dimension", "pass inputs of shape [N, C, H, W]"
        )
    return source


@lowers(aten.max_pool2d_with_indices.default, aten.max_pool2d.default, to="edgert::max_pool2d")
def _max_pool(ctx: Lowering, node: torch.fx.Node, args: Args) -> object:
    source = _pool_input(ctx, args)
    kernel = _pair(args["kernel_size"], 1)
    stride = _pair(args.get("stride"), 0)
    attributes = {
        "kernel": kernel,
        "stride": stride if stride != [0, 0] else kernel,
        "padding": _pair(args.get("padding"), 0),
        "dilation": _pair(args.get("dilation"), 1),
        "ceil_mode": int(bool(args.get("ceil_mode"))),
    }
    values = node.meta["val"]
    values = values[0] if isinstance(values, (tuple, list)) else values
    pooled = ctx.emit(
        "edgert::max_pool2d", [source], attributes, dtype=values.dtype, shape=shape_of_meta(values)
    )
    if node.target is aten.max_pool2d.default:
        return pooled
    return pooled, Missing("max_pool2d's indices")


@lowers(aten.avg_pool2d.default, to="edgert::avg_pool2d")
def _avg_pool(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    source = _pool_input(ctx, args)
    kernel = _pair(args["kernel_size"], 1)
    stride = _pair(args.get("stride"), 0)
    attributes = {
        "kernel": kernel,
        "stride": stride if stride != [0, 0] else kernel,
        "padding": _pair(args.get("padding"), 0),
        "ceil_mode": int(bool(args.get("ceil_mode"))),
        "count_include_pad": int(bool(args.get("count_include_pad", True))),
        "divisor_override": int(args.get("divisor_override") or 0),
    }
    return like(ctx, node, "edgert::avg_pool2d", [source], attributes)


@lowers(
    aten._adaptive_avg_pool2d.default,
    aten.adaptive_avg_pool2d.default,
    to="edgert::adaptive_avg_pool2d",
)
def _adaptive_avg_pool(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    source = _pool_input(ctx, args)
    size = ints(ctx, _pair(args["output_size"], 1), "output size")
    return like(ctx, node, "edgert::adaptive_avg_pool2d", [source], {"output_size": size})


@lowers(
    aten.upsample_nearest2d.vec, aten.upsample_nearest2d.default, to="edgert::upsample_nearest2d"
)
def _upsample_nearest(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    return _nearest(ctx, node, args, exact=False, spatial=2)


@lowers(
    aten.upsample_bilinear2d.vec,
    aten.upsample_bilinear2d.default,
    to="edgert::linear, edgert::transpose",
)
def _upsample_bilinear(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    """Bilinear interpolation is separable: along the width, a linear layer whose weight
    [W_out, W_in] holds torch's own interpolation weights (torch's kernel run on an
    identity); then the same along the height, between two transposes."""
    source = _pool_input(ctx, args, "input")
    dtype, shape = meta(node)
    sizes = ints(ctx, source.shape[2:], "input size")
    out_sizes = ints(ctx, shape[2:], "output size")
    corners = bool(args.get("align_corners"))
    factors = args.get("scale_factors") or [args.get("scales_h"), args.get("scales_w")]
    weights = []
    for d in range(2):
        basis = torch.eye(sizes[d], dtype=torch.float32).reshape(1, sizes[d], sizes[d], 1)
        factor = factors[d] if factors else None
        with torch.no_grad():
            if factor is not None:
                spread = aten.upsample_bilinear2d.vec(basis, None, corners, [float(factor), 1.0])
            else:
                spread = aten.upsample_bilinear2d.vec(basis, [out_sizes[d], 1], corners, None)
        weights.append(spread.reshape(sizes[d], out_sizes[d]).t().contiguous())  # [out, in]
    n, c = source.shape[:2]
    across = ctx.emit(
        "edgert::linear",
        [source, weights[1], None],
        dtype=FLOAT,
        shape=(n, c, sizes[0], out_sizes[1]),
        input_dtypes=[FLOAT, FLOAT, None],
    )
    turned = ctx.emit(
        "edgert::transpose",
        [across],
        {"perm": [0, 1, 3, 2]},
        dtype=FLOAT,
        shape=(n, c, out_sizes[1], sizes[0]),
    )
    down = ctx.emit(
        "edgert::linear",
        [turned, weights[0], None],
        dtype=FLOAT,
        shape=(n, c, out_sizes[1], out_sizes[0]),
        input_dtypes=[FLOAT, FLOAT, None],
    )
    return like(ctx, node, "edgert::transpose", [down], {"perm": [0, 1, 3, 2]})


# -------------------------------------------------- nearest-exact, edge pads, instance norm, topk


def _spatial_input(ctx: Lowering, args: Args, rank: int, what: str) -> Value:
    source = value(ctx, args["input"] if "input" in args else args["self"])
    if source.rank != rank:
        layout = "[N, C, L]" if rank == 3 else "[N, C, H, W]"
        raise ctx.refuse(
            f"{what} of an input without a batch dimension", f"pass inputs of shape {layout}"
        )
    return source


def _as_planes(ctx: Lowering, source: Value) -> Value:
    """[N, C, L] as [N, C, 1, L]: the 1-D forms run as the 2-D operator on one row."""
    return ctx.emit(
        "edgert::unsqueeze",
        [source],
        {"axis": 2},
        dtype=source.dtype,
        shape=(source.shape[0], source.shape[1], 1, source.shape[2]),
    )


def _nearest_scales(args: Args, spatial: int) -> list[float] | None:
    """The scale factors torch's nearest kernels were given (None: none), one per spatial
    dimension: ``scale_factors`` (the .vec overloads) or ``scales``/``scales_h``/``scales_w``."""
    if args.get("scale_factors"):
        given: list[object] = list(args["scale_factors"])
    elif spatial == 1:
        given = [args.get("scales")]
    else:
        given = [args.get("scales_h"), args.get("scales_w")]
    if all(factor is None for factor in given):
        return None
    return [0.0 if factor is None else float(factor) for factor in given]  # type: ignore[arg-type]


def _nearest(ctx: Lowering, node: torch.fx.Node, args: Args, *, exact: bool, spatial: int) -> Value:
    """upsample_nearest{1,2}d and _upsample_nearest_exact{1,2}d (by size or scale factor) as
    edgert::upsample_nearest2d with torch's index arithmetic (its ``exact`` and ``scales``)."""
    mode = "nearest-exact" if exact else "nearest"
    source = _spatial_input(ctx, args, spatial + 2, f"{mode} upsampling")
    dtype, shape = meta(node)
    size = ints(ctx, shape[2:], "output size")
    scales = _nearest_scales(args, spatial)
    planes = source
    if spatial == 1:
        planes = _as_planes(ctx, source)
        size = [1, *size]
        scales = None if scales is None else [0.0, *scales]
    attributes: dict[str, Any] = {"size": size}
    if exact:
        attributes["exact"] = 1
    if scales is not None:
        attributes["scales"] = scales
    if spatial == 2:
        return like(ctx, node, "edgert::upsample_nearest2d", [planes], attributes)
    upsampled = ctx.emit(
        "edgert::upsample_nearest2d",
        [planes],
        attributes,
        dtype=dtype,
        shape=(shape[0], shape[1], 1, shape[2]),
    )
    return like(ctx, node, "edgert::squeeze", [upsampled], {"axes": [2]})


lowers(
    aten._upsample_nearest_exact2d.vec,
    aten._upsample_nearest_exact2d.default,
    to="edgert::upsample_nearest2d",
)(lambda ctx, node, args: _nearest(ctx, node, args, exact=True, spatial=2))
lowers(
    aten._upsample_nearest_exact1d.vec,
    aten._upsample_nearest_exact1d.default,
    to="edgert::upsample_nearest2d, edgert::unsqueeze, edgert::squeeze",
)(lambda ctx, node, args: _nearest(ctx, node, args, exact=True, spatial=1))
lowers(
    aten.upsample_nearest1d.vec,
    aten.upsample_nearest1d.default,
    to="edgert::upsample_nearest2d, edgert::unsqueeze, edgert::squeeze",
)(lambda ctx, node, args: _nearest(ctx, node, args, exact=False, spatial=1))


@lowers(aten.adaptive_max_pool2d.default, to="edgert::adaptive_max_pool2d")
@lowers(
    aten.adaptive_max_pool1d.default,
    to="edgert::adaptive_max_pool2d, edgert::unsqueeze, edgert::squeeze",
)
def _adaptive_max_pool(ctx: Lowering, node: torch.fx.Node, args: Args) -> tuple[Value, Missing]:
    """Adaptive max pooling's values (any output size); its indices are not computed, so a
    model that reads them (return_indices=True) is refused where it does."""
    spatial = 1 if node.target is aten.adaptive_max_pool1d.default else 2
    source = _spatial_input(ctx, args, spatial + 2, "adaptive max pooling")
    pooled_meta = node.meta["val"][0]
    shape = shape_of_meta(pooled_meta)
    size = ints(ctx, shape[2:], "output size")
    indices = Missing("adaptive max pooling's indices (return_indices=True)")
    if spatial == 2:
        pooled = ctx.emit(
            "edgert::adaptive_max_pool2d",
            [source],
            {"output_size": size},
            dtype=pooled_meta.dtype,
            shape=shape,
        )
        return pooled, indices
    wide = ctx.emit(
        "edgert::adaptive_max_pool2d",
        [_as_planes(ctx, source)],
        {"output_size": [1, *size]},
        dtype=pooled_meta.dtype,
        shape=(shape[0], shape[1], 1, shape[2]),
    )
    pooled = ctx.emit(
        "edgert::squeeze", [wide], {"axes": [2]}, dtype=pooled_meta.dtype, shape=shape
    )
    return pooled, indices


_EDGE_PADS: dict[object, str] = {
    aten.reflection_pad1d.default: "reflect",
    aten.reflection_pad2d.default: "reflect",
    aten.reflection_pad3d.default: "reflect",
    aten.replication_pad1d.default: "replicate",
    aten.replication_pad2d.default: "replicate",
    aten.replication_pad3d.default: "replicate",
}


def _edge_pad(ctx: Lowering, node: torch.fx.Node, source: object, pads: object, mode: str) -> Value:
    """Reflect and replicate padding (F.pad's modes): edgert::pad with that ``mode``."""
    if mode not in ("reflect", "replicate"):
        raise ctx.refuse(
            f"{mode} padding has no edgert operator",
            "pad with mode 'constant', 'reflect' or 'replicate'",
        )
    amounts = ints(ctx, pads, "padding")  # type: ignore[arg-type]
    return like(ctx, node, "edgert::pad", [source], {"pads": amounts, "mode": mode})


@lowers(*_EDGE_PADS, to="edgert::pad")
def _reflection_replication_pad(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    return _edge_pad(ctx, node, args["self"], args["padding"], _EDGE_PADS[node.target])


@lowers(
    aten.instance_norm.default,
    to="edgert::layer_norm, edgert::mul, edgert::add, edgert::batch_norm",
)
def _instance_norm(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    """Instance norm: each [n, c] plane normalized over its own elements (a layer norm over
    the dimensions after the channel, without weight), then the per-channel weight and bias;
    with running statistics (track_running_stats, eval mode), the batch norm they define."""
    source = value(ctx, args["input"])
    if source.rank < 3:
        raise ctx.refuse(
            "instance norm of an input without a batch dimension",
            "pass inputs of shape [N, C, ...]",
        )
    if not args.get("use_input_stats"):
        return like(
            ctx,
            node,
            "edgert::batch_norm",
            [
                source,
                args.get("weight"),
                args.get("bias"),
                args["running_mean"],
                args["running_var"],
            ],
            {"eps": float(args["eps"])},
            input_dtypes=[FLOAT] * 5,
        )
    result = ctx.emit(
        "edgert::layer_norm",
        [source, None, None],
        {"axis": 2, "eps": float(args["eps"])},
        dtype=FLOAT,
        shape=source.shape,
        input_dtypes=[FLOAT, None, None],
    )
    return _channel_affine(ctx, args, result, -1, source.shape[1], source.shape)


def _channel_affine(
    ctx: Lowering,
    args: Args,
    result: Value,
    along: int,
    channels: int | None,
    shape: tuple[int | None, ...],
) -> Value:
    """``result`` (of ``shape``, channels at axis 1) times ``args``' per-channel weight plus
    its bias, each present one seen as [``along``, 1, ...] (``along`` -1: inferred)."""
    seen = [along] + [1] * (len(shape) - 2)
    for operand, op in ((args.get("weight"), "edgert::mul"), (args.get("bias"), "edgert::add")):
        if operand is None:
            continue
        shaped = (
            operand.reshape(seen)
            if isinstance(operand, torch.Tensor)
            else ctx.emit(
                "edgert::reshape",
                [value(ctx, operand)],
                {"shape": seen},
                dtype=FLOAT,
                shape=(channels, *seen[1:]),
            )
        )
        result = ctx.emit(
            op, [result, shaped], dtype=FLOAT, shape=shape, input_dtypes=[FLOAT, FLOAT]
        )
    return result


_SORTED_DTYPES = (torch.float32, torch.int32, torch.int64)


def _sorting_input(ctx: Lowering, args: Args, what: str) -> tuple[Value, int]:
    source = value(ctx, args["self"])
    if source.rank == 0 or source.dtype not in _SORTED_DTYPES:
        dtype = str(source.dtype).replace("torch.", "")
        raise ctx.refuse(
            f"{what} of a {source.rank}-dimensional {dtype} tensor",
            f"{what} float32, int32 or int64 tensors of one or more dimensions",
        )
    return source, axes_of(args.get("dim", -1), source.rank)[0]


@lowers(aten.topk.default, to="edgert::topk")
def _topk(ctx: Lowering, node: torch.fx.Node, args: Args) -> list[Value]:
    source, axis = _sorting_input(ctx, args, "topk")
    k = static_int(args["k"])
    if k is None:
        raise ctx.refuse("topk of a k known only at run time", "give topk a constant k")
    values, indices = node.meta["val"]
    attributes = {
        "k": k,
        "axis": axis,
        "largest": int(bool(args.get("largest", True))),
        "sorted": int(bool(args.get("sorted", True))),
    }
    outputs = [(values.dtype, shape_of_meta(values)), (indices.dtype, shape_of_meta(indices))]
    return ctx.emit_many("edgert::topk", [source], attributes, outputs)


@lowers(
    aten.sort.default,
    aten.sort.stable,
    aten.argsort.default,
    aten.argsort.stable,
    to="edgert::sort",
)
def _sort(ctx: Lowering, node: torch.fx.Node, args: Args) -> object:
    """sort and argsort: edgert's sort is stable (ties keep their index order), which is
    torch's order for stable=True and one of the orders its default sort may give."""
    source, axis = _sorting_input(ctx, args, "sort")
    attributes = {"axis": axis, "descending": int(bool(args.get("descending", False)))}
    outputs = [(source.dtype, source.shape), (torch.int64, source.shape)]
    values, indices = ctx.emit_many("edgert::sort", [source], attributes, outputs)
    if node.target in (aten.argsort.default, aten.argsort.stable):
        return indices
    return values, indices


@lowers(aten.native_group_norm.default, to="edgert::reshape, edgert::layer_norm, edgert::mul")
def _group_norm(ctx: Lowering, node: torch.fx.Node, args: Args) -> tuple[object, ...]:
    """[N, C, ...] seen as [N, G, C/G, ...] and normalized over all but the first two
    dimensions (a layer norm without weight), then the per-channel weight and bias."""
    source = value(ctx, args["input"])
    groups = int(args["group"])
    channels = ints(ctx, [source.shape[1]], "channel count")[0]
    rest = source.shape[2:]
    dynamic_rest = sum(size is None for size in rest)
    if dynamic_rest > 1:
        raise ctx.refuse(
            "group norm over more than one dimension known only at run time",
            "keep all but one of the spatial dimensions static",
        )
    grouped_shape = [1, groups, channels // groups, *(-1 if d is None else d for d in rest)]
    grouped = ctx.emit(
        "edgert::reshape",
        [source],
        {"shape": grouped_shape, "keep": [0]},
        dtype=FLOAT,
        shape=(source.shape[0], groups, channels // groups, *rest),
    )
    normalized = ctx.emit(
        "edgert::layer_norm",
        [grouped, None, None],
        {"axis": 2, "eps": float(args["eps"])},
        dtype=FLOAT,
        shape=grouped.shape,
        input_dtypes=[FLOAT, None, None],
    )
    result = ctx.emit(
        "edgert::reshape",
        [normalized],
        {"shape": [1, channels, *(-1 if d is None else d for d in rest)], "keep": [0]},
        dtype=FLOAT,
        shape=source.shape,
    )
    result = _channel_affine(ctx, args, result, channels, channels, source.shape)
    return result, Missing("group norm's mean"), Missing("group norm's deviation")


@lowers(aten.as_strided.default, aten.as_strided_copy.default, to="(nothing: the value itself)")
def _as_strided(ctx: Lowering, node: torch.fx.Node, args: Args) -> object:
    """as_strided that reads every element where a contiguous tensor of its size has it
    (timm's pooling restrides a [N, C, 1, 1] mean so): the value itself. Any other
    restriding is refused."""
    source = value(ctx, args["self"])
    sizes = list(args["size"])
    strides = list(args["stride"])
    offset = static_int(args.get("storage_offset") or 0)
    had = ctx.symbolic_sizes.get(source.index)
    same = (
        had is not None
        and len(had) == len(sizes)
        and all(same_size(a, b) for a, b in zip(had, sizes, strict=True))
    )
    expected: object = 1
    for size, stride in zip(reversed(sizes), reversed(strides), strict=True):
        if static_int(size) != 1 and not (
            static_int(stride) is not None
            and static_int(expected) is not None
            and static_int(stride) == static_int(expected)
        ):
            same = False
        expected = expected * size
    if not same or offset != 0:
        raise ctx.refuse(
            "as_strided that reads elements other than a contiguous tensor's own",
            "use view, permute and slicing instead of as_strided",
        )
    return source


@lowers(aten.flip.default, to="edgert::index_select, edgert::cumsum, edgert::sum")
def _flip(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    """Each flipped dimension read backwards by index: a constant index for a static size,
    the size minus a running count of ones for one known only at run time."""
    source = value(ctx, args["self"])
    result = source
    for axis in axes_of(args["dims"], source.rank):
        size = source.shape[axis]
        if size is not None:
            reverse: object = torch.arange(size - 1, -1, -1, dtype=torch.int64)
        else:
            extent = _meta_size(ctx, source, axis)
            ones = ctx.emit(
                "edgert::full_like",
                [ctx.extent(extent, torch.int64)],
                {"value": 1.0, "dtype": "int64"},
                dtype=torch.int64,
                shape=(None,),
            )
            counted = ctx.emit(  # 1..n
                "edgert::cumsum", [ones], {"axis": 0}, dtype=torch.int64, shape=(None,)
            )
            total = ctx.emit(  # n
                "edgert::sum", [ones], {"axes": [0], "keepdim": 1}, dtype=torch.int64, shape=(1,)
            )
            reverse = ctx.emit(
                "edgert::sub",
                [total, counted],
                dtype=torch.int64,
                shape=(None,),
                input_dtypes=[torch.int64, torch.int64],
            )
        result = ctx.emit(
            "edgert::index_select",
            [result, reverse],
            {"axis": axis},
            dtype=source.dtype,
            shape=source.shape,
        )
    return result


def _batch_norm_inputs(args: Args) -> list[object]:
    """edgert::batch_norm's inputs: the input, weight and bias (each may be absent), the
    running statistics."""
    return [args["input"], args.get("weight"), args.get("bias"), args["running_mean"],
            args["running_var"]]


def _refuse_training(ctx: Lowering, args: Args) -> None:
    if args.get("training"):
        raise ctx.refuse(
            "batch norm in training mode computes statistics of the batch",
            "call model.eval() before exporting",
        )


@lowers(aten._native_batch_norm_legit_no_training.default, to="edgert::batch_norm")
def _batch_norm(ctx: Lowering, node: torch.fx.Node, args: Args) -> tuple[object, ...]:
    out = node.meta["val"][0]
    normalized = ctx.emit(
        "edgert::batch_norm",
        _batch_norm_inputs(args),
        {"eps": float(args["eps"])},
        dtype=out.dtype,
        shape=shape_of_meta(out),
        input_dtypes=[FLOAT] * 5,
    )
    return normalized, Missing("batch norm's mean"), Missing("batch norm's deviation")


@lowers(
    aten._native_batch_norm_legit.default,
    aten._native_batch_norm_legit_functional.default,
    aten.native_batch_norm.default,
    to="edgert::batch_norm",
)
def _batch_norm_training(ctx: Lowering, node: torch.fx.Node, args: Args) -> tuple[object, ...]:
    _refuse_training(ctx, args)
    return _batch_norm(ctx, node, args)


@lowers(aten.batch_norm.default, to="edgert::batch_norm")
def _batch_norm_composite(ctx: Lowering, node: torch.fx.Node, args: Args) -> object:
    """batch_norm as torch.export records it before decomposition."""
    _refuse_training(ctx, args)
    return like(
        ctx,
        node,
        "edgert::batch_norm",
        _batch_norm_inputs(args),
        {"eps": float(args["eps"])},
        input_dtypes=[FLOAT] * 5,
    )


@lowers(aten.layer_norm.default, to="edgert::layer_norm")
def _layer_norm_composite(ctx: Lowering, node: torch.fx.Node, args: Args) -> object:
    """layer_norm as torch.export records it before decomposition."""
    dtype, shape = meta(node)
    axis = len(shape) - len(args["normalized_shape"])
    return like(
        ctx,
        node,
        "edgert::layer_norm",
        [args["input"], args.get("weight"), args.get("bias")],
        {"axis": axis, "eps": float(args["eps"])},
        input_dtypes=[FLOAT] * 3,
    )


@lowers(aten.native_layer_norm.default, to="edgert::layer_norm")
def _layer_norm(ctx: Lowering, node: torch.fx.Node, args: Args) -> tuple[object, ...]:
    out = node.meta["val"][0]
    rank = out.dim()
    axis = rank - len(args["normalized_shape"])
    normalized = ctx.emit(
        "edgert::layer_norm",
        [args["input"], args.get("weight"), args.get("bias")],
        {"axis": axis, "eps": float(args["eps"])},
        dtype=out.dtype,
        shape=shape_of_meta(out),
        input_dtypes=[FLOAT] * 3,
    )
    return normalized, Missing("layer norm's mean"), Missing("layer norm's deviation")


@lowers(aten.rms_norm.default, to="edgert::rms_norm")
def _rms_norm(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    dtype, shape = meta(node)
    attributes: dict[str, Any] = {"axis": len(shape) - len(args["normalized_shape"])}
    if args.get("eps") is not None:
        attributes["eps"] = float(args["eps"])
    return like(
        ctx,
        node,
        "edgert::rms_norm",
        [args["input"], args.get("weight")],
        attributes,
        input_dtypes=[FLOAT, FLOAT],
    )


def _softmax(op: str) -> Lower:
    def lower(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
        source = value(ctx, args["self"])
        return like(
            ctx,
            node,
            op,
            [source],
            {"axis": axes_of(args["dim"], source.rank)[0]},
            input_dtypes=[FLOAT],
        )

    return lower


lowers(aten._softmax.default, aten.softmax.int, to="edgert::softmax")(_softmax("edgert::softmax"))
lowers(aten._log_softmax.default, aten.log_softmax.int, to="edgert::log_softmax")(
    _softmax("edgert::log_softmax")
)


@lowers(aten.linear.default, to="edgert::linear")
def _linear(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    return like(
        ctx,
        node,
        "edgert::linear",
        [args["input"], args["weight"], args.get("bias")],
        input_dtypes=[FLOAT] * 3,
    )


def _product(
    ctx: Lowering, node: torch.fx.Node, left: object, right: object, bias: object = None
) -> Value:
    """left · right (+ bias): a linear when right is a constant matrix, else a matmul."""
    if (
        isinstance(right, torch.Tensor)
        and right.dim() == 2
        and (bias is None or (isinstance(bias, torch.Tensor) and bias.dim() == 1))
    ):
        unflattened = ctx.flattened.get(left.index) if isinstance(left, Value) else None
        if unflattened is not None:
            # The rows of a [B·S, K] view of [B, S, K]: the linear on [B, S, K] itself, and
            # the [B·S, N] view of its result for whatever reads it.
            dtype, shape = meta(node)
            wide = ctx.emit(
                "edgert::linear",
                [unflattened, right.t().contiguous(), bias],
                dtype=dtype,
                shape=(*unflattened.shape[:-1], shape[-1]),
                input_dtypes=[FLOAT] * 3,
            )
            had = ctx.symbolic_sizes.get(unflattened.index, (None,) * unflattened.rank)
            ctx.remember(wide, (*had[:-1], int(right.shape[1])))
            rows = like(ctx, node, "edgert::reshape", [wide], {"shape": [-1, int(right.shape[1])]})
            ctx.flattened[rows.index] = wide
            return rows
        return like(
            ctx,
            node,
            "edgert::linear",
            [left, right.t().contiguous(), bias],
            input_dtypes=[FLOAT] * 3,
        )
    dtype, shape = meta(node)
    product = ctx.emit(
        "edgert::matmul", [left, right], dtype=dtype, shape=shape, input_dtypes=[FLOAT, FLOAT]
    )
    if bias is None:
        return product
    return like(ctx, node, "edgert::add", [product, bias], input_dtypes=[FLOAT, FLOAT])


@lowers(aten.addmm.default, to="edgert::linear, edgert::matmul")
def _addmm(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    if args.get("beta", 1) != 1 or args.get("alpha", 1) != 1:
        raise ctx.refuse("addmm with beta or alpha other than 1", "scale the operands instead")
    return _product(ctx, node, args["mat1"], args["mat2"], args["self"])


@lowers(aten.mm.default, aten.bmm.default, aten.matmul.default, to="edgert::linear, edgert::matmul")
def _mm(ctx: Lowering, node: torch.fx.Node, args: Args) -> object:
    left, right = args["self"], args.get("mat2", args.get("other"))
    if isinstance(left, Merged) and isinstance(right, Merged) and left.count == right.count:
        return _merged_product(ctx, node, left, right)
    return _product(ctx, node, left, right)  # a merged view alone is made (merged_value)


def _merged_product(ctx: Lowering, node: torch.fx.Node, left: Merged, right: Merged) -> Merged:
    """A batched product of two views that merge the same leading dimensions: the product of
    their sources (broadcast over those dimensions), itself seen merged again."""
    lead_left = ctx.symbolic_sizes[left.source.index][: left.count]
    lead_right = ctx.symbolic_sizes[right.source.index][: right.count]
    if not all(same_size(a, b) for a, b in zip(lead_left, lead_right, strict=True)):
        raise ctx.refuse(MERGED_REASON, MERGED_FIX)
    dtype, shape = meta(node)
    product = ctx.emit(
        "edgert::matmul",
        [left.source, right.source],
        dtype=dtype,
        shape=(*left.source.shape[: left.count], *shape[1:]),
        input_dtypes=[FLOAT, FLOAT],
    )
    sizes = tuple(node.meta["val"].shape)
    ctx.remember(product, (*lead_left, *sizes[1:]))
    return Merged(product, left.count)


@lowers(aten.scaled_dot_product_attention.default, to="edgert::scaled_dot_product_attention")
def _attention(ctx: Lowering, node: torch.fx.Node, args: Args) -> Value:
    if float(args.get("dropout_p") or 0.0) != 0.0:
        raise ctx.refuse(
            "attention with dropout draws random numbers", "call model.eval() or pass dropout_p=0"
        )
    if args.get("enable_gqa"):
        raise ctx.refuse(
            "grouped-query attention (enable_gqa)", "repeat the key and value heads in the model"
        )
    mask = args.get("attn_mask")
    attributes: dict[str, Any] = {"is_causal": int(bool(args.get("is_causal")))}
    if args.get("scale") is not None:
        attributes["scale"] = float(args["scale"])
    mask_dtype = (
        None if mask is None else (torch.bool if ctx.dtype_of(mask) == torch.bool else FLOAT)
    )
    return like(
        ctx,
        node,
        "edgert::scaled_dot_product_attention",
        [args["query"], args["key"], args["value"], mask],
        attributes,
        input_dtypes=[FLOAT, FLOAT, FLOAT, mask_dtype],
    )


# ---------------------------------------------------------------------------- recurrent layers

# Operators that make a tensor of zeros: an initial state made by one of them is left out of
# the recurrent node, which then starts from zeros itself.
_ZEROS = {aten.zeros.default, aten.new_zeros.default, aten.zeros_like.default}
_RECURRENT = {"edgert::lstm": ("nn.LSTM", 4), "edgert::gru": ("nn.GRU", 3)}


def _zero_state(item: object, source: object) -> bool:
    """Whether an initial state is all zeros: a constant of zeros (a static batch, folded) or
    the output of zeros / full(..., 0) (a batch known only at run time)."""
    if isinstance(item, torch.Tensor):
        return not bool(item.any())
    if not isinstance(source, torch.fx.Node) or source.op != "call_function":
        return False
    if source.target in _ZEROS:
        return True
    if source.target is aten.full.default:
        fill = source.args[1] if len(source.args) > 1 else source.kwargs.get("fill_value")
        return isinstance(fill, (int, float)) and not isinstance(fill, bool) and fill == 0
    return False


def _recurrent(op: str) -> Lower:
    """aten.lstm.input / aten.gru.input (what nn.LSTM and nn.GRU record): one edgert::lstm or
    edgert::gru node for every layer and direction, the weights as its inputs (W_ih, W_hh,
    b_ih, b_hh per layer and direction, in torch's order), an initial state of zeros left out."""
    module, gates = _RECURRENT[op]

    def lower(ctx: Lowering, node: torch.fx.Node, args: Args) -> tuple[Value, ...]:
        layers = static_int(args["num_layers"])
        directions = 2 if args["bidirectional"] else 1
        has_biases = bool(args["has_biases"])
        params = list(args["params"])
        if layers is None or layers < 1:
            raise ctx.refuse(
                f"{module} with num_layers {args['num_layers']}", "use num_layers >= 1"
            )
        if args["train"] and float(args["dropout"] or 0.0) > 0.0 and layers > 1:
            raise ctx.refuse(
                f"{module} in training mode applies dropout ({args['dropout']}) between its "
                "layers, which draws random numbers",
                "call model.eval() before exporting",
            )
        per = 4 if has_biases else 2
        if len(params) == layers * directions * (per + 1):
            raise ctx.refuse(
                f"{module} with proj_size > 0 (a projection of the hidden state) has no edgert "
                "operator",
                "export it with proj_size=0, or a nn.Linear after it",
            )
        if len(params) != layers * directions * per:
            raise ctx.refuse(
                f"{module} has {len(params)} weights where {layers} layer(s), "
                f"{directions} direction(s) {'with' if has_biases else 'without'} biases take "
                f"{layers * directions * per}",
                "report the model with this message",
            )
        recurrent_weight = params[1]
        shape = tuple(recurrent_weight.shape) if hasattr(recurrent_weight, "shape") else ()
        if len(shape) != 2 or shape[0] != gates * shape[1]:
            raise ctx.refuse(
                f"{module}'s weight_hh_l0 is {list(shape)}, not [{gates}·hidden, hidden]",
                "report the model with this message",
            )
        outputs = node.meta["val"]
        if any(out.dtype != FLOAT for out in outputs):
            raise ctx.refuse(
                f"{module} computes in {str(outputs[0].dtype).replace('torch.', '')}; its edgert "
                "operator runs float32",
                "export it in float32: call model.float() and pass float32 inputs",
            )
        if op == "edgert::lstm":
            states, sources = list(args["hx"]), list(node.args[1])  # type: ignore[arg-type]
        else:
            states, sources = [args["hx"]], [node.args[1]]
        initial = [
            None if _zero_state(state, source) else state
            for state, source in zip(states, sources, strict=True)
        ]
        weights: list[object] = []
        for index in range(layers * directions):
            group = params[index * per : (index + 1) * per]
            weights.extend(group if has_biases else [*group, None, None])
        inputs = [args["input"], *initial, *weights]
        attributes = {
            "hidden_size": int(shape[1]),
            "num_layers": layers,
            "bidirectional": int(directions == 2),
            "batch_first": int(bool(args["batch_first"])),
            "has_biases": int(has_biases),
        }
        made = ctx.emit_many(
            op,
            inputs,
            attributes,
            [(FLOAT, shape_of_meta(out)) for out in outputs],
        )
        return tuple(made)

    return lower


lowers(aten.lstm.input, to="edgert::lstm")(_recurrent("edgert::lstm"))
lowers(aten.gru.input, to="edgert::gru")(_recurrent("edgert::gru"))


# ---------------------------------------------------------------------------- sizes, tuples


def _size(ctx: Lowering, node: torch.fx.Node, args: Args) -> object:
    return node.meta["val"]


LOWERINGS[aten.sym_size.int] = _size
for _function in (
    operator.mul,
    operator.add,
    operator.sub,
    operator.floordiv,
    operator.mod,
    operator.neg,
    operator.truediv,
):
    LOWERINGS[_function] = _size

# Assertions torch.export adds about sizes and metadata: they compute nothing.
CHECKS = {
    aten._assert_tensor_metadata.default,
    aten._assert_scalar.default,
    aten.sym_constrain_range_for_size.default,
    aten._assert_async.msg,
    aten.sym_constrain_range.default,
}
# Never evaluated at export time even when their operands are constants.
NOT_FOLDED = {
    aten.empty.memory_format,
    aten.empty_like.default,
    aten.rand.default,
    aten.randn.default,
    aten.randint.low,
    aten.randint.default,
    aten.bernoulli.default,
    aten.normal.Tensor_float,
    aten.uniform.default,
    aten.native_dropout.default,
    aten.dropout.default,
    aten.empty_strided.default,
    aten.randperm.default,
}


def supported_operators() -> list[tuple[str, str]]:
    """(ATen operator, the edgert operators it becomes), sorted, for the docs."""
    rows = []
    for target, edgert in TARGETS.items():
        name = str(target)
        rows.append((name if name.startswith("aten.") else f"aten.{name}", edgert))
    return sorted(set(rows))
