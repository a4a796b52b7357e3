"""Program.run and edgert._C.run: how arrays cross (inputs read in place or converted, outputs
independent writable arrays), the C-level lock that makes one handle safe from several
threads, the GIL released while a program runs, and forked children of a process whose
threads are running a program."""

from __future__ import annotations

import sys
import threading
from types import ModuleType

import numpy as np
import pytest

from tests.native.support import NATIVE, ROOT, NativeInstall

sys.path.insert(0, str(NATIVE / "python"))
from edgert.export import ProgramBuilder  # noqa: E402


def relu_program(shape: tuple[int, ...] = (-1, 16)) -> bytes:
    builder = ProgramBuilder()
    builder.output(builder.op("edgert::relu", [builder.input("float32", shape)]))
    return builder.to_bytes()


def aliasing_program(constant: np.ndarray) -> bytes:
    """Outputs: x itself, a constant, r = relu(x) and a reshape of r (a view of it)."""
    builder = ProgramBuilder()
    x = builder.input("float32", (2, 4))
    r = builder.op("edgert::relu", [x])
    for value in (x, builder.constant(constant), r,
                  builder.op("edgert::reshape", [r], {"shape": [8]})):
        builder.output(value)
    return builder.to_bytes()


def test_outputs_are_independent_writable_arrays(edgert: ModuleType) -> None:
    """Whatever an output shares inside the program (an input, a constant, another output's
    memory), the caller gets arrays it may write without changing anything else."""
    constant = np.arange(8, dtype=np.float32).reshape(2, 4)
    program = edgert.load(aliasing_program(constant))
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    same, kept, r, flat = program.run([x])
    for array in (same, kept, r, flat):
        assert array.flags.writeable and array.flags.c_contiguous
        array[...] = 42
    np.testing.assert_array_equal(x, np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4))
    again = program.run([x])
    np.testing.assert_array_equal(again[1], constant)          # the constant is unchanged
    np.testing.assert_array_equal(again[3], np.maximum(x, 0).reshape(8))


def test_an_output_of_its_own_is_returned_without_a_copy(edgert: ModuleType) -> None:
    program = edgert.load(relu_program())
    x = np.linspace(-1, 1, 4 * 16, dtype=np.float32).reshape(4, 16)
    (out,) = program.run([x])
    assert type(out.base).__name__ == "TensorMemory"   # the array is over the tensor's memory
    assert not np.shares_memory(out, x)
    np.testing.assert_array_equal(out, np.maximum(x, 0))


class _Subclass(np.ndarray):
    """An ndarray subclass: the extension reads only exact ndarrays in place."""


@pytest.mark.parametrize("make", [
    lambda x: x[:, ::2].repeat(2, axis=1),                    # strided: copied
    lambda x: np.asfortranarray(x),
    lambda x: x.astype(">f4"),                                # big-endian: converted
    lambda x: x.view(_Subclass),                              # not exactly an ndarray
    lambda x: np.ascontiguousarray(x)[None][0],
])
def test_inputs_that_cannot_be_read_in_place_are_converted(edgert: ModuleType, make) -> None:
    program = edgert.load(relu_program())
    x = np.linspace(-1, 1, 3 * 16, dtype=np.float32).reshape(3, 16)
    (out,) = program.run([make(x)])
    np.testing.assert_array_equal(out, np.maximum(np.asarray(make(x), np.float32), 0))


def test_bad_inputs_are_errors_that_say_what_to_pass(edgert: ModuleType) -> None:
    program = edgert.load(relu_program())
    with pytest.raises(edgert.InvalidArgumentError) as raised:
        program.run([np.ones((1, 16))])
    assert str(raised.value) == ("input 0 is a float64 array, but the program expects float32: "
                                 "pass float32, e.g. x.astype(np.float32)")
    with pytest.raises(edgert.InvalidArgumentError, match="the program takes 1 inputs, 2 given"):
        program.run([np.ones((1, 16), np.float32)] * 2)
    with pytest.raises(TypeError, match="run takes a sequence of arrays"):
        program.run("x")
    with pytest.raises(edgert.InvalidArgumentError, match="expected shape"):
        program.run([np.ones((1, 15), np.float32)])
    (out,) = program.run((np.ones((1, 16), np.float32),))    # a tuple is a sequence too
    assert out.shape == (1, 16)


def two_inputs_program() -> bytes:
    """where(condition, x, y): a bool input, then two float32 ones, then an int64 one
    (returned as it is)."""
    builder = ProgramBuilder()
    condition = builder.input("bool", (-1,))
    x, y = builder.input("float32", (-1,)), builder.input("float32", (-1,))
    builder.output(builder.op("edgert::where", [condition, x, y]))
    builder.output(builder.input("int64", (-1,)))
    return builder.to_bytes()


