"""The export plugin next to the quantized kernels component in one process.

Each case runs in a fresh interpreter and loads the two libraries in one order:
- "plugin first": ctypes loads libedgert_export_plugin, then `import edgert` and its extension
  (which links libedgert_kernels_quantized) and the component by name;
- "component first": the extension and libedgert_kernels_quantized, then the plugin.
With the shipped layout the plugin links the component, so both orders work and the quantized
operators have one owner. With the old layout (the plugin carrying its own copy) every
edgert_quantized:: operator registers twice and the process aborts in either order.
"""

from __future__ import annotations

import re
import signal
import subprocess
import textwrap

import pytest

from tests.native.support import NativeInstall

LOAD_PLUGIN = """
import ctypes, edgert
plugin = ctypes.CDLL(str(edgert.lib_dir() / "libedgert_export_plugin.so"))
print("loaded plugin", flush=True)
"""
LOAD_COMPONENT = """
import edgert, edgert._C
edgert.load_library("kernels_quantized")
print("loaded component and extension", edgert.threadpool_size(), flush=True)
"""
USE_BOTH = """
import numpy as np
from edgert.quantization import quantize_weights_per_channel, reference_linear
owners = {entry.owner for entry in edgert.operators()
          if entry.name.startswith("edgert_quantized::")}
print("owners", sorted(owners))
assert len(owners) == 1 and next(iter(owners)).endswith("libedgert_kernels_quantized.so"), owners
weight = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
quantized, scales, zero_points = quantize_weights_per_channel(weight)
x = np.ones((2, 4), np.float32)
from edgert.export import ProgramBuilder
builder = ProgramBuilder()
value = builder.input("float32", (2, 4))
constants = [builder.constant(array) for array in (quantized, scales, zero_points)]
builder.output(builder.op("edgert_quantized::linear", [value, *constants]))
(runtime,) = edgert.load(builder.to_bytes()).run([x])
assert runtime.tobytes() == reference_linear(x, quantized, scales, zero_points).tobytes()
print("both work")
"""
ORDERS = {
    "plugin first": LOAD_PLUGIN + LOAD_COMPONENT,
    "component first": LOAD_COMPONENT + LOAD_PLUGIN,
}
DUPLICATE = re.compile(r"Re-registering edgert_quantized::\S+ \(operator\)")


def run_python(install: NativeInstall, code: str) -> subprocess.CompletedProcess[str]:
    return install.python(textwrap.dedent(code))


def plugin_bytes(install: NativeInstall) -> bytes:
    return install.library("edgert_export_plugin").read_bytes()


@pytest.mark.parametrize("order", sorted(ORDERS))
def test_plugin_and_component_coexist(native_install: NativeInstall, order: str) -> None:
    completed = run_python(native_install, ORDERS[order] + USE_BOTH)
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, f"{order}: exit {completed.returncode}\n{output}"
    assert "both work" in completed.stdout, output
    assert not DUPLICATE.search(output), output


def test_shipped_plugin_carries_no_kernel_copy(native_install: NativeInstall) -> None:
    data = plugin_bytes(native_install)
    assert b"op:edgert_quantized::" not in data, "the plugin registers quantized operators itself"
    assert b"libedgert_kernels_quantized.so\x00" in data, (
        "the plugin must link the shared component"
    )
    assert b"edgert_kernels_quantized_component\x00" not in data


def test_plugin_alone_runs_the_component_kernels(native_install: NativeInstall) -> None:
    code = (
        LOAD_PLUGIN
        + """
from edgert.quantization import quantize_weights_per_channel
import numpy as np
quantized, scales, _ = quantize_weights_per_channel(np.array([[1.0, -2.0, 0.5]], np.float32))
assert quantized.tolist() == [[64, -127, 32]], quantized
assert scales[0] == np.float32(2.0 / 127), scales
print("ok")
"""
    )
    completed = run_python(native_install, code)
    assert completed.returncode == 0 and "ok" in completed.stdout, (
        completed.stdout + completed.stderr
    )


@pytest.mark.parametrize("order", sorted(ORDERS))
def test_old_layout_aborts_in_either_order(
    native_old_layout_install: NativeInstall, order: str
) -> None:
    data = plugin_bytes(native_old_layout_install)
    assert b"op:edgert_quantized::" in data, "the old-layout plugin must carry its own kernel copy"
    completed = run_python(native_old_layout_install, ORDERS[order] + USE_BOTH)
    output = completed.stdout + completed.stderr
    assert completed.returncode == -signal.SIGABRT, (
        f"{order}: expected SIGABRT, exit {completed.returncode}\n{output}"
    )
    assert DUPLICATE.search(completed.stderr), output
    assert "both work" not in completed.stdout
