"""Crafted wheels, one per class of finding real wheels once got wrong (issue 36): each is
built from synthetic Mach-O or PE images (no compiler) and verified statically.

aarch64's linker symbols, Mach-O N_INDR re-exports, one flat image beside two-level ones,
libraries only the package's RTLD_GLOBAL opens might put together, a system folder and
inert LC_RPATHs, build paths quoted in prose, and on Windows System32 DLLs, preloads, case
and name collisions."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from release.findings import Severity
from release.verify import verify_wheel
from release.verify.report import Report
from tests.verify import crafted
from tests.verify.macho_writer import macho
from tests.verify.pe_images import pe_image

MAC = "cp311-cp311-macosx_11_0_arm64"
BUNDLE = "demo/_core.cpython-311-darwin.so"


def problems(report: Report, check: str = "") -> list[tuple[str, str, str]]:
    return sorted((f.check, f.file, f.what) for f in report.findings
                  if f.severity in (Severity.ERROR, Severity.WARNING)
                  and (not check or f.check == check))


def notes(report: Report, check: str) -> list[str]:
    return [f.what for f in report.findings if f.severity is Severity.INFO and f.check == check]


def mac_wheel(folder: Path, files: dict[str, bytes], *, metadata: str = "") -> Path:
    extra = {"demo-1.0.dist-info/METADATA": ("Metadata-Version: 2.1\nName: demo\nVersion: 1.0"
                                             f"\n\n{metadata}").encode()} if metadata else {}
    return crafted.wheel(folder, {"demo/__init__.py": b"", **files, **extra}, tag=MAC)


def library(name: str, *, exports: Sequence[str] = (), indirect: Sequence[str] = (),
            flat: bool = False) -> bytes:
    """A dylib whose install name (as delocate writes it) makes each file its own."""
    return macho(install_name=f"/DLC/demo/.dylibs/{name}", exports=exports,
                 indirect=indirect, flat=flat)


def two_libraries(folder: Path, a: bytes, b: bytes, *, bundle_imports: tuple[str, ...] = (),
                  flat_bundle: bool = False) -> Report:
    bundle = macho(kind="bundle", exports=["PyInit__core"], flat=flat_bundle,
                   imports=bundle_imports,
                   loads=["@loader_path/.dylibs/liba.dylib", "@loader_path/.dylibs/libb.dylib",
                          "/usr/lib/libSystem.B.dylib"])
    return verify_wheel(mac_wheel(folder, {BUNDLE: bundle, "demo/.dylibs/liba.dylib": a,
                                           "demo/.dylibs/libb.dylib": b}), static=True)


def test_the_linkers_bss_symbols_are_no_interposition(tmp_path: Path) -> None:
    """GNU ld's AArch64 scripts define __bss_start__, __bss_end__ and _bss_end__ in every
    shared object; each image binds its own."""
    linker = ["__bss_start__", "__bss_end__", "_bss_end__", "__bss_start"]
    report = two_libraries(tmp_path, library("liba.dylib", exports=linker, flat=True),
                           library("libb.dylib", exports=linker, flat=True))
    assert problems(report, "duplicates") == []
    clash = two_libraries(tmp_path,
                          library("liba.dylib", exports=[*linker, "run"], flat=True),
                          library("libb.dylib", exports=[*linker, "run"], flat=True))
    assert [what for _, _, what in problems(clash, "duplicates")] == [
        "1 exported symbols defined by both demo/.dylibs/liba.dylib and demo/.dylibs/libb.dylib"]


def test_an_n_indr_re_export_is_not_a_definition(tmp_path: Path) -> None:
    report = two_libraries(tmp_path, library("liba.dylib", exports=["run"], flat=True),
                           library("libb.dylib", indirect=["run"], flat=True))
    assert problems(report, "duplicates") == []


def test_a_flat_image_makes_a_clash_only_of_the_symbols_it_uses(tmp_path: Path) -> None:
    """Two two-level libraries define run; a flat-namespace bundle loads both. Each
    two-level image binds to the library it was linked against: only a flat image's own
    reference to run can go to either."""
    quiet = two_libraries(tmp_path, library("liba.dylib", exports=["run"]),
                          library("libb.dylib", exports=["run"]), flat_bundle=True)
    assert problems(quiet, "duplicates") == []
    used = two_libraries(tmp_path, library("liba.dylib", exports=["run"]),
                         library("libb.dylib", exports=["run"]), flat_bundle=True,
                         bundle_imports=("run",))
    assert len(problems(used, "duplicates")) == 1


def test_libraries_only_rtld_global_might_put_together_are_a_note(tmp_path: Path) -> None:
    """Two backends the package opens itself (nothing ships loads them), chosen at run time:
    its Python mentions RTLD_GLOBAL, which does not say it opens both in one process."""
    opener = b"import ctypes\nlib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)\n"
    path = mac_wheel(tmp_path, {
        "demo/_loader.py": opener,
        "demo/libbackend_a.dylib": library("libbackend_a.dylib", exports=["backend_run"],
                                           flat=True),
        "demo/libbackend_b.dylib": library("libbackend_b.dylib", exports=["backend_run"],
                                           flat=True)})
    report = verify_wheel(path, static=True)
    assert problems(report, "duplicates") == []
    assert any("only if it opens them together with RTLD_GLOBAL" in what
               for what in notes(report, "duplicates")), notes(report, "duplicates")


def test_a_system_folder_in_lc_rpath_is_no_build_machine_folder(tmp_path: Path) -> None:
    bundle = macho(kind="bundle", exports=["PyInit__core"], rpaths=["/usr/lib"],
                   loads=["@rpath/libSystem.B.dylib"])
    report = verify_wheel(mac_wheel(tmp_path, {BUNDLE: bundle}), static=True)
    assert problems(report, "search-path") == []
    assert any("is a system folder" in what for what in notes(report, "search-path"))


def test_lc_rpaths_no_file_searches_are_inert(tmp_path: Path) -> None:
    """A wheel with no @rpath/ install name: dyld never searches its LC_RPATH entries."""
    inert = macho(kind="bundle", exports=["PyInit__core"], rpaths=["/Users/runner/build/lib"],
                  loads=["/usr/lib/libSystem.B.dylib"])
    report = verify_wheel(mac_wheel(tmp_path, {BUNDLE: inert}), static=True)
    assert problems(report, "search-path") == []
    assert any("(inert: no file of the wheel searches its LC_RPATH)" in what
               for what in notes(report, "search-path"))
    used = macho(kind="bundle", exports=["PyInit__core"], rpaths=["/Users/runner/build/lib",
                                                                  "@loader_path/.dylibs"],
                 loads=["@rpath/liba.dylib"])
    live = verify_wheel(mac_wheel(tmp_path, {BUNDLE: used, "demo/.dylibs/liba.dylib":
                                             macho(exports=["a"])}), static=True)
    assert [what for _, _, what in problems(live, "search-path")] == [
        "search path '/Users/runner/build/lib' is absolute"]


def test_a_build_path_quoted_in_prose_is_not_a_leak(tmp_path: Path) -> None:
    text = "Build it yourself: cd /Users/runner/work/demo && make\n"
    path = mac_wheel(tmp_path, {"demo/README.md": text.encode()}, metadata=text)
    report = verify_wheel(path, static=True)
    assert problems(report, "leaks") == []
    assert any("quote build-machine paths" in what for what in notes(report, "leaks"))


WINDOWS = "cp311-cp311-win_amd64"
SYSTEM = ["KERNEL32.dll", "VCRUNTIME140.dll", "api-ms-win-crt-runtime-l1-1-0.dll",
          "python311.dll"]
DISTRIBUTOR_INIT = b"""import os
import os.path as op
from ctypes import WinDLL

