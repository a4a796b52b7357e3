"""edgert.export.from_torch on PyTorch modules users write (tests/native/torch_models.py):
each exports, loads and computes what eager PyTorch computes, on the example inputs and on
other batch sizes (the batch dimension is dynamic); folding shows in the program; what the
front end cannot lower is refused in one line naming the ATen operator and the module."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch
import torch.nn.functional as F

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


class LiftedTensors(torch.nn.Module):
    """Every kind of tensor torch.export lifts out of a module: a parameter, a persistent
    and a non-persistent buffer (Hugging Face models register their position ids, causal
    masks and rotary frequencies so), a plain tensor attribute (a lifted constant), and a
    Python number attribute (inlined)."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(6, 6)
        self.register_buffer("shift", torch.linspace(-1.0, 1.0, 6))
        self.register_buffer("scale", torch.linspace(0.5, 2.0, 6), persistent=False)
        self.table = torch.arange(6, dtype=torch.float32) / 10  # not registered
        self.factor = 0.75

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (self.linear(x) + self.shift) * self.scale * self.factor - self.table


def test_every_lifted_tensor_kind_is_a_constant(edgert: ModuleType) -> None:
    from edgert.export import from_torch

    model = LiftedTensors().eval()
    with torch.no_grad():
        exported = torch.export.export(model, (torch.randn(2, 6),))
    persistent = {
        s.target: s.persistent
        for s in exported.graph_signature.input_specs
        if s.persistent is not None
    }
    assert persistent == {"shift": True, "scale": False}  # what torch.export lifted
    assert exported.constants  # the non-persistent buffer and the tensor attribute
    data = from_torch(model, (torch.randn(2, 6),), dynamic_shapes=({0: torch.export.Dim("batch")},))
    x = torch.randn(5, 6)
    with torch.no_grad():
        expected = model(x)
    assert_matches_eager(edgert.load(data).run([x.numpy()]), expected)


def test_a_failing_lowering_is_one_line_naming_the_node(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lowering that meets an operand it did not expect (here: a KeyError) is refused as
    an ExportError naming the operator and the module, never a raw Python exception."""
    from edgert._torch import operators
    from edgert.export import UnsupportedOperatorError, from_torch

    def broken(ctx: object, node: object, args: object) -> object:
        raise KeyError("m.embeddings.position_ids")

    monkeypatch.setitem(operators.LOWERINGS, torch.ops.aten.tanh.default, broken)
    with pytest.raises(UnsupportedOperatorError) as raised:
        from_torch(Nested2Tanh(), (torch.randn(2, 4),))
    message = str(raised.value)
    assert "\n" not in message
    assert "aten.tanh.default" in message and "module 'block.1' (Tanh)" in message
    assert "KeyError" in message and "position_ids" in message
    assert raised.value.operator == "aten.tanh.default"


class Nested2Tanh(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(x)


class TwoInputs(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.head = torch.nn.Linear(4 + 5, 3)

    def forward(self, image: torch.Tensor, extra: torch.Tensor) -> torch.Tensor:
        pooled = self.conv(image).mean(dim=(2, 3))
        return self.head(torch.cat([pooled, extra], dim=1))


@pytest.mark.parametrize("form", ["tuple", "dict"])
def test_a_batch_1_example_exports_a_dynamic_batch(edgert: ModuleType, form: str) -> None:
    """torch specialises a size-1 dimension ("Constraints violated (batch)"); from_torch
    traces from the example repeated to batch 2 and checks on the caller's batch-1 example."""
    from edgert.export import from_torch

    batch = torch.export.Dim("batch")
    dynamic: object = (
        ({0: batch}, {0: batch}) if form == "tuple" else {"image": {0: batch}, "extra": {0: batch}}
    )
    model = TwoInputs().eval()
    example = (torch.randn(1, 3, 8, 8), torch.randn(1, 5))
    with pytest.raises(Exception, match="Constraints violated"):  # what torch does alone
        torch.export.export(model, example, dynamic_shapes=dynamic)
    program = edgert.load(from_torch(model, example, dynamic_shapes=dynamic))
    assert [info.shape for info in program.input_info] == [(-1, 3, 8, 8), (-1, 5)]
    for size in (1, 4):
        inputs = (torch.randn(size, 3, 8, 8), torch.randn(size, 5))
        with torch.no_grad():
            expected = model(*inputs)
        assert_matches_eager(program.run([t.numpy() for t in inputs]), expected)


class ReshapeToTwoRows(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(2, 3)


class BranchOnData(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x if x.sum() > 0 else -x


def test_a_model_that_fixes_the_dynamic_dimension_is_refused_saying_so() -> None:
    from edgert.export import ExportError, from_torch

    with pytest.raises(ExportError) as raised:
        from_torch(
            ReshapeToTwoRows(), (torch.randn(1, 6),), dynamic_shapes=({0: torch.export.Dim("b")},)
        )
    message = str(raised.value)
    assert "\n" not in message
    assert "fixed size for a dimension dynamic_shapes names" in message
    assert "repeated to size 2 along input 0 dim 0 (b)" in message


def test_a_data_dependent_failure_is_not_blamed_on_the_batch_1_example() -> None:
    """The widened trace fails, but so does the caller's own example traced statically: the
    error is torch's data-dependent one, with no word about the dynamic dimension."""
    from edgert.export import ExportError, from_torch

    with pytest.raises(ExportError) as raised:
        from_torch(
            BranchOnData(), (torch.randn(1, 3),), dynamic_shapes=({0: torch.export.Dim("b")},)
        )
    message = str(raised.value)
    assert "\n" not in message
    assert "data-dependent" in message
    assert "dynamic_shapes" not in message and "repeated" not in message


class DocsModel(torch.nn.Module):
    """Stands for the docs' ``MyModel``: a small classifier of 224x224 images."""

    def __init__(self) -> None:
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, stride=4, padding=1),
            torch.nn.BatchNorm2d(8),
            torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1),
        )
        self.classifier = torch.nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.features(x), 1))


