"""The model zoo (tests/native/zoo_models.py: torchvision, timm, Hugging Face transformers,
torch.nn recurrent and speech models, random weights) against ONNX Runtime and torch, in one
process, as one ratio table: for each model, edgert float32 (``from_torch``), ONNX Runtime
float32 (``torch.onnx.export(dynamo=True)``), eager torch and, for the zoo's classifiers
(the models whose quantized program the zoo checks), edgert int8 (``quantize_program``,
static activation qparams from four batches of the model's own inputs) and ONNX Runtime's
QDQ int8 model (``quantize_static``, calibrated on the same batches). The sides take turns
sample by sample (peers.py's samples_in_turns), so load from other work falls on each alike;
a ratio is the median of each turn's own ratio.

Inputs are the zoo's own (64x64 images, 6 to 12 tokens, a second of audio): small models
in which a runtime's per-node costs weigh more than at 224x224 (``peers.py --suite zoo``
times four torchvision CNNs at 224x224). Targets (issue 34): edgert / ORT <= 1.0 for every
CNN and transformer, <= 1.5 for recurrent models at batch 1; int8 / float <= 0.6 and
int8 / ORT int8 <= 1.0 where int8 is offered. A side that cannot be made (an ONNX export
torch refuses, a model ONNX Runtime's quantizer rejects) is shown as "-" with the reason
once, below the table.

    python benchmarks/zoo_peers.py [--prefix build/linux-x86_64-cpu/install] [--threads 1 2]
        [--batches 1 8] [--models resnet18 bert ...] [--budget 1.5]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from int8_models import ort_int8  # noqa: E402
from kernels import DEFAULT_PREFIX, require_peers, rerun_without_openblas_overrides  # noqa: E402
from peers import onnx_export, samples_in_turns  # noqa: E402

CALIBRATION = 4  # batches of the model's own inputs
SAME_SHAPES = 7  # a seed giving the example's shapes (see measure)
TARGETS = {"recurrent": 1.5, "other": 1.0}
INT8_TARGET, INT8_PEER_TARGET = 0.6, 1.0


def _reason(error: BaseException) -> str:
    text = next((line.strip() for line in str(error).splitlines() if line.strip()), "")
    return f"{type(error).__name__}: {text[:160]}"


def _cell(value: float | None, width: int) -> str:
    return f"{value:>{width}.2f}" if value is not None else f"{'-':>{width}}"


def measure(entry: object, batch: int, threads: int, budget: float) -> tuple[str, list[str]]:
    import edgert
    import onnxruntime
    import torch
    from edgert._torch import _leaves  # the tensors of a model's output, as the check reads them
    from edgert.export import from_torch
    from edgert.quantization import quantize_program

    torch.manual_seed(0)
    module = entry.make().eval()  # type: ignore[attr-defined]
    # the zoo's token inputs take their length from the seed (6 + seed % 7): seeds that are
    # multiples of 7 give the example's shapes, which the ONNX model is exported for
    example = entry.inputs(batch, 0)  # type: ignore[attr-defined]
    fresh = entry.inputs(batch, SAME_SHAPES)  # type: ignore[attr-defined]
    arrays = [t.numpy() for t in fresh]
    notes: list[str] = []
    with torch.no_grad():
        data = from_torch(module, example)
        expected = [t.numpy() for t in _leaves(module(*fresh))]
    program = edgert.load(data)
    sides: dict[str, Callable[[], object]] = {"edgert": lambda: program.run(arrays)}
    difference = _worst(expected, program.run(arrays))

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = quantized_session = None
    feeds: dict[str, np.ndarray] = {}
    try:
        with torch.no_grad():
            onnx_bytes = onnx_export(module, tuple(example))
        session = onnxruntime.InferenceSession(onnx_bytes, options,
                                               providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        if len(names) != len(arrays):
            raise ValueError(f"the ONNX model takes {len(names)} inputs, the module "
                             f"{len(arrays)}")
        feeds = dict(zip(names, arrays, strict=True))
        difference = max(difference, _worst(expected, session.run(None, feeds)))
    except Exception as error:  # noqa: BLE001 - reported, the row goes on without ORT
        notes.append(f"ORT float: {_reason(error)}")
        session = None

    int8_program = None
    if entry.logits:  # type: ignore[attr-defined]
        calibration = [[t.numpy() for t in entry.inputs(batch, SAME_SHAPES * (2 + k))]  # type: ignore[attr-defined]
                       for k in range(CALIBRATION)]
        int8_program = edgert.load(quantize_program(data, calibration))
        if session is not None:
            quantized = ort_int8(onnx_bytes, [dict(zip(feeds, sample, strict=True))
                                              for sample in calibration])
            if quantized is None:
                notes.append("ORT int8: onnxruntime.quantization could not quantize it")
            else:
                quantized_session = onnxruntime.InferenceSession(
                    quantized, options, providers=["CPUExecutionProvider"])

    if session is not None:
        sides["ort"] = lambda: session.run(None, feeds)
    sides["torch"] = lambda: module(*fresh)
    if int8_program is not None:
        sides["int8"] = lambda: int8_program.run(arrays)
    if quantized_session is not None:
        sides["ort8"] = lambda: quantized_session.run(None, feeds)
    gc.collect()
    gc.freeze()  # the export's objects: no collection walks them during the samples
    with torch.no_grad():
        times = dict(zip(sides, samples_in_turns(list(sides.values()), budget), strict=True))
    gc.unfreeze()

    def median(side: str) -> float | None:
        return statistics.median(times[side]) * 1e3 if side in times else None

    def ratio(a: str, b: str) -> float | None:
        if a not in times or b not in times:
            return None
        return statistics.median(p / q for p, q in zip(times[a], times[b], strict=True))

    kind = "recurrent" if "recurrent" in entry.kind else "other"  # type: ignore[attr-defined]
    target = TARGETS[kind]
    versus = ratio("edgert", "ort")
    int8_float, int8_ort = ratio("int8", "edgert"), ratio("int8", "ort8")
    flag = " *" if versus is not None and versus > target else "  "
    flag8 = " *" if ((int8_float is not None and int8_float > INT8_TARGET)
                     or (int8_ort is not None and int8_ort > INT8_PEER_TARGET)) else "  "
    text = (f"{entry.name:<26} {batch:>5} {threads:>7} {_cell(median('edgert'), 9)} "  # type: ignore[attr-defined]
            f"{_cell(median('ort'), 8)} {_cell(median('torch'), 8)} "
            f"{_cell(versus, 10)}{flag} {_cell(median('int8'), 8)} "
            f"{_cell(median('ort8'), 8)} {_cell(int8_float, 9)} "
            f"{_cell(int8_ort, 9)}{flag8} {difference:.1e}")
    return text, notes


def _worst(expected: list[np.ndarray], got: list[np.ndarray]) -> float:
    """The largest difference of any float output, relative to eager's largest magnitude."""
    worst = 0.0
    for want, have in zip(expected, got, strict=False):
        if want.dtype.kind != "f":
            continue
        scale = max(float(np.abs(want).max(initial=0.0)), 1e-12)
        worst = max(worst, float(np.abs(np.asarray(have, np.float64) - want).max(initial=0.0))
                    / scale)
    return worst


