"""The model zoo (tests/native/zoo_models.py): architectures from torchvision, timm and
Hugging Face transformers, built from their constructors and configs with random weights,
each exported once with from_torch (a dynamic batch, and a dynamic sequence where the model
allows) and compared with eager PyTorch on fresh inputs of other batch sizes than the
export's: the largest error relative to the output's largest magnitude stays within the
model's stated tolerance (random-init outputs can be tiny, so the error is relative)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch

from tests.native.support import ROOT, NativeInstall, run_checked
from tests.native.zoo_models import (
    ARGMAX_AGREEMENT,
    TABLE_MARKER,
    ZOO,
    ZooModel,
    docs_table,
)


def relative_error(got: np.ndarray, want: torch.Tensor) -> float:
    reference = want.detach().numpy()
    assert got.shape == reference.shape and got.dtype == reference.dtype
    scale = float(np.abs(reference).max(initial=0.0))
    assert scale > 0.0
    return float(np.abs(got.astype(np.float64) - reference).max()) / scale


EXPORTED = [entry for entry in ZOO if not entry.refusal]
REFUSED = [entry for entry in ZOO if entry.refusal]
CLASSIFIERS = [entry for entry in EXPORTED if entry.logits]
BY_NAME = {entry.name: entry for entry in ZOO}


class ExportedZoo(dict[str, tuple[torch.nn.Module, bytes]]):
    """Every zoo model that exports, exported once, when a test first asks for it (the
    export's own check runs on its example, batch 2)."""

    def __missing__(self, name: str) -> tuple[torch.nn.Module, bytes]:
        from edgert.export import from_torch

        entry = BY_NAME[name]
        assert not entry.refusal, name
        model = entry.make()
        data = from_torch(model, entry.inputs(2, 0), dynamic_shapes=entry.dynamic())
        self[name] = (model, data)
        return model, data


@pytest.fixture(scope="module")
def zoo_programs(edgert_for_module: ModuleType) -> dict[str, tuple[torch.nn.Module, bytes]]:
    return ExportedZoo()


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


def quantized_figures(
    edgert: ModuleType, model: torch.nn.Module, data: bytes, entry: ZooModel
) -> tuple[float, float]:
    """(largest error in steps of the logits' range / 255, arg-max agreement) of the
    classifier's int8 program against eager, on 16 fresh samples (one batch); calibrated on
    8 others (two batches of 4, of other sequence lengths for text)."""
    from edgert.quantization import quantize_program

    calibration = [[tensor.numpy() for tensor in entry.inputs(4, seed)] for seed in (21, 22)]
    quantized = edgert.load(quantize_program(data, calibration))
    inputs = entry.inputs(16, 23)
    with torch.no_grad():
        expected = model(*inputs).numpy()
    (got,) = quantized.run([tensor.numpy() for tensor in inputs])
    assert got.shape == expected.shape and got.ndim == 2
    step = float(expected.max() - expected.min()) / 255
    assert step > 0.0
    steps = float(np.abs(got.astype(np.float64) - expected).max()) / step
    agreement = float(np.mean(got.argmax(axis=1) == expected.argmax(axis=1)))
    return steps, agreement


@pytest.mark.parametrize("entry", CLASSIFIERS, ids=[entry.name for entry in CLASSIFIERS])
def test_zoo_classifier_quantized_stays_within_its_steps_and_arg_max(
    edgert: ModuleType, zoo_programs: dict[str, tuple[torch.nn.Module, bytes]], entry: ZooModel
) -> None:
    """The exported program quantized (static int8 activations): within the model's stated
    steps of eager (zoo_models.QUANTIZED_STEPS unless its reason in the docs' table says
    otherwise), and the same arg-max on at least ARGMAX_AGREEMENT of the samples."""
    model, data = zoo_programs[entry.name]
    steps, agreement = quantized_figures(edgert, model, data, entry)
    assert steps <= entry.quantized_steps, (entry.name, steps)
    assert agreement >= ARGMAX_AGREEMENT, (entry.name, agreement)


# One exported zoo model of each family, for the C++ example consumer.
FAMILIES = {
    "cnn-classifier": "timm_resnet10t",
    "vision-transformer": "hf_vit",
    "encoder-only-text": "bert",
    "decoder-only-text-rope-rmsnorm": "llama",
    "encoder-decoder-text": "t5",
    "speech-conv1d-group-norm": "wav2vec2",
    "recurrent": "lstm_classifier",
    "segmentation-upsampling": "lraspp_mobilenet_v3",
}


@pytest.mark.parametrize("name", list(FAMILIES.values()), ids=list(FAMILIES))
def test_the_cpp_example_prints_the_bytes_python_computes(
    edgert: ModuleType,
    native_install: NativeInstall,
    zoo_programs: dict[str, tuple[torch.nn.Module, bytes]],
    name: str,
    tmp_path: Path,
) -> None:
    """The exported program saved with its inputs' run-time dimensions fixed to the input
    files' (the C++ example runs them as 1), run by native/examples/run_program.cpp and by
    ``edgert.load(path).run`` on the same input files: the same output bytes, which are also
    those of the exported (dynamic) program."""
    from edgert.export import read_program, write_program

    entry = BY_NAME[name]
    _, data = zoo_programs[name]
    arrays = [tensor.numpy() for tensor in entry.inputs(2, 13)]
    program = read_program(data)
    for index, array in zip(program.inputs, arrays, strict=True):
        program.values[index].shape = tuple(array.shape)
    path = tmp_path / f"{name}.edgert"
    path.write_bytes(write_program(program))
    files = []
    for position, array in enumerate(arrays):
        files.append(tmp_path / f"input{position}.raw")
        files[-1].write_bytes(array.tobytes())
    raw = tmp_path / "run_program.out"
    run_checked([native_install.program("run_program"), path, *files, "--output-raw", raw])
    read = [
        np.fromfile(file, array.dtype).reshape(array.shape)
        for file, array in zip(files, arrays, strict=True)
    ]
    python = b"".join(output.tobytes() for output in edgert.load(path).run(read))
    assert raw.read_bytes() == python
    dynamic = b"".join(output.tobytes() for output in edgert.load(data).run(read))
    assert dynamic == python


def test_the_docs_model_table_is_the_zoo() -> None:
    """docs/bring-your-model.md lists what exports today from this zoo, not by hand."""
    text = (ROOT / "docs" / "bring-your-model.md").read_text(encoding="utf-8")
    start = text.index(TABLE_MARKER) + len(TABLE_MARKER)
    end = text.index("\n\n", start) + 1
    assert text[start:end] == docs_table(), (
        "regenerate with: python -c 'from tests.native.zoo_models import docs_table; "
        'print(docs_table(), end="")\''
    )


class _DataDependent(torch.nn.Module):
    """What no program of fixed operators computes: a shape that depends on the data."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[x > 0].sum().reshape(1)


def test_what_does_not_export_says_why_in_one_line() -> None:
    """A zoo model that does not export stays in the zoo with its refusal, so that the docs'
    table says what is left (none today); a shape that depends on the data is refused."""
    from edgert.export import ExportError, from_torch

    cases = [(entry.make(), entry.inputs(2, 0), entry.dynamic(), entry.refusal)
             for entry in REFUSED]
    cases.append((_DataDependent(), (torch.randn(2, 5),), None,
                  "boolean-mask indexing gives a shape that depends on the data"))
    for model, inputs, dynamic, refusal in cases:
        with pytest.raises(ExportError) as raised:
            from_torch(model, inputs, dynamic_shapes=dynamic)
        message = str(raised.value)
        assert "\n" not in message and refusal in message
