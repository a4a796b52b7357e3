"""The operator table of docs/bring-your-model.md, made from what is installed: the
registry's operators and owning components, and the ATen operators the PyTorch front end
lowers to each (``python -m edgert --operators``)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Protocol

from edgert._native import component_of

HEADER = "| edgert operator | component | lowered from (ATen) |\n|---|---|---|\n"
# What edgert.quantization.quantize_program rewrites into the quantized operators.
QUANTIZED_FROM = {
    "edgert_quantized::linear": "`edgert::linear` (quantize_program)",
    "edgert_quantized::conv2d": "`edgert::conv2d` (quantize_program)",
}


def _lowered_from() -> tuple[dict[str, list[str]], list[str]]:
    """edgert operator -> ATen operators lowered to it, and the ATen operators that become
    no node at all (views and copies that change nothing)."""
    from edgert._torch.operators import supported_operators

    by_edgert: dict[str, list[str]] = defaultdict(list)
    vanish = []
    for aten, targets in supported_operators():
        if targets.startswith("("):
            vanish.append(aten)
            continue
        for target in targets.split(", "):
            by_edgert[target].append(aten)
    return by_edgert, vanish


class Registered(Protocol):
    """An operator of the registry (``edgert.operators()``): its name and owning library."""

    @property
    def name(self) -> str: ...

    @property
    def owner(self) -> str: ...


def operator_table(registered: Iterable[Registered]) -> str:
    """The markdown table of the ``registered`` operators (``edgert.operators()``), then the
    list of ATen operators that disappear."""
    try:
        lowered, vanish = _lowered_from()
    except ModuleNotFoundError:  # no torch: the registry's side only
        lowered, vanish = {}, []
    rows = []
    for entry in registered:
        sources = ", ".join(f"`{name}`" for name in sorted(lowered.get(entry.name, [])))
        sources = sources or QUANTIZED_FROM.get(entry.name, "–")
        rows.append(f"| `{entry.name}` | {component_of(entry.owner)} | {sources} |\n")
    text = HEADER + "".join(rows)
    if vanish:
        text += (
            "\nFolded away (no node in the program): "
            + ", ".join(f"`{name}`" for name in sorted(vanish))
            + ".\n"
        )
    return text