def test_python_lists_and_scalars_become_the_declared_dtype(edgert: ModuleType) -> None:
    """The documented conversion: Python values take the declared dtype of their input when
    the kind of number stays (bools anywhere, integers to integers or floats, floats to
    floats); Python floats to float32 round to nearest."""
    program = edgert.load(two_inputs_program())
    picked, ids = program.run([[True, False, True], [0.1, 2, 3], (4, 5, 6), [7, 8, 2**40]])
    assert picked.dtype == np.float32 and ids.dtype == np.int64
    np.testing.assert_array_equal(picked, np.array([0.1, 5, 3], np.float32))
    np.testing.assert_array_equal(ids, [7, 8, 2**40])
    picked, ids = program.run([[], [], [], []])                # empty: no values to change
    assert picked.shape == (0,) and picked.dtype == np.float32 and ids.dtype == np.int64
    (out,) = edgert.load(relu_program(())).run([-2.5])          # a scalar: a 0-d input
    assert out.shape == () and out == 0
    (out,) = edgert.load(relu_program()).run([[[1, -1] * 8]])   # ints to float32
    np.testing.assert_array_equal(out, np.maximum(np.array([[1, -1] * 8], np.float32), 0))


@pytest.mark.parametrize(("index", "value", "words"), [
    (1, [1.0, float("nan"), 1e300], "float32 (they would overflow to infinity"),
    (1, [2**24 + 1, 0, 0], "float32 (they would round"),
    (3, [2**63, 0, 0], "a list of integers too large for a 64-bit integer dtype, which int64 "
                       "does not hold exactly"),
    (3, [2**64], "a list of integers too large for a 64-bit integer dtype"),
    (3, [object()], "a list numpy reads as object, not as numbers"),
    (3, [1.5, 0, 0], "is a list of floats, but the program expects int64: pass int64 values"),
    (0, [1, 0, 1], "is a list of integers, but the program expects bool: pass bool values"),
    (2, ["a", "b", "c"], "numpy reads as <U1, not as numbers"),
    (2, [[1.0], [2.0, 3.0]], "numpy cannot read as one array"),
])
def test_python_values_that_would_change_are_refused_naming_the_input(
        edgert: ModuleType, index: int, value: object, words: str) -> None:
    program = edgert.load(two_inputs_program())
    inputs: list[object] = [[True] * 3, [1.0] * 3, [2.0] * 3, [1, 2, 3]]
    inputs[index] = value
    with pytest.raises(edgert.InvalidArgumentError) as raised:
        program.run(inputs)
    assert str(raised.value).startswith(f"input {index} is "), raised.value
    assert words in str(raised.value)


@pytest.mark.parametrize(("index", "array", "given", "expected"), [
    (0, np.ones(3, np.int8), "an int8 array", "bool"),
    (1, np.ones(3), "a float64 array", "float32"),
    (2, np.ones(3, np.int32), "an int32 array", "float32"),
    (2, np.float64(1.0), "a float64 scalar", "float32"),
    (3, np.ones(3, np.int32), "an int32 array", "int64"),
    (3, np.ones(3, np.float32)[::2].repeat(2)[:3], "a float32 array", "int64"),
])
def test_arrays_of_another_dtype_are_never_converted(
        edgert: ModuleType, index: int, array: np.ndarray, given: str, expected: str) -> None:
    """An array says what dtype it is: one that is not the input's is an error naming the
    input, both dtypes and the conversion to write, whatever the other inputs are."""
    program = edgert.load(two_inputs_program())
    inputs: list[object] = [np.ones(3, bool), [1.0] * 3, np.ones(3, np.float32),
                            np.ones(3, np.int64)]
    inputs[index] = array
    with pytest.raises(edgert.InvalidArgumentError) as raised:
        program.run(inputs)
    assert str(raised.value) == (f"input {index} is {given}, but the program expects "
                                 f"{expected}: pass {expected}, e.g. x.astype(np.{expected})")


def test_a_wrong_shape_after_conversion_is_the_runtimes_error(edgert: ModuleType) -> None:
    program = edgert.load(relu_program())
    with pytest.raises(edgert.InvalidArgumentError, match=r"input 0: expected shape \[-1, 16\]"):
        program.run([[1.0] * 15])


