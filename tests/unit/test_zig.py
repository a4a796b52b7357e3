"""zig as a CMake toolchain (release/toolchain/zig.py) and the Windows helpers' generated sources:
the wrapper scripts and toolchain file it writes, rewritten only when their text changes, and the
python3.dll stand-in made from the .def file. No compiler runs here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from platforms.windows import TARGET
from platforms.windows.wine import stand_in_source, windows_path
from release.toolchain import zig


def test_wrappers_run_zig_with_the_target_and_the_shared_cache(tmp_path: Path) -> None:
    text = zig.wrapper_text(Path("/z/zig"), tmp_path / "cache", "c++", TARGET)
    assert text.startswith("#!/bin/sh\n")
    assert 'exec /z/zig c++ -target x86_64-windows-gnu "$@"' in text
    assert f"ZIG_GLOBAL_CACHE_DIR=${{ZIG_GLOBAL_CACHE_DIR:-{tmp_path / 'cache' / 'zig'}}}" in text
    assert 'exec /z/zig ar "$@"' in zig.wrapper_text(Path("/z/zig"), tmp_path, "ar", TARGET)


def test_the_toolchain_file_names_each_wrapper_and_the_target() -> None:
    target = zig.ZigTarget("aarch64-macos.11.0", "Darwin", "arm64",
                           {"CMAKE_OSX_DEPLOYMENT_TARGET": "11.0"})
    text = zig.toolchain_text(Path("/t"), target)
    for line in ("set(CMAKE_SYSTEM_NAME Darwin)", "set(CMAKE_SYSTEM_PROCESSOR arm64)",
                 'set(CMAKE_C_COMPILER "/t/cc")', 'set(CMAKE_CXX_COMPILER "/t/c++")',
                 'set(CMAKE_AR "/t/ar" CACHE FILEPATH "zig ar")',
                 "set(CMAKE_OSX_DEPLOYMENT_TARGET 11.0)"):
        assert line in text.splitlines(), line


def test_files_are_rewritten_only_when_their_text_changes(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(zig, "zig", lambda *, cache=None: Path("/z/zig"))
    folder = tmp_path / "chain"
    toolchain = zig.write_toolchain(TARGET, folder, cache=tmp_path)
    assert toolchain == folder / "toolchain.cmake"
    assert sorted(p.name for p in folder.iterdir()) == [
        "ar", "c++", "cc", "dlltool", "ranlib", "rc", "toolchain.cmake"]
    assert os.access(folder / "cc", os.X_OK)
    stamps = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    os.utime(folder / "cc", ns=(1, 1))
    zig.write_toolchain(TARGET, folder, cache=tmp_path)
    assert (folder / "cc").stat().st_mtime_ns == 1          # same text: untouched
    monkeypatch.setattr(zig, "zig", lambda *, cache=None: Path("/other/zig"))
    zig.write_toolchain(TARGET, folder, cache=tmp_path)
    assert (folder / "cc").stat().st_mtime_ns != 1 and "/other/zig" in (folder / "cc").read_text()
    assert (folder / "toolchain.cmake").stat().st_mtime_ns == stamps["toolchain.cmake"]


def test_the_python3_stand_in_exports_functions_and_data() -> None:
    source = stand_in_source("LIBRARY python3.dll\nEXPORTS\n  PyModule_Create2\n"
                             "  PyExc_TypeError DATA ; a comment\n")
    assert "__declspec(dllexport) void PyModule_Create2(void) { __builtin_trap(); }" in source
    assert "__declspec(dllexport) char PyExc_TypeError[256];" in source
    assert "LIBRARY" not in source.split("*/", 1)[1]


def test_the_python3_def_promises_the_stable_abi_up_to_3_9() -> None:
    text = (Path(__file__).parents[2] / "platforms/windows/python3.def").read_text()
    names = {line.split()[0] for line in text.splitlines()[4:] if line.strip()}
    assert text.splitlines()[2:4] == ["LIBRARY python3.dll", "EXPORTS"]
    assert {"PyModule_Create2", "PyLong_FromLong", "_Py_Dealloc", "_Py_NoneStruct"} <= names
    assert "PyObject_GC_IsTracked" in names and "PyCMethod_New" in names   # 3.9
    assert "PyType_FromModuleAndSpec" not in names and "PyType_GetName" not in names  # 3.10, 3.11
    assert "PyOS_AfterFork_Child" not in names            # HAVE_FORK: not on Windows


def test_paths_under_wine_are_on_drive_z() -> None:
    assert windows_path("/tmp/a b/x.dll") == "Z:\\tmp\\a b\\x.dll"