def test_the_docs_export_example_runs_as_written(
    edgert: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/bring-your-model.md's export block, executed as it is written there (a batch-1
    example with a dynamic batch), with ``MyModel`` a small CNN."""
    from tests import doc_blocks

    (block,) = [
        b
        for b in doc_blocks.blocks()
        if b.page == "docs/bring-your-model.md"
        and b.reason.endswith("::test_the_docs_export_example_runs_as_written")
    ]
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"MyModel": DocsModel}
    exec(compile(block.code, block.name, "exec"), namespace)
    (output,) = namespace["outputs"]  # type: ignore[misc]
    assert output.shape == (1, 10)
    program = edgert.load(tmp_path / "model.edgert")
    assert program.input_info[0].shape == (-1, 3, 224, 224)
    model = namespace["model"]
    x = torch.randn(3, 3, 224, 224)
    with torch.no_grad():
        expected = model(x)  # type: ignore[operator]
    assert_matches_eager(program.run([x.numpy()]), expected)


class TransformerPatterns(torch.nn.Module):
    """What Hugging Face transformers' code does with sizes known only at run time (the
    batch and the sequence): buffers sliced to the sequence and expanded to the batch,
    arange/zeros/ones/full/new_* of those sizes, a causal mask from tril and comparisons
    combined with a padding mask, a mask picked with two index tensors (a vmap over the
    batch), a rotary table from cos/sin, rotate-half by slicing and cat, masked_fill,
    attention with a mask and with is_causal, views that split heads, cumsum."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)
        self.register_buffer("position_ids", torch.arange(32).expand(1, -1), persistent=False)
        frequencies = 1.0 / (10000 ** (torch.arange(0, 4, 2).float() / 4))
        self.register_buffer("inv_freq", frequencies, persistent=False)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        positions = self.position_ids[:, :s].expand(b, s)
        counts = torch.arange(s).unsqueeze(0) + torch.zeros(b, s, dtype=torch.long)
        causal = torch.ones(s, s, dtype=torch.bool).tril()
        causal = causal[None, None] & mask[:, None, None, :].bool()
        later = torch.arange(s)[None, :] > torch.arange(s)[:, None]
        picked = mask.bool()[torch.arange(b)[:, None], torch.arange(s)]
        q = self.proj(x).view(b, s, 2, 4).transpose(1, 2)
        frequencies = positions[:, :, None].float() * self.inv_freq
        table = torch.cat([frequencies, frequencies], -1)[:, None]
        rotated = torch.cat([-q[..., 2:], q[..., :2]], -1)
        q = q * table.cos() + rotated * table.sin()
        masked = F.scaled_dot_product_attention(q, q, q, attn_mask=causal)
        ordered = F.scaled_dot_product_attention(q, q, q, is_causal=True)
        scores = (q @ q.transpose(-1, -2)).masked_fill(later, float("-inf")).softmax(-1)
        filled = x.masked_fill(~picked[..., None], -1.0)
        extra = (
            x.new_zeros(b, s, 1)
            + x.new_ones(b, 1, 1)
            + torch.full((b, s, 1), 2.0)
            + torch.cumsum(x, 1)
            + counts[..., None]
            + positions[..., None]
            + torch.arange(s).expand(b, -1)[..., None]
        )
        heads = (masked + ordered + scores @ q).transpose(1, 2).reshape(b, s, 8)
        return heads + filled + extra


