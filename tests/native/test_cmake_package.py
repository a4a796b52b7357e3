"""The C++ link contract of the installed CMake package and pkg-config files: every documented
link style keeps the registration libraries under --as-needed, CMake's own RPATH handling
decides the search path, find_package works inside a function and leaks nothing, a C++14
consumer compiles, version requests mean what CMake users expect, and a pkg-config build
runs."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.native.support import MLP_MODEL, NATIVE, NativeInstall, run_checked

_REGISTRATION = {"libedgert_kernels.so", "libedgert_backend_cpu.so"}

# One program per documented way to link the default set; each needs the kernels and the
# CPU backend to run a model, and none calls anything in them.
_LINK_STYLES = {
    "targets": "edgert::runtime edgert::kernels edgert::backend_cpu",
    "libraries": "${EDGERT_LIBRARIES}",
    "variables": "${EDGERT_RUNTIME_LIBRARY} ${EDGERT_KERNELS_LIBRARY} "
                 "${EDGERT_BACKEND_CPU_LIBRARY}",
    "mixed": "${EDGERT_LIBRARIES} edgert::kernels edgert::backend_cpu",
}


def _needed(binary: Path) -> set[str]:
    return set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]",
                          run_checked(["readelf", "-d", binary])))


def _runpath(binary: Path) -> str | None:
    match = re.search(r"\((?:RUNPATH|RPATH)\)\s+Library (?:runpath|rpath): \[([^\]]*)\]",
                      run_checked(["readelf", "-d", binary]))
    return match.group(1) if match else None


def _project(folder: Path, body: str, *, languages: str = "C CXX") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "CMakeLists.txt").write_text(
        f"cmake_minimum_required(VERSION 3.24)\nproject(probe LANGUAGES {languages})\n{body}")
    return folder


def _configure(cmake: Path, source: Path, build: Path, prefix: Path, *options: str
               ) -> subprocess.CompletedProcess[str]:
    from release.toolchain import tools
    return subprocess.run([str(cmake), "-S", str(source), "-B", str(build), "-G", "Ninja",
                           f"-DCMAKE_MAKE_PROGRAM={tools.ninja()}", "-DCMAKE_BUILD_TYPE=Release",
                           f"-DCMAKE_PREFIX_PATH={prefix}", *options],
                          capture_output=True, text=True, check=False)


def _build(cmake: Path, source: Path, build: Path, prefix: Path, *options: str) -> str:
    configured = _configure(cmake, source, build, prefix, *options)
    assert configured.returncode == 0, configured.stdout + configured.stderr
    run_checked([cmake, "--build", build])
    return configured.stdout


def _runs_a_model(binary: Path, **kwargs: object) -> None:
    completed = subprocess.run([str(binary), str(MLP_MODEL)], capture_output=True, text=True,
                               check=False, **kwargs)  # type: ignore[call-overload]
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith("output 0 float32 [1,8]\n"), completed.stdout


@pytest.fixture(scope="module")
def cmake_new() -> Path:
    from release.toolchain import tools
    return tools.cmake(tools.CMAKE_NEW)


@pytest.mark.parametrize("route", ["3.24", "newest"])
def test_every_link_style_keeps_registration_libraries_under_as_needed(
        native_install: NativeInstall, tmp_path: Path, route: str) -> None:
    from release.toolchain import tools
    cmake = tools.cmake(tools.CMAKE_OLD if route == "3.24" else tools.CMAKE_NEW)
    body = "find_package(edgert REQUIRED)\n" + "".join(
        f"add_executable({name} \"{NATIVE}/examples/run_program.cpp\")\n"
        f"target_link_libraries({name} PRIVATE {links})\n"
        f"target_link_options({name} PRIVATE \"LINKER:--as-needed\")\n"
        for name, links in _LINK_STYLES.items())
    source = _project(tmp_path / "src", body)
    _build(cmake, source, tmp_path / "build", native_install.prefix)
    for name in _LINK_STYLES:
        binary = tmp_path / "build" / name
        assert _REGISTRATION <= _needed(binary), f"{name}: {sorted(_needed(binary))}"
        _runs_a_model(binary)


def test_find_package_in_a_function_leaks_nothing_and_serves_cxx14(
        native_install: NativeInstall, tmp_path: Path, cmake_new: Path) -> None:
    body = f"""set(CMAKE_CXX_STANDARD 14)
