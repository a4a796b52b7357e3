"""The runtime never crashes its host: sizes that overflow are errors, allocation failures
are MemoryError, no exception crosses the C API, and one Program shared by threads is safe."""

from __future__ import annotations

import threading
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from tests.native.support import (
    EXPORTED_API,
    ROOT,
    NativeInstall,
    defined_dynamic_symbols,
    run_op,
    standard_library_entity,
)


def test_a_reshape_whose_size_wraps_is_an_error_not_a_crash(native_install: NativeInstall) -> None:
    """[1] reshaped to [7, 0x6DB6DB6DB6DB6DB7] wraps to 1 element in 64 bits; it must be
    refused (run in a child process: a crash would take the test runner down)."""
    completed = native_install.python("""
import numpy as np, edgert
from tests.native.support import run_op
try:
    run_op(edgert, "edgert::reshape", [np.ones(1, np.float32)],
           {"shape": [7, 0x6DB6DB6DB6DB6DB7]})
except edgert.InvalidProgramError as error:
    print("refused:", error)
except edgert.EdgertError as error:
    print("refused:", type(error).__name__, error)
""", env={"PYTHONPATH": f"{native_install.prefix}:{ROOT}"})
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert completed.stdout.startswith("refused:") and "too large" in completed.stdout


def test_an_output_that_cannot_be_allocated_is_a_memory_error(edgert: ModuleType) -> None:
    """A 2^20 x 2^20 float32 outer product (4 TiB) is OutOfMemoryError, not SIGABRT."""
    column = np.ones((1 << 20, 1), np.float32)
    row = np.ones((1, 1 << 20), np.float32)
    with pytest.raises(MemoryError):
        run_op(edgert, "edgert::matmul", [column, row], backends=[])


def _c_program(edgert: ModuleType, native_install: NativeInstall, op: str,
               attributes: dict | None) -> tuple[object, object]:
    """libedgert through ctypes and a loaded one-node program (input [-1] float32)."""
    import ctypes

    from edgert.export import ProgramBuilder
    builder = ProgramBuilder()
    value = builder.input(np.float32, [-1])
    builder.output(builder.op(op, [value], attributes))
    data = builder.to_bytes()
    assert edgert.operators()  # the extension (and with it every kernel library) is loaded
    lib = ctypes.CDLL(str(native_install.library("edgert")))
    lib.edgert_last_error.restype = ctypes.c_char_p
    program = ctypes.c_void_p()
    assert lib.edgert_program_load_bytes(data, ctypes.c_size_t(len(data)),
                                         ctypes.byref(program)) == 0
    return lib, program


def test_the_c_api_bounds_ndim_and_sizes(edgert: ModuleType,
                                         native_install: NativeInstall) -> None:
    """Straight through the C API (numpy cannot even make some of these shapes)."""
    import ctypes

    lib, program = _c_program(edgert, native_install, "edgert::relu", None)
    try:
        dims = (ctypes.c_int64 * 1000)(*([1] * 1000))
        status = lib.edgert_program_set_input(program, ctypes.c_size_t(0), 0, dims,
                                              ctypes.c_size_t(1000), None, ctypes.c_size_t(4))
        assert status == 2 and b"at most 32" in lib.edgert_last_error()
        huge = (ctypes.c_int64 * 3)(1 << 40, 1 << 40, 1 << 40)
        status = lib.edgert_program_set_input(program, ctypes.c_size_t(0), 0, huge,
                                              ctypes.c_size_t(3), None, ctypes.c_size_t(4))
        assert status == 2, lib.edgert_last_error()
    finally:
        lib.edgert_program_free(program)


def test_bad_dtype_codes_are_refused_by_every_c_api_call(native_install: NativeInstall,
                                                         tmp_path: Path) -> None:
    """tests/native/programs/bad_dtype.c (test_sanitizers.py runs it under UBSan too)."""
    import subprocess

    from tests.native.support import MLP_MODEL, run_checked
    program = tmp_path / "bad_dtype"
    source = ROOT / "tests" / "native" / "programs" / "bad_dtype.c"
    run_checked(["gcc", "-O1", "-o", program, source,
                 f"-I{native_install.package_dir / 'include'}", f"-L{native_install.lib_dir}",
                 "-ledgert", "-Wl,--no-as-needed", "-ledgert_kernels",
                 f"-Wl,-rpath,{native_install.lib_dir}"])
    completed = subprocess.run([str(program), str(MLP_MODEL)], capture_output=True, text=True,
                               timeout=60, check=False)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "0 failures"


