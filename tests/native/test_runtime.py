"""The runtime through Python and the C API: running, input checks, registries, planning."""

from __future__ import annotations

import ctypes
import subprocess
import sys
import threading
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from tests.native.support import MLP_MODEL, NATIVE, NativeInstall

sys.path.insert(0, str(NATIVE / "python"))
from edgert.export import ProgramBuilder  # noqa: E402


def small_mlp() -> tuple[bytes, list[np.ndarray]]:
    random = np.random.RandomState(3)
    weights = [
        random.uniform(-1, 1, shape).astype(np.float32) for shape in ((5, 4), (5,), (3, 5), (3,))
    ]
    builder = ProgramBuilder()
    x = builder.input("float32", (-1, 4))
    hidden = builder.op(
        "edgert::linear", [x, builder.constant(weights[0]), builder.constant(weights[1])]
    )
    hidden = builder.op("edgert::relu", [hidden])
    hidden = builder.op(
        "edgert::linear", [hidden, builder.constant(weights[2]), builder.constant(weights[3])]
    )
    builder.output(builder.op("edgert::softmax", [hidden], {"axis": -1}))
    return builder.to_bytes(), weights


def test_small_mlp_matches_numpy(edgert: ModuleType) -> None:
    data, (w1, b1, w2, b2) = small_mlp()
    x = np.random.RandomState(0).standard_normal((6, 4)).astype(np.float32)
    (result,) = edgert.load(data).run([x])
    logits = np.maximum(x @ w1.T + b1, 0) @ w2.T + b2
    expected = np.exp(logits - logits.max(-1, keepdims=True))
    expected /= expected.sum(-1, keepdims=True)
    assert result.shape == (6, 3) and result.dtype == np.float32
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-6)


def test_input_dtype_mismatch_raises_with_native_message(edgert: ModuleType) -> None:
    program = edgert.load(small_mlp()[0])
    with pytest.raises(edgert.InvalidArgumentError,
                       match="input 0 is an int32 array, but the program expects float32"):
        program.run([np.zeros((2, 4), np.int32)])


def test_input_shape_mismatch_raises(edgert: ModuleType) -> None:
    program = edgert.load(small_mlp()[0])
    with pytest.raises(
        edgert.InvalidArgumentError, match=r"expected shape \[-1, 4\], got \[2, 5\]"
    ):
        program.run([np.zeros((2, 5), np.float32)])
    with pytest.raises(edgert.InvalidArgumentError, match="takes 1 inputs, 2 given"):
        program.run([np.zeros((2, 4), np.float32)] * 2)
    with pytest.raises(edgert.InvalidArgumentError, match="float64"):
        program.run([np.zeros((2, 4))])


@pytest.mark.parametrize(
    ("operator", "component"),
    [
        ("edgert::no_such_op",
         "no shipped component provides it: operators of namespace 'edgert::' come from the "
         "kernels component (libedgert_kernels.so), which is loaded and has no "
         "'edgert::no_such_op'"),
        ("edgert_quantized::no_such_op",
         "no shipped component provides it: operators of namespace 'edgert_quantized::' come "
         "from the kernels_quantized component (libedgert_kernels_quantized.so), which is "
         "loaded and has no 'edgert_quantized::no_such_op'"),
        ("vendor::op",
         "no shipped component provides namespace 'vendor::' (the components of edgert "
         "provide 'edgert::' and 'edgert_quantized::'"),
        ("relu", "it names no namespace"),
    ],
)
def test_unknown_operator_fails_at_load_naming_the_provider(
    edgert: ModuleType, operator: str, component: str
) -> None:
    builder = ProgramBuilder()
    builder.output(builder.op(operator, [builder.input("float32", (1,))]))
    with pytest.raises(edgert.NotFoundError) as raised:
        edgert.load(builder.to_bytes())
    assert f"unknown operator '{operator}' (node 0) in this edgert " in str(raised.value)
    assert component in str(raised.value)
    assert "link edgert::kernels" not in str(raised.value)   # Python links every component
    assert "python -m edgert --operators" in str(raised.value)


