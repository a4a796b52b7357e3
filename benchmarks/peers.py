"""edgert against its peers on the same models, in one process. Two suites:

- ``models``: an MLP, a small CNN and a transformer encoder block, exported to edgert with
  ``edgert.export.from_torch`` and built as ONNX graphs with the ``onnx`` package from the same
  weights, run by ONNX Runtime's CPU execution provider and by eager PyTorch, with the same
  number of threads, at batch 1 and 64 (target edgert / ONNX Runtime <= 1.5).
- ``recurrent``: a 2-layer nn.LSTM and a nn.GRU (64 features in, hidden 128, 32 time steps,
  time first), exported with ``from_torch`` (one ``edgert::lstm`` / ``edgert::gru`` node
  each) and built as ONNX ``LSTM`` / ``GRU`` nodes from the same weights, at batch 1 and 32
  (targets edgert / ONNX Runtime <= 1.5 at batch 1, <= 1.0 at batch 32).
- ``zoo``: torchvision's mobilenet_v2, mobilenet_v3_small, efficientnet_b0 and resnet18
  (random weights, eval mode), exported with ``from_torch`` and with
  ``torch.onnx.export(dynamo=True)``, at batch 1 (target <= 1.0, issue 34). Each row also says
  which edgert kernel ran the model's depthwise convolutions (its path, by the geometry rule of
  native/kernels/convolution.cpp, and the instruction set ``edgert_kernels_isa()`` reports)
  and how many activations the export fused into convolutions and linears.

The sides take turns sample by sample, so load from other work on the machine falls on each
alike; the median of each side's samples is printed (at least 7, for ``--budget`` seconds), and
for the zoo the ratio is the median of the turns' own ratios.

    python benchmarks/peers.py [--prefix build/linux-x86_64-cpu/install] [--threads 1 2]
    python benchmarks/peers.py --suite zoo --threads 1
    python benchmarks/peers.py --suite recurrent --threads 1

Each side is checked to compute the same outputs (max relative difference to eager torch
printed) before it is timed. OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are removed from the
environment (the script runs itself again without them); ONNX Runtime and torch use their own
kernels. torchvision's wheel on PyPI is built against CUDA torch; next to a CPU torch its
operator library does not load, so the zoo imports torchvision without registering those
operators (the four models use none of them).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernels import DEFAULT_PREFIX, require_peers, rerun_without_openblas_overrides  # noqa: E402

TARGET = 1.5
ZOO_TARGET = 1.0
ZOO = ("mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0", "resnet18")
# The recurrent suite: features in, hidden size, time steps; batches and their targets.
RECURRENT_SIZES = (64, 128, 32)
RECURRENT_TARGETS = {1: 1.5, 32: 1.0}


def worst_difference(module: object, program: object, session: object, x: np.ndarray,
                     feed: str = "x") -> float:
    """The larger of edgert's and ONNX Runtime's largest difference from eager torch on
    ``x``, relative to eager's largest magnitude."""
    import torch

    with torch.no_grad():
        expected = module(torch.from_numpy(x)).numpy()  # type: ignore[operator]
    ours = program.run([x])[0]  # type: ignore[attr-defined]
    theirs = session.run(None, {feed: x})[0]  # type: ignore[attr-defined]
    scale = float(np.abs(expected).max())
    return max(float(np.abs(ours - expected).max()),
               float(np.abs(theirs - expected).max())) / scale


def samples_in_turns(functions: list[Callable[[], object]],
                     budget: float = 1.5) -> list[list[float]]:
    """Each function's times, the functions taking turns sample by sample so that other work
    on a shared machine falls on every side alike."""
    for function in functions:
        function()
    times: list[list[float]] = [[] for _ in functions]
    started = time.perf_counter()
    while len(times[0]) < 7 or (time.perf_counter() - started < budget and len(times[0]) < 2000):
        for function, samples in zip(functions, times, strict=True):
            start = time.perf_counter()
            function()
            samples.append(time.perf_counter() - start)
    return times


def median_seconds(functions: list[Callable[[], object]], budget: float = 1.5) -> list[float]:
    """The median time of each function, sampled in turns (samples_in_turns)."""
    return [statistics.median(samples) for samples in samples_in_turns(functions, budget)]


# ---------------------------------------------------------------------------- the models