def main() -> int:
    rerun_without_openblas_overrides()
    require_peers()
    from tests.native.zoo_models import ZOO, libraries

    names = [entry.name for entry in ZOO if not entry.refusal]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prefix", type=Path, default=DEFAULT_PREFIX)
    parser.add_argument("--threads", type=int, nargs="+", default=[1])
    parser.add_argument("--batches", type=int, nargs="+", default=[1])
    parser.add_argument("--models", nargs="+", choices=names, default=names)
    parser.add_argument("--budget", type=float, default=1.5,
                        help="seconds of interleaved samples per row (at least 7 samples)")
    arguments = parser.parse_args()
    sys.path.insert(0, str(arguments.prefix))
    import edgert
    import torch

    libraries()  # torchvision's operator schemas, before any model is made
    print(f"{'model':<26} {'batch':>5} {'threads':>7} {'edgert ms':>9} {'ORT ms':>8} "
          f"{'torch ms':>8} {'edgert/ORT':>10}   {'int8 ms':>8} {'ORT8 ms':>8} "
          f"{'int8/flt':>9} {'int8/ORT8':>9}   max rel diff")
    notes: list[str] = []
    for threads in arguments.threads:
        edgert.set_threadpool_size(threads)
        torch.set_num_threads(threads)
        for entry in (e for e in ZOO if e.name in arguments.models):
            for batch in arguments.batches:
                try:
                    text, more = measure(entry, batch, threads, arguments.budget)
                except Exception as error:  # noqa: BLE001 - one model's failure, reported
                    text, more = f"{entry.name:<26} {batch:>5} {threads:>7}  failed", [
                        _reason(error)]
                print(text, flush=True)
                notes += [f"{entry.name}: {note}" for note in more if
                          f"{entry.name}: {note}" not in notes]
    print(f"* over the target (edgert/ORT <= {TARGETS['other']}, recurrent "
          f"{TARGETS['recurrent']}; int8/float <= {INT8_TARGET}, int8/ORT int8 <= "
          f"{INT8_PEER_TARGET})")
    for note in notes:
        print(f"  {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
