"""The state of one lowering: what each node of the exported graph became (a run-time value
of the program, a constant, a Python scalar, a symbolic size, or a tuple of those), and the
helpers operator lowerings use to emit edgert nodes.

Items (what an FX node maps to):
- ``Value``: a run-time value of the program being written (its index, torch dtype, shape
  with ``None`` for a dimension known only at run time);
- ``torch.Tensor``: a constant (a parameter, a buffer, or a folded subgraph);
- ``int``/``float``/``bool``/``None``/``str``/``torch.dtype``...: a Python value;
- ``torch.SymInt``: a size known only at run time (symbolic);
- ``Missing``: an output the front end does not compute (e.g. max_pool2d's indices);
- tuples and lists of items.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from edgert._errors import ExportError, UnsupportedOperatorError
from edgert.program_format import ProgramBuilder

# torch dtype -> edgert dtype name.
DTYPES: dict[torch.dtype, str] = {
    torch.float32: "float32",
    torch.int8: "int8",
    torch.uint8: "uint8",
    torch.int32: "int32",
    torch.int64: "int64",
    torch.bool: "bool",
}
FLOAT = torch.float32
MERGED_REASON = (
    "it reads a view that merges dimensions known only at run time into one beside another "
    "such dimension, which only a batched product or a view back can read"
)
MERGED_FIX = "keep one of those dimensions static in dynamic_shapes"
INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class Value:
    """A run-time value of the program: its index, dtype and shape (None: dynamic)."""

    index: int
    dtype: torch.dtype
    shape: tuple[int | None, ...]

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass(frozen=True)
class Missing:
    """An output of an ATen operator that the program does not compute, and why."""

    what: str


@dataclass(frozen=True)
class Merged:
    """A view that merges the leading ``count`` dimensions of ``source`` into one when sizes
    known only at run time are both among them and after them ([B, H, S, E] to [B·H, S, E]):
    no reshape can write it, so it is not made. A batched product of two such views is
    computed on their sources, and a view back to the source's sizes is the source; anything
    else reading it is refused."""

    source: Value
    count: int


def is_symbolic(item: object) -> bool:
    """Whether ``item`` is a size known only at run time."""
    return isinstance(item, torch.SymInt) and not _concrete(item)


def _concrete(item: torch.SymInt) -> bool:
    try:
        return bool(item.node.is_constant()) or not item.node.expr.free_symbols
    except AttributeError:  # pragma: no cover - older SymNode APIs
        return False


def static_int(item: object) -> int | None:
    """``item`` as a plain int, or None when it is known only at run time."""
    if isinstance(item, bool):
        return int(item)
    if isinstance(item, int):
        return item
    if isinstance(item, torch.SymInt) and _concrete(item):
        return int(item)
    return None


def same_size(a: object, b: object) -> bool:
    """Whether two sizes are the same, symbolic ones included (the same expression)."""
    if static_int(a) is not None or static_int(b) is not None:
        return static_int(a) == static_int(b)
    if isinstance(a, torch.SymInt) and isinstance(b, torch.SymInt):
        return bool(a.node.expr == b.node.expr)
    return False


def shape_of_meta(value: object) -> tuple[int | None, ...]:
    """A fake tensor's shape with None for each dimension known only at run time."""
    return tuple(static_int(d) for d in value.shape)  # type: ignore[attr-defined]


def module_of(node: torch.fx.Node) -> tuple[str, str]:
    """(module path, module type) of the innermost module a node came from."""
    stack = node.meta.get("nn_module_stack") or {}
    for path, kind in reversed(list(stack.values())):
        if not str(path).startswith("_empty_nn_module_stack"):
            name = kind if isinstance(kind, str) else getattr(kind, "__qualname__", str(kind))
            return str(path), name.rsplit(".", 1)[-1]
    return "", ""


def source_line(node: torch.fx.Node) -> str:
    """``file:line`` of the model's own code that made the node, or ""."""
    trace = node.meta.get("stack_trace") or ""
    frames = re.findall(r'File "([^"]+)", line (\d+)', trace)
    for path, line in reversed(frames):
        if "/torch/" not in path.replace("\\", "/"):
            return f"{path.replace(chr(92), '/').rsplit('/', 1)[-1]}:{line}"
    return ""


def where_from(node: torch.fx.Node) -> str:
    """A short description of where a node came from, for error messages."""
    path, kind = module_of(node)
    place = (
        f"module '{path}' ({kind})"
        if path
        else (f"the top-level module ({kind})" if kind else "the top-level module")
    )
    line = source_line(node)
    return f"{place}{', ' + line if line else ''}"