def test_missing_file_is_not_found(edgert: ModuleType, tmp_path: Path) -> None:
    with pytest.raises(edgert.NotFoundError):
        edgert.load(tmp_path / "absent.edgert")


def test_available_and_installed_backends_of_the_cpu_build(edgert: ModuleType) -> None:
    """The CPU build: its one backend is installed and can run; asking leaves no program
    behind and changes nothing for programs already loaded."""
    program = edgert.load(MLP_MODEL)
    program.set_backends([])
    assert edgert.available_backends() == ["cpu"]
    assert edgert.installed_backends() == ["cpu"]
    assert [entry.name for entry in edgert.backends()] == ["cpu"]
    program.run([np.ones((1, 16), np.float32)])
    assert program.delegated_nodes("cpu") == 0      # still on the plain kernels


def test_backends_choice_changes_delegation_not_results(edgert: ModuleType) -> None:
    program = edgert.load(MLP_MODEL)
    x = np.linspace(-2, 2, 3 * 16, dtype=np.float32).reshape(3, 16)
    default = program.run([x])[0]
    assert program.delegated_nodes("cpu") > 0  # the CPU delegate is available, so default
    program.set_backends([])
    plain = program.run([x])[0]
    assert program.delegated_nodes("cpu") == 0
    program.set_backends(["cpu"])
    np.testing.assert_allclose(program.run([x])[0], plain, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(default, plain, rtol=1e-6, atol=1e-7)
    with pytest.raises(edgert.NotFoundError, match="unknown backend 'gpu9'"):
        program.set_backends(["gpu9"])


def test_registries_list_each_name_once_with_its_owner(edgert: ModuleType) -> None:
    operators = edgert.operators()
    names = [entry.name for entry in operators]
    assert names == sorted(set(names))
    owners = {entry.name: Path(entry.owner).name for entry in operators}
    assert owners["edgert::linear"] == "libedgert_kernels.so"
    assert owners["edgert_quantized::linear"] == "libedgert_kernels_quantized.so"
    assert [(b.name, Path(b.owner).name) for b in edgert.backends()] == [
        ("cpu", "libedgert_backend_cpu.so")
    ]


def test_c_api_reports_codes_and_keeps_errors_per_thread(native_install: NativeInstall) -> None:
    library = ctypes.CDLL(str(native_install.library("edgert")))
    library.edgert_last_error.restype = ctypes.c_char_p
    library.edgert_version.restype = ctypes.c_char_p
    handle = ctypes.c_void_p()
    assert library.edgert_program_load_file(b"/nonexistent.edgert", ctypes.byref(handle)) == 3
    assert b"/nonexistent.edgert" in library.edgert_last_error()
    seen: list[bytes] = []
    worker = threading.Thread(target=lambda: seen.append(library.edgert_last_error()))
    worker.start()
    worker.join()
    assert seen == [b""]
    assert library.edgert_version() == b"0.1.0"
    library.edgert_runtime_component.restype = ctypes.c_char_p
    assert library.edgert_runtime_component() == b"runtime"


def test_version_and_paths(edgert: ModuleType, native_install: NativeInstall) -> None:
    assert edgert.__version__ == edgert._native.extension().version()
    for flag, expected in (
        ("--cmake-dir", edgert.cmake_dir()),
        ("--lib-dir", edgert.lib_dir()),
        ("--include-dir", edgert.include_dir()),
        ("--version", edgert.__version__),
    ):
        completed = subprocess.run(
            [sys.executable, "-m", "edgert", flag],
            capture_output=True,
            text=True,
            env=native_install.env(),
            check=True,
        )
        assert completed.stdout.strip() == str(expected)
    assert (edgert.cmake_dir() / "edgertConfig.cmake").is_file()
    assert (edgert.include_dir() / "edgert" / "runtime.hpp").is_file()


def test_load_library_by_component_name(edgert: ModuleType) -> None:
    library = edgert.load_library("runtime")
    library.edgert_runtime_component.restype = ctypes.c_char_p
    assert library.edgert_runtime_component() == b"runtime"
    with pytest.raises(edgert.NotFoundError, match="does not ship component 'backend_tpu'"):
        edgert.load_library("backend_tpu")


# ------------------------------------------------------------ duplicate registration

DUPLICATE_SOURCE = r"""
#include "edgert/registry.hpp"
static edgert::Status kernel(edgert::KernelContext&) { return edgert::Status::success(); }
EDGERT_REGISTER_OPERATOR("@NAME@", kernel);
"""


def build_registering_library(native_install: NativeInstall, folder: Path, operator: str) -> Path:
    source = folder / "registers.cpp"
    source.write_text(DUPLICATE_SOURCE.replace("@NAME@", operator))
    output = folder / "libregisters_a.so"
    subprocess.run(
        [
            "g++",
            "-std=c++17",
            "-shared",
            "-fPIC",
            "-O1",
            f"-I{native_install.package_dir / 'include'}",
            str(source),
            f"-L{native_install.lib_dir}",
            "-ledgert",
            "-o",
            str(output),
        ],
        check=True,
        capture_output=True,
    )
    return output


@pytest.mark.parametrize("operator", ["test::duplicate", "edgert::relu"])
def test_duplicate_registration_aborts_naming_both_owners(
    native_install: NativeInstall, tmp_path: Path, operator: str
) -> None:
    first = build_registering_library(native_install, tmp_path, operator)
    second = first.with_name("libregisters_b.so")
    second.write_bytes(first.read_bytes())
    code = (
        "import ctypes, sys, edgert\n"
        "edgert.operators()\n"  # the kernels are loaded and registered first
        "ctypes.CDLL(sys.argv[1]); ctypes.CDLL(sys.argv[2]); print('survived')"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code, str(first), str(second)],
        capture_output=True,
        text=True,
        env=native_install.env(),
        timeout=60,
    )
    assert completed.returncode < 0  # SIGABRT
    assert "survived" not in completed.stdout
    assert f"Re-registering {operator} (operator)" in completed.stderr
    expected_first = "libedgert_kernels.so" if operator.startswith("edgert::") else first.name
    assert expected_first in completed.stderr
    assert (first.name if operator.startswith("edgert::") else second.name) in completed.stderr


