"""edgert programs as values and bytes (docs/program-format.md): ``ValueDef``, ``NodeDef``,
``ProgramDef``, ``ProgramBuilder`` to make one node by node, ``write_program`` /
``read_program`` between a ``ProgramDef`` and its bytes (so passes such as quantization can
rewrite a program), and the checksum. Pure Python and numpy: no native extension, no torch.
The public face is ``edgert.export``, which adds ``from_torch``; the front end and the passes
import this module, so nothing they use imports them back."""

from __future__ import annotations

import contextlib
import os
import struct
import tempfile
import zlib
from dataclasses import dataclass, field
from os import PathLike
from typing import Any, Literal, Union, overload

import numpy as np

from edgert._errors import ExportError, InvalidProgramError

__all__ = ["DTYPE_CODES", "DTYPE_NAMES", "ValueDef", "NodeDef", "ProgramDef", "ProgramBuilder",
           "dtype_name", "write_program", "read_program", "program_checksum",
           "seal_program", "save_program"]

MAGIC = b"EDGRTPRG"
VERSION = 2            # version 2 adds the checksum; the runtime still reads version 1
OLDEST_VERSION = 1
HEADER_SIZE = 32       # version 2 (version 1: 24)
CHECKSUM_OFFSET = 24   # u32 CRC-32 of every byte but these four, then u32 reserved (0)
CONSTANT_ALIGNMENT = 16
MAX_DIMS = 8
MAX_STRING_LENGTH = 4096

DTYPE_CODES: dict[str, int] = {"float32": 0, "int8": 1, "uint8": 2, "int32": 3, "int64": 4,
                               "bool": 5}
DTYPE_NAMES: dict[int, str] = {code: name for name, code in DTYPE_CODES.items()}

_KIND_RUNTIME, _KIND_CONSTANT = 0, 1
_ATTR_INT, _ATTR_FLOAT, _ATTR_STRING, _ATTR_INTS, _ATTR_FLOATS = range(5)

AttributeValue = Union[int, float, str, list[int], list[float]]  # noqa: UP007  (runs on Python 3.9)


@dataclass
class ValueDef:
    """A value slot: ``shape`` uses -1 for a dimension known only at run time."""

    dtype: str
    shape: tuple[int, ...] = ()
    data: np.ndarray | None = None  # set for constants

    @property
    def is_constant(self) -> bool:
        """Whether the value is a constant (carries ``data``) rather than a run-time value."""
        return self.data is not None


@dataclass
class NodeDef:
    """An operator call: ``inputs`` and ``outputs`` are value indices (-1: absent input)."""

    op: str
    inputs: list[int]
    outputs: list[int]
    attributes: dict[str, AttributeValue] = field(default_factory=dict)


@dataclass
class ProgramDef:
    """A whole program: its values, its nodes in run order, and its graph inputs and
    outputs (value indices)."""

    values: list[ValueDef] = field(default_factory=list)
    nodes: list[NodeDef] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)


def dtype_name(dtype: object) -> str:
    """The edgert dtype name of a numpy dtype or a name ("float32", np.int8, ...)."""
    name = str(np.dtype(dtype).name)  # type: ignore[call-overload]
    if name not in DTYPE_CODES:
        raise ValueError(f"edgert has no dtype {name!r}; supported: {', '.join(DTYPE_CODES)}")
    return name


