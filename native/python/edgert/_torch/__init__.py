"""The PyTorch front end: ``edgert.export.from_torch`` (docs/bring-your-model.md).

A model is exported with ``torch.export`` (eval mode, no gradients), decomposed to ATen's
core operator set except for the operators edgert runs as one node (linear, attention,
silu, hardswish, hardsigmoid, rms_norm, lstm, gru; nearest-exact upsampling, instance norm,
reflect and replicate padding), and lowered node by node (operators.py):
subgraphs whose operands are all constants are evaluated by torch at export time, no-op
views, clones and dropout disappear, batch norm is folded into the convolution before it
and a following relu into the convolution. The program is then run on the example inputs
and compared with eager PyTorch: an export that would compute something else is refused.
Only this package imports torch, and only when it is called."""

from __future__ import annotations

import contextlib
import inspect
import operator
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind
from torch.utils import _pytree

from edgert._errors import ExportError
from edgert._passes import fold_batch_norm, fuse_activations, prune
from edgert._torch.context import (
    DTYPES,
    Lowering,
    Missing,
    Value,
    contains_runtime,
    is_symbolic,
    refuse,
    shape_of_meta,
)
from edgert._torch.operators import CHECKS, LOWERINGS, NOT_FOLDED, supported_operators
from edgert.program_format import ProgramDef, write_program

__all__ = ["from_torch", "supported_operators", "PRESERVED"]

aten = torch.ops.aten
# Kept whole by the decomposition: edgert has one operator for each.
PRESERVED = (
    aten.linear.default,
    aten.scaled_dot_product_attention.default,
    # Lowered whole (to a kernel) rather than to the index arithmetic torch decomposes them to.
    aten._upsample_nearest_exact2d.vec,
    aten._upsample_nearest_exact1d.vec,
    aten.instance_norm.default,
    aten.reflection_pad1d.default,
    aten.reflection_pad2d.default,
    aten.reflection_pad3d.default,
    aten.replication_pad1d.default,
    aten.replication_pad2d.default,
    aten.replication_pad3d.default,
    aten.silu.default,
    aten.hardswish.default,
    aten.hardsigmoid.default,
    aten.rms_norm.default,
    aten.lstm.input,
    aten.gru.input,
)


def from_torch(
    model: torch.nn.Module | ExportedProgram,
    args: Sequence[Any] | None = None,
    *,
    dynamic_shapes: Any = None,
    check: bool = True,
) -> bytes:
    """See ``edgert.export.from_torch``."""
    with _quiet_torch():
        exported, example = _export(model, args, dynamic_shapes)
        if not isinstance(model, ExportedProgram) and _direct(exported):
            # Every operator of the graph torch.export made has a lowering: no decomposition
            # (which re-traces the whole graph, slowly with dynamic sizes). Should that
            # program fail, the decomposed graph is lowered instead.
            try:
                data = _program(exported)
                if check and example is not None:
                    _check_against_eager(data, model, exported, example)
                return data
            except ExportError:
                pass
        table = torch.export.default_decompositions()
        for kept in PRESERVED:
            table.pop(kept, None)  # type: ignore[no-untyped-call]  # torch leaves it untyped
        try:
            decomposed = exported.run_decompositions(table)
        except Exception as error:  # torch's own failure to decompose, with its message
            raise ExportError(
                f"torch could not decompose the exported program: {_first_line(error)}"
            ) from None
    data = _program(decomposed)
    if check and example is not None:
        _check_against_eager(data, model, exported, example)
    return data


def _program(exported: ExportedProgram) -> bytes:
    lowered = _lower(exported)
    try:
        return write_program(prune(fuse_activations(fold_batch_norm(lowered))))
    except ExportError:
        raise
    except Exception as error:  # a pass met a program it did not expect
        raise ExportError(
            f"edgert could not finish the lowered program ({type(error).__name__}: "
            f"{_first_line(error)}) (fix: report the model with this message)"
        ) from None


def _functional(target: object) -> object:
    """The functional overload of an in-place ATen overload (relu_ -> relu), or None."""
    schema = getattr(target, "_schema", None)
    name = getattr(schema, "name", "")
    if not name.startswith("aten::") or not name.endswith("_") or name.endswith("__"):
        return None
    packet = getattr(aten, name[len("aten::") : -1], None)
    overload = getattr(target, "_overloadname", "default")
    return getattr(packet, overload, None) if packet is not None else None