# ------------------------------------------------------------ exceptions between libraries

THROWING_SOURCE = r"""
#include "edgert/registry.hpp"
static edgert::Status kernel(edgert::KernelContext&) { throw 42; }
EDGERT_REGISTER_OPERATOR("test::throws", kernel);
"""


def test_an_exception_no_handler_names_becomes_a_status(
    native_install: NativeInstall, tmp_path: Path
) -> None:
    """Program::run ends with catch (...) (native/runtime/src/caught_exception.hpp): where each
    library has its own copy of the C++ runtime (zig builds) another library's std::bad_alloc
    matches no typed handler, as an int matches none here; the status names the type."""
    source = tmp_path / "throws.cpp"
    source.write_text(THROWING_SOURCE)
    library = tmp_path / "libthrows.so"
    subprocess.run(
        ["g++", "-std=c++17", "-shared", "-fPIC", "-O1",
         f"-I{native_install.package_dir / 'include'}", str(source),
         f"-L{native_install.lib_dir}", "-ledgert", "-o", str(library)],
        check=True, capture_output=True,
    )
    code = (
        "import ctypes, sys, numpy, edgert\n"
        "from edgert.export import ProgramBuilder\n"
        "edgert.operators()\n"  # loads libedgert, which the test library links
        "ctypes.CDLL(sys.argv[1])\n"
        "builder = ProgramBuilder()\n"
        "builder.output(builder.op('test::throws', [builder.input('float32', (1,))]))\n"
        "try:\n"
        "    edgert.load(builder.to_bytes()).run([numpy.zeros(1, numpy.float32)])\n"
        "except edgert.InternalError as error:\n"
        "    print('status:', error)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code, str(library)], capture_output=True, text=True,
        env=native_install.env(), timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    assert "status: unexpected C++ exception i while running the program" in completed.stdout