get_cmake_property(before VARIABLES)
function(find_edgert)
  find_package(edgert 0.1 REQUIRED)
endfunction()
find_edgert()
get_cmake_property(after VARIABLES)
list(REMOVE_ITEM after ${{before}} before)
message(STATUS "new variables: [${{after}}]")
add_executable(app "{NATIVE}/examples/run_program.cpp")
target_link_libraries(app PRIVATE edgert::runtime edgert::kernels edgert::backend_cpu)
target_link_options(app PRIVATE "LINKER:--as-needed")
"""
    source = _project(tmp_path / "src", body, languages="CXX")
    output = _build(cmake_new, source, tmp_path / "build", native_install.prefix)
    leaked = re.search(r"new variables: \[(.*)\]", output)
    assert leaked is not None
    # one cache entry only, where the package was found; EDGERT_* results stay in the
    # function's scope
    assert sorted(v for v in leaked.group(1).split(";") if "edgert" in v.lower()) == [
        "edgert_DIR"], leaked.group(1)
    binary = tmp_path / "build" / "app"
    assert _REGISTRATION <= _needed(binary)
    _runs_a_model(binary)


def test_cmake_rpath_settings_are_obeyed(native_install: NativeInstall, tmp_path: Path,
                                         cmake_new: Path) -> None:
    body = f"""find_package(edgert REQUIRED)