def _direct(exported: ExportedProgram) -> bool:
    """Whether every node of the graph torch.export made has a lowering as it is: then it is
    lowered without torch's decomposition. An in-place operator counts as its functional
    form when nothing else reads the tensor it writes (then the two compute the same), and
    the graph (the front end's own export) is rewritten to that form."""
    rewrites = []
    for node in exported.graph.nodes:
        if node.op != "call_function":
            continue
        target = node.target
        if target in CHECKS or target is operator.getitem or target in LOWERINGS:
            continue
        functional = _functional(target)
        written = node.args[0] if node.args else None
        if (
            functional is None
            or functional not in LOWERINGS
            or not isinstance(written, torch.fx.Node)
            or written.op == "placeholder"
            or len(written.users) != 1
        ):
            return False
        rewrites.append((node, functional))
    for node, functional in rewrites:
        node.target = functional
    return True


@contextlib.contextmanager
def _quiet_torch() -> Iterator[None]:
    """Hides the deprecation warning torch 2.13's own export code raises (about its
    internal pytree LeafSpec): it concerns torch, not the model or the caller."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*LeafSpec.*", category=FutureWarning)
        yield


def _first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    text = lines[0] if lines else type(error).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def _export(
    model: object, args: Sequence[Any] | None, dynamic_shapes: Any
) -> tuple[ExportedProgram, tuple[tuple[Any, ...], dict[str, Any]] | None]:
    if isinstance(model, ExportedProgram):
        example = getattr(model, "example_inputs", None)
        if args is not None:
            example = (tuple(args), {})
        return model, example
    if not isinstance(model, torch.nn.Module):
        raise TypeError(
            f"from_torch takes a torch.nn.Module or a torch.export.ExportedProgram, "
            f"not {type(model).__name__}"
        )
    if args is None:
        raise TypeError("from_torch(module, args): pass example inputs, e.g. (torch.randn(1, 16),)")
    arguments = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    model.eval()
    traced, widened = _widened(model, arguments, dynamic_shapes)
    try:
        with torch.no_grad():
            exported = torch.export.export(model, traced, dynamic_shapes=dynamic_shapes)
    except Exception as error:  # torch.export's refusal (data-dependent control flow, ...)
        raise _capture_error(model, arguments, widened, error) from None
    return exported, (arguments, {})


def _capture_error(
    model: torch.nn.Module, arguments: tuple[Any, ...], widened: list[str], error: Exception
) -> ExportError:
    """The one-line refusal for a model torch.export could not capture. When the example was
    widened, the model is traced once more as the caller gave it, all static: if that fails
    too, the cause is not the dynamic dimension and torch's own message for it is given."""
    text = _first_line(error)
    fixed = "Constraints violated" in text
    if widened:
        try:
            with torch.no_grad():
                torch.export.export(model, arguments)
        except Exception as static_error:
            text, fixed = _first_line(static_error), False
        else:
            fixed = True
    if not fixed:
        return ExportError(
            f"torch.export could not capture the model: {text} "
            "(fix: make the model traceable by torch.export; see its docs on "
            "data-dependent control flow)"
        )
    traced_from = (
        f"; traced from the example repeated to size 2 along {', '.join(widened)}, as torch "
        "specialises a dimension of size 1"
        if widened
        else ""
    )
    return ExportError(
        f"torch.export could not capture the model with the dynamic dimensions asked for: "
        f"{text} (the model computes with a fixed size for a dimension dynamic_shapes names"
        f"{traced_from}; fix: leave that dimension out of dynamic_shapes, or remove what fixes "
        'its size, e.g. a reshape to a literal batch size; TORCH_LOGS="+dynamic" says where)'
    )


def _is_dynamic(spec: object) -> bool:
    """Whether a dynamic_shapes entry for one dimension asks for a run-time size."""
    from torch.export.dynamic_shapes import _DimHint, _StaticDim

    if isinstance(spec, _StaticDim):
        return False
    if isinstance(spec, torch.export.Dim):
        return True
    return isinstance(spec, _DimHint) and spec == torch.export.Dim.DYNAMIC