if os.name == "nt":
    libs_path = op.join(op.dirname(__file__), ".libs")
    WinDLL(op.abspath(op.join(libs_path, "vcomp140.dll")))
"""


def test_windows_system32_preloads_case_and_collisions(tmp_path: Path) -> None:
    """scikit-learn's layout: System32 DLLs such as AVICAP32.dll and USP10.dll need no copy;
    VCOMP140.DLL is the preloaded .libs/vcomp140.dll (Windows ignores case and reuses a
    loaded module of that name); the plain name is one collision warning."""
    module = pe_image(imports=["VCOMP140.DLL", "AVICAP32.dll", "USP10.dll", *SYSTEM],
                      exports=["PyInit__core"])
    path = crafted.wheel(tmp_path, {
        "demo/__init__.py": b"from . import _distributor_init\n",
        "demo/_distributor_init.py": DISTRIBUTOR_INIT,
        "demo/sub/_core.cp311-win_amd64.pyd": module,
        "demo/.libs/vcomp140.dll": pe_image(imports=SYSTEM[:3], exports=["omp_run"]),
    }, tag=WINDOWS)
    report = verify_wheel(path, static=True)
    assert problems(report) == [(
        "linkage", "demo/.libs/vcomp140.dll", "1 files load vcomp140.dll by a name other "
        "packages' libraries share")]
    warning = next(f for f in report.findings if f.check == "linkage")
    assert "delvewheel" in warning.fix and "mangling" in warning.fix


def test_windows_add_dll_directory_of_the_packages_own_folder(tmp_path: Path) -> None:
    init = (b"import os\nhere = os.path.split(__file__)[0]\n"
            b"os.add_dll_directory(os.path.join(here, 'bin'))\n")
    path = crafted.wheel(tmp_path, {
        "demo/__init__.py": init,
        "demo/sub/_core.cp311-win_amd64.pyd": pe_image(imports=["helper.dll", *SYSTEM],
                                                       exports=["PyInit__core"]),
        "demo/bin/helper.dll": pe_image(imports=SYSTEM[:3], exports=["helper_run"]),
    }, tag=WINDOWS)
    assert problems(verify_wheel(path, static=True)) == []


def test_an_extension_imported_only_under_try_except_import_error_is_optional(
        tmp_path: Path) -> None:
    """numba imports its TBB threading layer inside try/except ImportError: the layer's
    missing libtbb is the package's fallback, a note; imported plainly, an error."""
    layer = macho(kind="bundle", exports=["PyInit__tbbpool"], loads=["@rpath/libtbb.12.dylib"],
                  rpaths=["@loader_path"])
    guarded = (b"try:\n    from demo.ufunc import _tbbpool\nexcept ImportError:\n"
               b"    _tbbpool = None\n")
    files = {"demo/ufunc/_tbbpool.cpython-311-darwin.so": layer}
    report = verify_wheel(mac_wheel(tmp_path, {**files, "demo/parallel.py": guarded}),
                          static=True)
    assert problems(report, "linkage") == []
    assert any("only under try/except ImportError (demo/parallel.py)" in what
               for what in notes(report, "linkage")), notes(report, "linkage")
    plain = b"from .ufunc import _tbbpool\n"
    broken = verify_wheel(mac_wheel(tmp_path, {**files, "demo/parallel.py": plain}),
                          static=True)
    assert [check for check, _, _ in problems(broken)] == ["linkage"]


