"""nn.LSTM and nn.GRU exported whole: one ``edgert::lstm`` / ``edgert::gru`` node per module
(every layer and direction), run by the fused kernels of native/kernels/recurrent.cpp, and
compared with eager PyTorch (max error relative to the largest output, at most 1e-5) at
batch 1, 3 and 9 from programs exported with a dynamic batch: one and two layers, one and two
directions, batch first or time first, the initial state zeros or given; the variants
without an edgert operator refused in one line."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest
import torch
from torch import nn
from torch.export import Dim

TOLERANCE = 1e-5
INPUT, HIDDEN, STEPS = 7, 16, 9


class Returns(nn.Module):
    """The recurrent layer's every output: output, h_n (and c_n)."""

    def __init__(self, layer: nn.Module) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, x: torch.Tensor, *state: torch.Tensor) -> tuple[torch.Tensor, ...]:
        given: object = None
        if state:
            given = tuple(state) if isinstance(self.layer, nn.LSTM) else state[0]
        output, last = self.layer(x, given)
        return (output, *(last if isinstance(last, tuple) else (last,)))


def _layer(kind: str, layers: int, bidirectional: bool, batch_first: bool) -> nn.Module:
    torch.manual_seed(0)
    make = nn.LSTM if kind == "lstm" else nn.GRU
    return make(INPUT, HIDDEN, num_layers=layers, bidirectional=bidirectional,
                batch_first=batch_first).eval()


def _relative_error(got: np.ndarray, want: torch.Tensor) -> float:  # type: ignore[type-arg]
    expected = want.detach().numpy().astype(np.float64)
    assert got.shape == expected.shape
    scale = max(float(np.abs(expected).max()), 1e-30)
    return float(np.abs(got.astype(np.float64) - expected).max()) / scale


def _inputs(kind: str, layers: int, directions: int, batch_first: bool, batch: int, seed: int,
            with_state: bool) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    shape = (batch, STEPS, INPUT) if batch_first else (STEPS, batch, INPUT)
    made = [torch.randn(*shape, generator=generator)]
    if with_state:
        states = 2 if kind == "lstm" else 1
        made += [torch.randn(layers * directions, batch, HIDDEN, generator=generator)
                 for _ in range(states)]
    return made


CASES = [
    (kind, layers, bidirectional, batch_first)
    for kind in ("lstm", "gru")
    for layers in (1, 2)
    for bidirectional in (False, True)
    for batch_first in (False, True)
]


@pytest.mark.parametrize("with_state", [False, True], ids=["zero_state", "given_state"])
@pytest.mark.parametrize(
    ("kind", "layers", "bidirectional", "batch_first"),
    CASES,
    ids=[f"{k}-{n}layer{'-bi' if b else ''}{'-batch_first' if f else ''}" for k, n, b, f in CASES],
)
def test_recurrent_layer_matches_eager_with_a_dynamic_batch(
    edgert: ModuleType, kind: str, layers: int, bidirectional: bool, batch_first: bool,
    with_state: bool,
) -> None:
    from edgert.export import from_torch, read_program

    model = Returns(_layer(kind, layers, bidirectional, batch_first)).eval()
    directions = 2 if bidirectional else 1
    example = _inputs(kind, layers, directions, batch_first, 2, 0, with_state)
    batch = Dim("batch")
    dynamic: tuple[object, ...] = ({0 if batch_first else 1: batch},)
    if with_state:  # forward(x, *state): the states are one more (nested) argument
        dynamic += (tuple({1: batch} for _ in example[1:]),)
    data = from_torch(model, tuple(example), dynamic_shapes=dynamic)
    assert [node.op for node in read_program(data).nodes] == [f"edgert::{kind}"]
    program = edgert.load(data)
    assert program.input_info[0].shape[0 if batch_first else 1] == -1
    # batch 9: past gemm's small-batch rows, the step's product reads h packed in panels
    for batch_size, seed in ((1, 1), (3, 2), (9, 3)):
        inputs = _inputs(kind, layers, directions, batch_first, batch_size, seed, with_state)
        with torch.no_grad():
            expected = model(*inputs)
        outputs = program.run([tensor.numpy() for tensor in inputs])
        assert len(outputs) == len(expected) == (3 if kind == "lstm" else 2)
        for got, want in zip(outputs, expected, strict=True):
            assert _relative_error(got, want) <= TOLERANCE


