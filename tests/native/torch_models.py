"""PyTorch modules of the kinds users bring, for the front-end tests: each with example
inputs for torch.export, the dynamic dimensions it is exported with, and inputs to compare
edgert with eager PyTorch on (other batch sizes than the example's among them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn
from torch.export import Dim


@dataclass(frozen=True)
class Case:
    name: str
    make: Callable[[], nn.Module]
    example: tuple[torch.Tensor, ...]
    dynamic: object = None  # dynamic_shapes for torch.export (None: all static)
    inputs: list[tuple[torch.Tensor, ...]] = field(default_factory=list)


def _images(batch: int, channels: int = 3, size: int = 16, seed: int = 0) -> torch.Tensor:
    return torch.randn(batch, channels, size, size, generator=torch.Generator().manual_seed(seed))


def _tokens(batch: int, length: int, vocabulary: int, seed: int = 0) -> torch.Tensor:
    return torch.randint(
        0, vocabulary, (batch, length), generator=torch.Generator().manual_seed(seed)
    )


def _randomize_norms(module: nn.Module) -> nn.Module:
    """Batch norms with statistics that are not the identity, so folding is visible."""
    generator = torch.Generator().manual_seed(5)
    for layer in module.modules():
        if isinstance(layer, nn.BatchNorm2d):
            count = layer.num_features
            layer.running_mean.copy_(torch.randn(count, generator=generator) * 0.1)
            layer.running_var.copy_(torch.rand(count, generator=generator) + 0.5)
            with torch.no_grad():
                layer.weight.copy_(torch.rand(count, generator=generator) + 0.5)
                layer.bias.copy_(torch.randn(count, generator=generator) * 0.1)
    return module


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 10)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.softmax(self.layers(x), dim=-1)


class SmallCNN(nn.Module):
    """Convolution + batch norm + relu, a depthwise convolution, pooling, dropout."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.depthwise = nn.Sequential(
            nn.Conv2d(16, 16, 3, padding=1, groups=16, bias=False),
            nn.BatchNorm2d(16),
            nn.Hardswish(),
        )
        self.pointwise = nn.Conv2d(16, 32, 1)
        self.pool = nn.MaxPool2d(2)
        self.average = nn.AvgPool2d(2)
        self.head = nn.Sequential(
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2), nn.Linear(32, 10)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.stem(x))
        x = F.relu(self.pointwise(self.depthwise(x)))
        return self.head(self.average(x))