def test_four_threads_share_one_program(edgert: ModuleType) -> None:
    from edgert.export import ProgramBuilder
    builder = ProgramBuilder()
    value = builder.input(np.float32, [-1, 64])
    builder.output(builder.op("edgert::relu", [value], None))
    program = edgert.load(builder.to_bytes())
    failures: list[str] = []

    def work(seed: int) -> None:
        rng = np.random.default_rng(seed)
        for _ in range(200):
            x = rng.standard_normal((int(rng.integers(1, 64)), 64)).astype(np.float32)
            (out,) = program.run([x])
            if not np.array_equal(out, np.maximum(x, 0)):
                failures.append(f"thread {seed}: wrong result")
                return

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_a_failed_run_leaves_no_stale_output(edgert: ModuleType,
                                             native_install: NativeInstall) -> None:
    import ctypes

    lib, program = _c_program(edgert, native_install, "edgert::reshape", {"shape": [2, 2]})

    def run(count: int) -> int:
        values = np.ones(count, np.float32)
        shape = (ctypes.c_int64 * 1)(count)
        assert lib.edgert_program_set_input(program, ctypes.c_size_t(0), 0, shape,
                                            ctypes.c_size_t(1),
                                            ctypes.c_void_p(values.ctypes.data),
                                            ctypes.c_size_t(values.nbytes)) == 0
        return int(lib.edgert_program_run(program))

    def output() -> int:
        out = ctypes.c_void_p()
        return int(lib.edgert_program_output(program, ctypes.c_size_t(0), None, None, None,
                                             ctypes.byref(out), None))
    try:
        assert run(4) == 0 and output() == 0
        assert run(3) != 0                    # 3 elements cannot become [2, 2]
        assert output() == 2 and b"run the program first" in lib.edgert_last_error()
    finally:
        lib.edgert_program_free(program)


def _chain(pairs: int) -> bytes:
    from edgert.export import ProgramBuilder
    builder = ProgramBuilder()
    weight = builder.constant(np.ones((4, 4), np.float32))
    value = builder.input(np.float32, [1, 4])
    for _ in range(pairs):
        value = builder.op("edgert::relu", [builder.op("edgert::linear", [value, weight], None)],
                           None)
    builder.output(value)
    return builder.to_bytes()


def test_load_time_is_near_linear_in_the_graph(edgert: ModuleType) -> None:
    """Planning the CPU delegate's linear -> relu fusion: 8x the pairs may cost at most 20x
    the time (linear is 8x, the old rescanning planner was about 64x). The time is this
    thread's CPU time (time.thread_time), which other processes on the machine do not
    stretch, not the wall clock."""
    import time
    small, large = _chain(2000), _chain(16000)

    def load_seconds(data: bytes) -> float:
        best = float("inf")
        for _ in range(3):
            start = time.thread_time()
            program = edgert.load(data)
            best = min(best, time.thread_time() - start)
        assert program.delegated_nodes("cpu") == 0  # nothing ran yet
        return best

    ratio = load_seconds(large) / load_seconds(small)
    assert ratio < 20, f"16,000 pairs load {ratio:.1f}x slower than 2,000"


def test_the_standard_library_test_recognises_its_entities() -> None:
    assert standard_library_entity("_ZNSt6vectorIN6edgert6TensorESaIS1_EE17_M_realloc_insertEv")
    assert standard_library_entity("_ZSt8__invokeIRFN6edgert6StatusEvEEDav")   # edgert return type
    assert standard_library_entity("_ZTISt16bad_variant_access")
    assert standard_library_entity("_ZNKSs4sizeEv")
    assert not standard_library_entity("_ZN6edgert13find_operatorERKNSt7__cxx1112basic_string"
                                       "IcSt11char_traitsIcESaIcEEE")
    assert not standard_library_entity("_ZTVN6edgert7BackendE")
    assert not standard_library_entity("edgert_program_run")


def test_no_shipped_library_exports_a_standard_library_definition(
        native_install: NativeInstall) -> None:
    """Every shipped library's dynamic symbol table (nm -D --defined-only) holds only the
    API cmake/edgert.map exports: no std:: definition (a template instance of the C++ runtime
    would interpose between components), while the edgert classes' vtables and typeinfo
    other components derive from and catch stay exported."""
    libraries = [*native_install.lib_dir.glob("*.so"), *native_install.package_dir.glob("_C*.so")]
    assert {library.name for library in libraries} >= {
        "libedgert.so", "libedgert_threadpool.so", "libedgert_kernels.so",
        "libedgert_kernels_quantized.so", "libedgert_backend_cpu.so",
        "libedgert_export_plugin.so"}
    assert any(library.name.startswith("_C") for library in libraries)
    standard, unexpected = {}, {}
    for library in libraries:
        names = defined_dynamic_symbols(library)
        if found := [name for name in names if standard_library_entity(name)]:
            standard[library.name] = found[:5]
        if found := [name for name in names if not EXPORTED_API.match(name)]:
            unexpected[library.name] = found[:5]
    assert standard == {} and unexpected == {}
    # A demangled listing (nm -DC --defined-only | grep std::) still shows "std::" in 25 of
    # libedgert's names: edgert:: functions whose parameters are standard types
    # (edgert::find_operator(std::string const&)), part of the C++ API, none a std:: entity.
    with_std = [name for name in defined_dynamic_symbols(native_install.library("edgert"),
                                                         demangle=True) if "std::" in name]
    assert with_std and all(name.startswith("edgert::") for name in with_std)
    runtime = "\n".join(defined_dynamic_symbols(native_install.library("edgert"), demangle=True))
    assert "vtable for edgert::Backend" in runtime and "typeinfo for edgert::Prepared" in runtime


