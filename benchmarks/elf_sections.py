"""The shared ELF section reader (release/binary/elf.py read_sections) against references
measured in the same run, so the ratios hold on a loaded machine:

    python benchmarks/elf_sections.py [--library libcurand.so.10] [--small ELF] [--repeat N]

- ``read_device_code``: cuda/fatbin.py's whole read of a CUDA library (its section table,
  then every uncompressed cubin's section table), against the same fatbinary walk with the
  reader it replaced (cuda/_elf.py before 3c26440, a plain struct walk without the readers'
  budget, kept below as the ``_plain_*`` functions) plugged in for the section tables;
- ``read_sections``: one small section table (the Python interpreter: 39 sections), against
  the plain struct walk and pyelftools; ours alone (names decoded when asked for) and with
  every section made as a ``model.Section`` and named (the plain walk decodes every name,
  into a dict of offset and size).

The library defaults to cuRAND from the tool cache (tests/cuda/test_cuobjdump_real.py
installs it there: nvidia-curand-cu12==10.3.10.19, 167 MB, 143 cubins, about 22,000 cubin
sections). Prints the median of ``--repeat`` interleaved runs of each and the ratio of ours
to the plain walk (below 1: faster)."""

from __future__ import annotations

import argparse
import io
import mmap
import statistics
import struct
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cuda import fatbin  # noqa: E402
from release.binary import elf, model  # noqa: E402

CURAND = (Path.home() / ".cache" / "edgert-release" / "tools" / "nvidia_curand_cu12_10.3.10.19"
          / "nvidia" / "curand" / "lib" / "libcurand.so.10")

# -- the reference: the reader cuda/fatbin.py used before the shared one -------------------
# cuda/_elf.py as it was before 3c26440 (64-bit little-endian only, no readers' budget),
# made to read from a buffer: a library's section table as name -> (offset, size), a
# cubin's section names as a list.
_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")
_SECTION = struct.Struct("<IIQQQQIIQQ")


def _plain_table(data: bytes | mmap.mmap | memoryview) -> tuple[int, int, int] | None:
    if (len(data) < _HEADER.size or bytes(data[:4]) != b"\x7fELF" or data[4] != 2
            or data[5] != 1):
        return None
    fields = _HEADER.unpack_from(data, 0)
    shoff, shentsize, shnum, shstrndx = fields[6], fields[11], fields[12], fields[13]
    if shnum and shentsize != _SECTION.size:
        return None
    return shoff, shnum, shstrndx


