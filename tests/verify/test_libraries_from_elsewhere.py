"""Libraries a wheel may need without shipping them or a search path to them: the GPU
driver's libcuda.so.1 (no wheel may ship it), and libraries that importing a declared
dependency loads (libc10.so after `import torch`, which the load checks import first). Notes
on how they resolve, never "not found" errors; a warning when the dependency is not
declared (it loads only where the user installed it by hand), the same rule for every way
such a library is found; an extra's library is optional: its loads are "not run
(environment)" when the extra is not installed."""

from __future__ import annotations

import subprocess
from pathlib import Path

from release.findings import Severity
from release.verify import VerifyOptions, verify_wheel
from tests.verify.corpus import resolutions
from tests.verify.test_wheel_safety import make_wheel

TAG = "cp311-abi3-manylinux_2_17_x86_64"


def _library(folder: Path, name: str, source: str, *links: str) -> Path:
    (folder / f"{name}.c").write_text(source)
    output = folder / name
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(output), f"-Wl,-soname,{name}",
                    str(folder / f"{name}.c"), f"-L{folder}", "-Wl,--no-as-needed", *links],
                   check=True, capture_output=True)
    return output


def _platform_wheel(tmp_path: Path, files: dict[str, bytes], *, metadata: str = "",
                    extras: str = "") -> Path:
    """A manylinux wheel of ``files`` with METADATA lines ``metadata`` (Requires-Dist...)."""
    return make_wheel(tmp_path / f"gpu_demo-1.0-{TAG}.whl", files, tag=TAG, name="gpu_demo",
                      metadata=extras + metadata)


def test_the_nvidia_driver_library_is_a_note(tmp_path: Path) -> None:
    _library(tmp_path, "libcuda.so.1", "int cuInit(unsigned flags) { return (int)flags; }\n")
    (tmp_path / "libcuda.so").symlink_to("libcuda.so.1")
    user = _library(tmp_path, "libgpu_user.so",
                    "int cuInit(unsigned);\nint start(void) { return cuInit(0); }\n", "-lcuda")
    files = {"gpu_demo/libgpu_user.so": user.read_bytes()}
    wheel = _platform_wheel(tmp_path, files)
    report = verify_wheel(wheel, static=True)
    linkage = [f for f in report.findings if f.check == "linkage"]
    assert not [f for f in linkage if f.severity is not Severity.INFO], report.render_text()
    (note,) = linkage
    assert "libcuda.so.1" in note.what and "the NVIDIA driver" in note.what
    assert note.details["count"] == 1


def _extension_wheel(tmp_path: Path, requires: str) -> Path:
    _library(tmp_path, "libc10.so", "int c10_value(void) { return 10; }\n")
    extension = _library(tmp_path, "_ops.so", "int c10_value(void);\n"
                         "int ops(void) { return c10_value(); }\n", "-lc10")
    files = {"gpu_demo/_ops.so": extension.read_bytes()}
    wheel = _platform_wheel(tmp_path, files, metadata=requires)
    return wheel


def test_a_library_loaded_by_importing_a_declared_dependency_is_a_note(tmp_path: Path) -> None:
    """A PyTorch extension names libc10.so with no search path into torch/lib: it resolves
    because `import torch` loaded it. Declared: a note saying so; undeclared: a warning."""
    report = verify_wheel(_extension_wheel(tmp_path, "Requires-Dist: torch>=2\n"), static=True)
    linkage = [f for f in report.findings if f.check == "linkage"]
    assert [f.severity for f in linkage] == [Severity.INFO], report.render_text()
    assert "libc10.so" in linkage[0].what and "import torch" in linkage[0].what
    undeclared = tmp_path / "undeclared"
    undeclared.mkdir()
    report = verify_wheel(_extension_wheel(undeclared, ""), static=True)
    (warning,) = [f for f in report.findings if f.check == "linkage"]
    assert warning.severity is Severity.WARNING and "'torch'" in warning.what
    assert "import torch" in warning.what
    assert warning.fix.startswith("add 'torch' to Requires-Dist")