def test_transformer_patterns_with_a_dynamic_batch_and_sequence(edgert: ModuleType) -> None:
    from edgert.export import from_torch, read_program

    model = TransformerPatterns().eval()
    batch, sequence = torch.export.Dim("batch"), torch.export.Dim("sequence", max=32)
    x = torch.randn(2, 5, 8)
    mask = torch.ones(2, 5, dtype=torch.long)
    mask[1, 3:] = 0
    data = from_torch(
        model, (x, mask), dynamic_shapes=({0: batch, 1: sequence}, {0: batch, 1: sequence})
    )
    ops = {node.op for node in read_program(data).nodes}
    assert {"edgert::cumsum", "edgert::cos", "edgert::sin", "edgert::index_select"} <= ops
    program = edgert.load(data)
    assert [info.shape for info in program.input_info] == [(-1, -1, 8), (-1, -1)]
    for size, length in ((1, 7), (3, 5), (4, 2)):
        x = torch.randn(size, length, 8)
        mask = torch.ones(size, length, dtype=torch.long)
        mask[0, length // 2 :] = 0
        with torch.no_grad():
            expected = model(x, mask)
        assert_matches_eager(program.run([x.numpy(), mask.numpy()]), expected)


class InPlace(torch.nn.Module):
    """In-place operators as users write them (relu_, +=, batch norm, flatten)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.norm = torch.nn.BatchNorm2d(4)
        self.head = torch.nn.Linear(4 * 8 * 8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.norm(self.conv(x)).relu_()
        y += self.conv(x)
        return self.head(torch.flatten(y, 1))


class ReadBeforeWrite(torch.nn.Module):
    """x is read again after relu_ overwrote a view of it: not the functional relu."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * 2
        z = y.view(-1)
        y.relu_()
        return z + 1


def _count_decompositions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    original = torch.export.ExportedProgram.run_decompositions

    def counted(self: torch.export.ExportedProgram, *args: object, **kwargs: object) -> object:
        calls.append(1)
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(torch.export.ExportedProgram, "run_decompositions", counted)
    return calls


def test_a_graph_of_lowerable_operators_is_not_decomposed(
    edgert: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch's decomposition re-traces the model (slowly with a dynamic batch): a graph whose
    operators all have lowerings, in-place ones included, is lowered as torch.export made it."""
    from edgert.export import from_torch

    calls = _count_decompositions(monkeypatch)
    model = InPlace().eval()
    data = from_torch(
        model, (torch.randn(2, 3, 8, 8),), dynamic_shapes=({0: torch.export.Dim("b")},)
    )
    assert calls == []
    x = torch.randn(5, 3, 8, 8)
    with torch.no_grad():
        expected = model(x)
    assert_matches_eager(edgert.load(data).run([x.numpy()]), expected)


def test_an_in_place_write_another_value_sees_is_decomposed(
    edgert: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    from edgert.export import from_torch

    calls = _count_decompositions(monkeypatch)
    data = from_torch(ReadBeforeWrite(), (torch.randn(2, 3),))
    assert calls == [1]
    x = torch.randn(2, 3)
    assert_matches_eager(edgert.load(data).run([x.numpy()]), ReadBeforeWrite()(x))


# ---------------------------------------------------------------------------- refusals


class CumulativeProduct(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = torch.nn.Sequential(torch.nn.Linear(4, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumprod(self.inner(x), dim=-1)


def test_an_unsupported_operator_is_one_line_naming_it(edgert: ModuleType) -> None:
    from edgert.export import UnsupportedOperatorError, from_torch

    with pytest.raises(UnsupportedOperatorError) as raised:
        from_torch(CumulativeProduct(), (torch.randn(2, 4),))
    message = str(raised.value)
    assert "\n" not in message
    assert "aten.cumprod.default" in message and "CumulativeProduct" in message
    assert "bring-your-model.md" in message
    assert raised.value.operator == "aten.cumprod.default"
    assert isinstance(raised.value, edgert.ExportError) and isinstance(
        raised.value, edgert.EdgertError
    )


class Nested(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = torch.nn.Sequential(torch.nn.Linear(4, 4), CumulativeProduct())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(x)


def test_the_module_path_is_named() -> None:
    from edgert.export import UnsupportedOperatorError, from_torch

    with pytest.raises(UnsupportedOperatorError) as raised:
        from_torch(Nested(), (torch.randn(2, 4),))
    assert raised.value.module == "block.1"
    assert "module 'block.1' (CumulativeProduct)" in str(raised.value)


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
