"""Compiles one CUDA C++ file to a fatbinary without nvcc (CUDA 12 from the package index).

    python _fatbin_tool.py --nvrtc libnvrtc.so.12 --ptxas ptxas --nvfatbin libnvfatbin.so.12 \
        --sass 75,80,86,89,90 --ptx 90 -o kernels.fatbin kernels.cu

NVRTC compiles the source to PTX once per architecture, ptxas assembles one cubin per SASS
architecture, nvFatbin packs the cubins and the PTX into one fatbinary. Run by CMake as a
custom command: standalone (standard library and ctypes only), exits non-zero with one line
on stderr when a step fails. It is not one of the release command's edges and raises no
ReleaseError: CMake runs it with the build's interpreter, outside the release package (which
it does not import), and shows its line in the build's output, where the native build stage
reports the failure as any failed build step (exit 4)."""

from __future__ import annotations

import argparse
import ctypes
import subprocess
import sys
import tempfile
from pathlib import Path


class StepFailed(Exception):
    pass


def _nvrtc_ptx(nvrtc: ctypes.CDLL, source: bytes, name: str, sm: int) -> bytes:
    program = ctypes.c_void_p()
    check = _checker(nvrtc, "nvrtcGetErrorString", "NVRTC")
    check(nvrtc.nvrtcCreateProgram(ctypes.byref(program), source, name.encode(), 0, None, None),
          "nvrtcCreateProgram")
    try:
        options = [f"--gpu-architecture=compute_{sm}".encode(), b"--std=c++17",
                   b"-default-device"]
        array = (ctypes.c_char_p * len(options))(*options)
        result = nvrtc.nvrtcCompileProgram(program, len(options), array)
        if result != 0:
            size = ctypes.c_size_t()
            nvrtc.nvrtcGetProgramLogSize(program, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            nvrtc.nvrtcGetProgramLog(program, log)
            raise StepFailed(f"NVRTC could not compile {name} for compute_{sm}: "
                             f"{log.value.decode(errors='replace').strip()}")
        size = ctypes.c_size_t()
        check(nvrtc.nvrtcGetPTXSize(program, ctypes.byref(size)), "nvrtcGetPTXSize")
        ptx = ctypes.create_string_buffer(size.value)
        check(nvrtc.nvrtcGetPTX(program, ptx), "nvrtcGetPTX")
        return ptx.raw[: size.value]
    finally:
        nvrtc.nvrtcDestroyProgram(ctypes.byref(program))


def _checker(library: ctypes.CDLL, error_string: str, label: str):  # type: ignore[no-untyped-def]
    describe = getattr(library, error_string)
    describe.restype = ctypes.c_char_p

    def check(result: int, call: str) -> None:
        if result != 0:
            raise StepFailed(f"{label} {call} failed: {describe(result).decode()}")
    return check


def _cubin(ptxas: str, ptx: bytes, sm: int, folder: Path) -> bytes:
    source, output = folder / f"kernels_{sm}.ptx", folder / f"kernels_{sm}.cubin"
    source.write_bytes(ptx.rstrip(b"\0"))
    completed = subprocess.run([ptxas, f"-arch=sm_{sm}", "-O3", str(source), "-o", str(output)],
                               capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        raise StepFailed(f"ptxas failed for sm_{sm}: {completed.stderr.strip()}")
    return output.read_bytes()


def _fatbin(nvfatbin: ctypes.CDLL, cubins: dict[int, bytes], ptx: dict[int, bytes]) -> bytes:
    check = _checker(nvfatbin, "nvFatbinGetErrorString", "nvFatbin")
    handle = ctypes.c_void_p()
    options = (ctypes.c_char_p * 1)(b"-64")
    check(nvfatbin.nvFatbinCreate(ctypes.byref(handle), options, 1), "nvFatbinCreate")
    try:
        for sm, cubin in cubins.items():
            check(nvfatbin.nvFatbinAddCubin(handle, cubin, len(cubin), str(sm).encode(),
                                            f"kernels.sm_{sm}".encode()), "nvFatbinAddCubin")
        for sm, code in ptx.items():
            check(nvfatbin.nvFatbinAddPTX(handle, code, len(code), str(sm).encode(),
                                          f"kernels.compute_{sm}".encode(), b""),
                  "nvFatbinAddPTX")
        size = ctypes.c_size_t()
        check(nvfatbin.nvFatbinSize(handle, ctypes.byref(size)), "nvFatbinSize")
        buffer = ctypes.create_string_buffer(size.value)
        check(nvfatbin.nvFatbinGet(handle, buffer), "nvFatbinGet")
        return buffer.raw
    finally:
        nvfatbin.nvFatbinDestroy(ctypes.byref(handle))


def _architectures(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nvrtc", required=True)
    parser.add_argument("--ptxas", required=True)
    parser.add_argument("--nvfatbin", required=True)
    parser.add_argument("--sass", type=_architectures, required=True)
    parser.add_argument("--ptx", type=_architectures, default=[])
    parser.add_argument("-o", dest="output", type=Path, required=True)
    parser.add_argument("source", type=Path)
    arguments = parser.parse_args(argv)
    try:
        source = arguments.source.read_bytes() + b"\0"
        nvrtc = ctypes.CDLL(arguments.nvrtc)
        nvfatbin = ctypes.CDLL(arguments.nvfatbin)
        ptx = {sm: _nvrtc_ptx(nvrtc, source, arguments.source.name, sm)
               for sm in sorted({*arguments.sass, *arguments.ptx})}
        with tempfile.TemporaryDirectory(prefix="edgert-fatbin-") as folder:
            cubins = {sm: _cubin(arguments.ptxas, ptx[sm], sm, Path(folder))
                      for sm in arguments.sass}
        image = _fatbin(nvfatbin, cubins, {sm: ptx[sm] for sm in arguments.ptx})
        arguments.output.write_bytes(image)
    except (StepFailed, OSError) as error:
        sys.stderr.write(f"edgert fatbin tool: {error}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