def _widened(
    model: torch.nn.Module, arguments: tuple[Any, ...], dynamic_shapes: Any
) -> tuple[tuple[Any, ...], list[str]]:
    """The example to trace: torch.export specialises every dimension of size 1, so a
    dimension that ``dynamic_shapes`` names and the example gives size 1 (a batch-1 example
    with a dynamic batch) is widened to 2 by repeating the example along it. The check
    against eager still runs on the caller's own example. Returns the arguments to trace
    and the dimensions widened (``"input 0 dim 0 (batch)"``)."""
    if dynamic_shapes is None:
        return arguments, []
    specs: list[Any]
    if isinstance(dynamic_shapes, dict):
        try:
            bound = inspect.signature(model.forward).bind(*arguments)
        except (TypeError, ValueError):
            return arguments, []
        names = list(bound.arguments)
        specs = [dynamic_shapes.get(name) for name in names[: len(arguments)]]
    elif isinstance(dynamic_shapes, (tuple, list)):
        specs = list(dynamic_shapes)
    else:
        return arguments, []
    traced = list(arguments)
    widened: list[str] = []
    for position, (argument, spec) in enumerate(zip(arguments, specs, strict=False)):
        if not isinstance(argument, torch.Tensor) or spec is None:
            continue
        per_dim = (
            dict(spec)
            if isinstance(spec, dict)
            else dict(enumerate(spec))
            if isinstance(spec, (tuple, list))
            else {}
        )
        for dim, named in per_dim.items():
            if not isinstance(dim, int) or not -argument.dim() <= dim < argument.dim():
                continue
            if argument.shape[dim] == 1 and _is_dynamic(named):
                traced[position] = torch.cat([traced[position]] * 2, dim=dim)
                label = getattr(named, "__name__", None) or str(named)
                widened.append(f"input {position} dim {dim % argument.dim()} ({label})")
    return tuple(traced), widened


# ---------------------------------------------------------------------------- lowering


def _lower(exported: ExportedProgram) -> ProgramDef:
    context = Lowering()
    environment: dict[torch.fx.Node, object] = {}
    graph = exported.graph
    placeholders = [node for node in graph.nodes if node.op == "placeholder"]
    for node, spec in zip(placeholders, exported.graph_signature.input_specs, strict=True):
        environment[node] = _guarded(node, _placeholder, context, exported, node, spec)
    for node in graph.nodes:
        if node.op == "call_function":
            environment[node] = _guarded(node, _call, context, environment, node)
            _remember_sizes(context, node, environment[node])
        elif node.op == "output":
            _guarded(node, _outputs, context, exported, node, environment)
        elif node.op != "placeholder":
            raise refuse(
                node,
                f"the graph holds a {node.op} node",
                "export a model without submodule calls that torch.export cannot inline",
            )
    return context.builder.program


_LIFTED = {
    InputKind.PARAMETER: "parameter",
    InputKind.BUFFER: "buffer",
    InputKind.CONSTANT_TENSOR: "tensor constant",
}


def _guarded(node: torch.fx.Node, lower: Any, *args: Any) -> Any:
    """``lower(*args)`` with any failure that is not already an ExportError (a KeyError,
    TypeError... from an operand the lowering did not expect) refused in one line naming
    the node being lowered and its operator."""
    try:
        return lower(*args)
    except ExportError:
        raise
    except Exception as error:
        raise refuse(
            node,
            f"the front end failed on it ({type(error).__name__}: {_first_line(error)})",
            "report the model with this message; export the part before it meanwhile",
        ) from None