class Tagger(nn.Module):
    """A sequence tagger: embedding-sized features through a 2-layer bidirectional LSTM, a
    linear, a GRU, a linear."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(INPUT, HIDDEN, num_layers=2, bidirectional=True, batch_first=True)
        self.middle = nn.Linear(2 * HIDDEN, HIDDEN)
        self.gru = nn.GRU(HIDDEN, HIDDEN, batch_first=True)
        self.head = nn.Linear(HIDDEN, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features, _ = self.lstm(x)
        tagged, _ = self.gru(torch.relu(self.middle(features)))
        return self.head(tagged)  # type: ignore[no-any-return]


def test_each_recurrent_module_is_one_node(edgert: ModuleType) -> None:
    from edgert.export import from_torch, read_program

    torch.manual_seed(0)
    model = Tagger().eval()
    example = torch.randn(2, STEPS, INPUT)
    data = from_torch(model, (example,), dynamic_shapes=({0: Dim("batch")},))
    ops = [node.op for node in read_program(data).nodes]
    assert ops.count("edgert::lstm") == 1 and ops.count("edgert::gru") == 1
    assert len(ops) <= 5, ops  # not the hundreds of nodes of an unrolled loop
    program = edgert.load(data)
    for batch in (1, 3):
        x = torch.randn(batch, STEPS, INPUT, generator=torch.Generator().manual_seed(batch))
        with torch.no_grad():
            expected = model(x)
        assert _relative_error(program.run([x.numpy()])[0], expected) <= TOLERANCE


def test_the_decomposition_keeps_the_recurrent_node(edgert: ModuleType) -> None:
    """An ExportedProgram is lowered after torch's decomposition, which keeps aten.lstm whole
    and makes the zero state a full(..., 0) of the run-time batch: still one node, no state."""
    from edgert.export import from_torch, read_program

    model = Returns(_layer("lstm", 2, True, False)).eval()
    exported = torch.export.export(model, (torch.randn(STEPS, 2, INPUT),),
                                   dynamic_shapes=({1: Dim("batch")},))
    data = from_torch(exported)
    program = read_program(data)
    assert [node.op for node in program.nodes] == ["edgert::lstm"]
    assert program.nodes[0].inputs[1:3] == [-1, -1]  # h0 and c0 absent: zeros
    x = torch.randn(STEPS, 5, INPUT, generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        expected = model(x)
    for got, want in zip(edgert.load(data).run([x.numpy()]), expected, strict=True):
        assert _relative_error(got, want) <= TOLERANCE


def test_a_weight_given_at_run_time_gives_the_same_bytes_as_a_constant(
    edgert: ModuleType,
) -> None:
    """The kernel packs constant weights once when the program prepares, and weights that
    are program inputs on every run: the same arithmetic either way."""
    from edgert.export import ProgramBuilder

    layer = _layer("gru", 2, True, False)
    weights = [p.detach().numpy() for p in layer._flat_weights]  # type: ignore[union-attr]
    attributes = {"hidden_size": HIDDEN, "num_layers": 2, "bidirectional": 1}
    results = []
    for as_inputs in (False, True):
        builder = ProgramBuilder()
        x = builder.input("float32", (STEPS, -1, INPUT))
        given = [builder.input("float32", w.shape) if as_inputs else builder.constant(w)
                 for w in weights]
        out, last = builder.op("edgert::gru", [x, None, *given], attributes, outputs=2)
        builder.output(out)
        builder.output(last)
        x_data = np.random.default_rng(3).standard_normal((STEPS, 3, INPUT)).astype(np.float32)
        feeds = [x_data, *(weights if as_inputs else [])]
        results.append(edgert.load(builder.to_bytes()).run(feeds))
    for constant, computed in zip(*results, strict=True):
        np.testing.assert_array_equal(constant, computed)
    with torch.no_grad():
        expected = layer(torch.from_numpy(x_data))
    assert _relative_error(results[0][0], expected[0]) <= TOLERANCE
    assert _relative_error(results[0][1], expected[1]) <= TOLERANCE


class Projected(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.LSTM(INPUT, HIDDEN, proj_size=4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.encoder(x)[0]  # type: ignore[no-any-return]


def test_a_projected_lstm_is_refused_in_one_line() -> None:
    from edgert.export import UnsupportedOperatorError, from_torch

    with pytest.raises(UnsupportedOperatorError) as raised:
        from_torch(Projected(), (torch.randn(STEPS, 2, INPUT),))
    message = str(raised.value)
    assert "\n" not in message
    assert "aten.lstm.input" in message and "'encoder' (LSTM)" in message
    assert "proj_size" in message


def test_dropout_between_layers_in_training_mode_is_refused_in_one_line() -> None:
    from edgert.export import UnsupportedOperatorError, from_torch

    model = Returns(nn.GRU(INPUT, HIDDEN, num_layers=2, dropout=0.5)).train()
    exported = torch.export.export(model, (torch.randn(STEPS, 2, INPUT),))
    with pytest.raises(UnsupportedOperatorError) as raised:
        from_torch(exported)
    message = str(raised.value)
    assert "\n" not in message
    assert "aten.gru.input" in message and "training mode" in message
    assert "model.eval()" in message
