"""Loads libedgert_backend_cuda with ctypes and reports, as JSON, where the dynamic loader
found libcudart (from /proc/self/maps) and which backends libedgert has registered.

    python load_probe.py <site>/edgert/lib/libedgert_backend_cuda.so

Run in a fresh process whose only CUDA runtime is the nvidia wheel in <site>."""

import ctypes
import json
import sys


def mapped_files():
    with open("/proc/self/maps") as maps:
        return sorted({line.split()[-1] for line in maps if "/" in line.split()[-1]})


def main(path):
    backend = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    marker = backend.edgert_backend_cuda_component
    marker.restype = ctypes.c_char_p
    runtime = next(f for f in mapped_files() if f.endswith("/libedgert.so"))
    edgert = ctypes.CDLL(runtime)
    edgert.edgert_backend_name.restype = ctypes.c_char_p
    edgert.edgert_backend_owner.restype = ctypes.c_char_p
    backends = {edgert.edgert_backend_name(i).decode(): edgert.edgert_backend_owner(i).decode()
                for i in range(edgert.edgert_backend_count())}
    json.dump({"marker": marker().decode(), "backends": backends,
               "cudart": [f for f in mapped_files() if "libcudart" in f]}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