def _plain_names(table: bytes, strings: bytes) -> list[tuple[str, int, int]]:
    result = []
    for index in range(len(table) // _SECTION.size):
        name, _, _, _, offset, size, *_ = _SECTION.unpack_from(table, index * _SECTION.size)
        end = strings.find(b"\0", name)
        text = strings[name:end if end >= 0 else len(strings)].decode("latin-1")
        result.append((text, offset, size))
    return result


def _plain_parts(data: bytes | mmap.mmap | memoryview, start: int,
                 size: int) -> tuple[bytes, bytes] | None:
    found = _plain_table(bytes(data[start:start + min(size, _HEADER.size)]))
    if found is None:
        return None
    shoff, shnum, shstrndx = found
    if shnum == 0 or shstrndx >= shnum or shoff + shnum * _SECTION.size > size:
        return None
    table = bytes(data[start + shoff:start + shoff + shnum * _SECTION.size])
    _, _, _, _, str_offset, str_size, *_ = _SECTION.unpack_from(table, shstrndx * _SECTION.size)
    if str_offset + str_size > size:
        return None
    return table, bytes(data[start + str_offset:start + str_offset + str_size])


def _plain_sections(data: bytes | mmap.mmap | memoryview, *,
                    where: str) -> dict[str, tuple[int, int]]:
    """Section name -> (offset, size): the plain walk of a library's table."""
    parts = _plain_parts(data, 0, len(data))
    if parts is None:
        raise fatbin.BinaryFormatError(f"{where}: not a 64-bit little-endian ELF", fix="")
    sections: dict[str, tuple[int, int]] = {}
    for name, offset, size in _plain_names(*parts):
        if name and name not in sections:
            sections[name] = (offset, size)
    return sections


def _plain_cubin_has_kernels(data: bytes | mmap.mmap | memoryview, start: int,
                             size: int) -> bool | None:
    parts = _plain_parts(data, start, size)
    if parts is None:
        return None
    return any(name.startswith(".text.") for name, _, _ in _plain_names(*parts))


def _plain_model(data: bytes | mmap.mmap | memoryview, *,
                 where: str) -> tuple[model.Section, ...]:
    return tuple(model.Section(name, offset, size)
                 for name, (offset, size) in _plain_sections(data, where=where).items())


def _plain_named(sections: tuple[model.Section, ...], name: str) -> model.Section | None:
    return next((section for section in sections if section.name == name), None)


@contextmanager
def _plain_reader() -> Iterator[None]:
    """cuda/fatbin.py reading its section tables with the plain walk."""
    elf_module, has_kernels = fatbin.elf, fatbin._cubin_has_kernels
    fatbin.elf = SimpleNamespace(read_sections=_plain_model,  # type: ignore[assignment]
                                 section_named=_plain_named)
    fatbin._cubin_has_kernels = _plain_cubin_has_kernels  # type: ignore[assignment]
    try:
        yield
    finally:
        fatbin.elf, fatbin._cubin_has_kernels = elf_module, has_kernels


# -- timing --------------------------------------------------------------------------------

def _medians(works: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """The median seconds of each work, run in turn ``repeat`` times (interleaved, so a load
    that comes and goes on the machine falls on all of them alike)."""
    times: dict[str, list[float]] = {name: [] for name in works}
    for work in works.values():
        work()   # warm: the page cache, the struct caches
    for _ in range(repeat):
        for name, work in works.items():
            start = time.perf_counter()
            work()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def _plain_device_code(path: Path) -> object:
    with _plain_reader():
        return fatbin.read_device_code(path)


def _pyelftools(data: bytes) -> list[tuple[str, int, int]]:
    from elftools.elf.elffile import ELFFile
    return [(s.name, s["sh_offset"], s["sh_size"])
            for s in ELFFile(io.BytesIO(data)).iter_sections()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--library", type=Path, default=CURAND)
    parser.add_argument("--small", type=Path, default=Path(sys.executable).resolve())
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args(argv)
    if not args.library.is_file():
        print(f"error: no CUDA library at {args.library} (fix: pass --library, or run "
              "tests/cuda/test_cuobjdump_real.py once to install cuRAND into the tool cache)")
        return 2

    ours = fatbin.read_device_code(args.library)
    with _plain_reader():
        plain = fatbin.read_device_code(args.library)
    if ours != plain:
        print("error: the two readers disagree on the device code")
        return 1
    cubins = sum(1 for entry in ours.entries if entry.has_kernels is not None)
    library = args.library
    times = _medians({"ours": lambda: fatbin.read_device_code(library),
                      "plain": lambda: _plain_device_code(library)}, args.repeat)
    print(f"read_device_code {library.name} ({library.stat().st_size >> 20} MB, "
          f"{len(ours.entries)} entries, {cubins} cubins read): ours {times['ours'] * 1e3:.1f} "
          f"ms, plain walk {times['plain'] * 1e3:.1f} ms, ratio "
          f"{times['ours'] / times['plain']:.2f}")

    data = args.small.read_bytes()
    count = len(elf.read_sections(data, where="small"))
    small = _medians({"ours": lambda: elf.read_sections(data, where="small"),
                      "decoded": lambda: tuple(elf.read_sections(data, where="small")),
                      "plain": lambda: _plain_sections(data, where="small")},
                     args.repeat * 20)
    elftools = _medians({"pyelftools": lambda: _pyelftools(data)}, args.repeat)["pyelftools"]
    print(f"read_sections {args.small.name} ({count} sections): ours "
          f"{small['ours'] * 1e6:.0f} us ({small['decoded'] * 1e6:.0f} us with every section "
          f"made and named), plain walk {small['plain'] * 1e6:.0f} us, pyelftools "
          f"{elftools * 1e6:.0f} us; ratio to the plain walk "
          f"{small['ours'] / small['plain']:.2f} ({small['decoded'] / small['plain']:.2f} "
          "made and named)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