class BasicBlock(nn.Module):
    """A ResNet block with a strided 1×1 shortcut."""

    def __init__(self, channels: int = 8, out: int = 16) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, out, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out)
        self.conv2 = nn.Conv2d(out, out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out)
        self.shortcut = nn.Sequential(
            nn.Conv2d(channels, out, 1, stride=2, bias=False), nn.BatchNorm2d(out)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


class Encoder(nn.Module):
    def __init__(self, norm_first: bool = False, activation: str = "relu") -> None:
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(
            32, 4, 64, dropout=0.1, batch_first=True, norm_first=norm_first, activation=activation
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x)


class EmbeddingClassifier(nn.Module):
    """int64 token ids → embedding → mean over the sequence → linear."""

    def __init__(self) -> None:
        super().__init__()
        self.embedding = nn.Embedding(100, 24)
        self.classify = nn.Linear(24, 4)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.classify(self.embedding(tokens).mean(dim=1))


class SqueezeExcite(nn.Module):
    """A MobileNetV3-style block: depthwise conv, squeeze-and-excitation, hardsigmoid."""

    def __init__(self) -> None:
        super().__init__()
        self.expand = nn.Conv2d(3, 16, 1)
        self.depthwise = nn.Conv2d(16, 16, 5, stride=2, padding=2, groups=16)
        self.reduce = nn.Conv2d(16, 4, 1)
        self.restore = nn.Conv2d(4, 16, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.hardswish(self.depthwise(F.relu6(self.expand(x))))
        scale = F.hardsigmoid(self.restore(F.relu(self.reduce(x.mean((2, 3), keepdim=True)))))
        return x * scale


class TinyDecoder(nn.Module):
    """Token and position embeddings, causal self-attention, RMSNorm and a SiLU-gated MLP."""

    def __init__(self, vocabulary: int = 50, width: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.tokens = nn.Embedding(vocabulary, width)
        self.positions = nn.Embedding(16, width)
        self.norm1 = nn.RMSNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.project = nn.Linear(width, width)
        self.norm2 = nn.RMSNorm(width)
        self.gate = nn.Linear(width, 64, bias=False)
        self.up = nn.Linear(width, 64, bias=False)
        self.down = nn.Linear(64, width, bias=False)
        self.logits = nn.Linear(width, vocabulary)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        batch, length = tokens.shape
        x = self.tokens(tokens) + self.positions(torch.arange(length))
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        q, k, v = (t.reshape(batch, length, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.project(attended.transpose(1, 2).reshape(batch, length, -1))
        y = self.norm2(x)
        x = x + self.down(F.silu(self.gate(y)) * self.up(y))
        return self.logits(x)


class AudioConv(nn.Module):
    """1-D convolutions, tanh and sigmoid gates, a max over time."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(4, 8, 5, padding=2)
        self.gate = nn.Conv1d(4, 8, 5, padding=2)
        self.out = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gated = torch.tanh(self.conv(x)) * torch.sigmoid(self.gate(x))
        return self.out(gated.amax(dim=-1))


class TwoHeads(nn.Module):
    """Two inputs (an image and a feature vector) and two outputs; upsampling and concat."""

    def __init__(self) -> None:
        super().__init__()
        self.down = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.fuse = nn.Conv2d(11, 4, 3, padding=1)
        self.features = nn.Linear(6, 5)

    def forward(
        self, image: torch.Tensor, features: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        up = F.interpolate(F.leaky_relu(self.down(image), 0.1), scale_factor=2, mode="nearest")
        mask = torch.cat([up, image], dim=1)
        segmentation = self.fuse(mask).clamp(-1.0, 1.0)
        scores = self.features(features)
        best = torch.where(scores > 0, scores, torch.zeros_like(scores)).sum(dim=-1, keepdim=True)
        return segmentation, best


class Recurrent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(6, 12, batch_first=True)
        self.out = nn.Linear(12, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        output, _ = self.lstm(x)
        return self.out(output[:, -1])


BATCH = Dim("batch", min=1, max=1024)


def _with_seed(factory: Callable[[], nn.Module]) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        torch.manual_seed(0)
        return _randomize_norms(factory()).eval()

    return make


CASES = [
    Case(
        "mlp",
        _with_seed(MLP),
        (torch.randn(3, 16),),
        ({0: BATCH},),
        [(torch.randn(1, 16),), (torch.randn(7, 16),)],
    ),
    Case(
        "cnn",
        _with_seed(SmallCNN),
        (_images(2),),
        ({0: BATCH},),
        [(_images(1, seed=1),), (_images(5, seed=2),)],
    ),
    Case(
        "residual",
        _with_seed(BasicBlock),
        (_images(2, 8),),
        ({0: BATCH},),
        [(_images(3, 8, seed=3),)],
    ),
    Case(
        "encoder",
        _with_seed(Encoder),
        (torch.randn(2, 5, 32),),
        ({0: BATCH},),
        [(torch.randn(1, 5, 32),), (torch.randn(4, 5, 32),)],
    ),
    Case(
        "encoder_norm_first_gelu",
        _with_seed(lambda: Encoder(True, "gelu")),
        (torch.randn(2, 6, 32),),
        ({0: BATCH},),
        [(torch.randn(3, 6, 32),)],
    ),
    Case(
        "embedding",
        _with_seed(EmbeddingClassifier),
        (_tokens(2, 7, 100),),
        ({0: BATCH},),
        [(_tokens(5, 7, 100, seed=4),)],
    ),
    Case(
        "squeeze_excite",
        _with_seed(SqueezeExcite),
        (_images(2),),
        ({0: BATCH},),
        [(_images(3, seed=5),)],
    ),
    Case(
        "decoder",
        _with_seed(TinyDecoder),
        (_tokens(2, 8, 50),),
        ({0: BATCH},),
        [(_tokens(3, 8, 50, seed=6),)],
    ),
    Case(
        "audio",
        _with_seed(AudioConv),
        (torch.randn(2, 4, 20),),
        ({0: BATCH},),
        [(torch.randn(5, 4, 20),)],
    ),
    Case(
        "two_heads",
        _with_seed(TwoHeads),
        (_images(2), torch.randn(2, 6)),
        ({0: BATCH}, {0: BATCH}),
        [(_images(3, seed=7), torch.randn(3, 6))],
    ),
    Case("lstm", _with_seed(Recurrent), (torch.randn(2, 5, 6),), None, [(torch.randn(2, 5, 6),)]),
]
