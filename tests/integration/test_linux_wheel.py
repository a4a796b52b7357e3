"""The main job: the repaired CPU wheel, checked from a clean virtual environment."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile

from release.distribution import wheel as wheel_module
from tests.conftest import PRINT_OWN_PEAK, ROOT, BuiltWheel, Venv, run_release
from tests.record_spec import assert_record_matches

pytestmark = pytest.mark.integration

LIBRARIES = {"libedgert.so", "libedgert_threadpool.so", "libedgert_kernels.so",
             "libedgert_kernels_quantized.so", "libedgert_backend_cpu.so",
             "libedgert_export_plugin.so"}


def _entries(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _dynamic(data: bytes) -> dict[str, list[str]]:
    import io
    tags: dict[str, list[str]] = {}
    for section in ELFFile(io.BytesIO(data)).iter_sections():
        if isinstance(section, DynamicSection):
            for tag in section.iter_tags():
                if tag.entry.d_tag in ("DT_NEEDED", "DT_RPATH", "DT_RUNPATH", "DT_SONAME"):
                    value = getattr(tag, tag.entry.d_tag[3:].lower(), None)
                    tags.setdefault(tag.entry.d_tag, []).append(str(value))
    return tags


def _elves(entries: dict[str, bytes]) -> dict[str, bytes]:
    return {name: data for name, data in entries.items() if data[:4] == b"\x7fELF"}


def test_wheel_name_and_tags(cpu_wheel: BuiltWheel) -> None:
    name = wheel_module.WheelName.parse(cpu_wheel.path.name)
    assert name.distribution == "edgert"
    assert (name.python, name.abi) == ("cp39", "abi3")
    assert name.platform.startswith("manylinux_"), name.platform
    entries = _entries(cpu_wheel.path)
    wheel_text = entries[f"{name.dist_info}/WHEEL"].decode()
    assert f"Tag: {name.tag}" in wheel_text.splitlines()
    metadata = wheel_module.parse_metadata(entries[f"{name.dist_info}/METADATA"].decode())
    assert metadata["Name"] == "edgert" and metadata["Version"] == name.version
    assert all("nvidia" not in r for r in metadata.get_all("Requires-Dist") or [])


def test_record_matches_every_entry(cpu_wheel: BuiltWheel) -> None:
    entries = _entries(cpu_wheel.path)
    dist_info = wheel_module.dist_info_of(entries)
    assert_record_matches(entries, f"{dist_info}/RECORD")   # tests/record_spec.py


def test_layout_ships_each_component_once(cpu_wheel: BuiltWheel) -> None:
    entries = _entries(cpu_wheel.path)
    libs = {n.split("/")[-1] for n in entries if n.startswith("edgert/lib/") and n.endswith(".so")}
    assert libs == LIBRARIES
    elves = _elves(entries)
    assert set(elves) == {f"edgert/lib/{lib}" for lib in LIBRARIES} | {"edgert/_C.abi3.so"}, \
        "no library was grafted or copied a second time"
    assert "edgert/include/edgert/edgert.h" in entries
    assert "edgert/lib/cmake/edgert/edgertConfig.cmake" in entries
    record = json.loads(entries["edgert/_release.json"])
    assert {Path(c["file"]).name for c in record["components"]} == LIBRARIES
    for name, data in elves.items():
        soname = _dynamic(data).get("DT_SONAME")
        if name.startswith("edgert/lib/"):
            assert soname == [name.split("/")[-1]], f"{name}: file name must equal SONAME"


def test_runpaths_are_origin_relative(cpu_wheel: BuiltWheel) -> None:
    for name, data in _elves(_entries(cpu_wheel.path)).items():
        tags = _dynamic(data)
        assert "DT_RPATH" not in tags, f"{name} uses DT_RPATH"
        entries = ":".join(tags.get("DT_RUNPATH", [])).split(":")
        expected = "$ORIGIN/lib" if name == "edgert/_C.abi3.so" else "$ORIGIN"
        assert entries == [expected], f"{name}: {entries}"


def test_no_build_paths_leak(cpu_wheel: BuiltWheel) -> None:
    for name, data in _entries(cpu_wheel.path).items():
        for leak in (str(ROOT).encode(), str(Path.home()).encode() + b"/", b"/tmp/"):
            assert leak not in data, f"{name} contains {leak!r}"


def test_extension_links_components_and_defines_none(cpu_wheel: BuiltWheel) -> None:
    import io
    data = _entries(cpu_wheel.path)["edgert/_C.abi3.so"]
    needed = set(_dynamic(data)["DT_NEEDED"])
    assert {"libedgert.so", "libedgert_threadpool.so", "libedgert_kernels.so",
            "libedgert_backend_cpu.so"} <= needed
    symbols = ELFFile(io.BytesIO(data)).get_section_by_name(".dynsym")
    defined = {s.name for s in symbols.iter_symbols() if s["st_shndx"] != "SHN_UNDEF"}
    assert not any(name.endswith("_component") for name in defined), defined
    assert not any("register_operator" in name or "threadpool" in name for name in defined)


def test_installs_and_runs_in_clean_venv(installed_cpu_wheel: Venv) -> None:
    code = ("import edgert, edgert.models, numpy as np, json;"
            "p = edgert.load(edgert.models.path('mlp'));"
            "x = np.linspace(-1, 1, p.input_info[0].shape[-1], dtype=np.float32).reshape(1, -1);"
            "out = p.run([x]);"
            "ops = edgert.operators();"
            "print(json.dumps({'sum': float(out[0].sum()), 'owners': sorted({o[1] for o in ops}),"
            " 'lib': str(edgert.lib_dir()), 'cmake': str(edgert.cmake_dir())}))")
    completed = installed_cpu_wheel.run("-c", code, cwd="/")
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout)
    site = str(installed_cpu_wheel.site_packages)
    assert report["lib"].startswith(site)
    assert all(owner.startswith(site) for owner in report["owners"]), report["owners"]
    assert abs(report["sum"] - 1.0) < 1e-4  # softmax output of the example MLP


def test_cli_prints_cmake_and_pkg_config_paths(installed_cpu_wheel: Venv) -> None:
    def ask(option: str) -> Path:
        completed = installed_cpu_wheel.run("-m", "edgert", option, cwd="/")
        assert completed.returncode == 0, completed.stderr
        return Path(completed.stdout.strip())

    assert (ask("--cmake-dir") / "edgertConfig.cmake").is_file()
    # find_package searches <prefix>/lib/cmake/<name>/ under each CMAKE_PREFIX_PATH entry
    assert (ask("--cmake-prefix-path") / "lib" / "cmake" / "edgert").resolve() == \
        ask("--cmake-dir").resolve()
    pc = (ask("--pkg-config-path") / "edgert.pc").read_text()
    assert "prefix=${pcfiledir}/../.." in pc and "-ledgert" in pc


def test_deployed_cpp_program_runs_without_the_wheel(cpu_wheel: BuiltWheel, tmp_path: Path
                                                     ) -> None:
    """The shipped consumer, built against the unpacked (repaired) wheel, installed with
    ``cmake --install`` (edgert_install), moved, and run after the wheel's files are gone."""
    from release.toolchain import tools
    unpacked = tmp_path / "site"
    with zipfile.ZipFile(cpu_wheel.path) as archive:
        archive.extractall(unpacked)
    cmake, build = tools.cmake(), tmp_path / "build"
    for command in ([str(cmake), "-S", str(unpacked / "edgert/examples/consumer"), "-B",
                     str(build), f"-DCMAKE_PREFIX_PATH={unpacked / 'edgert'}",
                     "-DCMAKE_BUILD_TYPE=Release"],
                    [str(cmake), "--build", str(build)],
                    [str(cmake), "--install", str(build), "--prefix", str(tmp_path / "app")]):
        completed = subprocess.run(command, capture_output=True, text=True, check=False)
        assert completed.returncode == 0, completed.stdout + completed.stderr
    model = tmp_path / "mlp.edgert"
    model.write_bytes((unpacked / "edgert/models/mlp.edgert").read_bytes())
    shutil.rmtree(unpacked)
    shutil.rmtree(build)
    moved = tmp_path / "deployed"
    shutil.move(tmp_path / "app", moved)
    for program in ("run_program", "run_program_c"):
        completed = subprocess.run([str(moved / "bin" / program), str(model)],
                                   capture_output=True, text=True, check=False, cwd="/")
        assert completed.returncode == 0, completed.stderr
        assert completed.stdout.startswith("output 0 float32 [1,8]\n")


