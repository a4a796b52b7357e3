"""One scenario of the CUDA delegate on the stand-in runtime, run in a fresh process whose
only libcudart is the stand-in (LD_LIBRARY_PATH) and whose edgert is the CUDA build's site
(PYTHONPATH). Prints one JSON object.

    python scenario.py prepared|fault|fork|no-device|mixed"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import sys
from pathlib import Path

import edgert
import numpy as np
from edgert.export import ProgramBuilder

# The site is the build's install tree, which has no build record: load the delegate the way
# an installed wheel's import does.
ctypes.CDLL(str(Path(edgert.__file__).parent / "lib" / "libedgert_backend_cuda.so"),
            mode=ctypes.RTLD_GLOBAL)

FIELDS = ("h2d_bytes", "d2h_bytes", "pinned_copies", "pageable_copies", "device_allocations",
          "device_frees", "pinned_allocations", "launches", "default_stream_uses",
          "live_device_bytes", "live_streams")


class Stats(ctypes.Structure):
    _fields_ = [(name, ctypes.c_ulonglong) for name in FIELDS]


def stand_in() -> ctypes.CDLL:
    mapped = {line.split()[-1] for line in open("/proc/self/maps") if "libcudart" in line}
    assert len(mapped) == 1, mapped
    return ctypes.CDLL(mapped.pop())


def stats() -> dict[str, int]:
    out = Stats()
    stand_in().host_cudart_stats(ctypes.byref(out))
    return {name: getattr(out, name) for name in FIELDS}


def delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {name: after[name] - before[name] for name in FIELDS}


def copied(direction: int) -> int:
    library = ctypes.CDLL(str(edgert.lib_dir() / "libedgert_backend_cuda.so"))
    function = library.edgert_backend_cuda_copied_bytes
    function.restype = ctypes.c_ulonglong
    return int(function(direction))


def mlp() -> bytes:
    return (Path(edgert.__file__).parent / "models" / "mlp.edgert").read_bytes()


def add_softmax() -> bytes:
    builder = ProgramBuilder()
    x, y = builder.input("float32", (4, 1, 8)), builder.input("float32", (3, 8))
    builder.output(builder.op("edgert::softmax", [builder.op("edgert::add", [x, y])],
                              {"axis": 1}))
    return builder.to_bytes()


def inputs_for(program: edgert.Program, batch: int, seed: int) -> list[np.ndarray]:
    rng = np.random.RandomState(seed)
    return [rng.randn(*[batch if d < 0 else d for d in info.shape]).astype(np.float32)
            for info in program.input_info]


def on_default_backends(inputs: list[np.ndarray]) -> int:
    """Nodes the "cuda" delegate ran in a program left on the default backends."""
    program = edgert.load(mlp())
    program.run(inputs)
    return program.delegated_nodes("cuda")


def on(data: bytes, backends: list[str]) -> edgert.Program:
    program = edgert.load(data)
    program.set_backends(backends)
    return program


def same(got: list[np.ndarray], expected: list[np.ndarray]) -> bool:
    return len(got) == len(expected) and all(
        g.shape == e.shape and np.allclose(g, e, rtol=1e-5, atol=1e-6)
        for g, e in zip(got, expected, strict=True))


def prepared() -> dict[str, object]:
    result: dict[str, object] = {"backends": edgert.available_backends()}
    start = stats()
    gpu, cpu = on(mlp(), ["cuda"]), on(mlp(), [])
    inputs = inputs_for(gpu, 4, 1)
    first = gpu.run(inputs)
    after_first = stats()
    uploads = copied(0)
    second = gpu.run(inputs)
    after_second = stats()
    result.update(
        delegated=gpu.delegated_nodes("cuda"),
        first=delta(start, after_first), second=delta(after_first, after_second),
        second_uploaded=copied(0) - uploads,
        input_bytes=sum(x.nbytes for x in inputs),
        output_bytes=sum(y.nbytes for y in second),
        matches_cpu=same(first, cpu.run(inputs)) and same(second, first))
    bigger = inputs_for(gpu, 64, 2)
    before = stats()
    result["bigger_matches_cpu"] = same(gpu.run(bigger), cpu.run(bigger))
    result["bigger"] = delta(before, stats())
    other = on(add_softmax(), ["cuda"])
    pair = inputs_for(other, 1, 3)
    result["add_softmax_matches_cpu"] = same(other.run(pair), on(add_softmax(), []).run(pair))
    result["two_programs_live_streams"] = stats()["live_streams"]
    result["add_softmax_delegated"] = other.delegated_nodes("cuda")
    del gpu, other
    gc.collect()
    result["released"] = stats()
    return result


def fault() -> dict[str, object]:
    gpu = on(mlp(), ["cuda"])
    inputs = inputs_for(gpu, 4, 1)
    try:
        gpu.run(inputs)
        error = ""
    except edgert.EdgertError as caught:
        error = str(caught)
    try:
        on(mlp(), ["cuda"])
        again = ""
    except edgert.EdgertError as caught:
        again = str(caught)
    return {"error": error, "again": again, "default_on_cuda": on_default_backends(inputs)}


def fork() -> dict[str, object]:
    gpu = on(mlp(), ["cuda"])
    inputs = inputs_for(gpu, 4, 1)
    parent = gpu.run(inputs)
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            gpu.run(inputs)
            message = ""
        except edgert.EdgertError as caught:
            message = str(caught)
        os.write(writer, json.dumps({"message": message,
                                     "default_on_cuda": on_default_backends(inputs)}).encode())
        os._exit(0)
    os.close(writer)
    seen = json.loads(os.read(reader, 65536))
    os.waitpid(child, 0)
    return {"child": seen, "parent_again": same(gpu.run(inputs), parent)}


def no_device() -> dict[str, object]:
    try:
        on(mlp(), ["cuda"])
        error = ""
    except edgert.EdgertError as caught:
        error = str(caught)
    inputs = inputs_for(edgert.load(mlp()), 4, 1)
    return {"default_on_cuda": on_default_backends(inputs), "error": error,
            "available": edgert.available_backends(), "installed": edgert.installed_backends()}


def mixed() -> dict[str, object]:
    """Models exported from PyTorch hold many operators the delegate does not run: it claims
    its own runs of nodes and the CPU kernels run the rest, in one program, on the default
    backends."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    import torch
    from edgert.export import from_torch, read_program

    from tests.native.torch_models import CASES
    result: dict[str, object] = {}
    for case in (c for c in CASES if c.name in ("encoder", "cnn", "mlp")):
        data = from_torch(case.make(), case.example, dynamic_shapes=case.dynamic, check=False)
        inputs = [t.numpy() for t in case.inputs[-1]]
        default, cpu = edgert.load(data), on(data, [])
        got = default.run(inputs)
        with torch.no_grad():
            eager = case.make()(*case.inputs[-1])
        result[case.name] = {
            "nodes": len(read_program(data).nodes),
            "delegated": default.delegated_nodes("cuda"),
            "matches_cpu": same(got, cpu.run(inputs)),
            "matches_eager": same(got, [eager.numpy()])}
    return result


SCENARIOS = {"prepared": prepared, "fault": fault, "fork": fork, "no-device": no_device,
             "mixed": mixed}

if __name__ == "__main__":
    print(json.dumps(SCENARIOS[sys.argv[1]]()))
