"""The win_amd64 wheel, cross-built here with zig and run for real under wine: its tag, its
layout (DLLs without prefix in edgert/lib with their import libraries, the C API only, an
extension linking python3.dll), verify's full report with the load checks under wine, the C
example built against the wheel's SDK with the zig toolchain printing exactly what Linux
prints, and each way a Windows wheel goes wrong caught by verify: a package that does not add
its DLL folder, a DLL needing a DLL nobody ships, a renamed component DLL.

Needs Debian's wine64: the wine tool tier (tests/tools.toml; README command 2 installs it);
zig comes from the package index, its cache and the wine prefix live in the tool cache."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from platforms.windows import PLATFORM as WINDOWS
from platforms.windows import TARGET as ZIG_TARGET
from platforms.windows import toolchain_folder, wine
from release.binary.pe import PeReader
from release.distribution import wheel as wheel_module
from release.errors import ToolError
from release.host import Host, Runner
from release.manifest import Target
from release.platform import RepairRequest
from release.toolchain import tools, zig
from release.verify import VerifyOptions
from release.verify.api import verify_wheel
from release.verify.report import Report
from tests.conftest import run_release
from tests.integration.conftest import MODELS, build_verified, run_checked, unpack

TARGET = Target(name="windows-amd64", platform="windows", arch="amd64")
COMPONENT_DLLS = {"edgert.dll", "edgert_threadpool.dll", "edgert_kernels.dll",
                  "edgert_kernels_quantized.dll", "edgert_backend_cpu.dll",
                  "edgert_export_plugin.dll"}

pytestmark = pytest.mark.index   # zig comes from the package index


@dataclass(frozen=True)
class WindowsWheel:
    path: Path
    result: dict
    runner: Runner


@pytest.fixture(scope="module")
def windows_wheel(tmp_path_factory: pytest.TempPathFactory) -> WindowsWheel:
    """The repaired, fully verified (under wine) win_amd64 CPU wheel. The build provisions
    the wine runner (prefix, helpers, zig cache seed) beside the compile; afterwards asking
    for it again finds it in the tool cache."""
    # the wine tool tier (tests/tools.toml): not reached where wine is missing
    assert wine.find_wine() is not None, f"apt-get install {wine.WINE_PACKAGE}"
    result = build_verified("windows", "amd64", tmp_path_factory.mktemp("dist-windows"))
    assert result.wheel is not None
    runner = WINDOWS.runner(TARGET, host=Host.current(), cache=tools.cache_dir())
    assert runner is not None and runner.system == "windows" and runner.cmake_arguments
    return WindowsWheel(result.wheel, result.to_json(), runner)


def mutated(wheel: Path, folder: Path, change: Callable[[dict[str, tuple[bytes, int]]], None]
            ) -> Path:
    """A copy of ``wheel`` with ``change`` applied to its entries and a matching RECORD."""
    entries = wheel_module.read_entries(wheel)
    change(entries)
    out = folder / wheel.name
    wheel_module.write_wheel(out, entries, dist_info=wheel_module.dist_info_of(entries),
                             epoch=315532800)   # 1980-01-01, the oldest a zip holds
    return out


def errors(report: Report) -> list[tuple[str, str, str]]:
    return [(f.check, f.file, f.what) for f in report.findings if f.severity == "error"]


def test_tag_layout_and_full_verify_under_wine(windows_wheel: WindowsWheel) -> None:
    name = wheel_module.WheelName.parse(windows_wheel.path.name)
    assert (name.python, name.abi, name.platform) == ("cp39", "abi3", "win_amd64")
    with zipfile.ZipFile(windows_wheel.path) as archive:
        names = set(archive.namelist())
        binaries = {entry: PeReader().read(archive.read(entry), where=entry)
                    for entry in names if entry.endswith((".dll", ".pyd"))}
    assert {entry.rsplit("/", 1)[1] for entry in binaries if entry.startswith("edgert/lib/")} \
        == COMPONENT_DLLS
    # every DLL comes with its import library (what C and MSVC users link)
    assert {f"edgert/lib/{dll[:-4]}.lib" for dll in COMPONENT_DLLS} <= names
    assert {info.machine for info in binaries.values()} == {"x86_64"}
    # no PDB next to them or named in them (a PDB's GUID would differ per build folder)
    assert not [entry for entry in names if entry.endswith(".pdb")]
    with zipfile.ZipFile(windows_wheel.path) as archive:
        assert not [entry for entry in binaries if b".pdb" in archive.read(entry)]
    extension = binaries["edgert/_C.pyd"]
    assert "python3.dll" in extension.needed        # the stable ABI, not python3X.dll
    assert {"edgert.dll", "edgert_kernels.dll", "edgert_backend_cpu.dll"} <= set(extension.needed)
    # the C API only: no C++ header, no pkg-config file
    assert "edgert/include/edgert/edgert.h" in names
    assert not [entry for entry in names if entry.endswith((".hpp", ".pc"))]
    report = windows_wheel.result["verify"]
    assert report["ok"] and report["summary"]["error"] == 0 and not report["static"]
    assert set(report["checks"].values()) == {"ran"}, report["checks"]
    loads = [f["what"] for f in report["findings"] if f["check"] == "load-matrix"]
    assert any("load combinations run" in what for what in loads), loads


def test_verify_command_runs_the_load_checks_under_wine(windows_wheel: WindowsWheel) -> None:
    completed = run_release("verify", "--json", str(windows_wheel.path))
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr
    assert '"load-matrix": "ran"' in completed.stdout


@dataclass(frozen=True)
class Consumer:
    site: Path        # the unpacked wheel
    build: Path       # the shipped consumer, built against it with the zig toolchain


@pytest.fixture(scope="module")
def consumer(windows_wheel: WindowsWheel, tmp_path_factory: pytest.TempPathFactory
             ) -> Consumer:
    """The shipped consumer configured through CMAKE_PREFIX_PATH with the zig toolchain (only
    its C program: the Windows SDK is the C API), its DLLs copied beside it by its own rule."""
    runner = windows_wheel.runner
    assert runner.cmake_arguments is not None
    tmp_path = tmp_path_factory.mktemp("windows-consumer")
    site = unpack(windows_wheel.path, tmp_path / "site")
    build = tmp_path / "build"
    cmake = str(tools.cmake())
    run_checked([cmake, "-S", str(site / "edgert/examples/consumer"), "-B", str(build),
                 "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={tools.ninja()}",
                 "-DCMAKE_BUILD_TYPE=Release", *runner.cmake_arguments,
                 f"-DCMAKE_PREFIX_PATH={site / 'edgert'}"])
    run_checked([cmake, "--build", str(build)])
    return Consumer(site, build)


def test_c_example_against_the_sdk_prints_what_linux_prints(
        windows_wheel: WindowsWheel, consumer: Consumer, cpu_wheel_outputs: dict[str, str]) -> None:
    """Run under wine: byte for byte the Linux wheel's Python output."""
    build, site = consumer.build, consumer.site
    assert sorted(path.name for path in build.glob("*.exe")) == ["run_program_c.exe"]
    assert {path.name for path in build.glob("*.dll")} >= {"edgert.dll", "edgert_kernels.dll"}
    for model in MODELS:
        output = run_checked(windows_wheel.runner.command(
            str(build / "run_program_c.exe"),
            wine.windows_path(site / "edgert" / "models" / f"{model}.edgert")), cwd=str(build))
        assert output.replace("\r\n", "\n") == cpu_wheel_outputs[model], model