def torch_models() -> dict[str, tuple[object, tuple[int, ...]]]:
    """name -> (eval-mode module, input shape without the batch)."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                        nn.Linear(512, 10))
    cnn = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                        nn.Flatten(), nn.Linear(64, 10))
    block = nn.TransformerEncoderLayer(128, 4, 256, dropout=0.0, batch_first=True)
    return {"mlp": (mlp.eval(), (256,)), "cnn": (cnn.eval(), (3, 32, 32)),
            "transformer": (block.eval(), (32, 128))}


def _tensor(name: str, array: np.ndarray) -> object:  # type: ignore[type-arg]
    from onnx import numpy_helper
    return numpy_helper.from_array(np.ascontiguousarray(array, dtype=np.float32), name)


class Graph:
    """A tiny builder of ONNX nodes with generated names."""

    def __init__(self) -> None:
        self.nodes: list[object] = []
        self.initializers: list[object] = []
        self.count = 0

    def constant(self, array: np.ndarray, dtype: object = np.float32) -> str:  # type: ignore[type-arg]
        from onnx import numpy_helper
        name = f"c{len(self.initializers)}"
        self.initializers.append(numpy_helper.from_array(np.asarray(array, dtype=dtype), name))
        return name

    def op(self, kind: str, inputs: list[str], **attributes: object) -> str:
        from onnx import helper
        self.count += 1
        output = f"v{self.count}"
        self.nodes.append(helper.make_node(kind, inputs, [output], **attributes))
        return output

    def linear(self, x: str, layer: object) -> str:
        weight = layer.weight.detach().numpy().T  # type: ignore[attr-defined]
        product = self.op("MatMul", [x, self.constant(weight)])
        return self.op("Add", [product, self.constant(layer.bias.detach().numpy())])  # type: ignore[attr-defined]

    def model(self, x: str, output: str, shape: list[object]) -> bytes:
        from onnx import TensorProto, helper
        graph = helper.make_graph(
            self.nodes, "peer", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
            [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)], self.initializers)
        made = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        return bytes(made.SerializeToString())


def onnx_mlp(module: object) -> bytes:
    graph = Graph()
    x = "x"
    for layer in module:  # type: ignore[attr-defined]
        x = graph.linear(x, layer) if hasattr(layer, "weight") else graph.op("Relu", [x])
    return graph.model("x", x, ["batch", 256])


def onnx_cnn(module: object) -> bytes:
    graph = Graph()
    x = "x"
    for layer in module:  # type: ignore[attr-defined]
        kind = type(layer).__name__
        if kind == "Conv2d":
            x = graph.op("Conv", [x, graph.constant(layer.weight.detach().numpy()),
                                  graph.constant(layer.bias.detach().numpy())], pads=[1, 1, 1, 1])
        elif kind == "ReLU":
            x = graph.op("Relu", [x])
        elif kind == "MaxPool2d":
            x = graph.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
        elif kind == "AdaptiveAvgPool2d":
            x = graph.op("GlobalAveragePool", [x])
        elif kind == "Flatten":
            x = graph.op("Flatten", [x], axis=1)
        else:
            x = graph.linear(x, layer)
    return graph.model("x", x, ["batch", 3, 32, 32])


def onnx_transformer(block: object) -> bytes:
    """TransformerEncoderLayer (post-norm, relu) as ONNX operators of opset 17."""
    graph = Graph()
    attention = block.self_attn  # type: ignore[attr-defined]
    width, heads = 128, 4
    projected = graph.op("Add", [graph.op("MatMul", ["x", graph.constant(
        attention.in_proj_weight.detach().numpy().T)]),
        graph.constant(attention.in_proj_bias.detach().numpy())])
    split = graph.constant(np.array([width] * 3), np.int64)
    q, k, v = (f"qkv{i}" for i in range(3))
    from onnx import helper
    graph.nodes.append(helper.make_node("Split", [projected, split], [q, k, v], axis=-1))
    shape = graph.constant(np.array([0, 0, heads, width // heads]), np.int64)

    def heads_first(item: str) -> str:
        return graph.op("Transpose", [graph.op("Reshape", [item, shape])], perm=[0, 2, 1, 3])

    scores = graph.op("MatMul", [heads_first(q), graph.op("Transpose", [heads_first(k)],
                                                          perm=[0, 1, 3, 2])])
    scaled = graph.op("Mul", [scores, graph.constant(np.array(1 / np.sqrt(width // heads)))])
    mixed = graph.op("MatMul", [graph.op("Softmax", [scaled], axis=-1), heads_first(v)])
    merged = graph.op("Reshape", [graph.op("Transpose", [mixed], perm=[0, 2, 1, 3]),
                                  graph.constant(np.array([0, 0, width]), np.int64)])
    out = graph.linear(merged, attention.out_proj)

    def norm(item: str, layer: object) -> str:
        return graph.op("LayerNormalization", [item, graph.constant(layer.weight.detach().numpy()),
                                               graph.constant(layer.bias.detach().numpy())],
                        axis=-1, epsilon=1e-5)

    first = norm(graph.op("Add", ["x", out]), block.norm1)  # type: ignore[attr-defined]
    hidden = graph.op("Relu", [graph.linear(first, block.linear1)])  # type: ignore[attr-defined]
    second = graph.op("Add", [first, graph.linear(hidden, block.linear2)])  # type: ignore[attr-defined]
    return graph.model("x", norm(second, block.norm2), ["batch", 32, width])  # type: ignore[attr-defined]


ONNX = {"mlp": onnx_mlp, "cnn": onnx_cnn, "transformer": onnx_transformer}


# ---------------------------------------------------------------------------- recurrent


def recurrent_models() -> dict[str, object]:
    """name -> eval-mode module taking x [T, B, features] and returning the output sequence."""
    import torch
    from torch import nn

    class Output(nn.Module):
        def __init__(self, layer: nn.Module) -> None:
            super().__init__()
            self.layer = layer

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.layer(x)[0]  # type: ignore[no-any-return]

    features, hidden, _ = RECURRENT_SIZES
    torch.manual_seed(0)
    return {"lstm2": Output(nn.LSTM(features, hidden, num_layers=2)).eval(),
            "gru": Output(nn.GRU(features, hidden)).eval()}


def onnx_recurrent(module: object) -> bytes:
    """ONNX LSTM / GRU nodes (one per layer) with torch's weights, its gates reordered to
    ONNX's: LSTM i, o, f, c from torch's i, f, g, o; GRU z, r, h from r, z, n, with
    linear_before_reset (torch's n gate)."""
    layer = module.layer  # type: ignore[attr-defined]
    lstm = type(layer).__name__ == "LSTM"
    order = [0, 3, 1, 2] if lstm else [1, 0, 2]
    hidden = layer.hidden_size
    graph = Graph()
    x = "x"

    def gates(array: np.ndarray) -> np.ndarray:  # type: ignore[type-arg]
        chunks = np.split(array, len(order), axis=0)
        return np.concatenate([chunks[i] for i in order], axis=0)

    for index in range(layer.num_layers):
        weights = [getattr(layer, f"{kind}_l{index}").detach().numpy()
                   for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
        w, r = (graph.constant(gates(m)[None]) for m in weights[:2])
        b = graph.constant(np.concatenate([gates(weights[2]), gates(weights[3])])[None])
        if lstm:
            y = graph.op("LSTM", [x, w, r, b], hidden_size=hidden)
        else:
            y = graph.op("GRU", [x, w, r, b], hidden_size=hidden, linear_before_reset=1)
        x = graph.op("Squeeze", [y, graph.constant(np.array([1]), np.int64)])
    return graph.model("x", x, [RECURRENT_SIZES[2], "batch", RECURRENT_SIZES[0]])


def measure_recurrent(threads: int, budget: float) -> list[str]:
    import edgert
    import onnxruntime
    import torch
    from edgert.export import from_torch, read_program

    edgert.set_threadpool_size(threads)
    torch.set_num_threads(threads)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    features, _, steps = RECURRENT_SIZES
    rows = []
    for name, module in recurrent_models().items():
        data = from_torch(module, (torch.randn(steps, 2, features),),
                          dynamic_shapes=({1: torch.export.Dim("batch", min=1, max=1024)},))
        nodes = len(read_program(data).nodes)
        program = edgert.load(data)
        session = onnxruntime.InferenceSession(onnx_recurrent(module), options,
                                               providers=["CPUExecutionProvider"])
        for batch, target in RECURRENT_TARGETS.items():
            x = np.random.default_rng(batch).standard_normal((steps, batch, features), np.float32)
            difference = worst_difference(module, program, session, x)
            with torch.no_grad():
                times = samples_in_turns([
                    lambda: program.run([x]),  # noqa: B023
                    lambda: session.run(None, {"x": x}),  # noqa: B023
                    lambda: module(torch.from_numpy(x)),  # type: ignore[operator]  # noqa: B023
                ], budget)
            edgert_time, onnx_time, torch_time = (statistics.median(t) for t in times)
            ratio = statistics.median(a / b for a, b in zip(*times[:2], strict=True))
            rows.append(f"{name:<8} {batch:>5} {threads:>7} {nodes:>5} {edgert_time * 1e3:>9.3f} "
                        f"{onnx_time * 1e3:>8.3f} {torch_time * 1e3:>8.3f} {ratio:>10.2f}"
                        f"{'' if ratio <= target else ' *'}  {difference:.1e}")
            print(rows[-1], flush=True)
    return rows


# ---------------------------------------------------------------------------- the run


def measure(threads: int) -> list[str]:
    import edgert
    import onnxruntime
    import torch
    from edgert.export import from_torch

    edgert.set_threadpool_size(threads)
    torch.set_num_threads(threads)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    rows = []
    for name, (module, shape) in torch_models().items():
        batch_dim = torch.export.Dim("batch", min=1, max=1024)
        program = edgert.load(from_torch(module, (torch.randn(2, *shape),),
                                         dynamic_shapes=({0: batch_dim},)))
        session = onnxruntime.InferenceSession(ONNX[name](module), options,
                                               providers=["CPUExecutionProvider"])
        for batch in (1, 64):
            x = np.random.default_rng(batch).standard_normal((batch, *shape), np.float32)
            difference = worst_difference(module, program, session, x)
            with torch.no_grad():
                edgert_time, onnx_time, torch_time = median_seconds([
                    lambda: program.run([x]),  # noqa: B023
                    lambda: session.run(None, {"x": x}),  # noqa: B023
                    lambda: module(torch.from_numpy(x)),  # type: ignore[operator]  # noqa: B023
                ])
            ratio = edgert_time / onnx_time
            rows.append(f"{name:<12} {batch:>5} {threads:>7} {edgert_time * 1e3:>9.3f} "
                        f"{onnx_time * 1e3:>9.3f} {torch_time * 1e3:>9.3f} {ratio:>7.2f}"
                        f"{'' if ratio <= TARGET else ' *'}  {difference:.1e}")
    return rows


# ---------------------------------------------------------------------------- the zoo


def torchvision_models() -> object:
    """``torchvision.models``, imported without torchvision's operator library (see the
    module docstring): a PyPI torchvision next to a CPU torch fails while registering it."""
    import types

    try:
        import torchvision
    except RuntimeError:
        for name in [n for n in sys.modules if n.startswith("torchvision")]:
            del sys.modules[name]
        sys.modules["torchvision._meta_registrations"] = types.ModuleType(
            "torchvision._meta_registrations")
        import torchvision
    return torchvision.models


def onnx_export(module: object, x: object) -> bytes:
    """The module as ONNX, through torch.onnx.export's dynamo exporter; ``x`` is the input,
    or a tuple of the inputs."""
    import tempfile

    import torch
    example = x if isinstance(x, tuple) else (x,)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "model.onnx"
        torch.onnx.export(module, example, str(path), dynamo=True, external_data=False,  # type: ignore[arg-type]
                          verbose=False)
        return path.read_bytes()


def kernels_library(edgert: object) -> Path:
    return Path(edgert.lib_dir()) / "libedgert_kernels.so"  # type: ignore[attr-defined]


def depthwise_kernel_name(library: Path) -> str:
    """Which depthwise kernel the library holds, from its (local) symbols."""
    import subprocess

    listed = subprocess.run(["nm", "-C", str(library)], capture_output=True, text=True,
                            check=False).stdout
    if "depthwise_flat_sums" in listed:
        return "plane"
    return "rows" if "depthwise_row" in listed else "?"


def depthwise_report(data: bytes, kernel: str, isa: str) -> str:
    """The program's depthwise conv2d nodes (one input channel per group), their kernel
    sizes and strides, and the path that ran them: "plane" (vectors across the rows of an
    output plane) unless the padding exceeds the input by more than 32, then "rows"."""
    from collections import Counter

    from edgert.export import read_program
    program = read_program(data)
    shapes: Counter[str] = Counter()
    paths: Counter[str] = Counter()
    fused: Counter[str] = Counter()
    for node in program.nodes:
        activation = node.attributes.get("activation", "none")
        if node.op in ("edgert::conv2d", "edgert::linear") and activation != "none":
            fused[str(activation)] += 1
        if node.op != "edgert::conv2d" or len(node.inputs) < 2:
            continue
        weight = program.values[node.inputs[1]].shape
        if len(weight) != 4 or weight[1] != 1:  # the depthwise kernel takes every C/groups == 1
            continue
        stride = node.attributes.get("stride", [1, 1])
        padding: list[int] = node.attributes.get("padding", [0, 0])  # type: ignore[assignment]
        shapes[f"{weight[2]}x{weight[3]}/s{stride[0]}"] += 1  # type: ignore[index]
        # the row path only where the padding exceeds the input by more than 32 (the input's
        # size is not recorded in the program: a padding of at most 32 never does)
        path = kernel if max(padding) <= 32 or kernel == "rows" else f"{kernel} or rows"
        paths[path] += 1
    fusions = ", ".join(f"{kind} {count}" for kind, count in sorted(fused.items())) or "none"
    if not shapes:
        return f"no depthwise conv; fused: {fusions}"
    sizes = " ".join(f"{shape}:{count}" for shape, count in sorted(shapes.items()))
    ran = " ".join(f"{path} {count}" for path, count in sorted(paths.items()))
    return f"{sum(shapes.values())} depthwise ({sizes}) ran {ran} [{isa}]; fused: {fusions}"


def measure_zoo(threads: int, names: list[str], budget: float) -> list[str]:
    import ctypes
    import gc

    import edgert
    import onnxruntime
    import torch
    from edgert.export import from_torch

    edgert.set_threadpool_size(threads)
    torch.set_num_threads(threads)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    library = kernels_library(edgert)
    handle = ctypes.CDLL(str(library))
    handle.edgert_kernels_isa.restype = ctypes.c_char_p
    isa = handle.edgert_kernels_isa().decode()
    kernel = depthwise_kernel_name(library)
    models = torchvision_models()
    rows = []
    for name in names:
        torch.manual_seed(0)
        module = getattr(models, name)(weights=None).eval()
        example = torch.randn(1, 3, 224, 224)
        with torch.no_grad():
            data = from_torch(module, (example,))
            onnx_model = onnx_export(module, example)
        program = edgert.load(data)
        session = onnxruntime.InferenceSession(onnx_model, options,
                                               providers=["CPUExecutionProvider"])
        feed = session.get_inputs()[0].name
        x = np.random.default_rng(1).standard_normal((1, 3, 224, 224), np.float32)
        difference = worst_difference(module, program, session, x, feed)
        gc.collect()
        gc.freeze()  # the export's objects: no collection walks them during the samples
        with torch.no_grad():
            times = samples_in_turns([
                lambda: program.run([x]),  # noqa: B023
                lambda: session.run(None, {feed: x}),  # noqa: B023
                lambda: module(torch.from_numpy(x)),  # noqa: B023
            ], budget)
        gc.unfreeze()
        edgert_time, onnx_time, torch_time = (statistics.median(t) for t in times)
        # the median of each turn's own ratio: a turn's two runs are a few ms apart, so a
        # change of the machine's load between turns moves both sides alike
        ratio = statistics.median(ours / theirs for ours, theirs in zip(*times[:2], strict=True))
        rows.append(f"{name:<19} {threads:>7} {edgert_time * 1e3:>9.2f} {onnx_time * 1e3:>8.2f} "
                    f"{torch_time * 1e3:>8.2f} {ratio:>10.2f}{'' if ratio <= ZOO_TARGET else ' *'}"
                    f"  {difference:.1e}  {depthwise_report(data, kernel, isa)}")
        print(rows[-1], flush=True)
    return rows


def main() -> int:
    rerun_without_openblas_overrides()
    require_peers()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prefix", type=Path, default=DEFAULT_PREFIX)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--suite", choices=["models", "zoo", "recurrent", "all"], default="all")
    parser.add_argument("--models", nargs="+", choices=ZOO, default=list(ZOO),
                        help="the zoo's models to run")
    parser.add_argument("--budget", type=float, default=1.5,
                        help="seconds of interleaved samples per case (at least 7 samples)")
    arguments = parser.parse_args()
    sys.path.insert(0, str(arguments.prefix))
    if arguments.suite in ("models", "all"):
        print("model        batch threads edgert ms  ORT ms  torch ms  edgert/ORT  max rel diff")
        for threads in arguments.threads:
            for row in measure(threads):
                print(row)
        print(f"* over the target ({TARGET})")
    if arguments.suite in ("recurrent", "all"):
        print("model    batch threads nodes edgert ms   ORT ms torch ms edgert/ORT  max rel diff")
        for threads in arguments.threads:
            measure_recurrent(threads, arguments.budget)
        print("* over the target (" + ", ".join(
            f"{target} at batch {batch}" for batch, target in RECURRENT_TARGETS.items()) + ")")
    if arguments.suite in ("zoo", "all"):
        print("zoo, batch 1        threads edgert ms   ORT ms torch ms edgert/ORT  max rel diff"
              "  depthwise kernel; fused activations")
        for threads in arguments.threads:
            measure_zoo(threads, arguments.models, arguments.budget)
        print(f"* over the target ({ZOO_TARGET})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
