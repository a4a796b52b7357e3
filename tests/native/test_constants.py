"""Constants without copies: a program file is mapped and its constants read in place, a bytes
object is aliased (the program holds it), caller-owned bytes can be borrowed through the C
API with a release callback; and what the loader does with files it cannot map, small files,
misaligned bytes, and a file replaced while it is loaded."""

from __future__ import annotations

import ctypes
import gc
import os
import sys
import threading
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from tests.native.support import NATIVE, NativeInstall

sys.path.insert(0, str(NATIVE / "python"))
from edgert.export import ProgramBuilder, save_program  # noqa: E402

COPY_BELOW = 1 << 20   # Program::kCopyFilesBelow


def add_constant_program(constant: np.ndarray) -> bytes:
    """out = x + constant (x of the constant's shape)."""
    builder = ProgramBuilder()
    x = builder.input("float32", constant.shape)
    builder.output(builder.op("edgert::add", [x, builder.constant(constant)]))
    return builder.to_bytes()


def large_constant(elements: int = COPY_BELOW // 4 * 2) -> np.ndarray:
    return np.arange(elements, dtype=np.float32) / 7


def test_a_program_file_is_mapped_and_its_constants_read_in_place(
        edgert: ModuleType, tmp_path: Path) -> None:
    constant = large_constant()
    path = tmp_path / "large.edgert"
    path.write_bytes(add_constant_program(constant))
    program = edgert.load(path)
    plan = program.memory_plan
    assert (plan.constants, plan.constant_bytes) == ("mapped", constant.nbytes)
    x = np.ones_like(constant)
    np.testing.assert_array_equal(program.run([x])[0], x + constant)


def test_a_small_file_is_read_into_memory(edgert: ModuleType, tmp_path: Path) -> None:
    constant = np.arange(16, dtype=np.float32)
    path = tmp_path / "small.edgert"
    path.write_bytes(add_constant_program(constant))
    program = edgert.load(path)
    assert program.memory_plan.constants == "copied"
    np.testing.assert_array_equal(program.run([constant])[0], 2 * constant)


def test_a_file_replaced_by_rename_leaves_the_loaded_program_as_it_was(
        edgert: ModuleType, tmp_path: Path) -> None:
    """The safe way to update a loaded program file: the mapping keeps the old file's pages
    (save_program, which ProgramBuilder.save uses: a temporary file renamed over the old
    one)."""
    constant = large_constant()
    path = tmp_path / "model.edgert"
    save_program(add_constant_program(constant), path)
    program = edgert.load(path)
    save_program(add_constant_program(constant + 100), path)   # replaced by rename
    x = np.zeros_like(constant)
    np.testing.assert_array_equal(program.run([x])[0], constant)
    np.testing.assert_array_equal(edgert.load(path).run([x])[0], constant + 100)


def test_save_replaces_a_file_without_writing_into_it(tmp_path: Path) -> None:
    path = tmp_path / "model.edgert"
    save_program(b"first", path)
    before = path.stat().st_ino
    save_program(b"second", path)
    assert path.read_bytes() == b"second"
    assert path.stat().st_ino != before                       # a new file, not a rewrite
    assert [entry.name for entry in tmp_path.iterdir()] == ["model.edgert"]  # no leftover


def test_a_bytes_object_is_read_in_place_and_held_by_the_program(edgert: ModuleType) -> None:
    constant = large_constant()
    data = add_constant_program(constant)
    held_before = sys.getrefcount(data)
    program = edgert.load(data)
    assert program.memory_plan.constants == "borrowed"
    assert sys.getrefcount(data) == held_before + 1      # the program's reference
    x = np.ones_like(constant)
    np.testing.assert_array_equal(program.run([x])[0], x + constant)
    del program
    gc.collect()
    assert sys.getrefcount(data) == held_before          # released with the program


def test_a_bytearray_is_copied_so_changing_it_later_changes_nothing(edgert: ModuleType) -> None:
    constant = np.arange(64, dtype=np.float32)
    data = bytearray(add_constant_program(constant))
    program = edgert.load(data)
    data[-300:] = bytes(300)   # overwrites the constant's bytes in the caller's buffer
    np.testing.assert_array_equal(program.run([constant])[0], 2 * constant)


def test_a_pipe_is_read_and_a_directory_refused(edgert: ModuleType, tmp_path: Path) -> None:
    constant = np.arange(8, dtype=np.float32)
    data = add_constant_program(constant)
    fifo = tmp_path / "program.fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=fifo.write_bytes, args=(data,))
    writer.start()
    program = edgert.load(fifo)
    writer.join()
    assert program.memory_plan.constants == "copied"
    np.testing.assert_array_equal(program.run([constant])[0], 2 * constant)
    with pytest.raises(edgert.NotFoundError, match="is a directory"):
        edgert.load(tmp_path)


def test_a_truncated_or_padded_file_is_rejected_at_load(edgert: ModuleType,
                                                        tmp_path: Path) -> None:
    """The header's size must equal the file's: a file cut short (or grown) before loading is
    InvalidProgramError, never a read past the mapping."""
    data = add_constant_program(large_constant())
    for name, body in (("short", data[:-4096]), ("long", data + bytes(4096))):
        path = tmp_path / f"{name}.edgert"
        path.write_bytes(body)
        with pytest.raises(edgert.InvalidProgramError, match="truncated or padded"):
            edgert.load(path)


RELEASE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _MemoryPlan(ctypes.Structure):
    _fields_ = [("peak_bytes", ctypes.c_uint64), ("input_bytes", ctypes.c_uint64),
                ("output_bytes", ctypes.c_uint64), ("constant_bytes", ctypes.c_uint64),
                ("released_values", ctypes.c_uint64), ("constants", ctypes.c_uint32)]


def _runtime(edgert: ModuleType, native_install: NativeInstall) -> ctypes.CDLL:
    assert edgert.operators()   # the extension, with every kernel library, is loaded
    library = ctypes.CDLL(str(native_install.library("edgert")))
    library.edgert_last_error.restype = ctypes.c_char_p
    library.edgert_program_load_borrowed.argtypes = [
        ctypes.c_void_p, ctypes.c_size_t, RELEASE, ctypes.c_void_p, ctypes.c_void_p]
    return library


def _storage(library: ctypes.CDLL, program: ctypes.c_void_p) -> int:
    plan = _MemoryPlan()
    assert library.edgert_program_memory_plan(program, ctypes.byref(plan)) == 0
    return int(plan.constants)


def test_borrowed_bytes_are_released_once_when_the_program_is_freed(
        edgert: ModuleType, native_install: NativeInstall) -> None:
    library = _runtime(edgert, native_install)
    data = add_constant_program(np.arange(64, dtype=np.float32))
    buffer = (ctypes.c_char * (len(data) + 64))()
    offset = (-ctypes.addressof(buffer)) % 16          # a 16-byte aligned start
    ctypes.memmove(ctypes.addressof(buffer) + offset, data, len(data))
    released: list[int] = []
    callback = RELEASE(lambda context: released.append(int(context or 0)))
    program = ctypes.c_void_p()
    assert library.edgert_program_load_borrowed(
        ctypes.addressof(buffer) + offset, len(data), callback, 7, ctypes.byref(program)) == 0
    assert _storage(library, program) == 2 and released == []   # EDGERT_CONSTANTS_BORROWED
    library.edgert_program_free(program)
    assert released == [7]


def test_misaligned_or_invalid_borrowed_bytes(edgert: ModuleType,
                                              native_install: NativeInstall) -> None:
    """Bytes not aligned to 16 are copied (and released at once); invalid ones are refused
    and released too: release runs exactly once whatever happens."""
    library = _runtime(edgert, native_install)
    data = add_constant_program(np.arange(64, dtype=np.float32))
    buffer = (ctypes.c_char * (len(data) + 64))()
    start = ctypes.addressof(buffer) + ((-ctypes.addressof(buffer)) % 16) + 1
    ctypes.memmove(start, data, len(data))
    released: list[int] = []
    callback = RELEASE(lambda context: released.append(1))
    program = ctypes.c_void_p()
    assert library.edgert_program_load_borrowed(start, len(data), callback, None,
                                                ctypes.byref(program)) == 0
    assert released == [1] and _storage(library, program) == 0     # EDGERT_CONSTANTS_COPIED
    library.edgert_program_free(program)
    assert library.edgert_program_load_borrowed(start, 10, callback, None,
                                                ctypes.byref(program)) == 1
    assert released == [1, 1] and b"truncated header" in library.edgert_last_error()