add_executable(app "{NATIVE}/examples/run_program_c.c")
target_link_libraries(app PRIVATE ${{EDGERT_LIBRARIES}})
"""
    source = _project(tmp_path / "src", body)
    _build(cmake_new, source, tmp_path / "default", native_install.prefix)
    assert _runpath(tmp_path / "default" / "app") == str(native_install.lib_dir)
    _build(cmake_new, source, tmp_path / "skip", native_install.prefix, "-DCMAKE_SKIP_RPATH=ON")
    assert _runpath(tmp_path / "skip" / "app") is None
    _build(cmake_new, source, tmp_path / "install-rpath", native_install.prefix,
           "-DCMAKE_BUILD_WITH_INSTALL_RPATH=ON", "-DCMAKE_INSTALL_RPATH=/opt/app/lib")
    assert _runpath(tmp_path / "install-rpath" / "app") == "/opt/app/lib"


@pytest.mark.parametrize(("request_", "accepted"), [
    ("0.1", True), ("0.1.0 EXACT", True), ("0.1...<0.3", True), ("0.0.9...0.1.0", True),
    ("0.0.1", False), ("0.1.5", False), ("0.2", False), ("1.0", False), ("0.2...0.4", False)])
def test_version_requests(native_install: NativeInstall, tmp_path: Path, cmake_new: Path,
                          request_: str, accepted: bool) -> None:
    source = _project(tmp_path / "src", f"find_package(edgert {request_} REQUIRED)\n",
                      languages="C")
    configured = _configure(cmake_new, source, tmp_path / "build", native_install.prefix)
    assert (configured.returncode == 0) is accepted, configured.stderr
    if not accepted:
        assert "0.1.0" in configured.stderr and "not compatible" in configured.stderr


def test_old_cmake_is_refused_with_a_reason(native_install: NativeInstall) -> None:
    config = (native_install.package_dir / "lib/cmake/edgert/edgertConfig.cmake").read_text()
    assert "VERSION_LESS 3.24" in config and "needs CMake >= 3.24" in config


def test_the_package_records_the_cxx_abi(native_install: NativeInstall, tmp_path: Path,
                                         cmake_new: Path) -> None:
    body = ("find_package(edgert REQUIRED)\nmessage(STATUS \"abi: ${EDGERT_CXX_COMPILER_ID} "
            "${EDGERT_CXX_STDLIB} ${EDGERT_GLIBCXX_USE_CXX11_ABI}\")\n")
    output = _build(cmake_new, _project(tmp_path / "src", body), tmp_path / "b",
                    native_install.prefix)
    abi = run_checked(["c++", "-dM", "-E", "-x", "c++", "-include", "string", "/dev/null"])
    flag = re.search(r"#define _GLIBCXX_USE_CXX11_ABI (\d)", abi)
    assert flag is not None
    assert f"abi: GNU libstdc++ {flag.group(1)}" in output


def test_installed_program_runs_after_the_package_is_gone(
        native_install: NativeInstall, tmp_path: Path, cmake_new: Path) -> None:
    """edgert_install(): the consumer example installs itself and the libraries it loads; the
    installed tree moves and runs with the package it was built against removed."""
    package = tmp_path / "package"
    shutil.copytree(native_install.package_dir, package / "edgert", symlinks=True)
    _build(cmake_new, NATIVE / "examples" / "consumer", tmp_path / "build", package / "edgert")
    run_checked([cmake_new, "--install", tmp_path / "build", "--prefix", tmp_path / "app"])
    installed = sorted(p.name for p in (tmp_path / "app" / "lib").iterdir())
    assert installed == ["libedgert.so", "libedgert_backend_cpu.so", "libedgert_kernels.so",
                         "libedgert_kernels_quantized.so", "libedgert_threadpool.so"]
    shutil.rmtree(package)
    moved = tmp_path / "moved"
    shutil.move(tmp_path / "app", moved)
    for program in ("run_program", "run_program_c"):
        assert _runpath(moved / "bin" / program) == "$ORIGIN/../lib"
        _runs_a_model(moved / "bin" / program, cwd="/")


def test_pkg_config_build_runs(native_install: NativeInstall, tmp_path: Path) -> None:
    pkg_config = shutil.which("pkg-config") or shutil.which("pkgconf")
    assert pkg_config, "the pkg_config tool tier (tests/tools.toml): apt-get install pkg-config"
    env = {"PKG_CONFIG_PATH": str(native_install.lib_dir / "pkgconfig"), "PATH": "/usr/bin:/bin"}
    flags = run_checked([pkg_config, "--cflags", "--libs", "edgert", "edgert-kernels_quantized"],
                        env=env).split()
    binary = tmp_path / "app"
    run_checked(["cc", "-Wl,--as-needed", str(NATIVE / "examples" / "run_program_c.c"),
                 "-o", str(binary), *flags])
    assert _REGISTRATION | {"libedgert_kernels_quantized.so"} <= _needed(binary)
    _runs_a_model(binary, cwd="/")


# ------------------------------------------------------- plain CMake deployment, equivalence

_DEPLOY = """find_package(edgert 0.1 REQUIRED COMPONENTS kernels_quantized)
foreach(library IN ITEMS runtime threadpool kernels kernels_quantized backend_cpu)
  get_target_property(type edgert::${library} TYPE)
  message(STATUS "edgert::${library}: ${type}")
endforeach()
file(GENERATE OUTPUT "${CMAKE_BINARY_DIR}/kernels-file.txt"
     CONTENT "$<TARGET_FILE:edgert::kernels>")

# 1. install(IMPORTED_RUNTIME_ARTIFACTS) names the libraries
add_executable(by_artifacts "@NATIVE@/examples/run_program.cpp")
target_link_libraries(by_artifacts PRIVATE edgert::runtime edgert::kernels edgert::backend_cpu)
target_link_options(by_artifacts PRIVATE "LINKER:--as-needed")
set_target_properties(by_artifacts PROPERTIES INSTALL_RPATH "$ORIGIN/../lib")
install(TARGETS by_artifacts RUNTIME DESTINATION bin)
install(IMPORTED_RUNTIME_ARTIFACTS edgert::runtime edgert::threadpool edgert::kernels
        edgert::backend_cpu LIBRARY DESTINATION lib)