FALLBACK = """
import numpy as np, edgert, edgert._arrays, edgert._native
from tests.native.support import run_op
assert edgert._arrays.configure(edgert._native.extension(), buffer_protocol=False) is False
x = np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 3, 4)
(out,) = run_op(edgert, "edgert::relu", [x])
assert out.dtype == np.float32 and out.flags.writeable
np.testing.assert_array_equal(out, np.maximum(x, 0))
(flags,) = run_op(edgert, "edgert::relu", [np.arange(-3, 3, dtype=np.int64)])
np.testing.assert_array_equal(flags, np.maximum(np.arange(-3, 3), 0))
print("bytes path ok")
"""


def test_without_the_buffer_protocol_arrays_go_through_bytes(
        native_install: NativeInstall) -> None:
    """The path a Windows Python 3.9 or 3.10 takes (its python3.dll lacks the buffer
    protocol): forced here, it gives the same results."""
    completed = native_install.python(
        FALLBACK, env={"PYTHONPATH": f"{native_install.prefix}:{ROOT}"})
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.strip() == "bytes path ok"


def test_threads_hammering_one_handle_through_the_extension(edgert: ModuleType) -> None:
    """_C.run on one handle from four threads: each must get its own input's result every
    time (the runtime's lock covers binding, running and taking the outputs)."""
    from edgert._native import extension
    program = edgert.load(relu_program())
    run, handle = extension().run, program._handle
    failures: list[str] = []

    def hammer(seed: int) -> None:
        rng = np.random.default_rng(seed)
        for _ in range(400):
            x = rng.standard_normal((int(rng.integers(1, 32)), 16)).astype(np.float32)
            (out,) = run(handle, [x])
            if not np.array_equal(out, np.maximum(x, 0)):
                failures.append(f"thread {seed}: another thread's result")
                return

    threads = [threading.Thread(target=hammer, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def heavy_program() -> bytes:
    """A hundred milliseconds or more of matrix products on one input (by the identity, so
    the values stay what they are: no denormals to slow it down unpredictably)."""
    builder = ProgramBuilder()
    value = builder.input("float32", (384, 384))
    identity = builder.constant(np.eye(384, dtype=np.float32))
    for _ in range(24):
        value = builder.op("edgert::matmul", [value, identity])
        value = builder.op("edgert::relu", [value])
    builder.output(value)
    return builder.to_bytes()


def test_the_gil_is_released_while_a_program_runs(edgert: ModuleType) -> None:
    """With a switch interval of a minute, a thread that keeps the GIL is never asked to give
    it up: this thread, woken by the runner just before it calls Program.run, can take the
    GIL back only when the runner releases it. It finds the run still under way (the runner
    sets ``finished`` when run returns): run released the GIL. No count of loop turns, no
    clock: what is read is an order of events that holding the GIL would make impossible."""
    program = edgert.load(heavy_program())
    x = np.full((384, 384), 0.5, np.float32)
    about_to_run = threading.Event()
    finished: list[float] = []

    def run() -> None:
        about_to_run.set()
        (out,) = program.run([x])
        finished.append(float(out[0, 0]))

    saved = sys.getswitchinterval()
    sys.setswitchinterval(60.0)
    try:
        worker = threading.Thread(target=run)
        worker.start()
        about_to_run.wait()
        seen_during_the_run = not finished
        worker.join()
    finally:
        sys.setswitchinterval(saved)
    assert finished == [0.5]
    assert seen_during_the_run, "this thread got the GIL back only once the run had ended"


FORKS = """
import os, sys, threading, time, warnings
import numpy as np, edgert
warnings.simplefilter("ignore", DeprecationWarning)   # fork() with threads: on purpose here
program = edgert.load(bytes.fromhex(sys.argv[1]))
x = np.linspace(-1, 1, 64 * 16, dtype=np.float32).reshape(64, 16)
expected = np.maximum(x, 0)
stop = threading.Event()

def loop():
    while not stop.is_set():
        program.run([x])

runner = threading.Thread(target=loop)
runner.start()
hung = failed = 0
for _ in range(20):
    time.sleep(0.005)
    pid = os.fork()
    if pid == 0:                               # the child: its program must still run
        (out,) = program.run([x])
        os._exit(0 if np.array_equal(out, expected) else 3)
    deadline = time.monotonic() + 20
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            failed += os.waitstatus_to_exitcode(status) != 0
            break
        if time.monotonic() > deadline:
            hung += 1
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            break
        time.sleep(0.01)
stop.set()
runner.join()
print(f"hung={hung} failed={failed}")
"""


def test_forked_children_run_the_program_a_thread_was_running(
        native_install: NativeInstall) -> None:
    """A thread runs a program in a loop while the main thread forks 20 times: the program's
    lock (held by that thread at many of the forks) is unlocked in each child, which runs
    the program to completion."""
    completed = native_install.python(FORKS, relu_program().hex(), timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.strip() == "hung=0 failed=0"