def test_a_library_only_some_builds_of_a_dependency_load_is_not_provable(
        tmp_path: Path) -> None:
    """libcudart.so.12 with no search path: torch's CUDA builds preload it, its CPU builds
    do not. Declared as plain torch, static verify cannot say which build users get."""
    module = macho(kind="bundle", exports=["PyInit__C"], loads=["@rpath/libcudart.so.12"])
    files = {"demo/_C.cpython-311-darwin.so": module}
    unpinned = verify_wheel(crafted.wheel(tmp_path, {**files, **_requires("torch>=2.5")},
                                          tag=MAC), static=True)
    assert [what for _, _, what in problems(unpinned, "linkage")] == [
        "needs libcudart.so.12, which only the CUDA builds of the declared 'torch' load "
        "(`import torch`): not provable statically: depends on which build of torch is "
        "installed"]
    pinned = verify_wheel(crafted.wheel(tmp_path, {**files, **_requires("torch==2.5.1+cu121")},
                                        tag=MAC), static=True)
    assert problems(pinned, "linkage") == []


def _requires(requirement: str) -> dict[str, bytes]:
    return {"demo/__init__.py": b"",
            "demo-1.0.dist-info/METADATA": ("Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n"
                                            f"Requires-Dist: {requirement}\n").encode()}


def test_a_flat_image_importing_what_no_library_it_loads_defines(tmp_path: Path) -> None:
    """A flat-namespace bundle imports helper_run, which only libhelper defines, and loads
    nothing that defines it: resolved from whatever was loaded first."""
    bundle = macho(kind="bundle", exports=["PyInit__core"], flat=True, imports=["helper_run"],
                   loads=["/usr/lib/libSystem.B.dylib"])
    helper = library("libhelper.dylib", exports=["helper_run"])
    report = verify_wheel(mac_wheel(tmp_path, {BUNDLE: bundle,
                                               "demo/.dylibs/libhelper.dylib": helper}),
                          static=True)
    assert [(file, what.split(",")[0]) for _, file, what in problems(report, "duplicates")] == [
        (BUNDLE, "imports 1 symbols by name (flat namespace) that none of the libraries it "
                 "loads define")]
    linked = macho(kind="bundle", exports=["PyInit__core"], flat=True, imports=["helper_run"],
                   loads=["@loader_path/.dylibs/libhelper.dylib"])
    fine = verify_wheel(mac_wheel(tmp_path, {BUNDLE: linked,
                                             "demo/.dylibs/libhelper.dylib": helper}),
                        static=True)
    assert problems(fine, "duplicates") == []