def _placeholder(
    context: Lowering, exported: ExportedProgram, node: torch.fx.Node, spec: Any
) -> object:
    if spec.kind in _LIFTED:
        return _lifted(exported, node, spec)
    if spec.kind != InputKind.USER_INPUT:
        what = {
            InputKind.CUSTOM_OBJ: "a custom (TorchScript) object",
            InputKind.TOKEN: "an effect token (an operator with side effects)",
        }.get(spec.kind, f"a {spec.kind.name.lower()} input")
        raise ExportError(
            f"cannot export the model's input '{node.name}' ({spec.target or 'no target'}): "
            f"it is {what}, and edgert programs take tensors only (fix: keep it out of "
            "the exported module, or hold it as a tensor attribute)"
        )
    fake = node.meta.get("val")
    if not isinstance(fake, torch.Tensor):
        return fake  # a constant argument torch.export specialized
    if fake.dtype not in DTYPES:
        fix = (
            "pass float32 inputs (x.float())"
            if fake.dtype.is_floating_point
            else "pass int32, int64 or bool inputs"
        )
        raise ExportError(
            f"input '{node.name}' is {str(fake.dtype).replace('torch.', '')}, "
            f"which edgert does not run (fix: {fix})"
        )
    shape = shape_of_meta(fake)
    index = context.builder.input(DTYPES[fake.dtype], [-1 if d is None else d for d in shape])
    made = Value(index, fake.dtype, shape)
    context.remember(made, tuple(fake.shape))
    return made


def _lifted(exported: ExportedProgram, node: torch.fx.Node, spec: Any) -> torch.Tensor:
    """A tensor torch.export lifted out of the module: a parameter or persistent buffer
    (``state_dict``), or a non-persistent buffer or tensor constant (``constants``)."""
    kind = _LIFTED[spec.kind]
    if spec.kind == InputKind.BUFFER and getattr(spec, "persistent", True) is False:
        kind = "non-persistent buffer"
    found: object = None
    for table in (exported.state_dict, exported.constants):
        if spec.target in table:
            found = table[spec.target]
            break
    if found is None:
        raise ExportError(
            f"cannot export the model's {kind} '{spec.target}' ({node.name}): torch.export "
            "lifted it, but the exported program holds no value for it (fix: register it "
            "as a parameter or buffer of the module)"
        )
    if not isinstance(found, torch.Tensor):
        raise ExportError(
            f"cannot export the model's {kind} '{spec.target}' ({node.name}): it is a "
            f"{type(found).__name__}, not a tensor (fix: hold it as a tensor)"
        )
    return found.detach()


def _remember_sizes(context: Lowering, node: torch.fx.Node, item: object) -> None:
    fake = node.meta.get("val")
    if isinstance(item, Value) and isinstance(fake, torch.Tensor):
        context.remember(item, tuple(fake.shape))


def _items(item: object, environment: dict[torch.fx.Node, object]) -> Any:
    if isinstance(item, torch.fx.Node):
        return environment[item]
    if isinstance(item, (list, tuple)):
        return type(item)(_items(element, environment) for element in item)
    if isinstance(item, dict):
        return {key: _items(element, environment) for key, element in item.items()}
    return item


def _call(
    context: Lowering, environment: dict[torch.fx.Node, object], node: torch.fx.Node
) -> object:
    context.node = node
    target = node.target
    if target in CHECKS:
        return None
    args = _items(node.args, environment)
    kwargs = _items(node.kwargs, environment)
    if target is operator.getitem:
        return args[0][args[1]]
    if not contains_runtime((args, kwargs)) and target not in NOT_FOLDED:
        return _fold(node, args, kwargs)
    lower = LOWERINGS.get(target)
    if lower is None:
        raise refuse(
            node,
            "edgert has no operator for it",
            "rewrite that part of the model with "
            "the operations docs/bring-your-model.md lists, or keep it out of the "
            "exported module",
        )
    return lower(context, node, _named(target, args, kwargs))


def _fold(node: torch.fx.Node, args: Any, kwargs: Any) -> object:
    """A node whose operands are all constants, evaluated by torch now."""
    try:
        with torch.no_grad():
            result = node.target(*args, **kwargs)  # type: ignore[operator]
    except Exception as error:
        raise refuse(
            node,
            f"evaluating it on its constant operands failed ({_first_line(error)})",
            "check the model runs eagerly on the example inputs",
        ) from None
    return result.detach() if isinstance(result, torch.Tensor) else result


