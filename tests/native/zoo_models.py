"""Architectures nobody here wrote, for the model zoo (tests/native/test_model_zoo.py): built
from the constructors and configs of torchvision, timm and Hugging Face transformers with
random weights (nothing downloads weights), each with the inputs it is exported and checked
on, the dynamic dimensions it is exported with, and the relative error it must stay within.

The torchvision wheels that install beside the CPU torch are CUDA builds whose C++ operators
do not load; ``import torchvision`` then fails while registering fake kernels for
``torchvision::nms``. ``libraries()`` declares those two operator schemas first (the models
need none of torchvision's own operators), so torchvision, timm and transformers import."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

import torch
from torch import nn
from torch.export import Dim

# The largest relative error (max |edgert - eager| / max |eager|) a zoo model may show.
RTOL = 1e-4

# A classifier's int8 program (quantize_program, static activations calibrated on a few
# random inputs) against eager PyTorch, on one batch of fresh inputs:
# - its largest error stays within QUANTIZED_STEPS steps of the logits' range over that
#   batch divided by int8's 255 steps: the bound docs/bring-your-model.md states for
#   quantize_program (measured there on the small test models). A deeper model whose errors
#   add up beyond it states its own bound and why (``quantized_reason``), in the docs' table;
# - its arg-max agrees with eager's on at least ARGMAX_AGREEMENT of the samples. Not all:
#   random weights give logits that lie close together, so the top two of a sample can be
#   nearer than the quantization error (only a margin above twice the error cannot flip).
QUANTIZED_STEPS = 4.0
ARGMAX_AGREEMENT = 0.75
# Why a classifier misses QUANTIZED_STEPS (the docs' table says it beside its own bound).
_DEPTHWISE = "depthwise convolutions: one int8 scale per tensor for channels of unlike ranges"
_BLOCKS = "quantized linear layers in every block, reading GELU and layer norm outputs"
_NARROW = "random weights give logits of a narrow range, the unit of the step"


@dataclass(frozen=True)
class ZooModel:
    name: str
    library: str  # "torchvision", "timm", "transformers" or "torch.nn"
    kind: str  # what it stands for in the docs' table
    make: Callable[[], nn.Module]
    inputs: Callable[[int, int], tuple[torch.Tensor, ...]]  # (batch, seed) -> inputs
    dynamic: Callable[[], object]  # dynamic_shapes (Dim objects are made per export)
    rtol: float = RTOL
    refusal: str = ""  # for a model that does not export: what its one-line ExportError says
    logits: bool = False  # its output is class logits: its quantized program is checked too
    quantized_steps: float = QUANTIZED_STEPS  # above QUANTIZED_STEPS only with a reason
    quantized_reason: str = ""  # why this classifier's int8 program misses QUANTIZED_STEPS

    def __post_init__(self) -> None:
        if (self.quantized_steps > QUANTIZED_STEPS) != bool(self.quantized_reason):
            raise ValueError(
                f"{self.name}: a quantized bound above {QUANTIZED_STEPS} steps, "
                "and only that, states its reason"
            )

    @property
    def dynamic_batch(self) -> bool:
        return self.dynamic() is not None  # every zoo model's batch is dynamic today


_KEEP: list[object] = []  # the torchvision operator schemas, alive for the process


@functools.cache
def libraries() -> tuple[ModuleType, ModuleType, ModuleType]:
    """(torchvision.models, timm, transformers), imported once."""
    if not hasattr(torch.ops.torchvision, "nms"):
        library = torch.library.Library("torchvision", "DEF")
        library.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        library.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        _KEEP.append(library)
    import timm
    import torchvision.models
    import transformers

    transformers.logging.set_verbosity_error()
    return torchvision.models, timm, transformers


# ---------------------------------------------------------------------------- inputs


def tokens_and_mask(
    vocabulary: int = 100, fixed_length: int = 0
) -> Callable[[int, int], tuple[torch.Tensor, ...]]:
    """Token ids and an attention mask whose first sequence is padded at the end; the
    length differs from one seed to the next (6 to 12 tokens) unless it is fixed."""

    def make(batch: int, seed: int) -> tuple[torch.Tensor, ...]:
        generator = torch.Generator().manual_seed(seed)
        length = fixed_length or 6 + seed % 7
        ids = torch.randint(0, vocabulary, (batch, length), generator=generator)
        mask = torch.ones(batch, length, dtype=torch.long)
        mask[0, length - 3 :] = 0
        return ids, mask

    return make


def _batch_and_sequence() -> object:
    batch, sequence = Dim("batch"), Dim("sequence", min=2, max=64)
    return ({0: batch, 1: sequence}, {0: batch, 1: sequence})


class TransformersOutput(nn.Module):
    """A transformers model called with ids and a mask, returning one field of its output
    (the last hidden state, a classifier's logits)."""

    def __init__(self, model: nn.Module, field: str) -> None:
        super().__init__()
        self.model = model
        self.field = field

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return getattr(self.model(input_ids=ids, attention_mask=mask), self.field)  # type: ignore[no-any-return]


def _transformer(
    name: str, head: str = "Model", field: str = "last_hidden_state", **config: object
) -> Callable[[], nn.Module]:
    """``<name><head>`` (``BertModel``, ``BertForSequenceClassification``) from
    ``<name>Config(**config)``, random weights, returning its output's ``field``."""

    def make() -> nn.Module:
        transformers = libraries()[2]
        torch.manual_seed(0)
        model_class = getattr(transformers, f"{name}{head}")
        config_class = getattr(transformers, f"{name}Config")
        return TransformersOutput(model_class(config_class(**config)), field).eval()

    return make


TRANSFORMERS = [
    ZooModel(
        "bert",
        "transformers",
        "encoder-only text (BERT)",
        _transformer(
            "Bert",
            vocab_size=100,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
            max_position_embeddings=64,
        ),
        tokens_and_mask(),
        _batch_and_sequence,
    ),
    ZooModel(
        "distilbert",
        "transformers",
        "encoder-only text (DistilBERT)",
        _transformer(
            "DistilBert",
            vocab_size=100,
            dim=32,
            n_layers=2,
            n_heads=4,
            hidden_dim=64,
            max_position_embeddings=64,
        ),
        tokens_and_mask(),
        _batch_and_sequence,
    ),
    ZooModel(
        "gpt2",
        "transformers",
        "decoder-only text (GPT-2)",
        _transformer("GPT2", vocab_size=100, n_embd=32, n_layer=2, n_head=4, n_positions=64),
        tokens_and_mask(),
        _batch_and_sequence,
    ),
    ZooModel(
        "llama",
        "transformers",
        "decoder-only text (Llama: RoPE, RMSNorm, grouped-query attention)",
        _transformer(
            "Llama",
            vocab_size=100,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            intermediate_size=64,
            max_position_embeddings=64,
        ),
        tokens_and_mask(),
        _batch_and_sequence,
    ),
]

# ---------------------------------------------------------------------------- vision


def images(size: int = 64) -> Callable[[int, int], tuple[torch.Tensor, ...]]:
    def make(batch: int, seed: int) -> tuple[torch.Tensor, ...]:
        generator = torch.Generator().manual_seed(seed)
        return (torch.randn(batch, 3, size, size, generator=generator),)

    return make


def _dynamic_batch() -> object:
    return ({0: Dim("batch")},)


def _torchvision(name: str, **arguments: object) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        torch.manual_seed(0)
        return getattr(libraries()[0], name)(**arguments).eval()  # type: ignore[no-any-return]

    return make


def _timm(name: str, **arguments: object) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        torch.manual_seed(0)
        return libraries()[1].create_model(name, pretrained=False, **arguments).eval()  # type: ignore[no-any-return]

    return make


TORCHVISION = [
    ZooModel(
        "resnet18",
        "torchvision",
        "classification CNN (ResNet)",
        _torchvision("resnet18"),
        images(),
        _dynamic_batch,
        logits=True,
    ),
    ZooModel(
        "mobilenet_v2",
        "torchvision",
        "depthwise CNN (MobileNetV2)",
        _torchvision("mobilenet_v2"),
        images(),
        _dynamic_batch,
        logits=True,
        quantized_steps=8,
        quantized_reason=_DEPTHWISE,
    ),
    ZooModel(
        "mobilenet_v3_small",
        "torchvision",
        "depthwise CNN, squeeze-excite (MobileNetV3)",
        _torchvision("mobilenet_v3_small"),
        images(),
        _dynamic_batch,
        logits=True,
        quantized_steps=12,
        quantized_reason=_DEPTHWISE,
    ),
    ZooModel(
        "efficientnet_b0",
        "torchvision",
        "depthwise CNN, squeeze-excite (EfficientNet)",
        _torchvision("efficientnet_b0"),
        images(),
        _dynamic_batch,
        logits=True,
        quantized_steps=14,
        quantized_reason=_DEPTHWISE,
    ),
    ZooModel(
        "squeezenet1_1",
        "torchvision",
        "classification CNN (SqueezeNet)",
        _torchvision("squeezenet1_1"),
        images(),
        _dynamic_batch,
        logits=True,
    ),
    ZooModel(
        "shufflenet_v2_x0_5",
        "torchvision",
        "channel-shuffle CNN (ShuffleNetV2)",
        _torchvision("shufflenet_v2_x0_5"),
        images(),
        _dynamic_batch,
        logits=True,
    ),
    ZooModel(
        "regnet_y_400mf",
        "torchvision",
        "classification CNN, squeeze-excite (RegNetY)",
        _torchvision("regnet_y_400mf"),
        images(),
        _dynamic_batch,
        logits=True,
    ),
]

TORCHVISION += [
    ZooModel(
        "mobilenet_v3_large",
        "torchvision",
        "depthwise CNN, squeeze-excite (MobileNetV3)",
        _torchvision("mobilenet_v3_large"),
        images(),
        _dynamic_batch,
        logits=True,
        quantized_steps=9,
        quantized_reason=_DEPTHWISE,
    ),
    ZooModel(
        "mnasnet0_5",
        "torchvision",
        "depthwise CNN (MnasNet)",
        _torchvision("mnasnet0_5"),
        images(),
        _dynamic_batch,
        logits=True,
        quantized_steps=11,
        quantized_reason=_DEPTHWISE,
    ),
]

TIMM = [
    ZooModel(
        "timm_resnet10t",
        "timm",
        "classification CNN (ResNet-T)",
        _timm("resnet10t"),
        images(),
        _dynamic_batch,
        logits=True,
    ),
    ZooModel(
        "timm_convnext_atto",
        "timm",
        "ConvNeXt (layer norm over channels, pooling as_strided)",
        _timm("convnext_atto"),
        images(),
        _dynamic_batch,
        logits=True,
        quantized_steps=9,
        quantized_reason=_DEPTHWISE,
    ),
    ZooModel(
        "timm_vit_tiny",
        "timm",
        "vision transformer (ViT)",
        _timm("vit_tiny_patch16_224", img_size=64),
        images(),
        _dynamic_batch,
        logits=True,
        quantized_steps=8,
        quantized_reason=_BLOCKS,
    ),
    ZooModel(
        "timm_swin",
        "timm",
        "windowed vision transformer (Swin)",
        _timm(
            "swin_tiny_patch4_window7_224",
            img_size=64,
            window_size=2,
            embed_dim=48,
            depths=(1, 1, 1, 1),
            num_heads=(2, 2, 2, 2),
        ),
        images(),
        _dynamic_batch,
        logits=True,
        quantized_steps=10,
        quantized_reason=_BLOCKS,
    ),
    ZooModel(
        "timm_levit",
        "timm",
        "convolution-attention hybrid (LeViT)",
        _timm("levit_128s", img_size=64),
        images(),
        _dynamic_batch,
        logits=True,
        quantized_steps=14,
        quantized_reason=_BLOCKS,
    ),
]


class SegmentationOut(nn.Module):
    """A torchvision segmentation model's "out" map."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x)["out"]  # type: ignore[no-any-return]


def _segmentation() -> nn.Module:
    libraries()
    from torchvision.models import segmentation

    torch.manual_seed(0)
    model = segmentation.lraspp_mobilenet_v3_large(
        weights=None, weights_backbone=None, num_classes=5
    )
    return SegmentationOut(model).eval()


class SpeechHiddenState(nn.Module):
    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, audio: torch.Tensor) -> torch.Tensor:
        return self.model(audio).last_hidden_state  # type: ignore[no-any-return]


def _wav2vec2() -> nn.Module:
    transformers = libraries()[2]
    torch.manual_seed(0)
    config = transformers.Wav2Vec2Config(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        conv_dim=(16, 16),
        conv_stride=(5, 2),
        conv_kernel=(10, 3),
        num_conv_pos_embeddings=8,
        num_conv_pos_embedding_groups=4,
        feat_extract_norm="group",
    )
    return SpeechHiddenState(transformers.Wav2Vec2Model(config)).eval()


def audio(batch: int, seed: int) -> tuple[torch.Tensor, ...]:
    return (torch.randn(batch, 400, generator=torch.Generator().manual_seed(seed)),)


OTHERS = [
    ZooModel(
        "lraspp_mobilenet_v3",
        "torchvision",
        "segmentation (bilinear upsampling)",
        _segmentation,
        images(),
        _dynamic_batch,
    ),
    ZooModel(
        "wav2vec2",
        "transformers",
        "speech encoder (conv1d, group norm, positional convolution)",
        _wav2vec2,
        audio,
        _dynamic_batch,
    ),
]

TIMM += [
    ZooModel(
        "timm_deit_tiny",
        "timm",
        "vision transformer (DeiT)",
        _timm("deit_tiny_patch16_224", img_size=64),
        images(),
        _dynamic_batch,
        logits=True,
        quantized_steps=8,
        quantized_reason=_BLOCKS,
    ),
    ZooModel(
        "timm_regnetx_002",
        "timm",
        "classification CNN (RegNetX)",
        _timm("regnetx_002"),
        images(),
        _dynamic_batch,
        logits=True,
    ),
    ZooModel(
        "timm_ghostnet",
        "timm",
        "ghost modules, squeeze-excite (GhostNet)",
        _timm("ghostnet_050"),
        images(),
        _dynamic_batch,
        logits=True,
    ),
]


TIMM += [
    ZooModel(
        "timm_mobilevit_xxs",
        "timm",
        "convolution-transformer hybrid (MobileViT)",
        _timm("mobilevit_xxs"),
        images(),
        _dynamic_batch,
        logits=True,
        quantized_steps=16,  # 10.8 measured
        quantized_reason=_DEPTHWISE,
    ),
]


TIMM += [
    ZooModel(
        "timm_resnet10t_catavgmax",
        "timm",
        "classification CNN, average and max pooling concatenated (adaptive max pooling)",
        _timm("resnet10t", global_pool="catavgmax"),
        images(),
        _dynamic_batch,
        logits=True,
    ),
]


def _raft_features() -> nn.Module:
    libraries()
    from torchvision.models.optical_flow import raft_small

    torch.manual_seed(0)
    return raft_small(weights=None).feature_encoder.eval()  # type: ignore[no-any-return]


OTHERS += [
    ZooModel(
        "raft_small_features",
        "torchvision",
        "optical-flow feature encoder of RAFT-small (instance norm)",
        _raft_features,
        images(),
        _dynamic_batch,
    ),
]


class ImageHiddenState(nn.Module):
    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        return self.model(pixel_values=pixels).last_hidden_state  # type: ignore[no-any-return]


def _hf_vit() -> nn.Module:
    transformers = libraries()[2]
    torch.manual_seed(0)
    config = transformers.ViTConfig(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        image_size=64,
        patch_size=16,
    )
    return ImageHiddenState(transformers.ViTModel(config)).eval()


class EncoderDecoder(nn.Module):
    """An encoder-decoder model run with the ids as the decoder's input too."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        out = self.model(input_ids=ids, attention_mask=mask, decoder_input_ids=ids)
        return out.last_hidden_state  # type: ignore[no-any-return]


def _encoder_decoder(name: str, **config: object) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        transformers = libraries()[2]
        torch.manual_seed(0)
        model_class = getattr(transformers, f"{name}Model")
        config_class = getattr(transformers, f"{name}Config")
        return EncoderDecoder(model_class(config_class(**config))).eval()

    return make


def _batch_only() -> object:
    batch = Dim("batch")
    return ({0: batch}, {0: batch})


_SMALL_TEXT = {
    "vocab_size": 100,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 64,
}

MORE_TRANSFORMERS = [
    ZooModel(
        "roberta",
        "transformers",
        "encoder-only text (RoBERTa)",
        _transformer("Roberta", max_position_embeddings=80, **_SMALL_TEXT),
        tokens_and_mask(),
        _batch_and_sequence,
    ),
    ZooModel(
        "albert",
        "transformers",
        "encoder-only text, shared layers (ALBERT)",
        _transformer("Albert", embedding_size=16, max_position_embeddings=64, **_SMALL_TEXT),
        tokens_and_mask(),
        _batch_and_sequence,
    ),
    ZooModel(
        "qwen2",
        "transformers",
        "decoder-only text (Qwen2: RoPE, RMSNorm, grouped-query attention, qkv bias)",
        _transformer("Qwen2", num_key_value_heads=2, max_position_embeddings=64, **_SMALL_TEXT),
        tokens_and_mask(),
        _batch_and_sequence,
    ),
    ZooModel(
        "t5",
        "transformers",
        "encoder-decoder text (T5: relative position buckets)",
        _encoder_decoder(
            "T5", vocab_size=100, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4
        ),
        tokens_and_mask(fixed_length=8),
        _batch_only,
    ),
    ZooModel(
        "bart",
        "transformers",
        "encoder-decoder text (BART)",
        _encoder_decoder(
            "Bart",
            vocab_size=100,
            d_model=32,
            encoder_layers=2,
            decoder_layers=2,
            encoder_attention_heads=4,
            decoder_attention_heads=4,
            encoder_ffn_dim=64,
            decoder_ffn_dim=64,
            max_position_embeddings=64,
        ),
        tokens_and_mask(fixed_length=8),
        _batch_only,
    ),
    ZooModel(
        "hf_vit", "transformers", "vision transformer (ViT)", _hf_vit, images(), _dynamic_batch
    ),
]


def _sequence_classifier(name: str, **config: object) -> Callable[[], nn.Module]:
    """A transformers sequence classifier of 10 labels, returning its logits."""
    return _transformer(name, "ForSequenceClassification", "logits", num_labels=10, **config)


TEXT_CLASSIFIERS = [
    ZooModel(
        "bert_classifier",
        "transformers",
        "text classifier (BERT, pooler and classification head)",
        _sequence_classifier("Bert", max_position_embeddings=64, **_SMALL_TEXT),
        tokens_and_mask(),
        _batch_and_sequence,
        logits=True,
        quantized_steps=14,
        quantized_reason=_NARROW,
    ),
    ZooModel(
        "distilbert_classifier",
        "transformers",
        "text classifier (DistilBERT, classification head)",
        _sequence_classifier(
            "DistilBert",
            vocab_size=100,
            dim=32,
            n_layers=2,
            n_heads=4,
            hidden_dim=64,
            max_position_embeddings=64,
        ),
        tokens_and_mask(),
        _batch_and_sequence,
        logits=True,
        quantized_steps=18,
        quantized_reason=_NARROW,
    ),
]


def tokens(
    length: int = 8, vocabulary: int = 100
) -> Callable[[int, int], tuple[torch.Tensor, ...]]:
    """Token ids alone, ``length`` of them per sequence."""

    def make(batch: int, seed: int) -> tuple[torch.Tensor, ...]:
        generator = torch.Generator().manual_seed(seed)
        return (torch.randint(0, vocabulary, (batch, length), generator=generator),)

    return make


class RecurrentClassifier(nn.Module):
    """The stock recurrent text classifier of torch.nn's layers: embedding, a two-layer
    bidirectional LSTM, the last step's features through a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.embedding = nn.Embedding(100, 16)
        self.lstm = nn.LSTM(16, 24, num_layers=2, bidirectional=True, batch_first=True)
        self.head = nn.Linear(48, 10)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        features, _ = self.lstm(self.embedding(ids))
        return self.head(features[:, -1])  # type: ignore[no-any-return]


def _recurrent_classifier() -> nn.Module:
    torch.manual_seed(0)
    return RecurrentClassifier().eval()


RECURRENT = [
    ZooModel(
        "lstm_classifier",
        "torch.nn",
        "recurrent text classifier (embedding, bidirectional two-layer LSTM)",
        _recurrent_classifier,
        tokens(),
        _dynamic_batch,
        logits=True,
        quantized_steps=8,
        quantized_reason=_NARROW,
    ),
]

ZOO = [
    *TORCHVISION,
    *TIMM,
    *TRANSFORMERS,
    *MORE_TRANSFORMERS,
    *TEXT_CLASSIFIERS,
    *RECURRENT,
    *OTHERS,
]


# ---------------------------------------------------------------------------- the docs' table

TABLE_MARKER = (
    "<!-- model zoo: generated from tests/native/zoo_models.py (docs_table); "
    "do not edit by hand -->\n"
)


def _dimensions(entry: ZooModel) -> str:
    shapes = entry.dynamic()
    names = sorted({str(dim.__name__) for spec in shapes for dim in spec.values()})  # type: ignore[attr-defined]
    return ", ".join(names)


def docs_table() -> str:
    """The markdown table of docs/bring-your-model.md's "Models that export today": every
    zoo model, which test_model_zoo.py exports and compares with eager PyTorch."""
    rows = [
        f"| {entry.name} | {entry.library} | {entry.kind} | {_dimensions(entry)} | "
        + (f"refused: {entry.refusal}" if entry.refusal else f"{entry.rtol:.0e}")
        + f" | {_quantized(entry)} |\n"
        for entry in ZOO
    ]
    return (
        "| model | library | architecture | dynamic in the test | max relative error "
        "| int8: max error, steps of range/255 |\n"
        "|---|---|---|---|---|---|\n" + "".join(rows)
    )


def _quantized(entry: ZooModel) -> str:
    """The quantized check's bound for a classifier that exports; "–" for the others."""
    if entry.refusal or not entry.logits:
        return "–"
    if entry.quantized_reason:
        return f"{entry.quantized_steps:g}, beyond {QUANTIZED_STEPS:g}: {entry.quantized_reason}"
    return f"{entry.quantized_steps:g}"