class ProgramBuilder:
    """Builds a program node by node; values are referred to by their integer index."""

    def __init__(self) -> None:
        self.program = ProgramDef()

    def _add_value(self, value: ValueDef) -> int:
        self.program.values.append(value)
        return len(self.program.values) - 1

    def input(self, dtype: object, shape: tuple[int, ...] | list[int]) -> int:
        """Adds a graph input (-1 in ``shape``: known at run time); returns its value."""
        index = self._add_value(ValueDef(dtype_name(dtype), tuple(int(d) for d in shape)))
        self.program.inputs.append(index)
        return index

    def constant(self, array: np.ndarray) -> int:
        """Adds a constant holding ``array`` (made C-contiguous); returns its value."""
        array = np.ascontiguousarray(array)
        return self._add_value(ValueDef(dtype_name(array.dtype), tuple(array.shape), array))

    @overload
    def op(
        self,
        name: str,
        inputs: list[int | None],
        attributes: dict[str, AttributeValue] | None = None,
        outputs: Literal[1] = 1,
        *,
        dtype: object = "float32",
    ) -> int: ...

    @overload
    def op(
        self,
        name: str,
        inputs: list[int | None],
        attributes: dict[str, AttributeValue] | None = None,
        outputs: int = 1,
        *,
        dtype: object = "float32",
    ) -> int | list[int]: ...

    def op(
        self,
        name: str,
        inputs: list[int | None],
        attributes: dict[str, AttributeValue] | None = None,
        outputs: int = 1,
        *,
        dtype: object = "float32",
    ) -> int | list[int]:
        """Adds a node; an input of None is an absent optional input. Returns the output
        value (a list when ``outputs`` > 1). ``dtype`` is the outputs' declared dtype."""
        produced = [self._add_value(ValueDef(dtype_name(dtype))) for _ in range(outputs)]
        wired = [-1 if value is None else int(value) for value in inputs]
        self.program.nodes.append(NodeDef(name, wired, produced, dict(attributes or {})))
        return produced[0] if outputs == 1 else produced

    def output(self, value: int) -> None:
        """Makes ``value`` the next graph output."""
        self.program.outputs.append(int(value))

    def to_bytes(self) -> bytes:
        """The program's bytes, as ``edgert.load`` takes them."""
        return write_program(self.program)

    def save(self, path: str | PathLike[str]) -> None:
        """Writes the program's bytes to ``path`` (save_program: by replacing the file, never
        by rewriting it, so a process that has it loaded keeps a valid mapping)."""
        save_program(self.to_bytes(), path)


def _file_mode(path: str) -> int:
    """The permissions ``path`` has, or those a new file gets (0666 less the umask)."""
    try:
        return os.stat(path).st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def save_program(data: bytes, path: str | PathLike[str]) -> None:
    """Writes ``data`` to a temporary file beside ``path`` and renames it over ``path``. A
    program file is mapped while it is loaded (edgert.load): rewriting it in place would
    change or cut the pages under the running program, while a rename leaves the loaded
    program its own copy (docs/program-format.md, "Loading")."""
    target = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(target))
    descriptor, temporary = tempfile.mkstemp(prefix=".edgert-", suffix=".partial", dir=folder)
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
        os.chmod(temporary, _file_mode(target))   # mkstemp makes it private (0600)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


# ---------------------------------------------------------------------------- writing


def _string(text: str) -> bytes:
    encoded = text.encode("utf-8")
    if len(encoded) > MAX_STRING_LENGTH:
        raise ValueError(f"string longer than {MAX_STRING_LENGTH} bytes: {text[:40]!r}...")
    return struct.pack("<I", len(encoded)) + encoded


def _attribute(name: str, value: AttributeValue) -> bytes:
    head = _string(name)
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"attribute {name!r}: booleans are not an attribute type; use 0 or 1")
    if isinstance(value, (int, np.integer)):
        return head + struct.pack("<Bq", _ATTR_INT, int(value))
    if isinstance(value, (float, np.floating)):
        return head + struct.pack("<Bd", _ATTR_FLOAT, float(value))
    if isinstance(value, str):
        return head + struct.pack("<B", _ATTR_STRING) + _string(value)
    items = (
        list(np.asarray(value).ravel().tolist()) if isinstance(value, np.ndarray) else list(value)
    )
    if all(isinstance(item, (int, np.integer)) and not isinstance(item, bool) for item in items):
        return head + struct.pack(f"<BI{len(items)}q", _ATTR_INTS, len(items), *items)
    if all(isinstance(item, (int, float, np.integer, np.floating)) for item in items):
        return head + struct.pack(f"<BI{len(items)}d", _ATTR_FLOATS, len(items), *map(float, items))
    raise ValueError(f"attribute {name!r}: unsupported value {value!r}")


class _Output:
    """The program's bytes as pieces: the encoded records, and each constant's array as it
    is (no copy); joined once at the end, so a large program is copied once."""

    def __init__(self, head: bytes) -> None:
        self.pieces: list[bytearray | memoryview] = []
        self.small = bytearray(head)   # the records since the last constant
        self.written = 0               # the bytes of ``pieces``

    @property
    def size(self) -> int:
        return self.written + len(self.small)

    def array(self, data: np.ndarray[Any, Any]) -> None:
        """Appends a C-contiguous array's bytes."""
        self.pieces.append(self.small)
        self.pieces.append(data.reshape(-1).data.cast("B"))
        self.written += len(self.small) + data.nbytes
        self.small = bytearray()

    def finish(self, version: int) -> bytes:
        """The bytes, with the header's size and (version 2) checksum fields set."""
        self.pieces.append(self.small)
        first = self.pieces[0]
        assert isinstance(first, bytearray) and len(first) >= 24   # the header, at least
        struct.pack_into("<Q", first, 16, self.size)
        if version >= 2:
            crc = 0
            for piece in self.pieces:   # program_checksum over the pieces
                view = memoryview(piece)
                if piece is first:
                    crc = zlib.crc32(view[:CHECKSUM_OFFSET], crc)
                    view = view[CHECKSUM_OFFSET + 4 :]
                crc = zlib.crc32(view, crc)
            struct.pack_into("<I", first, CHECKSUM_OFFSET, crc)
        return b"".join(self.pieces)


