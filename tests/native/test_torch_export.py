"""edgert.export.from_torch on PyTorch modules users write (tests/native/torch_models.py):
each exports, loads and computes what eager PyTorch computes, on the example inputs and on
other batch sizes (the batch dimension is dynamic); folding shows in the program; what the
front end cannot lower is refused in one line naming the ATen operator and the module."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest
import torch

from tests.native.support import MLP_MODEL, NativeInstall
from tests.native.torch_models import CASES, Case

# Float outputs: within 1e-5 relative of eager, with an absolute floor of 1e-5 of the
# output's own scale (outputs that are differences of large terms round near zero).
RTOL = 1e-5


def assert_matches_eager(outputs: list[np.ndarray], expected: object) -> None:
    wanted = [expected] if isinstance(expected, torch.Tensor) else list(expected)  # type: ignore[call-overload]
    assert len(outputs) == len(wanted)
    for got, want in zip(outputs, wanted, strict=True):
        reference = want.detach().numpy()
        assert got.shape == reference.shape and got.dtype == reference.dtype
        scale = max(1.0, float(np.abs(reference).max(initial=0.0)))
        np.testing.assert_allclose(got, reference, rtol=RTOL, atol=RTOL * scale)


@pytest.fixture(scope="module")
def exported(edgert_for_module: ModuleType) -> dict[str, bytes]:
    """Every case exported once (the export itself runs the built-in check)."""
    from edgert.export import from_torch

    programs = {}
    for case in CASES:
        programs[case.name] = from_torch(case.make(), case.example, dynamic_shapes=case.dynamic)
    return programs


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_exported_model_matches_eager(
    edgert: ModuleType, exported: dict[str, bytes], case: Case
) -> None:
    model = case.make()
    program = edgert.load(exported[case.name])
    for inputs in [case.example, *case.inputs]:
        with torch.no_grad():
            expected = model(*inputs)
        assert_matches_eager(program.run([t.numpy() for t in inputs]), expected)


def test_dynamic_batch_is_a_runtime_dimension(
    edgert: ModuleType, exported: dict[str, bytes]
) -> None:
    program = edgert.load(exported["cnn"])
    assert [info.shape for info in program.input_info] == [(-1, 3, 16, 16)]
    assert program.input_info[0].dtype == np.float32
    tokens = edgert.load(exported["embedding"]).input_info[0]
    assert tokens.dtype == np.int64 and tokens.shape == (-1, 7)
    static = edgert.load(exported["lstm"]).input_info[0]
    assert static.shape == (2, 5, 6)


def test_batch_norm_dropout_and_views_are_folded(exported: dict[str, bytes]) -> None:
    from edgert.export import read_program

    cnn = [node.op for node in read_program(exported["cnn"]).nodes]
    assert "edgert::batch_norm" not in cnn and "edgert::relu" not in cnn
    assert cnn.count("edgert::conv2d") == 3
    residual = read_program(exported["residual"])
    assert "edgert::batch_norm" not in [node.op for node in residual.nodes]
    fused = [n.attributes.get("activation") for n in residual.nodes if n.op == "edgert::conv2d"]
    assert fused.count("relu") == 1  # conv1's relu; the last relu follows an add
    encoder = [node.op for node in read_program(exported["encoder"]).nodes]
    assert "edgert::scaled_dot_product_attention" in encoder
    assert encoder.count("edgert::linear") == 4  # in and out projections, two feed-forward


@pytest.mark.parametrize(
    ("name", "host", "fused"),
    [("squeeze_excite", "edgert::conv2d", ["clamp", "hardsigmoid", "hardswish", "relu"]),
     ("decoder", "edgert::linear", ["silu"])],
)
def test_activations_are_fused_with_the_same_bytes(
    edgert: ModuleType, exported: dict[str, bytes], name: str, host: str, fused: list[str]
) -> None:
    """relu6 (clamp), hardswish, hardsigmoid, relu after a convolution and silu after a linear
    become the producer's ``activation``; the program with them split out again
    (unfuse_activations) computes the same bytes."""
    from edgert._passes import unfuse_activations
    from edgert.export import read_program, write_program

    program = read_program(exported[name])
    kinds = sorted(str(n.attributes["activation"]) for n in program.nodes
                   if n.op == host and n.attributes.get("activation", "none") != "none")
    assert kinds == fused
    ops = {node.op for node in program.nodes}
    assert not ops & {"edgert::clamp", "edgert::hardswish", "edgert::hardsigmoid", "edgert::silu"}
    unfused = unfuse_activations(program, frozenset({"edgert::conv2d", "edgert::linear"}))
    assert len(unfused.nodes) == len(program.nodes) + len(fused)
    case = next(c for c in CASES if c.name == name)
    for inputs in [case.example, *case.inputs]:
        arrays = [t.numpy() for t in inputs]
        together = edgert.load(exported[name]).run(arrays)
        apart = edgert.load(write_program(unfused)).run(arrays)
        for one, other in zip(together, apart, strict=True):
            assert one.tobytes() == other.tobytes()


def test_fuse_activations_takes_only_what_the_producer_can_apply(edgert: ModuleType) -> None:
    """Not fused: a relu after a float linear (the CPU delegate fuses linear → relu itself),
    an activation whose input something else reads too, a second activation; a clamp's
    bounds move to activation_min / activation_max; unfuse_activations restores the nodes."""
    from edgert._passes import fuse_activations, prune, unfuse_activations
    from edgert.export import ProgramBuilder, read_program

    builder = ProgramBuilder()
    x = builder.input(np.float32, (1, 2, 4, 4))
    weight = builder.constant(np.ones((2, 2, 1, 1), np.float32))
    conv = builder.op("edgert::conv2d", [x, weight])
    clamped = builder.op("edgert::clamp", [conv], {"min": 0.0, "max": 6.0})
    twice = builder.op("edgert::sigmoid", [clamped])  # a second activation: stays a node
    shared = builder.op("edgert::conv2d", [x, weight])
    silu = builder.op("edgert::silu", [shared])  # its input is also an output: stays a node
    flat = builder.input(np.float32, (1, 3))
    linear = builder.op("edgert::linear", [flat, builder.constant(np.ones((3, 3), np.float32))])
    relu = builder.op("edgert::relu", [linear])  # left to the CPU delegate
    for value in (twice, shared, silu, relu):
        builder.output(value)  # type: ignore[arg-type]
    program = read_program(builder.to_bytes())
    fused = prune(fuse_activations(program))
    assert [(n.op, n.attributes.get("activation")) for n in fused.nodes] == [
        ("edgert::conv2d", "clamp"), ("edgert::sigmoid", None), ("edgert::conv2d", None),
        ("edgert::silu", None), ("edgert::linear", None), ("edgert::relu", None)]
    first = fused.nodes[0].attributes
    assert first["activation_min"] == 0.0 and first["activation_max"] == 6.0
    restored = unfuse_activations(fused, frozenset({"edgert::conv2d"}))
    assert [n.op for n in restored.nodes][:2] == ["edgert::conv2d", "edgert::clamp"]
    assert restored.nodes[1].attributes == {"min": 0.0, "max": 6.0}
    assert "activation" not in restored.nodes[0].attributes


def test_constants_are_the_parameters(exported: dict[str, bytes]) -> None:
    from edgert.export import read_program

    program = read_program(exported["mlp"])
    model = CASES[0].make()
    constants = [v.data for v in program.values if v.is_constant]
    for name, parameter in model.named_parameters():
        assert any(
            c.shape == tuple(parameter.shape) and np.array_equal(c, parameter.detach().numpy())
            for c in constants
        ), name
    assert sum(c.size for c in constants) == sum(p.numel() for p in model.parameters())


def test_multiple_inputs_and_outputs_keep_their_order(
    edgert: ModuleType, exported: dict[str, bytes]
) -> None:
    program = edgert.load(exported["two_heads"])
    assert program.input_count == 2 and program.output_count == 2
    assert [info.shape for info in program.input_info] == [(-1, 3, 16, 16), (-1, 6)]


def test_an_exported_program_can_be_given(edgert: ModuleType) -> None:
    """An ExportedProgram, already decomposed to the core set by the caller: the whole
    decomposition of attention (masking with -inf, any, where, full_like) must run too."""
    from edgert.export import from_torch, read_program

    case = next(c for c in CASES if c.name == "encoder")
    model = case.make()
    with torch.no_grad():
        program = torch.export.export(model, case.example, dynamic_shapes=case.dynamic)
    decomposed = program.run_decompositions()
    data = from_torch(decomposed)
    ops = {node.op for node in read_program(data).nodes}
    assert "edgert::scaled_dot_product_attention" not in ops
    assert {"edgert::where", "edgert::any", "edgert::full_like"} <= ops
    inputs = case.inputs[-1]
    with torch.no_grad():
        expected = model(*inputs)
    assert_matches_eager(edgert.load(data).run([t.numpy() for t in inputs]), expected)


def test_bundled_model_from_its_pytorch_definition(edgert: ModuleType) -> None:
    """edgert.models' MLP written in PyTorch with the bundled program's weights exports to a
    program that computes the same outputs as the bundled one, bit for bit."""
    from edgert.export import from_torch, read_program

    bundled = read_program(MLP_MODEL.read_bytes())
    linears = [n for n in bundled.nodes if n.op == "edgert::linear"]
    layers = []
    for position, node in enumerate(linears):
        weight, bias = (bundled.values[i].data for i in node.inputs[1:3])
        layer = torch.nn.Linear(weight.shape[1], weight.shape[0])
        with torch.no_grad():
            layer.weight.copy_(torch.from_numpy(weight))
            layer.bias.copy_(torch.from_numpy(bias))
        layers += (
            [layer, torch.nn.ReLU()]
            if position < len(linears) - 1
            else [layer, torch.nn.Softmax(dim=-1)]
        )
    model = torch.nn.Sequential(*layers)
    data = from_torch(
        model, (torch.randn(2, 16),), dynamic_shapes=({0: torch.export.Dim("batch")},)
    )
    assert [n.op for n in read_program(data).nodes] == [n.op for n in bundled.nodes]
    x = np.random.RandomState(3).standard_normal((9, 16)).astype(np.float32)
    (ours,) = edgert.load(data).run([x])
    (theirs,) = edgert.load(MLP_MODEL).run([x])
    assert ours.tobytes() == theirs.tobytes()


# ---------------------------------------------------------------------------- refusals


class CumulativeSum(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = torch.nn.Sequential(torch.nn.Linear(4, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(self.inner(x), dim=-1)


def test_an_unsupported_operator_is_one_line_naming_it(edgert: ModuleType) -> None:
    from edgert.export import UnsupportedOperatorError, from_torch

    with pytest.raises(UnsupportedOperatorError) as raised:
        from_torch(CumulativeSum(), (torch.randn(2, 4),))
    message = str(raised.value)
    assert "\n" not in message
    assert "aten.cumsum.default" in message and "CumulativeSum" in message
    assert "bring-your-model.md" in message
    assert raised.value.operator == "aten.cumsum.default"
    assert isinstance(raised.value, edgert.ExportError) and isinstance(
        raised.value, edgert.EdgertError
    )


class Nested(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = torch.nn.Sequential(torch.nn.Linear(4, 4), CumulativeSum())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(x)


def test_the_module_path_is_named() -> None:
    from edgert.export import UnsupportedOperatorError, from_torch

    with pytest.raises(UnsupportedOperatorError) as raised:
        from_torch(Nested(), (torch.randn(2, 4),))
    assert raised.value.module == "block.1"
    assert "module 'block.1' (CumulativeSum)" in str(raised.value)


def test_float64_is_refused_not_approximated() -> None:
    from edgert.export import ExportError, from_torch

    model = torch.nn.Linear(4, 2).double()
    with pytest.raises(ExportError) as raised:
        from_torch(model, (torch.randn(3, 4, dtype=torch.float64),))
    assert "float64" in str(raised.value) and "float32" in str(raised.value)
    assert "\n" not in str(raised.value)


class MaskSelect(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[x > 0]


def test_a_data_dependent_shape_is_refused() -> None:
    from edgert.export import ExportError, from_torch

    with pytest.raises(ExportError) as raised:
        from_torch(MaskSelect(), (torch.randn(6),))
    assert "\n" not in str(raised.value)


def test_a_program_that_differs_from_eager_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The built-in check: a lowering made wrong on purpose (tanh written as sigmoid) is
    caught by comparing with eager PyTorch on the example inputs."""
    from edgert._torch import operators
    from edgert.export import ExportError, from_torch

    monkeypatch.setitem(
        operators.LOWERINGS,
        torch.ops.aten.tanh.default,
        operators.LOWERINGS[torch.ops.aten.sigmoid.default],
    )
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh())
    with pytest.raises(ExportError, match="other values than eager"):
        from_torch(model, (torch.randn(2, 4),))
    assert from_torch(model, (torch.randn(2, 4),), check=False)


def test_running_programs_never_imports_torch(native_install: NativeInstall) -> None:
    code = (
        "import sys, numpy as np, edgert, edgert.export, edgert.quantization\n"
        f"edgert.load({str(MLP_MODEL)!r}).run([np.ones((2, 16), np.float32)])\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    completed = native_install.python(code)
    assert completed.returncode == 0, completed.stderr


def test_without_torch_the_error_says_how_to_get_it(native_install: NativeInstall) -> None:
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from edgert.export import from_torch, ExportError\n"
        "try:\n    from_torch(object(), ())\nexcept ExportError as error:\n    print(error)\n"
    )
    completed = native_install.python(code)
    assert completed.returncode == 0, completed.stderr
    assert "pip install edgert[torch]" in completed.stdout