def operator_name(node: torch.fx.Node) -> str:
    target = node.target
    name = getattr(target, "_name", None) or getattr(target, "__name__", None) or str(target)
    overload = getattr(target, "_overloadname", None)
    if isinstance(name, str) and name.startswith("aten::"):
        name = "aten." + name[len("aten::") :]
    if overload and not str(name).endswith("." + overload):
        name = f"{name}.{overload}"
    return str(name)


def refuse(node: torch.fx.Node, reason: str, fix: str) -> ExportError:
    """The one-line error for a node the front end cannot lower exactly."""
    path, _ = module_of(node)
    return UnsupportedOperatorError(
        f"cannot export {operator_name(node)} from {where_from(node)}: {reason}; {fix}",
        operator=operator_name(node),
        module=path,
    )


class Lowering:
    """Builds one program from one exported graph."""

    def __init__(self) -> None:
        self.builder = ProgramBuilder()
        self._constants: dict[tuple[object, ...], int] = {}
        # Constants are keyed by their data pointer: kept alive so that no address repeats.
        self._kept: list[torch.Tensor] = []
        self.node: torch.fx.Node | None = None  # the node being lowered, for errors
        # Value index -> its sizes as torch.export traced them (symbolic ones included).
        self.symbolic_sizes: dict[int, tuple[object, ...]] = {}
        # A size known only at run time (its expression) -> the first value that has it,
        # and where: what a tensor of that size is made from (``extent``).
        self._size_sources: dict[object, tuple[Value, int]] = {}
        self._extents: dict[tuple[object, torch.dtype], Value] = {}
        # A [B·S, K] value (its index) made by merging the leading dimensions of a value with
        # several run-time sizes -> that value: a reshape back to [B, S, K] returns it.
        self.flattened: dict[int, Value] = {}

    def merged_value(self, merged: Merged) -> Value:
        """``merged`` made: a reshape of its source whose merged dimension is the one
        run-time size among the merged ones times the static others and whose run-time sizes
        after it are the source's (the reshape's ``scaled`` dimensions). Refused when more
        than one merged size is known only at run time (no reshape writes their product)."""
        had = self.symbolic_sizes.get(merged.source.index)
        lead = [] if had is None else list(had[: merged.count])
        dynamic = [axis for axis, size in enumerate(lead) if static_int(size) is None]
        if had is None or len(dynamic) != 1:
            raise self.refuse(MERGED_REASON, MERGED_FIX)
        factor = 1
        for axis, size in enumerate(lead):
            if axis != dynamic[0]:
                factor *= static_int(size)  # type: ignore[operator]  # static: checked above
        rest = had[merged.count :]
        shape: list[int] = [1]
        scaled = [0, dynamic[0], factor]
        for axis, size in enumerate(rest, start=1):
            fixed = static_int(size)
            shape.append(1 if fixed is None else fixed)
            if fixed is None:
                scaled += [axis, merged.count + axis - 1, 1]
        made = self.emit(
            "edgert::reshape",
            [merged.source],
            {"shape": shape, "scaled": scaled},
            dtype=merged.source.dtype,
            shape=(None, *(static_int(size) for size in rest)),
        )
        self.remember(made, (lead[dynamic[0]] * factor, *rest))  # type: ignore[operator]
        return made

    def remember(self, item: Value, sizes: tuple[object, ...]) -> None:
        """Records the sizes torch.export traced for a value (symbolic ones included)."""
        self.symbolic_sizes.setdefault(item.index, sizes)
        for axis, size in enumerate(sizes):
            if is_symbolic(size):
                self._size_sources.setdefault(size.node.expr, (item, axis))  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ errors

    def refuse(
        self,
        reason: str,
        fix: str = "rewrite that part of the model with the "
        "operations docs/bring-your-model.md lists",
    ) -> ExportError:
        assert self.node is not None
        return refuse(self.node, reason, fix)

    # ------------------------------------------------------------------ dtypes

    def edgert_dtype(self, dtype: torch.dtype) -> str:
        name = DTYPES.get(dtype)
        if name is None:
            fix = (
                "export it in float32: call model.float() and pass float32 inputs"
                if dtype.is_floating_point
                else "use int32, int64 or bool instead"
            )
            raise self.refuse(
                f"it computes in {str(dtype).replace('torch.', '')}, which edgert does not run", fix
            )
        return name

    def dtype_of(self, item: object) -> torch.dtype:
        if isinstance(item, Value):
            return item.dtype
        if isinstance(item, torch.Tensor):
            return item.dtype
        if isinstance(item, bool):
            return torch.bool
        if isinstance(item, (int, torch.SymInt)):
            return torch.int64
        if isinstance(item, float):
            return torch.float32
        raise self.refuse(f"an operand is {type(item).__name__}, not a tensor or a number")

    def result_type(self, first: object, second: object) -> torch.dtype:
        """torch's type promotion of two operands (values, constants or scalars)."""
        return torch.result_type(
            self._promotion_operand(first),
            self._promotion_operand(second),
        )

    def _promotion_operand(self, item: object) -> torch.Tensor | bool | int | float:
        # A stand-in with the item's dtype and rank: promotion depends on both.
        if isinstance(item, Value):
            return torch.empty([1] * item.rank, dtype=item.dtype)
        if isinstance(item, torch.SymInt):
            return 1
        if isinstance(item, (torch.Tensor, bool, int, float)):
            return item
        raise self.refuse(f"an operand is {type(item).__name__}, not a tensor or a number")

    # ------------------------------------------------------------------ values

    def constant(self, tensor: torch.Tensor, dtype: torch.dtype | None = None) -> int:
        """A program constant holding ``tensor`` (converted to ``dtype``), made once."""
        if dtype is not None and tensor.dtype != dtype:
            tensor = tensor.to(dtype)
        self.edgert_dtype(tensor.dtype)
        tensor = tensor.detach().contiguous()
        key = (tensor.data_ptr(), tensor.dtype, tuple(tensor.shape), tensor.numel())
        found = self._constants.get(key)
        if found is None:
            array = (
                tensor.numpy() if tensor.dtype != torch.bool else tensor.numpy().astype(np.bool_)
            )
            found = self.builder.constant(np.array(array, copy=True))
            self._constants[key] = found
            self._kept.append(tensor)
        return found

    def index(self, item: object, dtype: torch.dtype | None = None) -> int:
        """The program value of a tensor item (a run-time value, a constant or a scalar),
        cast to ``dtype`` when given."""
        if isinstance(item, Value):
            if dtype is not None and item.dtype != dtype:
                return self.cast(item, dtype).index
            return item.index
        if isinstance(item, torch.Tensor):
            return self.constant(item, dtype)
        if isinstance(item, (bool, int, float)) and not isinstance(item, torch.SymInt):
            target = dtype or self.dtype_of(item)
            return self.constant(torch.tensor(item, dtype=target))
        if is_symbolic(item):
            raise self.refuse(
                "it uses a size known only at run time as a tensor",
                "compute that value outside the model or make the dimension static",
            )
        if isinstance(item, torch.SymInt):
            return self.index(int(item), dtype)
        if isinstance(item, Merged):
            return self.merged_value(item).index
        raise self.refuse(f"an operand is {type(item).__name__}, not a tensor")

    def emit(
        self,
        op: str,
        inputs: Sequence[object | None],
        attributes: dict[str, Any] | None = None,
        *,
        dtype: torch.dtype,
        shape: Sequence[int | None],
        input_dtypes: Sequence[torch.dtype | None] | None = None,
    ) -> Value:
        """Adds one edgert node with one output of ``dtype`` and ``shape``."""
        wired = self._wire(inputs, input_dtypes)
        index = self.builder.op(op, wired, attributes or {}, dtype=self.edgert_dtype(dtype))
        assert isinstance(index, int)
        return Value(index, dtype, tuple(shape))

    def emit_many(
        self,
        op: str,
        inputs: Sequence[object | None],
        attributes: dict[str, Any],
        outputs: Sequence[tuple[torch.dtype, Sequence[int | None]]],
    ) -> list[Value]:
        """Adds one edgert node with several outputs."""
        wired = self._wire(inputs, None)
        names = [self.edgert_dtype(dtype) for dtype, _ in outputs]
        made = self.builder.op(op, wired, attributes, outputs=len(outputs), dtype=names[0])
        indices = made if isinstance(made, list) else [made]
        for index, name in zip(indices, names, strict=True):
            self.builder.program.values[index].dtype = name
        pairs = zip(indices, outputs, strict=True)
        return [Value(i, dtype, tuple(shape)) for i, (dtype, shape) in pairs]

    def _wire(
        self, inputs: Sequence[object | None], dtypes: Sequence[torch.dtype | None] | None
    ) -> list[int | None]:
        wired: list[int | None] = []
        for position, item in enumerate(inputs):
            wanted = dtypes[position] if dtypes is not None else None
            wired.append(None if item is None else self.index(item, wanted))
        return wired

    def extent(self, size: object, dtype: torch.dtype) -> Value:
        """A rank-1 tensor of ``size`` zeros (false for bool) of ``dtype``, where ``size`` is
        known only at run time: the dimension of the first value that has that size, the
        other dimensions sliced to one element. Tensors of run-time sizes (``full``, an
        ``expand`` to the batch) are broadcast against it."""
        expression = size.node.expr  # type: ignore[attr-defined]
        made = self._extents.get((expression, dtype))
        if made is not None:
            return made
        found = self._size_sources.get(expression)
        if found is None:
            raise self.refuse(
                f"it makes a tensor of a size known only at run time ({expression}) that no "
                "input or earlier value of the program has",
                "derive that size from an input's dimension, or keep it static",
            )
        current, axis = found
        for other in range(current.rank):
            if other != axis and current.shape[other] != 1:
                shape = list(current.shape)
                shape[other] = 1
                current = self.emit(
                    "edgert::slice",
                    [current],
                    {"axis": other, "start": 0, "end": 1, "step": 1},
                    dtype=current.dtype,
                    shape=shape,
                )
        if current.rank != 1:
            current = self.emit(
                "edgert::reshape", [current], {"shape": [-1]}, dtype=current.dtype, shape=(None,)
            )
        made = self.emit(
            "edgert::full_like",
            [current],
            {"value": 0.0, "dtype": self.edgert_dtype(dtype)},
            dtype=dtype,
            shape=(None,),
        )
        self._extents[(expression, dtype)] = made
        return made

    def broadcast_to(self, item: object, sizes: Sequence[object]) -> Value:
        """``item`` broadcast to ``sizes``, some of them known only at run time: each such
        size where ``item`` has none (or 1) comes from an ``extent`` through ``where``,
        which broadcasts its operands (so any dtype)."""
        source = item if isinstance(item, Value) else None
        if source is None:
            source = Value(self.index(item), self.dtype_of(item), tuple(_shape_of(item)))
        rank = len(sizes)
        shape: list[int | None] = [None] * rank
        offset = rank - source.rank
        for position, size in enumerate(sizes):
            inner = position - offset
            fixed = static_int(size)
            if inner >= 0 and source.shape[inner] != 1:
                shape[position] = source.shape[inner]
            else:
                shape[position] = fixed if fixed is not None else 1
        result = source
        current = [1] * offset + list(source.shape)
        for position, size in enumerate(sizes):
            fixed = static_int(size)
            if fixed is not None or current[position] != 1:
                continue
            extent = self.extent(size, torch.bool)
            layout = [1] * rank
            layout[position] = -1
            condition = self.emit(
                "edgert::reshape",
                [extent],
                {"shape": layout},
                dtype=torch.bool,
                shape=[None if d == position else 1 for d in range(rank)],
            )
            current[position] = None
            result = self.emit(
                "edgert::where",
                [condition, result, result],
                dtype=source.dtype,
                shape=[None if current[d] is None else shape[d] for d in range(rank)],
            )
        if any(
            static_int(size) is not None and result_size != static_int(size)
            for size, result_size in zip(sizes, _padded(result.shape, rank), strict=True)
        ):
            target = [static_int(size) if static_int(size) is not None else -1 for size in sizes]
            result = self.emit(
                "edgert::expand",
                [result],
                {"shape": target},
                dtype=source.dtype,
                shape=[static_int(size) for size in sizes],
            )
        return result

    def cast(self, item: object, dtype: torch.dtype) -> Value:
        """``item`` converted to ``dtype`` (a run-time cast node)."""
        if isinstance(item, Value):
            if item.dtype == dtype:
                return item
            return self.emit(
                "edgert::cast",
                [item],
                {"dtype": self.edgert_dtype(dtype)},
                dtype=dtype,
                shape=item.shape,
            )
        raise self.refuse("a cast of a non-tensor")  # constants are converted in index()


def _shape_of(item: object) -> tuple[int, ...]:
    return tuple(item.shape) if isinstance(item, torch.Tensor) else ()


def _padded(shape: Sequence[int | None], rank: int) -> list[int | None]:
    return [1] * (rank - len(shape)) + list(shape)


def flatten_items(item: object) -> Iterator[object]:
    """Every leaf of nested tuples/lists of items."""
    if isinstance(item, (tuple, list)):
        for element in item:
            yield from flatten_items(element)
    else:
        yield item


def contains_runtime(item: object) -> bool:
    """Whether an argument holds a run-time value or a symbolic size (cannot be folded)."""
    return any(
        isinstance(leaf, (Value, Missing, Merged)) or is_symbolic(leaf)
        for leaf in flatten_items(item)
    )