def _value(out: _Output, value: ValueDef) -> None:
    shape = tuple(int(d) for d in value.shape)
    if len(shape) > MAX_DIMS:
        raise ValueError(f"at most {MAX_DIMS} dimensions are supported, got {len(shape)}")
    kind = _KIND_CONSTANT if value.is_constant else _KIND_RUNTIME
    out.small += struct.pack(
        f"<BBHI{len(shape)}q", DTYPE_CODES[value.dtype], kind, 0, len(shape), *shape)
    if value.data is None:
        return
    data = np.ascontiguousarray(value.data, dtype=np.dtype(value.dtype).newbyteorder("<"))
    if tuple(data.shape) != shape:
        raise ValueError(f"constant shape {data.shape} differs from its declared shape {shape}")
    out.small += struct.pack("<Q", data.nbytes)
    out.small += bytes(-out.size % CONSTANT_ALIGNMENT)
    out.array(data)


def _indices(values: list[int]) -> bytes:
    return struct.pack(f"<I{len(values)}i", len(values), *values)


def program_checksum(data: bytes | bytearray | memoryview) -> int:
    """The CRC-32 (zlib's) of every byte of ``data`` except the four of the checksum field at
    byte 24: what a version-2 program stores there (docs/program-format.md, "Checksum")."""
    view = memoryview(data).cast("B")
    crc = zlib.crc32(view[:CHECKSUM_OFFSET])
    return zlib.crc32(view[CHECKSUM_OFFSET + 4 :], crc)


def seal_program(data: bytes | bytearray) -> bytes:
    """``data`` (version-2 program bytes) with its size and checksum fields set to match."""
    out = bytearray(data)
    if len(out) < HEADER_SIZE:
        raise ExportError(f"program bytes are {len(out)} long, shorter than the "
                          f"{HEADER_SIZE}-byte header: nothing to seal")
    struct.pack_into("<Q", out, 16, len(out))
    struct.pack_into("<I", out, CHECKSUM_OFFSET, program_checksum(out))
    return bytes(out)


def write_program(program: ProgramDef, *, version: int = VERSION) -> bytes:
    """Serializes ``program``; the loader checks the structure, this checks the encoding.

    ``version=1`` writes the old format (no checksum) for runtimes older than 0.1's."""
    if version not in (OLDEST_VERSION, VERSION):
        raise ExportError(f"cannot write program format version {version}: this writer "
                          f"writes versions {OLDEST_VERSION} and {VERSION}")
    head = MAGIC + struct.pack("<IIQ", version, 0, 0)
    if version >= 2:
        head += struct.pack("<II", 0, 0)   # checksum (set by finish), reserved
    out = _Output(head + struct.pack("<I", len(program.values)))
    for value in program.values:
        _value(out, value)
    out.small += struct.pack("<I", len(program.nodes))
    for node in program.nodes:
        out.small += _string(node.op) + _indices(node.inputs) + _indices(node.outputs)
        out.small += struct.pack("<I", len(node.attributes))
        for name, attribute in node.attributes.items():
            out.small += _attribute(name, attribute)
    out.small += _indices(program.inputs) + _indices(program.outputs)
    return out.finish(version)


# ---------------------------------------------------------------------------- reading


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = memoryview(data)
        self.offset = 0

    def fail(self, what: str) -> InvalidProgramError:
        return InvalidProgramError(f"invalid program: {what} (at byte offset {self.offset})")

    def take(self, count: int, what: str) -> memoryview:
        if count < 0 or self.offset + count > len(self.data):
            raise self.fail(f"truncated {what}")
        chunk = self.data[self.offset : self.offset + count]
        self.offset += count
        return chunk

    def unpack(self, fmt: str, what: str) -> tuple:  # type: ignore[type-arg]
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))

    def u32(self, what: str) -> int:
        return int(self.unpack("<I", what)[0])

    def string(self, what: str) -> str:
        length = self.u32(what)
        if length > MAX_STRING_LENGTH:
            raise self.fail(f"oversized {what}")
        return bytes(self.take(length, what)).decode("utf-8", errors="replace")