# 2. a runtime dependency set finds them from the program
add_executable(by_dependencies "@NATIVE@/examples/run_program_c.c")
target_link_libraries(by_dependencies PRIVATE edgert::runtime edgert::kernels
                      edgert::kernels_quantized edgert::backend_cpu)
target_link_options(by_dependencies PRIVATE "LINKER:--as-needed")
set_target_properties(by_dependencies PROPERTIES INSTALL_RPATH "$ORIGIN/../lib")
get_target_property(location edgert::runtime IMPORTED_LOCATION)
get_filename_component(libdir "${location}" DIRECTORY)
install(TARGETS by_dependencies RUNTIME_DEPENDENCY_SET edgert_set RUNTIME DESTINATION bin)
install(RUNTIME_DEPENDENCY_SET edgert_set PRE_INCLUDE_REGEXES "edgert" PRE_EXCLUDE_REGEXES "."
        DIRECTORIES "${libdir}" LIBRARY DESTINATION lib)
"""


def test_plain_cmake_deploys_the_imported_targets(
        native_install: NativeInstall, tmp_path: Path, cmake_new: Path) -> None:
    """The components are SHARED IMPORTED libraries: $<TARGET_FILE>,
    install(IMPORTED_RUNTIME_ARTIFACTS) and install(RUNTIME_DEPENDENCY_SET) work on them, with
    no edgert function; the installed tree runs a model with the package removed."""
    package = tmp_path / "package"
    shutil.copytree(native_install.package_dir, package / "edgert", symlinks=True)
    source = _project(tmp_path / "src", _DEPLOY.replace("@NATIVE@", str(NATIVE)))
    output = _build(cmake_new, source, tmp_path / "build", package / "edgert")
    for library in ("runtime", "threadpool", "kernels", "kernels_quantized", "backend_cpu"):
        assert f"edgert::{library}: SHARED_LIBRARY" in output, output
    kernels_file = Path((tmp_path / "build" / "kernels-file.txt").read_text())
    assert kernels_file == package / "edgert" / "lib" / "libedgert_kernels.so"
    run_checked([cmake_new, "--install", tmp_path / "build", "--prefix", tmp_path / "app"])
    assert sorted(p.name for p in (tmp_path / "app" / "lib").iterdir()) == [
        "libedgert.so", "libedgert_backend_cpu.so", "libedgert_kernels.so",
        "libedgert_kernels_quantized.so", "libedgert_threadpool.so"]
    shutil.rmtree(package)
    moved = tmp_path / "moved"
    shutil.move(tmp_path / "app", moved)
    for program in ("by_artifacts", "by_dependencies"):
        binary = moved / "bin" / program
        assert _runpath(binary) == "$ORIGIN/../lib"
        assert _REGISTRATION <= _needed(binary), sorted(_needed(binary))
        _runs_a_model(binary, cwd="/")


# What a program linked one way or the other registers and runs: the backends, how many nodes
# of each model each backend took, the operator count and the outputs' bytes.
_REPORT_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include "edgert/edgert.h"

static int report(const char* path, const char* backends) {
  edgert_program* program = NULL;
  if (edgert_program_load_file(path, &program) != EDGERT_OK) {
    printf("%s: load failed: %s\n", path, edgert_last_error());
    return 0;
  }
  if (backends && edgert_program_set_backends(program, backends) != EDGERT_OK) {
    printf("%s: set_backends(%s) failed: %s\n", path, backends, edgert_last_error());
  }
  float input[16];
  for (int i = 0; i < 16; ++i) input[i] = 0.125f * (float)(i - 7);
  const int64_t shape[2] = {1, 16};
  if (edgert_program_set_input(program, 0, EDGERT_FLOAT32, shape, 2, input, sizeof input)
          != EDGERT_OK || edgert_program_run(program) != EDGERT_OK) {
    printf("%s: run failed: %s\n", path, edgert_last_error());
    edgert_program_free(program);
    return 1;
  }
  for (size_t b = 0; b < edgert_backend_count(); ++b) {
    printf("%s: backend %s took %zu nodes\n", path, edgert_backend_name(b),
           edgert_program_delegated_nodes(program, edgert_backend_name(b)));
  }
  edgert_dtype dtype; const int64_t* out_shape; size_t ndim; const void* data; size_t nbytes;
  edgert_program_output(program, 0, &dtype, &out_shape, &ndim, &data, &nbytes);
  printf("%s: output", path);
  for (size_t i = 0; i < nbytes; ++i) printf(" %02x", ((const unsigned char*)data)[i]);
  printf("\n");
  edgert_program_free(program);
  return 0;
}

int main(int argc, char** argv) {
  printf("operators %zu\n", edgert_operator_count());
  int failed = 0;
  for (int i = 1; i < argc; ++i) failed |= report(argv[i], NULL);
  return failed;
}
"""

