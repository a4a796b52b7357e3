"""edgert's int8 programs (``edgert.quantization.quantize_program``) against its float programs
and ONNX Runtime, on torchvision's mobilenet_v2 and resnet18 (random weights, eval mode) at
batch 1, in one process: the sides take turns sample by sample (peers.py's samples_in_turns),
so load from other work on the machine falls on each alike.

Sides: edgert float32 (``from_torch``), edgert int8 (static activation qparams calibrated on
a few random batches), ONNX Runtime float32 (``torch.onnx.export(dynamo=True)``) and, when
``onnxruntime.quantization`` can make it, ONNX Runtime int8 (QDQ, ``quantize_static`` with
per-channel int8 weights and uint8 activations, calibrated on the same batches). Prints each
side's median and the medians of the turns' own ratios: edgert int8 / edgert float, edgert
int8 / ORT int8, edgert float / ORT float.

    python benchmarks/int8_models.py [--prefix build/linux-x86_64-cpu/install] [--threads 1]
                                     [--models mobilenet_v2 resnet18] [--budget 3]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernels import DEFAULT_PREFIX, require_peers, rerun_without_openblas_overrides  # noqa: E402
from peers import onnx_export, samples_in_turns, torchvision_models  # noqa: E402

MODELS = ("mobilenet_v2", "resnet18")
SHAPE = (1, 3, 224, 224)
CALIBRATION = 4  # random batches


def ort_int8(onnx_model: bytes, samples: list[np.ndarray] | list[dict[str, np.ndarray]]
             ) -> bytes | None:
    """The float ONNX model quantized to QDQ int8 by ONNX Runtime's quantize_static, or None
    when its tools cannot (a missing package, an operator it refuses). A sample is the
    first input's array, or a feed of every input by name."""
    try:
        import onnx
        from onnxruntime.quantization import (
            CalibrationDataReader,
            QuantFormat,
            QuantType,
            quantize_static,
        )
    except ImportError:
        return None
    model = onnx.load_from_string(onnx_model)
    feed = model.graph.input[0].name

    class Reader(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self.pending = iter(samples)

        def get_next(self) -> dict[str, np.ndarray] | None:
            sample = next(self.pending, None)
            if sample is None or isinstance(sample, dict):
                return sample
            return {feed: sample}

    with tempfile.TemporaryDirectory() as folder:
        source, target = Path(folder) / "float.onnx", Path(folder) / "int8.onnx"
        source.write_bytes(onnx_model)
        try:
            quantize_static(str(source), str(target), Reader(), quant_format=QuantFormat.QDQ,
                            per_channel=True, activation_type=QuantType.QUInt8,
                            weight_type=QuantType.QInt8)
        except Exception as error:  # noqa: BLE001 - reported, the row goes on without it
            print(f"  (ORT int8 skipped: {type(error).__name__}: {error})", flush=True)
            return None
        return target.read_bytes()


def measure(name: str, threads: int, budget: float) -> str:
    import edgert
    import onnxruntime
    import torch
    from edgert.export import from_torch
    from edgert.quantization import quantize_program

    torch.manual_seed(0)
    module = getattr(torchvision_models(), name)(weights=None).eval()
    example = torch.randn(*SHAPE)
    random = np.random.default_rng(2)
    samples = [random.standard_normal(SHAPE, np.float32) for _ in range(CALIBRATION)]
    with torch.no_grad():
        data = from_torch(module, (example,))
        onnx_model = onnx_export(module, example)
    float_program = edgert.load(data)
    int8_program = edgert.load(quantize_program(data, [[s] for s in samples]))
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    sessions = [onnxruntime.InferenceSession(onnx_model, options,
                                             providers=["CPUExecutionProvider"])]
    quantized = ort_int8(onnx_model, samples)
    if quantized is not None:
        sessions.append(onnxruntime.InferenceSession(quantized, options,
                                                     providers=["CPUExecutionProvider"]))
    feed = sessions[0].get_inputs()[0].name
    x = np.random.default_rng(1).standard_normal(SHAPE, np.float32)
    with torch.no_grad():
        expected = module(torch.from_numpy(x)).numpy()
    scale = float(np.abs(expected).max())
    float_diff = float(np.abs(float_program.run([x])[0] - expected).max()) / scale
    int8_diff = float(np.abs(int8_program.run([x])[0] - expected).max()) / scale
    gc.collect()
    gc.freeze()  # the export's objects: no collection walks them during the samples
    sides = [lambda: float_program.run([x]), lambda: int8_program.run([x])]
    sides += [lambda s=s: s.run(None, {feed: x}) for s in sessions]  # type: ignore[misc]
    times = samples_in_turns(sides, budget)
    gc.unfreeze()

    def ratio(a: int, b: int) -> float:
        return statistics.median(p / q for p, q in zip(times[a], times[b], strict=True))

    medians = [statistics.median(t) * 1e3 for t in times]
    ort8 = f"{medians[3]:>8.2f}" if quantized is not None else f"{'-':>8}"
    vs_ort8 = f"{ratio(1, 3):>9.2f}" if quantized is not None else f"{'-':>9}"
    return (f"{name:<13} {threads:>7} {medians[0]:>8.2f} {medians[1]:>8.2f} {medians[2]:>8.2f} "
            f"{ort8} {ratio(1, 0):>9.2f} {ratio(0, 2):>9.2f} {vs_ort8}   "
            f"{float_diff:.1e} / {int8_diff:.1e}")


def main() -> int:
    rerun_without_openblas_overrides()
    require_peers()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prefix", type=Path, default=DEFAULT_PREFIX)
    parser.add_argument("--threads", type=int, nargs="+", default=[1])
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--budget", type=float, default=3.0,
                        help="seconds of interleaved samples per model (at least 7 samples)")
    arguments = parser.parse_args()
    sys.path.insert(0, str(arguments.prefix))
    import edgert
    import torch
    print(f"{'batch 1':<13} {'threads':>7} {'float ms':>8} {'int8 ms':>8} {'ORT ms':>8} "
          f"{'ORT8 ms':>8} {'int8/flt':>9} {'flt/ORT':>9} {'int8/ORT8':>9}   "
          "max rel diff to eager: float / int8")
    for threads in arguments.threads:
        edgert.set_threadpool_size(threads)
        torch.set_num_threads(threads)
        for name in arguments.models:
            print(measure(name, threads, arguments.budget), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
