"""A GPU library needs the driver's libcuda.so.1, which no wheel may ship: that is a note on
what the file needs to load, never a "not found" error."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

from release.findings import Severity
from release.verify import verify_wheel
from tests.verify.test_wheel_safety import _digest

DIST = "gpu_demo-1.0.dist-info"
TAG = "cp311-abi3-manylinux_2_17_x86_64"


def _library(folder: Path, name: str, source: str, *links: str) -> Path:
    (folder / f"{name}.c").write_text(source)
    output = folder / name
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(output), f"-Wl,-soname,{name}",
                    str(folder / f"{name}.c"), f"-L{folder}", "-Wl,--no-as-needed", *links],
                   check=True, capture_output=True)
    return output


def test_the_nvidia_driver_library_is_a_note(tmp_path: Path) -> None:
    _library(tmp_path, "libcuda.so.1", "int cuInit(unsigned flags) { return (int)flags; }\n")
    (tmp_path / "libcuda.so").symlink_to("libcuda.so.1")
    user = _library(tmp_path, "libgpu_user.so",
                    "int cuInit(unsigned);\nint start(void) { return cuInit(0); }\n", "-lcuda")
    files = {"gpu_demo/libgpu_user.so": user.read_bytes(),
             f"{DIST}/METADATA": b"Metadata-Version: 2.1\nName: gpu-demo\nVersion: 1.0\n",
             f"{DIST}/WHEEL": f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {TAG}\n".encode()}
    record = "".join(f"{name},sha256={_digest(data)},{len(data)}\n"
                     for name, data in files.items()) + f"{DIST}/RECORD,,\n"
    wheel = tmp_path / f"gpu_demo-1.0-{TAG}.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        archive.writestr(f"{DIST}/RECORD", record)
    report = verify_wheel(wheel, static=True)
    linkage = [f for f in report.findings if f.check == "linkage"]
    assert not [f for f in linkage if f.severity is not Severity.INFO], report.render_text()
    (note,) = linkage
    assert "libcuda.so.1" in note.what and "the NVIDIA driver" in note.what
    assert note.details["count"] == 1
