"""The model zoo (tests/native/zoo_models.py): architectures from torchvision, timm and
Hugging Face transformers, built from their constructors and configs with random weights,
each exported once with from_torch (a dynamic batch, and a dynamic sequence where the model
allows) and compared with eager PyTorch on fresh inputs of other batch sizes than the
export's: the largest error relative to the output's largest magnitude stays within the
model's stated tolerance (random-init outputs can be tiny, so the error is relative)."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest
import torch

from tests.native.support import ROOT
from tests.native.zoo_models import TABLE_MARKER, ZOO, ZooModel, docs_table


def relative_error(got: np.ndarray, want: torch.Tensor) -> float:
    reference = want.detach().numpy()
    assert got.shape == reference.shape and got.dtype == reference.dtype
    scale = float(np.abs(reference).max(initial=0.0))
    assert scale > 0.0
    return float(np.abs(got.astype(np.float64) - reference).max()) / scale


EXPORTED = [entry for entry in ZOO if not entry.refusal]
REFUSED = [entry for entry in ZOO if entry.refusal]


@pytest.fixture(scope="module")
def zoo_programs(edgert_for_module: ModuleType) -> dict[str, tuple[torch.nn.Module, bytes]]:
    """Every zoo model that exports, exported once (the export's own check runs on its
    example, batch 2)."""
    from edgert.export import from_torch

    programs = {}
    for entry in EXPORTED:
        model = entry.make()
        data = from_torch(model, entry.inputs(2, 0), dynamic_shapes=entry.dynamic())
        programs[entry.name] = (model, data)
    return programs


@pytest.mark.parametrize("entry", EXPORTED, ids=[entry.name for entry in EXPORTED])
def test_zoo_model_matches_eager(
    edgert: ModuleType, zoo_programs: dict[str, tuple[torch.nn.Module, bytes]], entry: ZooModel
) -> None:
    """On fresh inputs (other seeds than the export's; other batch sizes where the batch is
    dynamic), within the model's relative tolerance."""
    model, data = zoo_programs[entry.name]
    program = edgert.load(data)
    batches = [1, 3] if entry.dynamic_batch else [2, 2]
    assert all((info.shape[0] == -1) == entry.dynamic_batch for info in program.input_info)
    for batch, seed in zip(batches, (11, 12), strict=True):
        inputs = entry.inputs(batch, seed)
        with torch.no_grad():
            expected = model(*inputs)
        (got,) = program.run([tensor.numpy() for tensor in inputs])
        assert relative_error(got, expected) <= entry.rtol, entry.name


def test_the_docs_model_table_is_the_zoo() -> None:
    """docs/bring-your-model.md lists what exports today from this zoo, not by hand."""
    text = (ROOT / "docs" / "bring-your-model.md").read_text(encoding="utf-8")
    start = text.index(TABLE_MARKER) + len(TABLE_MARKER)
    end = text.index("\n\n", start) + 1
    assert text[start:end] == docs_table(), (
        "regenerate with: python -c 'from tests.native.zoo_models import docs_table; "
        'print(docs_table(), end="")\''
    )


@pytest.mark.parametrize("entry", REFUSED, ids=[entry.name for entry in REFUSED])
def test_a_zoo_model_that_does_not_export_says_why_in_one_line(entry: ZooModel) -> None:
    """It stays in the zoo with its refusal, so that the docs' table says what is left."""
    from edgert.export import ExportError, from_torch

    with pytest.raises(ExportError) as raised:
        from_torch(entry.make(), entry.inputs(2, 0), dynamic_shapes=entry.dynamic())
    message = str(raised.value)
    assert "\n" not in message and entry.refusal in message