def test_an_exception_unwinding_through_another_dll_is_the_c_api_s_typed_error(
        windows_wheel: WindowsWheel, consumer: Consumer, tmp_path: Path) -> None:
    """Each DLL carries its own copy of libc++ (zig links it statically). A 2^20 x 2^20 float32
    matmul (4 TiB): std::bad_alloc is thrown by the runtime's allocation, unwound through
    the kernels DLL's frames and caught back in the runtime, which turns it into
    EDGERT_OUT_OF_MEMORY: the same message as on Linux, and no crash."""
    import numpy as np
    model, column, row = tmp_path / "outer.edgert", tmp_path / "a.raw", tmp_path / "b.raw"
    write = ("import sys, numpy as np\nfrom edgert.export import ProgramBuilder\n"
             "b = ProgramBuilder()\n"
             "b.output(b.op('edgert::matmul', [b.input(np.float32, [1 << 20, 1]), "
             "b.input(np.float32, [1, 1 << 20])]))\nb.save(sys.argv[1])\n")
    subprocess.run([sys.executable, "-c", write, str(model)], check=True,
                   env={**os.environ, "PYTHONPATH": str(consumer.site)})
    np.ones(1 << 20, np.float32).tofile(column)
    np.ones(1 << 20, np.float32).tofile(row)
    completed = subprocess.run(windows_wheel.runner.command(
        str(consumer.build / "run_program_c.exe"), wine.windows_path(model),
        wine.windows_path(column), wine.windows_path(row), "--backends", ""),
        capture_output=True, text=True, check=False, cwd=str(tmp_path))
    assert completed.returncode == 1, (completed.returncode, completed.stderr)
    assert completed.stderr.strip() == "error: out of memory while running the program", \
        completed.stderr


def test_a_package_that_does_not_add_its_dll_folder_is_caught(
        windows_wheel: WindowsWheel, tmp_path: Path) -> None:
    def drop_the_call(entries: dict[str, tuple[bytes, int]]) -> None:
        data, mode = entries["edgert/__init__.py"]
        text = data.decode()
        assert "os.add_dll_directory(" in text
        entries["edgert/__init__.py"] = (text.replace("os.add_dll_directory(", "print(")
                                         .encode(), mode)
    broken = mutated(windows_wheel.path, tmp_path, drop_the_call)
    static = verify_wheel(broken, static=True)
    assert ("linkage", "edgert/_C.pyd") in {(check, file) for check, file, _ in errors(static)}
    full = verify_wheel(broken, options=VerifyOptions(offline=True))
    # one finding for the root cause: the load matrix does not load what linkage failed
    assert {(check, file) for check, file, _ in errors(full)} == {("linkage", "edgert/_C.pyd")}


