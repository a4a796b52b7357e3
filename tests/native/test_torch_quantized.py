"""edgert.quantization.quantize_program on programs exported from PyTorch: linear and conv2d
layers become int8 (weights per output channel, activations from calibration or per row /
image at run time), the outputs match eager PyTorch within the quantization step, and the
result loads only where the quantized kernels are, saying so otherwise."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest
import torch

from tests.native.support import NativeInstall
from tests.native.torch_models import CASES, Case

QUANTIZED = ["mlp", "cnn", "residual", "embedding", "encoder"]
# The quantization step: the outputs' range over the evaluation set divided by the 255
# steps of int8. Each layer's int8 activations and weights round once; the errors stay
# within a few steps of the final output range.
STEPS = 4


def samples(case: Case, count: int, seed: int) -> list[tuple[torch.Tensor, ...]]:
    """Inputs like the case's example: the same shapes and kinds, other values."""
    generator = torch.Generator().manual_seed(seed)
    made = []
    for _ in range(count):
        sample = []
        for example in case.example:
            if example.dtype == torch.int64:
                sample.append(
                    torch.randint(0, int(example.max()) + 1, example.shape, generator=generator)
                )
            else:
                sample.append(torch.randn(example.shape, generator=generator))
        made.append(tuple(sample))
    return made


@pytest.fixture(scope="module")
def quantized(edgert_for_module: ModuleType) -> dict[str, tuple[bytes, bytes, Case]]:
    from edgert.export import from_torch
    from edgert.quantization import quantize_program

    made = {}
    for case in (c for c in CASES if c.name in QUANTIZED):
        program = from_torch(case.make(), case.example, dynamic_shapes=case.dynamic)
        made[case.name] = (program, quantize_program(program, samples(case, 32, seed=1)), case)
    return made


def worst_in_steps(outputs: list[np.ndarray], expected: list[np.ndarray]) -> float:
    stacked = np.concatenate([e.ravel() for e in expected])
    step = (stacked.max() - stacked.min()) / 255
    worst = max(float(np.abs(o - e).max()) for o, e in zip(outputs, expected, strict=True))
    return worst / step


@pytest.mark.parametrize("name", QUANTIZED)
@pytest.mark.parametrize("activations", ["static", "dynamic"])
def test_quantized_model_is_within_the_quantization_step(
    edgert: ModuleType, quantized: dict[str, tuple[bytes, bytes, Case]], name: str, activations: str
) -> None:
    from edgert.quantization import quantize_program

    program, static, case = quantized[name]
    data = static if activations == "static" else quantize_program(program, activations="dynamic")
    loaded = edgert.load(data)
    model = case.make()
    outputs, expected = [], []
    for inputs in samples(case, 16, seed=2):
        with torch.no_grad():
            expected.append(model(*inputs).numpy())
        outputs.append(loaded.run([t.numpy() for t in inputs])[0])
    assert worst_in_steps(outputs, expected) <= STEPS
    # and it is quantized: no float weight of a linear or convolution is left
    from edgert.export import read_program

    ops = [node.op for node in read_program(data).nodes]
    assert "edgert::linear" not in ops and "edgert::conv2d" not in ops
    assert any(op.startswith("edgert_quantized::") for op in ops)


def test_quantized_weights_are_int8_per_channel(
    quantized: dict[str, tuple[bytes, bytes, Case]],
) -> None:
    from edgert.export import read_program

    _, data, _ = quantized["cnn"]
    program = read_program(data)
    convolutions = [n for n in program.nodes if n.op == "edgert_quantized::conv2d"]
    assert len(convolutions) == 3
    for node in convolutions:
        weight, scales, zeros = (program.values[i] for i in node.inputs[1:4])
        assert weight.dtype == "int8" and len(weight.shape) == 4
        assert scales.dtype == "float32" and scales.shape == (weight.shape[0],)
        assert zeros.dtype == "int32" and not zeros.data.any()
        input_scale, input_zero = (program.values[i] for i in node.inputs[5:7])
        assert input_scale.shape == (1,) and input_zero.dtype == "int32"
    # the fused relu of the float program survives quantization
    assert [n.attributes.get("activation") for n in convolutions].count("relu") >= 1


def test_static_quantization_needs_calibration(
    quantized: dict[str, tuple[bytes, bytes, Case]],
) -> None:
    from edgert.quantization import quantize_program

    program, _, _ = quantized["mlp"]
    with pytest.raises(ValueError, match="calibration"):
        quantize_program(program)
    with pytest.raises(ValueError, match="sequence of 1 arrays"):
        quantize_program(program, [[np.ones((2, 16), np.float32)] * 2])


def test_a_quantized_program_names_the_component_it_needs(
    native_install: NativeInstall,
    quantized: dict[str, tuple[bytes, bytes, Case]],
    tmp_path: pytest.TempPathFactory,
) -> None:
    """run_program_as_needed links the float kernels only: loading there says which
    component provides the quantized operators."""
    import subprocess

    _, data, _ = quantized["mlp"]
    path = tmp_path / "mlp_q.edgert"  # type: ignore[operator]
    path.write_bytes(data)
    completed = subprocess.run(
        [str(native_install.program("run_program_as_needed")), str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode != 0
    assert "kernels_quantized component" in completed.stderr
    assert "edgert_quantized::linear" in completed.stderr