_EQUIVALENT = {
    "targets": "edgert::runtime edgert::kernels edgert::backend_cpu edgert::kernels_quantized",
    "variables": "${EDGERT_LIBRARIES} ${EDGERT_QUANTIZED_KERNELS_LIBRARY}",
    "without_backend_cpu": "edgert::runtime edgert::kernels edgert::kernels_quantized",
}


def test_the_target_and_variable_forms_link_the_same(
        native_install: NativeInstall, tmp_path: Path, cmake_new: Path) -> None:
    """${EDGERT_LIBRARIES} is the default components, the CPU backend included: it equals
    edgert::runtime edgert::kernels edgert::backend_cpu (threadpool comes with the kernels),
    giving the same nodes on the same backends and the same outputs; leaving
    edgert::backend_cpu out leaves the CPU backend out (no node delegated)."""
    (tmp_path / "report.c").write_text(_REPORT_C)
    body = "find_package(edgert REQUIRED COMPONENTS kernels_quantized)\n" + "".join(
        f"add_executable({name} \"{tmp_path / 'report.c'}\")\n"
        f"target_link_libraries({name} PRIVATE {links})\n"
        f"target_link_options({name} PRIVATE \"LINKER:--as-needed\")\n"
        for name, links in _EQUIVALENT.items())
    source = _project(tmp_path / "src", body, languages="C")
    _build(cmake_new, source, tmp_path / "build", native_install.prefix)
    models = [str(MLP_MODEL), str(MLP_MODEL.with_name("mlp_quantized.edgert"))]
    reports = {name: run_checked([tmp_path / "build" / name, *models], cwd="/").replace(
        str(MLP_MODEL.parent), "models") for name in _EQUIVALENT}
    assert reports["targets"] == reports["variables"], reports
    assert "models/mlp.edgert: backend cpu took 4 nodes" in reports["targets"], reports["targets"]
    assert "models/mlp_quantized.edgert: output" in reports["targets"]
    without = reports["without_backend_cpu"]
    assert "backend cpu" not in without, without
    outputs = [line for line in reports["targets"].splitlines() if "output" in line]
    assert outputs == [line for line in without.splitlines() if "output" in line]


def test_asking_the_cpu_build_for_backend_cuda_says_which_build_it_is(
        native_install: NativeInstall, tmp_path: Path, cmake_new: Path) -> None:
    source = _project(tmp_path / "src", "find_package(edgert REQUIRED COMPONENTS backend_cuda)\n")
    configured = _configure(cmake_new, source, tmp_path / "build", native_install.prefix)
    assert configured.returncode != 0
    text = " ".join((configured.stdout + configured.stderr).split())
    assert ("edgert has no component 'backend_cuda': this is the CPU build of edgert; install "
            "edgert-cu12 or edgert-cu13 for backend_cuda") in text, text