def _dll_needing_an_unshipped_dll(folder: Path) -> bytes:
    """A DLL importing helper.dll, which is built beside it but never shipped."""
    tools_folder = toolchain_folder(tools.cache_dir())
    zig.write_toolchain(ZIG_TARGET, tools_folder, cache=tools.cache_dir())
    (folder / "helper.c").write_text("__declspec(dllexport) int helper(void) { return 1; }\n")
    (folder / "extra.c").write_text("__declspec(dllimport) int helper(void);\n"
                                    "__declspec(dllexport) int extra(void) { return helper(); }\n")
    cc = str(zig.tool_path(tools_folder, "cc"))
    run_checked([cc, "-shared", "-o", str(folder / "helper.dll"), str(folder / "helper.c"),
                 f"-Wl,--out-implib,{folder / 'helper.lib'}"])
    run_checked([cc, "-shared", "-o", str(folder / "extra.dll"), str(folder / "extra.c"),
                 str(folder / "helper.lib")])
    return (folder / "extra.dll").read_bytes()


def test_a_dll_needing_a_dll_nobody_ships_is_caught(windows_wheel: WindowsWheel,
                                                    tmp_path: Path) -> None:
    extra = _dll_needing_an_unshipped_dll(tmp_path)
    (tmp_path / "out").mkdir()
    broken = mutated(windows_wheel.path, tmp_path / "out", lambda entries: entries.__setitem__(
        "edgert/lib/extra.dll", (extra, 0o755)))
    report = verify_wheel(broken, static=True)
    assert any(check == "linkage" and file == "edgert/lib/extra.dll" and "helper.dll" in what
               for check, file, what in errors(report)), errors(report)
    # and the repair stage refuses to pass such a wheel on
    (tmp_path / "repaired").mkdir()
    with pytest.raises(ToolError, match="needs helper.dll, which is neither shipped"):
        WINDOWS.repair(RepairRequest(broken, tmp_path / "repaired", keep=(), exclude=()))
    assert not list((tmp_path / "repaired").iterdir())


def test_a_renamed_component_dll_is_caught(windows_wheel: WindowsWheel, tmp_path: Path) -> None:
    def rename(entries: dict[str, tuple[bytes, int]]) -> None:
        entries["edgert/lib/libedgert_kernels.dll"] = entries.pop("edgert/lib/edgert_kernels.dll")
    report = verify_wheel(mutated(windows_wheel.path, tmp_path, rename), static=True)
    found = errors(report)
    assert any(check == "linkage" and "edgert_kernels.dll" in what for check, _, what in found)
    assert ("components", "edgert/lib/edgert_kernels.dll",
            "component 'kernels' is missing from the wheel") in found, found


ISA_PROBE = r"""
#include <stdio.h>
#include <windows.h>
typedef const char* (*name_fn)(void);
int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; i += 2) {
    HMODULE library = LoadLibraryA(argv[i]);
    name_fn name = library ? (name_fn)GetProcAddress(library, argv[i + 1]) : NULL;
    if (name == NULL) return fprintf(stderr, "cannot call %s in %s\n", argv[i + 1], argv[i]), 2;
    printf("%s\n", name());
  }
  return 0;
}
"""


def expected_levels() -> list[str]:
    """The float and integer kernel levels this processor should get, from Linux's flags."""
    flags = set(next(line for line in Path("/proc/cpuinfo").read_text().splitlines()
                     if line.startswith("flags")).split())
    if {"avx512f", "avx512vl", "avx512bw", "avx512dq"} <= flags:
        return ["avx512", "avx512vnni" if "avx512_vnni" in flags else "avx512"]
    return ["avx2", "avx2"] if "avx2" in flags else ["portable", "portable"]


def test_the_dlls_choose_the_instruction_sets_the_processor_has(
        windows_wheel: WindowsWheel, consumer: Consumer, tmp_path: Path) -> None:
    """The zig-built DLLs detect the processor's vector units themselves (cpuid and XCR0),
    so under wine they pick what this processor has (zig's runtime answers "no" to
    __builtin_cpu_supports, which left them on the portable code)."""
    tools_folder = toolchain_folder(tools.cache_dir())
    zig.write_toolchain(ZIG_TARGET, tools_folder, cache=tools.cache_dir())
    (tmp_path / "probe.c").write_text(ISA_PROBE)
    run_checked([str(zig.tool_path(tools_folder, "cc")), "-o", str(tmp_path / "probe.exe"),
                 str(tmp_path / "probe.c")])
    dlls = consumer.build
    output = run_checked(windows_wheel.runner.command(
        str(tmp_path / "probe.exe"),
        wine.windows_path(dlls / "edgert_kernels.dll"), "edgert_kernels_isa",
        wine.windows_path(dlls / "edgert_kernels_quantized.dll"), "edgert_kernels_quantized_isa"),
        cwd=str(dlls))
    assert output.split() == expected_levels()
