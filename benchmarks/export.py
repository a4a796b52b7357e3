"""The PyTorch front end's costs, each against a reference measured in the same run:

1. Export: ``edgert.export.from_torch`` on a 10-layer CNN and a 4-layer transformer encoder,
   against ``torch.export.export`` of the same module (what from_torch adds: torch's
   decomposition to the core operator set, the lowering, and the check against eager).
   Target: under 2 s beyond torch.export.
2. ResNet-50 (torchvision, 25.6M parameters, random weights, one 224x224 image):
   ``torch.export.export`` and ``from_torch`` timed in turns (interleaved, so both see the
   same machine load), the median of the per-turn ratios. Target: at most 2x.
3. Load: ``edgert.load`` of exported MLPs holding 10, 20 and 40 MB of weights, against
   reading the same bytes (``Path.read_bytes``): the time per MB should stay flat.

    python benchmarks/export.py [--prefix build/linux-x86_64-cpu/install] [--runs 3]
        [--only resnet50]
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PREFIX = ROOT / "build" / "linux-x86_64-cpu" / "install"


def median_seconds(function: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def models() -> dict[str, tuple[object, tuple[object, ...]]]:
    import torch
    from torch import nn

    torch.manual_seed(0)
    layers: list[nn.Module] = []
    channels = 3
    for _ in range(10):
        layers += [nn.Conv2d(channels, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU()]
        channels = 32
    cnn = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10)).eval()
    encoder = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(128, 4, 256, dropout=0.0, batch_first=True),
        4,
        enable_nested_tensor=False,
    ).eval()
    return {
        "cnn-10": (cnn, (torch.randn(1, 3, 32, 32),)),
        "transformer-4": (encoder, (torch.randn(1, 16, 128),)),
    }


def export_costs(runs: int) -> None:
    import torch
    from edgert.export import from_torch

    print("model           torch.export  from_torch  beyond torch.export")
    for name, (model, example) in models().items():
        exporting = functools.partial(torch.export.export, model, example)
        with torch.no_grad():
            reference_time = median_seconds(exporting, runs)
        ours = median_seconds(functools.partial(from_torch, model, example), runs)
        print(f"{name:15} {reference_time:10.2f} s {ours:9.2f} s {ours - reference_time:12.2f} s")


RATIO_TARGET = 2.0


def resnet50_ratio(runs: int) -> float:
    """from_torch / torch.export on ResNet-50, timed in turns; prints and returns the median
    of the per-turn ratios."""
    import torch
    from edgert.export import from_torch

    sys.path.insert(0, str(ROOT))
    from tests.native.zoo_models import libraries  # torchvision, importable beside CPU torch

    torch.manual_seed(0)
    model = libraries()[0].resnet50().eval()
    example = (torch.randn(1, 3, 224, 224),)
    parameters = sum(p.numel() for p in model.parameters())
    from_torch(model, example)  # first calls load what both use
    ratios, unchecked_ratios, ours, unchecked, theirs = [], [], [], [], []
    for _ in range(runs):
        start = time.perf_counter()
        with torch.no_grad():
            torch.export.export(model, example)
        middle = time.perf_counter()
        from_torch(model, example)
        end = time.perf_counter()
        from_torch(model, example, check=False)  # without the run against eager
        last = time.perf_counter()
        theirs.append(middle - start)
        ours.append(end - middle)
        unchecked.append(last - end)
        ratios.append((end - middle) / (middle - start))
        unchecked_ratios.append((last - end) / (middle - start))
    ratio = statistics.median(ratios)
    print(
        f"\nresnet50 ({parameters / 1e6:.1f}M parameters), {runs} turns: torch.export "
        f"{statistics.median(theirs):.2f} s, from_torch {statistics.median(ours):.2f} s "
        f"(check=False {statistics.median(unchecked):.2f} s), median ratio {ratio:.2f}x "
        f"(check=False {statistics.median(unchecked_ratios):.2f}x); target <= "
        f"{RATIO_TARGET:.0f}x: {'met' if ratio <= RATIO_TARGET else 'NOT met'}"
    )
    return ratio


def load_costs(runs: int) -> None:
    import edgert
    import numpy as np
    from edgert.export import ProgramBuilder

    print("\nweights   read_bytes   edgert.load   load per MB   load / read")
    with tempfile.TemporaryDirectory() as folder:
        for megabytes in (10, 20, 40):
            width = 1024
            layers = megabytes * 2**20 // (width * width * 4)
            builder = ProgramBuilder()
            hidden = builder.input("float32", (-1, width))
            rng = np.random.default_rng(0)
            for _ in range(layers):
                weight = rng.standard_normal((width, width), np.float32)
                hidden = builder.op("edgert::linear", [hidden, builder.constant(weight)])
            builder.output(hidden)
            path = Path(folder) / f"weights-{megabytes}.edgert"
            builder.save(path)
            read = median_seconds(path.read_bytes, runs)
            load = median_seconds(functools.partial(edgert.load, path), runs)
            print(
                f"{megabytes:4} MB {read * 1e3:10.1f} ms {load * 1e3:11.1f} ms "
                f"{load * 1e3 / megabytes:10.2f} ms {load / read:10.1f}x"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--prefix",
        type=Path,
        default=DEFAULT_PREFIX,
        help="an installed native tree holding the edgert package",
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", choices=("export", "resnet50", "load"), default=None)
    arguments = parser.parse_args()
    sys.path.insert(0, str(arguments.prefix))
    if arguments.only in (None, "export"):
        export_costs(arguments.runs)
    if arguments.only in (None, "resnet50"):
        resnet50_ratio(max(arguments.runs, 5))
    if arguments.only in (None, "load"):
        load_costs(arguments.runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
