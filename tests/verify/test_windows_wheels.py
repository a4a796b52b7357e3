"""verify on Windows wheels built here from synthetic PE images: the unchanged checks read
them through the PE reader and judge them through the Windows loader model."""

from __future__ import annotations

from pathlib import Path

from release.distribution import wheel
from release.findings import Severity
from release.verify import verify_wheel
from release.verify.report import Report
from tests.verify.pe_images import pe_image

SYSTEM = ["KERNEL32.dll", "VCRUNTIME140.dll", "api-ms-win-crt-runtime-l1-1-0.dll",
          "python311.dll"]


def windows_wheel(folder: Path, files: dict[str, bytes], *, tag: str = "win_amd64",
                  init: str = "") -> Path:
    dist_info = "demo-1.0.dist-info"
    entries = {name: (data, 0o755) for name, data in files.items()}
    entries["demo/__init__.py"] = (init.encode(), 0o644)
    entries[f"{dist_info}/METADATA"] = (b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
                                        0o644)
    entries[f"{dist_info}/WHEEL"] = (f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\n"
                                     f"Tag: cp311-cp311-{tag}\n".encode(), 0o644)
    path = folder / f"demo-1.0-cp311-cp311-{tag}.whl"
    wheel.write_wheel(path, entries, dist_info=dist_info, epoch=315532800)
    return path


def problems(report: Report) -> list[tuple[str, str, str]]:
    return sorted((f.check, f.file, f.what) for f in report.findings
                  if f.severity in (Severity.ERROR, Severity.WARNING))


# How delvewheel's patch and this pipeline's package add their DLL folders.
DELVEWHEEL_INIT = ("def _delvewheel_patch():\n    import os\n    if os.path.isdir(libs_dir := "
                   "os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, "
                   "'demo.libs'))):\n        os.add_dll_directory(libs_dir)\n_delvewheel_patch()\n")
OWN_INIT = "import os\nos.add_dll_directory(os.path.join(os.path.dirname(__file__), 'lib'))\n"


def extension(*needed: str) -> bytes:
    return pe_image(imports=[*needed, *SYSTEM], exports=["PyInit__core"])


def test_a_delvewheel_layout_resolves(tmp_path: Path) -> None:
    msvcp = "msvcp140-9f8e5ac0d0b6a4f3e2c1b0a9f8e7d6c5.dll"   # mangled as delvewheel does
    report = verify_wheel(windows_wheel(tmp_path, {
        "demo/_core.cp311-win_amd64.pyd": extension("libhelper-0a1b2c.dll"),
        "demo.libs/libhelper-0a1b2c.dll": pe_image(imports=[msvcp, "KERNEL32.dll"],
                                                   exports=["helper_run"]),
        f"demo.libs/{msvcp}": pe_image(imports=SYSTEM[:3], exports=["msvcp_run"]),
    }, init=DELVEWHEEL_INIT), static=True)
    assert problems(report) == []
    assert report.binaries == {"pe": 3}
    assert report.checks["linkage"] == "ran"


def test_our_layout_resolves_through_package_lib(tmp_path: Path) -> None:
    report = verify_wheel(windows_wheel(tmp_path, {
        "demo/_core.pyd": extension("edgert.dll"),
        "demo/lib/edgert.dll": pe_image(imports=SYSTEM[:3], exports=["edgert_run"]),
    }, init=OWN_INIT), static=True)
    assert problems(report) == []


def test_a_folder_the_package_does_not_add_is_not_searched(tmp_path: Path) -> None:
    """The same layouts with an __init__.py that adds nothing: Windows would not find the DLLs
    (Python 3.8+ searches neither PATH nor the package folder), and neither does verify."""
    report = verify_wheel(windows_wheel(tmp_path, {
        "demo/_core.pyd": extension("edgert.dll"),
        "demo/lib/edgert.dll": pe_image(imports=SYSTEM[:3], exports=["edgert_run"]),
    }, init="import os\n"), static=True)
    assert problems(report) == [("linkage", "demo/_core.pyd", "needs edgert.dll, which the "
                                 "wheel ships but this file does not find after installation")]


def test_missing_and_non_system_dlls_are_errors(tmp_path: Path) -> None:
    report = verify_wheel(windows_wheel(tmp_path, {
        "demo/_core.pyd": extension("libmissing.dll", "MSVCP140.dll"),
    }), static=True)
    found = problems(report)
    # one root cause: the file needs two DLLs nothing ships
    assert found == [("linkage", "demo/_core.pyd", "needs MSVCP140.dll, libmissing.dll, "
                      "which are not found after installation")], found
    fix = next(f.fix for f in report.findings if f.check == "linkage")
    assert "os.add_dll_directory" in fix and ".libs" in fix


def test_delay_loaded_dlls_are_not_needed_at_load(tmp_path: Path) -> None:
    report = verify_wheel(windows_wheel(tmp_path, {
        "demo/_core.pyd": pe_image(imports=SYSTEM, delayed=["nvcuda.dll"],
                                   exports=["PyInit__core"]),
    }), static=True)
    assert problems(report) == []


def test_a_binary_of_another_machine_breaks_the_tag(tmp_path: Path) -> None:
    from tests.verify.pe_images import ARM64
    report = verify_wheel(windows_wheel(tmp_path, {
        "demo/_core.pyd": pe_image(machine=ARM64, imports=SYSTEM, exports=["PyInit__core"]),
    }), static=True)
    assert any(check == "metadata" and "aarch64" in what
               for check, _, what in problems(report)), problems(report)


def test_pe_files_under_a_linux_tag(tmp_path: Path) -> None:
    report = verify_wheel(windows_wheel(tmp_path, {"demo/_core.pyd": extension()},
                                        tag="manylinux_2_28_x86_64"), static=True)
    assert ("platform", "", "ships pe binaries but its platform tag is "
            "manylinux_2_28_x86_64") in problems(report)