_TEMPLATE_INSTANCES = r"""
#include <functional>
namespace edgert {
struct __attribute__((visibility("default"))) Status { int code = 0; };
__attribute__((visibility("default"))) Status api() { return {}; }
}
// Instances of std:: templates with an edgert return type: "edgert::Status std::...".
template edgert::Status std::__invoke<edgert::Status (&)()>(edgert::Status (&)());
int use() { return std::function<edgert::Status()>(edgert::api)().code; }
"""


def test_the_version_script_keeps_std_instances_with_edgert_types_private(
        tmp_path: Path) -> None:
    """cmake/edgert.map on a library holding std:: template instances whose demangled names
    begin with an edgert type: the edgert API is exported, the instances are not."""
    import subprocess

    from tests.native.support import NATIVE, run_checked
    source = tmp_path / "instances.cpp"
    source.write_text(_TEMPLATE_INSTANCES)
    library = tmp_path / "libinstances.so"
    run_checked(["c++", "-std=c++17", "-O0", "-fPIC", "-shared", "-fvisibility=hidden",
                 "-o", library, source, f"-Wl,--version-script={NATIVE / 'cmake' / 'edgert.map'}"])
    listed = subprocess.run(["nm", "-D", "--defined-only", str(library)], capture_output=True,
                            text=True, check=True).stdout.split("\n")
    names = [line.split()[-1] for line in listed if len(line.split()) >= 3]
    assert "_ZN6edgert3apiEv" in names
    assert [name for name in names if standard_library_entity(name)] == []
    unrestricted = tmp_path / "libunrestricted.so"   # the same without the script: they leak
    run_checked(["c++", "-std=c++17", "-O0", "-fPIC", "-shared", "-fvisibility=hidden",
                 "-o", unrestricted, source])
    listed = subprocess.run(["nm", "-D", "--defined-only", str(unrestricted)],
                            capture_output=True, text=True, check=True).stdout.split("\n")
    assert any(standard_library_entity(line.split()[-1]) for line in listed if line.strip())


def test_an_operator_name_that_is_not_utf8_is_an_edgert_error(edgert: ModuleType) -> None:
    from edgert.export import ProgramBuilder, seal_program
    builder = ProgramBuilder()
    value = builder.input(np.float32, [1])
    builder.output(builder.op("edgert::zzzz", [value], None))
    data = seal_program(builder.to_bytes().replace(b"zzzz", b"\xff\xfe\xfd\xfc"))
    with pytest.raises(edgert.EdgertError) as error:
        edgert.load(data)
    assert "\ufffd" in str(error.value)


def test_the_export_plugin_refuses_sizes_that_overflow(edgert: ModuleType) -> None:
    """rows * cols would overflow int64: refused before any arithmetic."""
    import ctypes

    from edgert.quantization import _plugin
    library = _plugin()
    scales = (ctypes.c_float * 1)()
    zero_points = (ctypes.c_int32 * 1)()
    weight = (ctypes.c_float * 1)()
    quantized = (ctypes.c_int8 * 1)()
    code = library.edgert_export_quantize_weights_per_channel(
        weight, 1 << 40, 1 << 40, quantized, scales, zero_points)
    assert code == 2 and b"invalid sizes" in library.edgert_export_last_error()


def test_an_extreme_zero_point_does_not_overflow(edgert: ModuleType) -> None:
    """Dequantizing with a zero point of INT32_MIN: computed in 64 bits (UBSan reported a
    signed overflow in 32), the result is the exact float of (q - zero_point) * scale."""
    q = np.array([-128, 0, 127], np.int8)
    zero = np.array([np.iinfo(np.int32).min], np.int32)
    (x,) = run_op(edgert, "edgert_quantized::dequantize_per_tensor",
                  [q, np.array([1.0], np.float32), zero])
    expected = ((q.astype(np.int64) - int(zero[0])).astype(np.float32)).astype(np.float32)
    np.testing.assert_array_equal(x, expected)


_API_PREFIXES = ("edgert::", "edgert_", "PyInit_", "typeinfo for edgert::",
                 "typeinfo name for edgert::", "vtable for edgert::", "VTT for edgert::",
                 "guard variable for edgert::")


def test_each_library_exports_exactly_its_api(native_install: NativeInstall) -> None:
    """No libstdc++ instantiation (std::vector<...>::_M_realloc_insert, typeinfo for
    std::bad_variant_access, ...) is exported: components cannot interpose on each other."""
    import subprocess

    from release.binary import read_binary
    libraries = [*native_install.lib_dir.glob("*.so"), *native_install.package_dir.glob("_C*.so")]
    assert len(libraries) >= 6
    leaked = {}
    for library in libraries:
        names = [s.name for s in read_binary(library).dynamic_symbols if s.exported]
        demangled = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True,
                                   text=True, check=True).stdout.splitlines()
        outside = [name for name in demangled if not name.startswith(_API_PREFIXES)]
        if outside:
            leaked[library.name] = outside[:5]
    assert leaked == {}
