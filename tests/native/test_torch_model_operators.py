"""The ATen operators small real models use beside the common layers, each exported by
from_torch with a dynamic batch (from a batch-2 example) and compared with eager PyTorch at
batch 1 and 3 (float outputs within a relative 1e-5, integer ones exactly):
nearest-exact interpolation (and nearest by scale factor), instance norm, reflect and
replicate padding, adaptive max pooling and topk/sort/argsort. Each also runs on a
non-contiguous input: the model transposes or slices its input before the operator, so the
exported graph holds the permute or slice in front of it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.export import Dim

from tests.native.test_torch_export import assert_matches_eager


@dataclass(frozen=True)
class Case:
    name: str
    make: Callable[[], nn.Module]
    shape: tuple[int, ...]  # of the example, batch 2
    operator: str = ""  # an ATen operator the exported graph must hold
    dtype: torch.dtype = torch.float32


class Functional(nn.Module):
    """``function(x)``, after an optional reordering of the input (``before``)."""

    def __init__(
        self,
        function: Callable[[torch.Tensor], object],
        before: Callable[[torch.Tensor], torch.Tensor] | None = None,
    ) -> None:
        super().__init__()
        self.function = function
        self.before = before

    def forward(self, x: torch.Tensor) -> object:
        if self.before is not None:
            x = self.before(x)
        return self.function(x)


class After(nn.Module):
    """A layer applied to a non-contiguous view of the input."""

    def __init__(self, layer: nn.Module, before: Callable[[torch.Tensor], torch.Tensor]) -> None:
        super().__init__()
        self.layer = layer
        self.before = before

    def forward(self, x: torch.Tensor) -> object:
        return self.layer(self.before(x))


def turned(x: torch.Tensor) -> torch.Tensor:
    """The last two dimensions exchanged: a permute in the graph, a strided view eagerly."""
    return x.transpose(-1, -2)


def sliced(x: torch.Tensor) -> torch.Tensor:
    """Every other channel from the second on: a strided slice."""
    return x[:, 1::2]


def _interpolate(**options: object) -> Callable[[], nn.Module]:
    return lambda: Functional(lambda x: F.interpolate(x, **options))  # type: ignore[arg-type]


def _instance_norm(kind: type[nn.Module], channels: int, **options: object) -> nn.Module:
    layer = kind(channels, **options)
    with torch.no_grad():
        if getattr(layer, "weight", None) is not None:
            layer.weight.copy_(torch.linspace(0.5, 1.5, channels))
            layer.bias.copy_(torch.linspace(-0.2, 0.3, channels))
        if getattr(layer, "running_mean", None) is not None:
            layer.running_mean.copy_(torch.linspace(-0.3, 0.4, channels))
            layer.running_var.copy_(torch.linspace(0.6, 1.7, channels))
    return layer


def _pad(pads: tuple[int, ...], mode: str, before: object = None) -> Callable[[], nn.Module]:
    return lambda: Functional(lambda x: F.pad(x, pads, mode=mode), before)  # type: ignore[arg-type]


CASES = [
    # ------------------------------------------------------------------ nearest-exact
    Case(
        "nearest_exact_size",
        _interpolate(size=(13, 7), mode="nearest-exact"),
        (2, 3, 5, 6),
        operator="aten._upsample_nearest_exact2d.vec",
    ),
    Case("nearest_exact_scale", _interpolate(scale_factor=1.7, mode="nearest-exact"), (2, 3, 5, 6)),
    Case(
        "nearest_exact_scales_up_and_down",
        _interpolate(scale_factor=(2.0, 0.5), mode="nearest-exact"),
        (2, 3, 5, 7),
    ),
    Case("nearest_exact_1d_size", _interpolate(size=11, mode="nearest-exact"), (2, 3, 7)),
    Case("nearest_exact_1d_scale", _interpolate(scale_factor=1.5, mode="nearest-exact"), (2, 3, 7)),
    Case("nearest_scale", _interpolate(scale_factor=1.7, mode="nearest"), (2, 3, 5, 6)),
    Case("nearest_1d_size", _interpolate(size=10, mode="nearest"), (2, 3, 7)),
    Case(
        "nearest_exact_transposed",
        lambda: Functional(lambda x: F.interpolate(x, size=(9, 4), mode="nearest-exact"), turned),
        (2, 3, 5, 6),
    ),
    # ------------------------------------------------------------------ instance norm
    Case(
        "instance_norm_2d",
        lambda: _instance_norm(nn.InstanceNorm2d, 4),
        (2, 4, 5, 6),
        operator="aten.instance_norm.default",
    ),
    Case(
        "instance_norm_2d_affine",
        lambda: _instance_norm(nn.InstanceNorm2d, 4, affine=True),
        (2, 4, 5, 6),
    ),
    Case("instance_norm_1d", lambda: _instance_norm(nn.InstanceNorm1d, 4), (2, 4, 9)),
    Case(
        "instance_norm_1d_affine",
        lambda: _instance_norm(nn.InstanceNorm1d, 4, affine=True),
        (2, 4, 9),
    ),
    Case(
        "instance_norm_running_stats",
        lambda: _instance_norm(nn.InstanceNorm2d, 4, affine=True, track_running_stats=True),
        (2, 4, 5, 6),
    ),
    Case(
        "instance_norm_transposed",
        lambda: After(_instance_norm(nn.InstanceNorm2d, 4, affine=True), turned),
        (2, 4, 5, 6),
    ),
    Case(
        "instance_norm_sliced",
        lambda: After(_instance_norm(nn.InstanceNorm1d, 3, affine=True), sliced),
        (2, 6, 9),
    ),
    # ------------------------------------------------------------------ reflect, replicate
    Case(
        "reflect_1d", _pad((2, 3), "reflect"), (2, 3, 7), operator="aten.reflection_pad1d.default"
    ),
    Case("reflect_2d", _pad((1, 2, 3, 0), "reflect"), (2, 3, 5, 6)),
    Case("replicate_1d", _pad((0, 4), "replicate"), (2, 3, 7)),
    Case(
        "replicate_2d",
        _pad((3, 1, 2, 2), "replicate"),
        (2, 3, 5, 6),
        operator="aten.replication_pad2d.default",
    ),
    Case("replicate_3d", _pad((1, 1, 2, 0, 1, 2), "replicate"), (2, 2, 3, 4, 5)),
    Case("reflect_2d_transposed", _pad((2, 2, 1, 3), "reflect", turned), (2, 3, 5, 6)),
    Case("replicate_1d_sliced", _pad((3, 2), "replicate", sliced), (2, 6, 7)),
    Case("reflection_pad_layer", lambda: nn.ReflectionPad2d((1, 0, 2, 1)), (2, 3, 5, 6)),
    # ------------------------------------------------------------------ adaptive max pooling
    Case(
        "adaptive_max_pool2d",
        lambda: nn.AdaptiveMaxPool2d((3, 4)),
        (2, 3, 7, 10),
        operator="aten.adaptive_max_pool2d.default",
    ),
    Case("adaptive_max_pool2d_to_1", lambda: nn.AdaptiveMaxPool2d(1), (2, 3, 7, 10)),
    Case("adaptive_max_pool2d_larger", lambda: nn.AdaptiveMaxPool2d((9, 5)), (2, 3, 7, 4)),
    Case("adaptive_max_pool2d_keep_height", lambda: nn.AdaptiveMaxPool2d((None, 3)), (2, 3, 5, 8)),
    Case("adaptive_max_pool1d", lambda: nn.AdaptiveMaxPool1d(4), (2, 3, 11)),
    Case(
        "adaptive_max_pool2d_transposed",
        lambda: After(nn.AdaptiveMaxPool2d((2, 3)), turned),
        (2, 3, 7, 5),
    ),
    Case("adaptive_max_pool1d_sliced", lambda: After(nn.AdaptiveMaxPool1d(3), sliced), (2, 6, 10)),
    # ------------------------------------------------------------------ topk, sort
    Case(
        "topk_largest",
        lambda: Functional(lambda x: torch.topk(x, 3, dim=-1)),
        (2, 4, 9),
        operator="aten.topk.default",
    ),
    Case(
        "topk_smallest_dim1",
        lambda: Functional(lambda x: torch.topk(x, 2, dim=1, largest=False)),
        (2, 5, 6),
    ),
    Case(
        "topk_unsorted",
        lambda: Functional(lambda x: torch.topk(x, 5, dim=-1, sorted=False)),
        (2, 3, 8),
    ),
    Case(
        "topk_int64",
        lambda: Functional(lambda x: torch.topk(x, 2, dim=-1)),
        (2, 3, 7),
        dtype=torch.int64,
    ),
    Case(
        "topk_transposed",
        lambda: Functional(lambda x: torch.topk(x, 2, dim=-1), turned),
        (2, 4, 6),
    ),
    Case(
        "sort_descending",
        lambda: Functional(lambda x: torch.sort(x, dim=-1, descending=True)),
        (2, 3, 8),
        operator="aten.sort.default",
    ),
    Case(
        "sort_dim1_stable",
        lambda: Functional(lambda x: torch.sort(x, dim=1, stable=True)),
        (2, 5, 4),
    ),
    Case("argsort", lambda: Functional(lambda x: torch.argsort(x, dim=-1)), (2, 3, 8)),
    Case(
        "sort_int32_sliced",
        lambda: Functional(lambda x: torch.sort(x, dim=-1)[0] * 2, sliced),
        (2, 6, 5),
        dtype=torch.int32,
    ),
    Case(
        "topk_scores_gather",
        lambda: Functional(
            lambda x: torch.gather(x, 1, torch.topk(x.mean(-1), 2, dim=1).indices.unsqueeze(-1))
        ),
        (2, 5, 3),
    ),
]


def _input(case: Case, batch: int, seed: int) -> torch.Tensor:
    shape = (batch, *case.shape[1:])
    generator = torch.Generator().manual_seed(seed)
    if case.dtype.is_floating_point:
        return torch.randn(*shape, generator=generator)
    count = 1
    for size in shape:
        count *= size
    # distinct integers: a permutation, so that orders have no ties
    return (torch.randperm(count, generator=generator) - count // 2).reshape(shape).to(case.dtype)


def _check(edgert: ModuleType, case: Case, model: nn.Module, data: bytes) -> None:
    program = edgert.load(data)
    assert program.input_info[0].shape[0] == -1
    for batch, seed in ((1, 1), (3, 2)):
        x = _input(case, batch, seed)
        with torch.no_grad():
            expected = model(x)
        assert_matches_eager(program.run([x.numpy()]), expected)


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_operator_matches_eager_with_a_dynamic_batch(edgert: ModuleType, case: Case) -> None:
    from edgert.export import from_torch

    torch.manual_seed(0)
    model = case.make().eval()
    example = (_input(case, 2, 0),)
    _check(edgert, case, model, from_torch(model, example, dynamic_shapes=({0: Dim("batch")},)))


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_the_decomposed_graph_lowers_the_same(edgert: ModuleType, case: Case) -> None:
    """An ExportedProgram is always decomposed first (the path a model takes when another
    of its operators needs the decomposition): the operator is kept whole there too."""
    from edgert._torch import PRESERVED
    from edgert.export import from_torch

    torch.manual_seed(0)
    model = case.make().eval()
    example = (_input(case, 2, 0),)
    with torch.no_grad():
        exported = torch.export.export(model, example, dynamic_shapes=({0: Dim("batch")},))
    if case.operator:
        table = torch.export.default_decompositions()
        for kept in PRESERVED:
            table.pop(kept, None)
        graph = exported.run_decompositions(table).graph
        assert case.operator in {str(node.target) for node in graph.nodes}
    _check(edgert, case, model, from_torch(exported, example))


def test_adaptive_max_pool_indices_are_refused_in_one_line() -> None:
    from edgert.export import ExportError, from_torch

    with pytest.raises(ExportError) as raised:
        from_torch(nn.AdaptiveMaxPool2d((2, 3), return_indices=True), (torch.randn(2, 3, 7, 5),))
    message = str(raised.value)
    assert "\n" not in message and "adaptive max pooling's indices" in message


def test_circular_padding_is_refused_in_one_line() -> None:
    from edgert.export import ExportError, from_torch

    model = Functional(lambda x: F.pad(x, (1, 2), mode="circular") + 1)
    with pytest.raises(ExportError) as raised:
        from_torch(model, (torch.randn(2, 3, 7),))
    assert "\n" not in str(raised.value)