def test_repair_is_idempotent(cpu_wheel: BuiltWheel, tmp_path: Path) -> None:
    completed = run_release("repair", str(cpu_wheel.path), "-w", str(tmp_path))
    assert completed.returncode == 0, completed.stderr
    repaired = tmp_path / cpu_wheel.path.name
    assert repaired.read_bytes() == cpu_wheel.path.read_bytes()


def test_build_summary_reports_every_stage(cpu_wheel: BuiltWheel) -> None:
    stages = cpu_wheel.result["stages"]
    assert list(stages) == ["configure", "build", "install", "layout", "fixup", "pack",
                            "repair", "verify"]
    assert cpu_wheel.result["verify"]["version"] >= 1


def test_two_builds_are_bit_identical(cpu_wheel: BuiltWheel, tmp_path: Path) -> None:
    """A second build of the same sources in another folder gives the same bytes."""
    completed = run_release("build", "--platform", "linux", "--out", str(tmp_path / "dist"),
                            "--build-dir", str(tmp_path / "build"), "--verify", "none", "--json")
    assert completed.returncode == 0, completed.stderr
    second = Path(json.loads(completed.stdout)["wheel"])
    assert second.name == cpu_wheel.path.name
    assert second.read_bytes() == cpu_wheel.path.read_bytes()