def _fake_torch_site(folder: Path) -> Path:
    """A site folder with a stand-in `torch` whose import loads its libc10.so globally."""
    site = folder / "site"
    (site / "torch" / "lib").mkdir(parents=True)
    _library(site / "torch" / "lib", "libc10.so", "int c10_value(void) { return 10; }\n")
    (site / "torch" / "__init__.py").write_text(
        "import ctypes, os\nctypes.CDLL(os.path.join(os.path.dirname(__file__), 'lib', "
        "'libc10.so'), mode=ctypes.RTLD_GLOBAL)\n")
    (site / "torch-2.9.0.dist-info").mkdir()
    (site / "torch-2.9.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.9.0\n")
    return site


def test_the_load_matrix_imports_the_declared_dependency_first(tmp_path: Path) -> None:
    """Loaded alone the extension cannot find libc10.so; after `import torch` (what the
    package's own import does first) it loads."""
    site = _fake_torch_site(tmp_path)
    wheel = _extension_wheel(tmp_path, "Requires-Dist: torch>=2\n")
    report = verify_wheel(wheel, options=VerifyOptions(sites=(site,), offline=True))
    assert report.checks["load-matrix"] == "ran", report.render_text()
    assert not [f for f in report.findings if f.severity is not Severity.INFO], \
        report.render_text()


def test_a_cuda_library_torch_preloads_is_provided_by_the_declared_torch(tmp_path: Path) -> None:
    """torchvision's extension needs libcudart.so.13 with no search path: torch's CUDA builds
    load it when imported, its CPU builds do not. Declared as torch==2.9.0, which any build
    satisfies, static verify cannot prove it is found (a warning naming the assumption, not
    an undeclared CUDA toolkit library); pinned to a CUDA build, it is torch's (a note)."""
    _library(tmp_path, "libcudart.so.13", "int cudaFree(void *p) { return p != 0; }\n")
    extension = _library(tmp_path, "_C.so", "int cudaFree(void *);\n"
                         "int ops(void) { return cudaFree(0); }\n", "-l:libcudart.so.13")
    files = {"gpu_demo/_C.so": extension.read_bytes()}
    wheel = _platform_wheel(tmp_path, files, metadata="Requires-Dist: torch==2.9.0\n")
    (warning,) = [f for f in verify_wheel(wheel, static=True).findings if f.check == "linkage"]
    assert warning.severity is Severity.WARNING, warning.what
    assert "depends on which build of torch is installed" in warning.what
    pinned = _platform_wheel(tmp_path, files, metadata="Requires-Dist: torch==2.9.0+cu130\n")
    (note,) = [f for f in verify_wheel(pinned, static=True).findings if f.check == "linkage"]
    assert note.severity is Severity.INFO and "after `import torch`" in note.what, note.what


def _torch_folder_wheel(tmp_path: Path, *, ship_copy: bool) -> Path:
    """An extension needing libfoo.so with RUNPATH $ORIGIN/../torch/lib:$ORIGIN, shipping
    libfoo.so beside it when ``ship_copy``."""
    foo = _library(tmp_path, "libfoo.so", "int foo(void) { return 1; }\n")
    source = tmp_path / "ext.c"
    source.write_text("int foo(void);\nint ext(void) { return foo(); }\n")
    extension = tmp_path / "_ext.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(extension), str(source), f"-L{tmp_path}",
                    "-Wl,--no-as-needed", "-lfoo", "-Wl,--enable-new-dtags",
                    "-Wl,-rpath,$ORIGIN/../torch/lib:$ORIGIN"], check=True, capture_output=True)
    files = {"gpu_demo/_ext.so": extension.read_bytes()}
    if ship_copy:
        files["gpu_demo/libfoo.so"] = foo.read_bytes()
    return _platform_wheel(tmp_path, files)