def _read_value(reader: _Reader) -> ValueDef:
    code, kind, reserved, ndim = reader.unpack("<BBHI", "value record")
    if code not in DTYPE_NAMES:
        raise reader.fail(f"unknown dtype code {code}")
    if kind not in (_KIND_RUNTIME, _KIND_CONSTANT) or reserved != 0 or ndim > MAX_DIMS:
        raise reader.fail("malformed value record")
    shape = tuple(int(d) for d in reader.unpack(f"<{ndim}q", "shape"))
    value = ValueDef(DTYPE_NAMES[code], shape)
    if kind == _KIND_CONSTANT:
        if any(d < 0 for d in shape):
            raise reader.fail("negative dimension in a constant")
        (length,) = reader.unpack("<Q", "constant length")
        dtype = np.dtype(value.dtype).newbyteorder("<")
        if length != int(np.prod(shape, dtype=np.int64)) * dtype.itemsize:
            raise reader.fail("constant byte length does not match its dtype and shape")
        padding = -reader.offset % CONSTANT_ALIGNMENT
        if any(reader.take(padding, "constant padding")):
            raise reader.fail("non-zero constant padding")
        raw = reader.take(length, "constant data")
        value.data = np.frombuffer(raw, dtype=dtype).astype(value.dtype).reshape(shape)
    return value


def _read_attribute(reader: _Reader) -> tuple[str, AttributeValue]:
    name = reader.string("attribute name")
    (kind,) = reader.unpack("<B", "attribute kind")
    if kind == _ATTR_INT:
        return name, int(reader.unpack("<q", "int attribute")[0])
    if kind == _ATTR_FLOAT:
        return name, float(reader.unpack("<d", "float attribute")[0])
    if kind == _ATTR_STRING:
        return name, reader.string("string attribute")
    if kind in (_ATTR_INTS, _ATTR_FLOATS):
        count = reader.u32("attribute list")
        letter = "q" if kind == _ATTR_INTS else "d"
        return name, list(reader.unpack(f"<{count}{letter}", "attribute list"))
    raise reader.fail(f"unknown attribute kind {kind}")


def _read_indices(reader: _Reader, what: str) -> list[int]:
    count = reader.u32(what)
    if count * 4 > len(reader.data) - reader.offset:
        raise reader.fail(f"{what} count exceeds the remaining bytes")
    return list(reader.unpack(f"<{count}i", what))


def _read_node(reader: _Reader) -> NodeDef:
    op = reader.string("operator name")
    inputs = _read_indices(reader, "node inputs")
    outputs = _read_indices(reader, "node outputs")
    count = reader.u32("attribute count")
    attributes = dict(_read_attribute(reader) for _ in range(count))
    return NodeDef(op, inputs, outputs, attributes)


def read_program(data: bytes) -> ProgramDef:
    """Parses program bytes (encoding only; the native loader also checks the structure)."""
    reader = _Reader(bytes(data))
    magic, version = reader.unpack("<8sI", "header")
    if magic != MAGIC:
        raise reader.fail("wrong magic (not an edgert program)")
    if not OLDEST_VERSION <= version <= VERSION:
        raise reader.fail(f"unsupported format version {version} (this reader reads versions "
                          f"{OLDEST_VERSION} to {VERSION})")
    if version >= 2 and len(data) >= HEADER_SIZE:
        (stored,) = struct.unpack_from("<I", data, CHECKSUM_OFFSET)
        computed = program_checksum(data)
        if stored != computed:
            raise InvalidProgramError(
                f"invalid program: program bytes 0..{len(data)}: checksum mismatch (file "
                f"corrupted; stored {stored:#010x}, computed {computed:#010x}; write the "
                f"program again from its source)")
    flags, size = reader.unpack("<IQ", "header")
    if flags != 0:
        raise reader.fail(f"unknown header flags {flags}")
    if size != len(data):
        raise reader.fail(f"declared size {size} differs from the actual size {len(data)}")
    if version >= 2 and reader.unpack("<II", "header")[1] != 0:
        raise reader.fail("non-zero reserved header field")
    program = ProgramDef()
    program.values = [_read_value(reader) for _ in range(reader.u32("value count"))]
    program.nodes = [_read_node(reader) for _ in range(reader.u32("node count"))]
    program.inputs = _read_indices(reader, "graph inputs")
    program.outputs = _read_indices(reader, "graph outputs")
    if reader.offset != len(data):
        raise reader.fail("trailing bytes after the graph outputs")
    return program