def test_pip_wheel_uses_the_same_pipeline(tmp_path: Path) -> None:
    completed = subprocess.run(
        ["python3", "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w",
         str(tmp_path), str(ROOT)], capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stderr[-3000:]
    built = list(tmp_path.glob("edgert-*.whl"))
    assert len(built) == 1 and "manylinux_" in built[0].name


def _configure_consumer(environment: Venv, cmake: Path, build: Path, *extra: str) -> str:
    cmake_dir = environment.run("-m", "edgert", "--cmake-dir", cwd="/").stdout.strip()
    source = Path(cmake_dir).parents[2] / "examples" / "consumer"
    completed = subprocess.run(
        [str(cmake), "-S", str(source), "-B", str(build), f"-Dedgert_DIR={cmake_dir}",
         "-DCMAKE_BUILD_TYPE=Release", *extra], capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return completed.stdout


@pytest.mark.parametrize("route", ["old", "new"])
def test_sdk_consumer_from_the_installed_wheel(installed_cpu_wheel: Venv, tmp_path: Path,
                                               route: str) -> None:
    """A C++ application built against the pip-installed wheel, with pip's CMake 3.24 and a
    CMake >= 3.28, prints the same bytes as Python; the 3.28+ build still runs after the
    application is copied to another folder."""
    from release.toolchain import tools
    cmake = tools.cmake(tools.CMAKE_OLD if route == "old" else tools.CMAKE_NEW)
    build = tmp_path / "build"
    _configure_consumer(installed_cpu_wheel, cmake, build)
    completed = subprocess.run([str(cmake), "--build", str(build)], capture_output=True,
                               text=True, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    model = str(installed_cpu_wheel.site_packages / "edgert" / "models" / "mlp.edgert")
    python = installed_cpu_wheel.run("-m", "edgert.run_program", model, cwd="/")
    assert python.returncode == 0, python.stderr
    for program in ("run_program", "run_program_c"):
        native = subprocess.run([str(build / program), model], capture_output=True, check=False)
        assert native.returncode == 0, native.stderr
        assert native.stdout == python.stdout.encode(), f"{program} differs from Python"
    needed = subprocess.run(["readelf", "-d", str(build / "run_program")], capture_output=True,
                            text=True, check=True).stdout
    assert "libedgert_kernels_quantized.so" in needed and "libedgert_kernels.so" in needed
    if route == "new":
        moved = tmp_path / "elsewhere" / "run_program"
        moved.parent.mkdir()
        moved.write_bytes((build / "run_program").read_bytes())
        moved.chmod(0o755)
        again = subprocess.run([str(moved), model], capture_output=True, check=False, cwd="/")
        assert again.returncode == 0 and again.stdout == python.stdout.encode(), again.stderr


def test_sdk_version_request_is_honoured(installed_cpu_wheel: Venv, tmp_path: Path) -> None:
    from release.toolchain import tools
    cmake_dir = installed_cpu_wheel.run("-m", "edgert", "--cmake-dir", cwd="/").stdout.strip()
    project = tmp_path / "project"
    project.mkdir()
    (project / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.24)\nproject(probe LANGUAGES CXX)\n"
        "find_package(edgert 1.0 REQUIRED)\n")
    completed = subprocess.run([str(tools.cmake()), "-S", str(project), "-B",
                                str(tmp_path / "b"), f"-Dedgert_DIR={cmake_dir}"],
                               capture_output=True, text=True, check=False)
    assert completed.returncode != 0
    assert "0.1.0" in completed.stderr and "1.0" in completed.stderr
    (project / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.24)\nproject(probe LANGUAGES CXX)\n"
        "find_package(edgert 0.1 REQUIRED COMPONENTS kernels_quantized)\n"
        "message(STATUS \"quantized=${EDGERT_QUANTIZED_KERNELS_LIBRARY}\")\n"
        "message(STATUS \"default=${EDGERT_LIBRARIES}\")\n")
    completed = subprocess.run([str(tools.cmake()), "-S", str(project), "-B",
                                str(tmp_path / "c"), f"-Dedgert_DIR={cmake_dir}"],
                               capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stderr
    default = next(line for line in completed.stdout.splitlines() if "default=" in line)
    assert "kernels_quantized" not in default, "the opt-in component leaks into EDGERT_LIBRARIES"
    assert "edgert::kernels" in default


def test_old_layout_build_is_caught_and_not_shipped(tmp_path: Path) -> None:
    """The never-shipped layout (the export plugin with a private copy of the quantized
    kernels) fails verify: ownership, private copies and the load matrix in both orders;
    no wheel reaches the output folder."""
    out = tmp_path / "dist"
    completed = run_release("build", "--platform", "linux", "--out", str(out),
                            "--build-dir", str(tmp_path / "build"),
                            "--cmake-arg=-DEDGERT_OLD_LAYOUT=ON")
    assert completed.returncode == 7, completed.stderr[-2000:]
    assert not list(out.glob("*.whl")) and not list(out.iterdir())
    errors = completed.stderr
    assert "error   [ownership] edgert/lib/libedgert_export_plugin.so: " \
           "op:edgert_quantized::linear is registered by 2 libraries" in errors
    # No [duplicates] finding: the package itself never opens the plugin and the quantized
    # kernels into one lookup scope (verify's loader model); the private copy and the load
    # matrix's crash in both orders are the findings.
    assert "[duplicates]" not in errors
    assert "[private-copies] edgert/lib/libedgert_export_plugin.so: component 'export_plugin' " \
           "carries a private copy of component 'kernels_quantized'" in errors
    plugin, kernels = "edgert/lib/libedgert_export_plugin.so", \
        "edgert/lib/libedgert_kernels_quantized.so"
    assert f"for {plugin} then {kernels}" in errors and f"for {kernels} then {plugin}" in errors
    assert "| Re-registering edgert_quantized::" in errors
    assert errors.strip().splitlines()[-1].startswith("error: ")


def test_python_build_from_sdist_gives_the_same_wheel(cpu_wheel: BuiltWheel,
                                                       tmp_path: Path) -> None:
    """`python -m build` (sdist, then a wheel from it in an isolated environment) runs the
    same stages and yields the very same bytes as `python -m release build`."""
    completed = subprocess.run([sys.executable, "-m", "build", "--outdir", str(tmp_path),
                                str(ROOT)], capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stderr[-3000:]
    built = tmp_path / cpu_wheel.path.name
    assert built.read_bytes() == cpu_wheel.path.read_bytes()
    assert (tmp_path / "edgert-0.1.0.tar.gz").is_file()


def test_repair_streams_large_files(cpu_wheel: BuiltWheel, tmp_path: Path) -> None:
    """Our wheel plus a 384 MiB data file (with its RECORD row): repair's own process streams
    it (peak under 150 MB; reading whole entries peaked above 800 MB). auditwheel, run as a
    child, is not measured: its re-zip reads each file whole (about 420 MB here)."""
    big, size, chunk = "edgert/models/zeros.bin", 384 << 20, bytes(1 << 20)
    source = tmp_path / "in" / cpu_wheel.path.name
    source.parent.mkdir()
    digest = hashlib.sha256()
    with zipfile.ZipFile(cpu_wheel.path) as original, \
            zipfile.ZipFile(source, "w", zipfile.ZIP_DEFLATED) as archive:
        record_name = next(n for n in original.namelist() if n.endswith(".dist-info/RECORD"))
        for info in original.infolist():
            if info.filename != record_name:
                archive.writestr(info, original.read(info))
        with archive.open(zipfile.ZipInfo(big), "w") as stream:
            for _ in range(size // len(chunk)):
                stream.write(chunk)
                digest.update(chunk)
        archive.writestr(record_name, original.read(record_name).decode()
                         + f"{big},{wheel_module.digest_text(digest)},{size}\n")
    # a fresh process, so the peak measured is the repair's own
    measure = ("import sys; from pathlib import Path; "
               "from release.building.repair import repair_wheel; "
               "repair_wheel(Path(sys.argv[1]), Path(sys.argv[2]), environ={})\n"
               + PRINT_OWN_PEAK)
    completed = subprocess.run([sys.executable, "-c", measure, str(source), str(tmp_path / "out")],
                               cwd=ROOT, capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stderr
    peak_kib = int(completed.stderr.strip().splitlines()[-1])
    assert peak_kib < 150_000, f"the repair peaked at {peak_kib} KiB"
    with zipfile.ZipFile(tmp_path / "out" / cpu_wheel.path.name) as repaired:
        assert repaired.getinfo(big).file_size == size