def test_a_folder_of_another_distribution_does_not_claim_every_name(tmp_path: Path) -> None:
    """RUNPATH $ORIGIN/../torch/lib:$ORIGIN and the wheel ships libfoo.so beside the
    extension: torch/lib is only known to be torch's folder ("*"), so the wheel's own copy
    further along is what loads, not an undeclared torch library."""
    wheel = _torch_folder_wheel(tmp_path, ship_copy=True)
    report = verify_wheel(wheel, static=True)
    assert not [f for f in report.findings if f.check == "linkage"], report.render_text()
    (found,) = [r for r in resolutions(wheel) if r.needed == "libfoo.so"]
    assert (found.kind, found.target, found.via) == ("wheel", "gpu_demo/libfoo.so", "DT_RUNPATH")


def test_without_the_wheels_copy_torchs_folder_is_what_would_provide_it(tmp_path: Path) -> None:
    """The same extension without libfoo.so in the wheel: only torch/lib can provide it, and
    torch is not declared, so that is the linkage warning."""
    wheel = _torch_folder_wheel(tmp_path, ship_copy=False)
    (warning,) = [f for f in verify_wheel(wheel, static=True).findings if f.check == "linkage"]
    assert warning.severity is Severity.WARNING and warning.file == "gpu_demo/_ext.so"
    assert "needs libfoo.so, found only in torch/lib/ of distribution 'torch'" in warning.what
    (found,) = [r for r in resolutions(wheel) if r.needed == "libfoo.so"]
    assert (found.kind, found.target, found.distribution) == ("undeclared", "torch/lib", "torch")


def _runpath_wheel(tmp_path: Path, requires: str) -> Path:
    """An extension needing libcublas.so.12 through $ORIGIN/../nvidia/cublas/lib."""
    _library(tmp_path, "libcublas.so.12", "int cublasCreate(void) { return 0; }\n")
    (tmp_path / "libcublas.so").symlink_to("libcublas.so.12")
    source = tmp_path / "provider.c"
    source.write_text("int cublasCreate(void);\nint provider(void) { return cublasCreate(); }\n")
    extension = tmp_path / "_provider.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(extension), str(source), f"-L{tmp_path}",
                    "-Wl,--no-as-needed", "-lcublas", "-Wl,--enable-new-dtags",
                    "-Wl,-rpath,$ORIGIN/../nvidia/cublas/lib"], check=True, capture_output=True)
    files = {"gpu_demo/_provider.so": extension.read_bytes()}
    wheel = _platform_wheel(tmp_path, files, metadata=requires, extras="Provides-Extra: cuda\n")
    return wheel


def test_a_dependency_declared_under_an_extra_is_optional(tmp_path: Path) -> None:
    """An execution provider loaded on demand, its CUDA library from the [cuda] extra: a note
    that it is optional, not a hard error."""
    wheel = _runpath_wheel(tmp_path, 'Requires-Dist: nvidia-cublas-cu12; extra == "cuda"\n')
    (note,) = [f for f in verify_wheel(wheel, static=True).findings if f.check == "linkage"]
    assert note.severity is Severity.INFO and "[cuda]" in note.what, note.what


def test_an_extras_library_makes_its_loads_not_run_environment(tmp_path: Path) -> None:
    """The extra's provider is not installed here: the file that needs it is not loaded, and
    the load matrix says so as the environment's, not as an error against the wheel."""
    wheel = _runpath_wheel(tmp_path, 'Requires-Dist: nvidia-cublas-cu12; extra == "cuda"\n')
    report = verify_wheel(wheel, options=VerifyOptions(offline=True))
    assert report.checks["load-matrix"] == "not run (environment)", report.render_text()
    assert report.ok and not [f for f in report.findings if f.severity is not Severity.INFO]
    (note,) = [f for f in report.findings if f.check == "load-matrix" and "nvidia-cublas-cu12"
               in f.what]
    assert note.what.startswith("not run (environment)")


def test_a_dependency_whose_marker_excludes_the_platform_is_undeclared(tmp_path: Path) -> None:
    wheel = _runpath_wheel(tmp_path, 'Requires-Dist: nvidia-cublas-cu12; sys_platform == "win32"\n')
    (warning,) = [f for f in verify_wheel(wheel, static=True).findings if f.check == "linkage"]
    assert warning.severity is Severity.WARNING and "does not declare" in warning.what


