"""Leaks mean the same thing whoever runs verify: build-machine folders are found where a path
starts, never inside a longer path or a URL, and nothing comes from the verifier's $HOME or
$TMPDIR."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from release.findings import Severity
from release.verify import verify_wheel
from tests.verify.macho_writer import macho
from tests.verify.pe_images import pe_image
from tests.verify.test_wheel_safety import make_wheel

_TEXT = (b"see https://pypi.org/project/demo/ and /opt/rh/gcc-toolset-14/root/usr/include/x.h;\n"
         b"tmp = tempfile.mkstemp(dir='/tmp/')  # a template, not a leak\n")
_BINARY = (b"\x7fELF" + bytes(60) + b"\0/home/runner/work/demo/demo/src/kernel.cpp\0"
           b"/usr/include/c++/12/bits/stl_vector.h\0/opt/rh/gcc-toolset-14/root/usr/lib\0")


def _leaks(tmp_path: Path, files: dict[str, bytes]) -> list[dict[str, object]]:
    wheel = make_wheel(tmp_path / "demo-1.0-py3-none-any.whl", files)
    report = verify_wheel(wheel, static=True)
    return [f.to_json() for f in report.findings if f.check == "leaks"]


def test_findings_do_not_depend_on_who_runs_verify(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    files = {"demo/notes.py": _TEXT, "demo/_native.so": _BINARY}
    seen = []
    for home, temporary in (("/root", "/tmp"), ("/home/someone", "/var/tmp/x"),
                            ("/opt", "/project")):
        monkeypatch.setenv("HOME", home)
        monkeypatch.setenv("TMPDIR", temporary)
        (tmp_path / home.strip("/").replace("/", "_")).mkdir(exist_ok=True)
        seen.append(json.dumps(_leaks(tmp_path / home.strip("/").replace("/", "_"), files),
                               sort_keys=True))
    assert seen[0] == seen[1] == seen[2]
    leaks = json.loads(seen[0])
    assert {(f["file"], f["severity"]) for f in leaks} == {("demo/_native.so", "warning")}
    words = " ".join(str(f["what"]) for f in leaks)
    assert "/home/runner/work/" in words and "GitHub Actions" in words
    assert "/project/" not in words and "/root/" not in words and "/tmp/" not in words


def test_an_absolute_source_file_name_is_a_warning(tmp_path: Path) -> None:
    binary = (b"\x7fELF" + bytes(60) + b"\0/tmp/fuser_XXXXXX.cpp\0/usr/include/assert.h\0"
              b"/srv/build/demo/src/ops.cc\0")
    (leak,) = _leaks(tmp_path, {"demo/_ops.so": binary})
    assert leak["severity"] == "warning" and "/srv/build/demo/src/ops.cc" in str(leak["what"])


def test_absolute_paths_in_shipped_cmake_and_pkg_config_files(tmp_path: Path) -> None:
    good = (b'get_filename_component(root "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)\n'
            b'set(rpath "$ORIGIN/../lib")  # see https://cmake.org/cmake/help/latest/\n')
    bad = b'set(_IMPORT_PREFIX "/srv/ci/demo/build/install")\nset(inc "/srv/ci/demo/include")\n'
    pc = b"prefix=${pcfiledir}/../..\nlibdir=${prefix}/lib\nLibs: -L${libdir} -ldemo\n"
    fixed_pc = b"prefix=/srv/ci/demo/install\nCflags: -I/srv/ci/demo/include\n"
    hints = b'set(_search_hint "/Developer/NVIDIA/CUDA-")\n'   # a find module's search hint
    leaks = _leaks(tmp_path, {"demo/lib/cmake/demo/demoConfig.cmake": good,
                              "demo/lib/cmake/demo/FindThing.cmake": hints,
                              "demo/lib/cmake/demo/demoTargets.cmake": bad,
                              "demo/lib/pkgconfig/demo.pc": pc,
                              "demo/lib/pkgconfig/fixed.pc": fixed_pc})
    assert [(f["file"], f["severity"]) for f in leaks] == [
        ("demo/lib/cmake/demo/demoTargets.cmake", Severity.WARNING.value),
        ("demo/lib/pkgconfig/fixed.pc", Severity.WARNING.value)]
    assert [f["details"]["count"] for f in leaks] == [2, 2]  # type: ignore[index]


def _windows_leaks(tmp_path: Path, files: dict[str, bytes], metadata: str = "") -> list[
        dict[str, object]]:
    wheel = make_wheel(tmp_path / "demo-1.0-cp311-cp311-win_amd64.whl", files,
                       tag="cp311-cp311-win_amd64", metadata=metadata)
    return [f.to_json() for f in verify_wheel(wheel, static=True).findings if f.check == "leaks"]


def test_windows_build_folders_are_found_with_their_drive_letter_and_cut_at_the_string(
        tmp_path: Path) -> None:
    """A Cython extension's __FILE__ strings (forward slashes), a delvewheel record (doubled
    backslashes) and a config module: one finding for the one build machine, each sample
    starting at its drive letter and ending where its string does."""
    module = pe_image(exports=("PyInit__ext",), name="_ext.pyd") + \
        b"\0C:/Users/runneradmin/AppData/Local/Temp/build-env-x1/include/numpy.h\0"
    config = b'paths = {"src": "D:/a/demo/demo", "include": "c:\\\\Users\\\\runneradmin\\\\x"}\n'
    leaks = _windows_leaks(tmp_path, {"demo/_ext.pyd": module, "demo/__config__.py": config})
    (leak,) = leaks
    assert leak["severity"] == "warning" and "GitHub Actions (Windows)" in str(leak["what"])
    details = leak["details"]
    assert isinstance(details, dict)
    assert details["count"] == 2 and set(details["prefixes"]) == {"C:/Users/runneradmin/",
                                                                  "D:/a/"}
    assert "C:/Users/runneradmin/AppData/Local/Temp/build-env-x1/include/numpy.h" in \
        details["samples"]
    assert "D:/a/demo/demo" in details["samples"]               # not past the closing quote
    assert "c:\\\\Users\\\\runneradmin\\\\x" in details["samples"]


def test_a_posix_folder_behind_a_drive_letter_is_shown_with_it(tmp_path: Path) -> None:
    (leak,) = _windows_leaks(tmp_path, {"demo/notes.txt": b"built in C:/project/demo/build\n"})
    assert leak["details"]["samples"] == ["C:/project/demo/build"]  # type: ignore[index]


def test_macos_build_and_temporary_folders_in_mach_o_files(tmp_path: Path) -> None:
    binary = macho(kind="bundle", exports=["PyInit__ext"]) + (
        b"\0/Users/runner/work/demo/demo/src/ext.c\0"
        b"/private/var/folders/xy/T/pip-build-env-1/include/numpy.h\0")
    wheel = make_wheel(tmp_path / "demo-1.0-cp311-cp311-macosx_11_0_arm64.whl",
                       {"demo/_ext.cpython-311-darwin.so": binary},
                       tag="cp311-cp311-macosx_11_0_arm64")
    (leak,) = [f for f in verify_wheel(wheel, static=True).findings if f.check == "leaks"]
    assert leak.details["prefixes"] == ["/Users/runner/", "/private/var/folders/"]
    assert "GitHub Actions (macOS)" in leak.what and "a macOS user's temporary folder" in \
        leak.what   # one file, one build: one finding


def test_a_vendor_redistributable_s_build_path_is_a_note(tmp_path: Path) -> None:
    """msvcp140.dll as delvewheel bundles it: Microsoft's build path in its PDB name. The
    wheel's own extension carries no vendor: the DLL is a redistributable, its path a note.
    The same DLL in a wheel Microsoft maintains is the maintainer's own: a warning."""
    runtime = pe_image(company="Microsoft Corporation", name="msvcp140.dll") + \
        b"\0D:\\a\\_work\\1\\s\\binaries\\amd64ret\\bin\\amd64\\msvcp140.amd64.pdb\0"
    files = {"demo/_ext.pyd": pe_image(exports=("PyInit__ext",), name="_ext.pyd"),
             "demo.libs/msvcp140-0123abcd.dll": runtime}
    (note,) = _windows_leaks(tmp_path, files)
    assert note["severity"] == "info" and note["details"]["vendor"] == \
        "Microsoft Corporation"  # type: ignore[index]
    (tmp_path / "own").mkdir()
    (own,) = _windows_leaks(tmp_path / "own", files, metadata="Author: Microsoft Corporation\n")
    assert own["severity"] == "warning"


def test_a_dead_absolute_search_path_is_reported_once(tmp_path: Path) -> None:
    """The build machine's folder as a run-time search-path entry and nowhere else in the
    file: the search-path check's finding, not also a leak."""
    source = tmp_path / "ext.c"
    source.write_text("int ext(void) { return 1; }\n")
    library = tmp_path / "libext.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(library), str(source),
                    "-Wl,--enable-new-dtags", "-Wl,-rpath,/home/runner/work/demo/build/lib"],
                   check=True, capture_output=True)
    wheel = make_wheel(tmp_path / "demo-1.0-cp311-cp311-manylinux_2_17_x86_64.whl",
                       {"demo/libext.so": library.read_bytes()},
                       tag="cp311-cp311-manylinux_2_17_x86_64")
    report = verify_wheel(wheel, static=True)
    assert [f.check for f in report.findings if f.severity != "info"] == ["search-path"]
