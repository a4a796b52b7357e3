"""Example models shipped with edgert, written by ``make_models.py`` beside this file.

- ``mlp``: a float32 MLP 16 → 32 → 32 → 8 (linear, relu, linear, relu, linear, softmax),
  input float32 [batch, 16], output float32 [batch, 8] probabilities.
- ``mlp_quantized``: the same model after ``edgert.quantization.quantize_linear_layers``
  (needs the kernels_quantized component).
"""

from __future__ import annotations

from pathlib import Path

from edgert._errors import NotFoundError

__all__ = ["names", "path"]


def names() -> list[str]:
    """Names of the shipped models."""
    return sorted(file.stem for file in Path(__file__).parent.glob("*.edgert"))


def path(name: str) -> Path:
    """Path of a shipped model by name ("mlp" or "mlp.edgert")."""
    stem = name[: -len(".edgert")] if name.endswith(".edgert") else name
    file = Path(__file__).parent / f"{stem}.edgert"
    if not file.is_file():
        raise NotFoundError(f"no shipped model named {name!r}; available: {', '.join(names())}")
    return file