def test_the_load_matrix_loads_what_users_load(tmp_path: Path) -> None:
    """Two extension modules (never paired: RTLD_LOCAL cannot interpose) and a bundled library
    one of them needs (loaded through it, not directly)."""
    dep = _library(tmp_path, "libdep-1a2b3c4d.so", "int dep(void) { return 2; }\n")
    first = tmp_path / "first.abi3.so"
    (tmp_path / "first.c").write_text("int dep(void);\nint first(void) { return dep(); }\n"
                                      "void *PyInit_first(void) { return 0; }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(first), str(tmp_path / "first.c"),
                    str(dep), "-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN/../gpu_demo.libs"],
                   check=True, capture_output=True)
    second = _library(tmp_path, "second.abi3.so", "void *PyInit_second(void) { return 0; }\n")
    files = {"gpu_demo/first.abi3.so": first.read_bytes(),
             "gpu_demo/second.abi3.so": second.read_bytes(),
             "gpu_demo.libs/libdep-1a2b3c4d.so": dep.read_bytes()}
    wheel = _platform_wheel(tmp_path, files)
    report = verify_wheel(wheel)
    assert report.checks["load-matrix"] == "ran", report.render_text()
    (summary,) = [f for f in report.findings if f.check == "load-matrix"]
    assert summary.severity is Severity.INFO, report.render_text()
    assert summary.what.startswith("3 load combinations run"), summary.what  # all + 2 alone
    assert report.to_json()["binaries"] == {"elf": 3}   # what was read, per format


def test_duplicates_report_root_causes_not_noise(tmp_path: Path) -> None:
    """Version nodes, PyInit_*, symbols only extension modules share, and std:: instances are
    not clashes; byte-identical copies are one 'copies' finding; a real clash is one warning."""
    (tmp_path / "v.map").write_text('DEMO_1.0 { global: shared_api; demo_*; '
                                    'extern "C++" { std::*; }; local: *; };\n')
    common = ('#include <string>\nextern "C" int shared_api(void) { return 1; }\n'
              'namespace std { int demo_probe(int x) { return x + 1; } }\n')  # a strong std::
    libraries = {}
    for name in ("liba.so", "libb.so"):
        (tmp_path / f"{name}.cpp").write_text(common + f'extern "C" int demo_{name[3]}(void)'
                                              " { return 2; }\n")
        subprocess.run(["c++", "-shared", "-fPIC", "-o", str(tmp_path / name),
                        str(tmp_path / f"{name}.cpp"), f"-Wl,--version-script={tmp_path}/v.map"],
                       check=True, capture_output=True)
        libraries[f"gpu_demo/{name}"] = (tmp_path / name).read_bytes()
    for name in ("one", "two"):
        module = _library(tmp_path, f"{name}.abi3.so", "int helper(void) { return 1; }\n"
                          f"void *PyInit_{name}(void) {{ return 0; }}\n")
        libraries[f"gpu_demo/{name}.abi3.so"] = module.read_bytes()
    copy = libraries["gpu_demo/liba.so"]
    libraries["gpu_demo/vendored/liba.so"] = copy
    # the package opens its libraries into the global scope, where they meet
    libraries["gpu_demo/__init__.py"] = (b"import ctypes, os\nfor name in ('liba.so', "
                                         b"'libb.so'):\n    ctypes.CDLL(os.path.join("
                                         b"os.path.dirname(__file__), name), "
                                         b"mode=ctypes.RTLD_GLOBAL)\n")
    report = verify_wheel(_platform_wheel(tmp_path, libraries), static=True)
    duplicates = sorted((f.severity.value, f.what) for f in report.findings
                        if f.check == "duplicates" and f.severity is not Severity.INFO)
    assert len(duplicates) == 2, duplicates   # + one note on std:: (info, not listed here)
    assert [f for f in report.findings if f.check == "duplicates" and "std::" in f.what]
    assert {severity for severity, _ in duplicates} == {"warning"}
    copies = [what for _, what in duplicates if "byte-identical copies" in what]
    clashes = [what for _, what in duplicates if what.startswith("1 exported symbols")]
    assert len(copies) == 1 and len(clashes) == 1, duplicates   # shared_api, nothing else
