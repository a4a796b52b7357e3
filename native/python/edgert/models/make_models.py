"""Writes the shipped example models; the output is byte-identical on every run.

    python -m edgert.models.make_models [--out DIR]

``mlp.edgert`` is a float32 MLP with weights drawn from numpy's legacy RandomState (whose
stream never changes across numpy versions); ``mlp_quantized.edgert`` is its
``quantize_linear_layers`` form, which needs the export plugin.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from edgert.program_format import ProgramBuilder, save_program
from edgert.quantization import quantize_linear_layers

SEED = 20240611
LAYER_SIZES = (16, 32, 32, 8)


def build_mlp() -> bytes:
    """linear → relu → linear → relu → linear → softmax; input float32 [batch, 16]."""
    random = np.random.RandomState(SEED)
    builder = ProgramBuilder()
    hidden = builder.input("float32", (-1, LAYER_SIZES[0]))
    layers = [(LAYER_SIZES[i], LAYER_SIZES[i + 1]) for i in range(len(LAYER_SIZES) - 1)]
    for position, (fan_in, fan_out) in enumerate(layers):
        bound = 1.0 / np.sqrt(fan_in)  # the default initialization of torch.nn.Linear
        weight = random.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32)
        bias = random.uniform(-bound, bound, fan_out).astype(np.float32)
        hidden = builder.op(
            "edgert::linear", [hidden, builder.constant(weight), builder.constant(bias)]
        )
        last = position == len(layers) - 1
        hidden = (
            builder.op("edgert::softmax", [hidden], {"axis": -1})
            if last
            else builder.op("edgert::relu", [hidden])
        )
    builder.output(hidden)
    return builder.to_bytes()


def write_models(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    float_model = build_mlp()
    written = []
    for name, data in (
        ("mlp", float_model),
        ("mlp_quantized", quantize_linear_layers(float_model)),
    ):
        target = folder / f"{name}.edgert"
        save_program(data, target)   # by rename: a loaded copy keeps its mapping
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent,
        help="folder to write the models into (default: beside this script)",
    )
    arguments = parser.parse_args(argv)
    for path in write_models(arguments.out):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
