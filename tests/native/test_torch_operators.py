"""The ATen operators that segmentation, decoder, audio and recurrent models need, each
exported by from_torch with a dynamic batch (from a batch-2 example) and compared with
eager PyTorch at other batch sizes: bilinear upsampling (by size and by scale factor, with
and without align_corners), transposed convolution (1-D and 2-D; stride, padding, output
padding, groups, dilation), group norm, the as_strided timm's pooling leaves, flip, and
nn.LSTM/nn.GRU (their zero initial state is a full() of the batch size)."""

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
class OperatorCase:
    name: str
    make: Callable[[], nn.Module]
    shape: tuple[int, ...]  # of the example, batch 2
    batch_axis: int = 0
    dynamic_length: bool = False  # the last dimension is dynamic too
    operator: str = ""  # an ATen operator the exported graph must hold


class Interpolate(nn.Module):
    def __init__(self, **options: object) -> None:
        super().__init__()
        self.options = options

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.interpolate(x, mode="bilinear", **self.options)  # type: ignore[arg-type]


class ChannelsLastPool(nn.Module):
    """timm's ConvNeXt head: a layer norm over channels by permutes, then adaptive average
    pooling to 1, which torch decomposes to a mean and an as_strided."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(4)
        self.pool = nn.AdaptiveAvgPool2d(1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        return self.pool(x).flatten(1)


class MergedBatch(nn.Module):
    """Rows of batch x channels, a batch and a length both known only at run time in one
    reshape and back (the reshape's ``scaled`` dimensions)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, channels, length = x.shape
        rows = (x * 2).reshape(batch * channels, length)
        return torch.softmax(rows, -1).reshape(batch, channels, length) + x


class Flip(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.flip(0, -1) * 2


class Recurrent(nn.Module):
    def __init__(self, layer: type[nn.Module], **options: object) -> None:
        super().__init__()
        self.layer = layer(6, 5, **options)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x)[0]  # type: ignore[no-any-return]


def _group_norm(groups: int, channels: int) -> nn.Module:
    layer = nn.GroupNorm(groups, channels)
    with torch.no_grad():
        layer.weight.copy_(torch.linspace(0.5, 1.5, channels))
        layer.bias.copy_(torch.linspace(-0.2, 0.3, channels))
    return layer


class SpeechFrontEnd(nn.Module):
    """wav2vec2's feature encoder in small: conv1d, group norm per channel, gelu."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(1, 8, 10, stride=5, bias=False)
        self.norm = _group_norm(8, 8)
        self.conv2 = nn.Conv1d(8, 8, 3, stride=2, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2(F.gelu(self.norm(self.conv(x))))


class Decoder(nn.Module):
    """A U-Net step: upsample by a transposed convolution, join the skip, convolve."""

    def __init__(self) -> None:
        super().__init__()
        self.up = nn.ConvTranspose2d(6, 3, 2, stride=2)
        self.conv = nn.Conv2d(6, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skip = F.interpolate(x[:, :3], scale_factor=2.0, mode="bilinear", align_corners=False)
        return self.conv(torch.cat([self.up(x), skip], dim=1))


CASES = [
    OperatorCase("bilinear_size", lambda: Interpolate(size=(13, 7)), (2, 3, 5, 6)),
    OperatorCase(
        "bilinear_size_corners",
        lambda: Interpolate(size=(13, 7), align_corners=True),
        (2, 3, 5, 6),
        operator="aten.upsample_bilinear2d.vec",
    ),
    OperatorCase("bilinear_scale", lambda: Interpolate(scale_factor=2.5), (2, 3, 5, 6)),
    OperatorCase(
        "bilinear_scale_corners",
        lambda: Interpolate(scale_factor=(2.0, 0.5), align_corners=True),
        (2, 3, 5, 6),
    ),
    OperatorCase(
        "conv_transpose2d",
        lambda: nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1),
        (2, 4, 7, 9),
    ),
    OperatorCase(
        "conv_transpose2d_groups_dilation",
        lambda: nn.ConvTranspose2d(
            4, 6, (3, 2), stride=(2, 3), padding=(1, 0), dilation=2, groups=2
        ),
        (2, 4, 7, 9),
    ),
    OperatorCase(
        "conv_transpose2d_cropping", lambda: nn.ConvTranspose2d(4, 4, 4, padding=3), (2, 4, 7, 9)
    ),
    OperatorCase(
        "conv_transpose1d",
        lambda: nn.ConvTranspose1d(4, 6, 5, stride=3, padding=2, output_padding=1, groups=2),
        (2, 4, 11),
    ),
    OperatorCase("decoder", Decoder, (2, 6, 5, 4)),
    OperatorCase(
        "group_norm",
        lambda: _group_norm(2, 6),
        (2, 6, 5, 4),
        operator="aten.native_group_norm.default",
    ),
    OperatorCase("group_norm_1d", lambda: _group_norm(3, 6), (2, 6, 9), dynamic_length=True),
    OperatorCase("speech_front_end", SpeechFrontEnd, (2, 1, 400), dynamic_length=True),
    OperatorCase(
        "timm_pool_as_strided", ChannelsLastPool, (2, 4, 5, 5), operator="aten.as_strided.default"
    ),
    OperatorCase("flip", Flip, (2, 3, 4), operator="aten.flip.default"),
    OperatorCase("merged_batch_and_length", MergedBatch, (2, 4, 6), dynamic_length=True),
    OperatorCase(
        "lstm",
        lambda: Recurrent(nn.LSTM, batch_first=True),
        (2, 4, 6),
        operator="aten.full.default",
    ),
    OperatorCase(
        "lstm_2_layers_bidirectional",
        lambda: Recurrent(nn.LSTM, num_layers=2, bidirectional=True),
        (4, 2, 6),
        batch_axis=1,
    ),
    OperatorCase("gru", lambda: Recurrent(nn.GRU, batch_first=True), (2, 4, 6)),
    OperatorCase(
        "gru_2_layers_bidirectional",
        lambda: Recurrent(nn.GRU, num_layers=2, bidirectional=True, batch_first=True),
        (2, 4, 6),
    ),
]


def _dynamic(case: OperatorCase) -> object:
    dims: dict[int, Dim] = {case.batch_axis: Dim("batch")}
    if case.dynamic_length:
        dims[len(case.shape) - 1] = Dim("length", min=case.shape[-1] // 2, max=4096)
    return (dims,)


def _input(case: OperatorCase, batch: int, seed: int, length: int | None = None) -> torch.Tensor:
    shape = list(case.shape)
    shape[case.batch_axis] = batch
    if length is not None:
        shape[-1] = length
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_operator_matches_eager_with_a_dynamic_batch(
    edgert: ModuleType, case: OperatorCase
) -> None:
    from edgert.export import from_torch

    torch.manual_seed(0)
    model = case.make().eval()
    example = (_input(case, 2, 0),)
    if case.operator:
        with torch.no_grad():
            graph = torch.export.export(model, example).run_decompositions().graph
        assert case.operator in {str(node.target) for node in graph.nodes}
    program = edgert.load(from_torch(model, example, dynamic_shapes=_dynamic(case)))
    assert program.input_info[0].shape[case.batch_axis] == -1
    lengths = [None] if not case.dynamic_length else [case.shape[-1] // 2 + 3, case.shape[-1]]
    for batch, seed in ((1, 1), (3, 2)):
        for length in lengths:
            x = _input(case, batch, seed, length)
            with torch.no_grad():
                expected = model(x)
            assert_matches_eager(program.run([x.numpy()]), expected)


def test_a_restriding_as_strided_is_refused_in_one_line() -> None:
    from edgert.export import UnsupportedOperatorError, from_torch

    class Overlapping(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.as_strided((2, 3), (1, 1)) + 1

    with pytest.raises(UnsupportedOperatorError) as raised:
        from_torch(Overlapping(), (torch.randn(6),))
    message = str(raised.value)
    assert "\n" not in message and "aten.as_strided" in message
    assert "contiguous" in message
