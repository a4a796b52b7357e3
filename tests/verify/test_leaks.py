"""Leaks mean the same thing whoever runs verify: build-machine folders are found where a path
starts, never inside a longer path or a URL, and nothing comes from the verifier's $HOME or
$TMPDIR."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from release.findings import Severity
from release.verify import verify_wheel
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