def _named(target: object, args: Sequence[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """Arguments by their schema names, defaults filled in."""
    schema = getattr(target, "_schema", None)
    if schema is None:
        return {"args": list(args), **kwargs}
    named: dict[str, Any] = {}
    for position, argument in enumerate(schema.arguments):
        if position < len(args):
            named[argument.name] = args[position]
        elif argument.name in kwargs:
            named[argument.name] = kwargs[argument.name]
        elif argument.has_default_value():
            named[argument.name] = argument.default_value
        else:
            named[argument.name] = None
    return named


def _outputs(
    context: Lowering,
    exported: ExportedProgram,
    node: torch.fx.Node,
    environment: dict[torch.fx.Node, object],
) -> None:
    results = node.args[0]
    for spec, result in zip(exported.graph_signature.output_specs, results, strict=True):  # type: ignore[arg-type]
        if spec.kind != OutputKind.USER_OUTPUT:
            raise ExportError(
                f"the model writes its state in forward ({spec.kind.name.lower()} of "
                f"{spec.target}): edgert programs are stateless (fix: export the model in "
                "eval mode without in-place updates of buffers)"
            )
        item = environment[result] if isinstance(result, torch.fx.Node) else result
        context.node = result if isinstance(result, torch.fx.Node) else node
        if isinstance(item, Missing):
            raise refuse(
                context.node,
                f"the model returns {item.what}",
                "return only tensors the program computes",
            )
        if not isinstance(item, (Value, torch.Tensor)) or is_symbolic(item):
            raise ExportError(
                f"output {len(context.builder.program.outputs)} of the model is "
                f"{type(item).__name__}, not a tensor (fix: return tensors only)"
            )
        context.builder.output(context.index(item))


# ---------------------------------------------------------------------------- the check


def _leaves(tree: object) -> list[torch.Tensor]:
    return [leaf for leaf in _pytree.tree_leaves(tree) if isinstance(leaf, torch.Tensor)]


def _check_against_eager(
    data: bytes,
    model: object,
    exported: ExportedProgram,
    example: tuple[tuple[Any, ...], dict[str, Any]],
) -> None:
    """Runs the program on the example inputs and compares with eager PyTorch: the module
    itself when one was given (in eval mode), else the exported program's module."""
    import edgert

    args, kwargs = example
    eager = model if isinstance(model, torch.nn.Module) else exported.module()
    try:
        with torch.no_grad():
            expected = _leaves(eager(*args, **kwargs))
    except Exception as error:  # the exported program itself fails on the example
        raise ExportError(
            f"the model does not run on the example inputs "
            f"({type(error).__name__}: {_first_line(error)}) (fix: pass example inputs the "
            "model takes, or check=False to skip the comparison)"
        ) from None
    inputs = [tensor.detach().numpy() for tensor in _leaves((args, kwargs))]
    try:
        outputs = edgert.load(data).run(inputs)
    except edgert.EdgertError as error:
        raise ExportError(
            f"the exported program does not run on the example inputs: {error}"
        ) from None
    if len(expected) != len(outputs):
        raise ExportError(
            f"the exported program returns {len(outputs)} tensors where eager PyTorch returns "
            f"{len(expected)} (fix: report the model; pass check=False to keep the program)"
        )
    for position, (want, got) in enumerate(zip(expected, outputs, strict=True)):
        _compare(position, want.detach().numpy(), got)


def _compare(position: int, want: npt.NDArray[Any], got: npt.NDArray[Any]) -> None:
    problem = ""
    if want.shape != got.shape:
        problem = f"shape {list(got.shape)} instead of {list(want.shape)}"
    elif want.dtype != got.dtype and not (want.dtype == np.bool_ and got.dtype == np.bool_):
        problem = f"dtype {got.dtype} instead of {want.dtype}"
    elif want.dtype.kind == "f":
        scale = float(np.max(np.abs(want[np.isfinite(want)]), initial=1.0))
        close = np.isclose(got, want, rtol=1e-3, atol=1e-4 * scale, equal_nan=True)
        if not close.all():
            worst = float(np.nanmax(np.abs(got.astype(np.float64) - want)))
            problem = f"values differ by up to {worst:.3g} (scale {scale:.3g})"
    elif not np.array_equal(want, got):
        problem = "values differ"
    if problem:
        raise ExportError(
            f"the exported program computes other values than eager PyTorch on the "
            f"example inputs: output {position} has {problem} (fix: report the model; "
            "pass check=False to keep the program anyway)"
        )
