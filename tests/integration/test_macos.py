"""The macOS wheels (arm64, x86_64, universal2), cross-built on this Linux machine with zig
(platforms/macos, docs/macos.md) and verified by reading their files: nothing here runs
Mach-O (the release workflow runs them on macOS runners).

Each wheel is built once per session; the build folders live in pytest's cache folder and
zig's compile cache in the shared tool cache, so a later session rebuilds incrementally. Then:
the binaries' install names, LC_RPATH entries, deployment targets and signatures; universal2
as the two thin builds merged; the C and C++ examples built against each thin wheel's SDK
with the same zig toolchain (and installed with edgert_install); and four ways a wheel can
be broken, each made on a copy of a built wheel and each caught by verify: an install name
naming a build folder, a missing LC_RPATH, a byte flipped in a signed arm64 code page, and
a platform tag older than the binaries' minimum macOS.

Needs llvm-14's install-name-tool, lipo and otool (apt-get install llvm-14); zig comes from
the package index into the tool cache on first use."""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

import platforms.macos as macos
from platforms.macos import PLATFORM as MACOS
from release import manifest
from release.binary import BinaryInfo, read_binary, read_binary_data
from release.binary.macho import is_macho
from release.building.patcher import fix_up
from release.building.pipeline import BuildOptions, VerifyMode, run
from release.building.resolved import build_variant, search_paths
from release.distribution import wheel as wheel_module
from release.distribution.buildrecord import RECORD_FILE
from release.errors import VerificationFailed, WheelError
from release.host import Host
from release.manifest import Target
from release.platform import RepairRequest
from release.toolchain import tools
from release.verify import verify_wheel
from tests.conftest import ROOT, run_release

pytestmark = [pytest.mark.integration, pytest.mark.index]

ARCHES = ("arm64", "x86_64", "universal2")
EPOCH = 315532800
TAGS = {"arm64": "macosx_11_0_arm64", "x86_64": "macosx_10_13_x86_64",
        "universal2": "macosx_10_13_universal2"}
EXTENSION = "edgert/_C.abi3.so"
KERNELS = "edgert/lib/libedgert_kernels.dylib"
REGISTERING = ("libedgert_kernels.dylib", "libedgert_kernels_quantized.dylib",
               "libedgert_backend_cpu.dylib")


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:   # the llvm tool tier (tests/tools.toml): not reached without it
        pytest.fail(f"no {name}: apt-get install llvm-14")
    return found


@dataclass(frozen=True)
class MacWheels:
    paths: dict[str, Path]
    results: dict[str, dict]


@pytest.fixture(scope="module")
def mac_wheels(request: pytest.FixtureRequest,
               tmp_path_factory: pytest.TempPathFactory) -> MacWheels:
    for name in ("llvm-install-name-tool-14", "llvm-lipo-14", "llvm-otool-14"):
        _tool(name)
    # kept between sessions in pytest's cache (incremental rebuilds) where it is enabled
    cache = getattr(request.config, "cache", None)
    builds = (Path(cache.mkdir("macos-builds")) if cache is not None
              else tmp_path_factory.mktemp("macos-builds"))
    out = tmp_path_factory.mktemp("dist-macos")
    loaded = manifest.load(ROOT)

    def build(arch: str, jobs: int) -> dict:
        result = run(loaded, BuildOptions(platform="macos", arch=arch, out_dir=out,
                                          build_dir=builds / arch, verify=VerifyMode.STATIC,
                                          cache_dir=tools.cache_dir(), jobs=jobs),
                     host=Host.current())
        assert result.wheel is not None
        return {"wheel": result.wheel, "json": result.to_json()}

    # the two thin wheels side by side, one compile job each: on a cold zig cache most of
    # their time is zig compiling each target's libc++ one file at a time; universal2 after
    # them, its parts finding those runtimes in zig's cache
    thin = [arch for arch in ARCHES if arch != "universal2"]
    with ThreadPoolExecutor(max_workers=len(thin)) as pool:
        built = dict(zip(thin, pool.map(lambda arch: build(arch, 1), thin), strict=True))
    built["universal2"] = build("universal2", 2)
    return MacWheels({arch: built[arch]["wheel"] for arch in ARCHES},
                     {arch: built[arch]["json"] for arch in ARCHES})


def _binaries(wheel: Path) -> dict[str, BinaryInfo]:
    found = {}
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            data = archive.read(name)
            if is_macho(data[:8]):
                found[name] = read_binary_data(data, where=name)
    return found


def _errors(wheel: Path) -> set[tuple[str, str, str]]:
    report = verify_wheel(wheel, static=True)
    return {(f.check, f.file, f.what) for f in report.findings if f.severity == "error"}


def _warnings(wheel: Path) -> list[str]:
    report = verify_wheel(wheel, static=True)
    return [f"[{f.check}] {f.file}: {f.what}" for f in report.findings if f.severity == "warning"]


# ------------------------------------------------------------ the wheels as built

def test_each_wheel_is_tagged_and_verifies_clean(mac_wheels: MacWheels) -> None:
    for arch in ARCHES:
        wheel = mac_wheels.paths[arch]
        assert wheel.name == f"edgert-0.1.0-cp39-abi3-{TAGS[arch]}.whl"
        assert mac_wheels.results[arch]["verify"]["ok"], mac_wheels.results[arch]["verify"]
        assert _errors(wheel) == set()
        # the image header zig's linker exports from every dylib is no clash
        assert _warnings(wheel) == [], _warnings(wheel)
    completed = run_release("verify", "--static", str(mac_wheels.paths["universal2"]))
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "binaries read: 7 macho" in completed.stdout


def test_install_names_search_paths_minimum_and_signatures(mac_wheels: MacWheels) -> None:
    loaded = manifest.load(ROOT)
    variant = build_variant(loaded.variant("cpu"))
    decided = {entry.binary: entry.entries for entry in
               search_paths(loaded, MACOS, variant, loaded.components_for("cpu"))}
    assert decided["edgert/_C.abi3.so"] == ("@loader_path/lib",)
    assert decided["edgert/lib/libedgert_kernels.dylib"] == ("@loader_path",)
    for arch in ARCHES:
        binaries = _binaries(mac_wheels.paths[arch])
        assert set(binaries) == set(decided)
        slices = macos.thin_arches(arch)
        for name, info in binaries.items():
            assert info.machine == arch, name
            assert info.runpath == decided[name], name
            if name.endswith(".dylib"):
                assert info.soname == f"@rpath/{Path(name).name}"
            assert sorted(info.required_versions) == sorted(
                f"macOS-{part.replace('_', '-')}_{macos.DEPLOYMENT_TARGETS[part]}"
                for part in slices), name
            assert not info.bad_signatures and "arm64" not in info.unsigned, name
            outside = [path for path in info.needed_paths if not path.startswith(
                ("@rpath/lib", "/usr/lib/", "/System/"))]
            assert outside == [], name
        # the registration-only libraries survive the linker: the extension loads them
        extension = binaries["edgert/_C.abi3.so"]
        assert {f"@rpath/{library}" for library in REGISTERING} <= set(extension.needed_paths)


def test_universal2_is_the_thin_builds_merged(mac_wheels: MacWheels) -> None:
    fat = wheel_module.read_entries(mac_wheels.paths["universal2"])
    thin = wheel_module.read_entries(mac_wheels.paths["arm64"])
    files = sorted(name for name in fat if ".dist-info/" not in name)
    assert files == sorted(name for name in thin if ".dist-info/" not in name)
    record = f"edgert/{RECORD_FILE}"     # the build record names the target: it differs
    assert b'"target": "macos-universal2"' in fat[record][0]
    for name in files:
        if name == record:
            continue
        if is_macho(fat[name][0][:8]):
            info = read_binary_data(fat[name][0], where=name)
            assert info.architectures == ("x86_64", "arm64"), name
        else:
            assert fat[name] == thin[name], name


@pytest.mark.parametrize("arch", ["arm64", "universal2"])
def test_the_fix_up_rewrites_what_differs_and_keeps_arm64_signed(mac_wheels: MacWheels,
                                                                  tmp_path: Path,
                                                                  arch: str) -> None:
    loaded = manifest.load(ROOT)
    decided = search_paths(loaded, MACOS, build_variant(loaded.variant("cpu")),
                           loaded.components_for("cpu"))
    with zipfile.ZipFile(mac_wheels.paths[arch]) as archive:
        archive.extractall(tmp_path)
    # the build already has them
    assert fix_up(MACOS, tmp_path, decided, host=Host.current()) == []
    edit = _name_tool("-delete_rpath", "@loader_path", "-add_rpath", "/Users/runner/build/lib",
                      "-id", "libedgert_kernels.dylib")
    edit(tmp_path / KERNELS)
    _name_tool("-delete_rpath", "@loader_path/lib")(tmp_path / EXTENSION)
    assert fix_up(MACOS, tmp_path, decided, host=Host.current()) == [EXTENSION, KERNELS]
    kernels, extension = read_binary(tmp_path / KERNELS), read_binary(tmp_path / EXTENSION)
    assert (kernels.soname, kernels.runpath) == ("@rpath/libedgert_kernels.dylib",
                                                 ("@loader_path",))
    assert extension.runpath == ("@loader_path/lib",)
    for info in (kernels, extension):
        assert info.bad_signatures == () and "arm64" not in info.unsigned


# ------------------------------------------------------------ the SDK, cross-built

@pytest.mark.parametrize("arch", ["arm64", "x86_64"])
def test_examples_build_against_the_wheel_sdk(mac_wheels: MacWheels, tmp_path: Path,
                                              arch: str) -> None:
    with zipfile.ZipFile(mac_wheels.paths[arch]) as archive:
        archive.extractall(tmp_path / "wheel")
    package = tmp_path / "wheel" / "edgert"
    build, prefix = tmp_path / "build", tmp_path / "app"
    cmake = str(tools.cmake(cache=tools.cache_dir()))
    configure = [cmake, "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={tools.ninja()}",
                 "-S", str(package / "examples" / "consumer"), "-B", str(build),
                 "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_PREFIX_PATH={package / 'lib' / 'cmake'}",
                 *macos.toolchain_arguments(arch, tmp_path / "toolchain",
                                            cache=tools.cache_dir())]
    for command in (configure, [cmake, "--build", str(build), "--parallel", "2"],
                    [cmake, "--install", str(build), "--prefix", str(prefix)]):
        completed = subprocess.run(command, capture_output=True, text=True, check=False)
        assert completed.returncode == 0, completed.stdout + completed.stderr
    wanted = {f"@rpath/{name}" for name in ("libedgert.dylib", *REGISTERING)}
    for program in ("run_program", "run_program_c"):
        built = read_binary(build / program)
        assert built.machine == arch and built.file_type == "executable"
        assert wanted <= set(built.needed_paths), built.needed_paths
        assert built.runpath == (str(package / "lib"),)     # CMake's build-tree path
        installed = read_binary(prefix / "bin" / program)
        assert installed.runpath == ("@loader_path/../lib",)
        assert not installed.bad_signatures and "arm64" not in installed.unsigned
    assert {path.name for path in (prefix / "lib").iterdir()} == {
        "libedgert.dylib", "libedgert_threadpool.dylib", *REGISTERING}


# ------------------------------------------------------------ broken copies, caught

def _changed(source: Path, folder: Path, member: str, edit: Callable[[Path], None] | None,
             *, platform: str | None = None) -> Path:
    """A copy of ``source`` with ``member`` changed by ``edit`` (given the extracted file)
    and the platform tag replaced; RECORD is written afresh, so only the change is wrong."""
    entries = wheel_module.read_entries(source)
    dist_info = wheel_module.dist_info_of(entries)
    name = wheel_module.WheelName.parse(source.name)
    if edit is not None:
        path = folder / Path(member).name
        path.write_bytes(entries[member][0])
        edit(path)
        entries[member] = (path.read_bytes(), entries[member][1])
    if platform is not None:
        text = entries[f"{dist_info}/WHEEL"][0].decode().replace(name.platform, platform)
        entries[f"{dist_info}/WHEEL"] = (text.encode(), 0o644)
        name = wheel_module.WheelName(name.distribution, name.version, name.python, name.abi,
                                      platform)
    target = folder / name.filename
    wheel_module.write_wheel(target, entries, dist_info=dist_info, epoch=EPOCH)
    return target


def _name_tool(*arguments: str) -> Callable[[Path], None]:
    def edit(path: Path) -> None:
        subprocess.run([_tool("llvm-install-name-tool-14"), *arguments, str(path)], check=True)
    return edit


def _flip_arm64_code_byte(path: Path) -> None:
    info = read_binary(path)
    texts = [section for section in info.sections if section.name == "__TEXT,__text"]
    slice_index = info.architectures.index("arm64") if info.architectures else 0
    data = bytearray(path.read_bytes())
    data[texts[slice_index].offset + 64] ^= 0x01
    path.write_bytes(bytes(data))


def test_an_install_name_naming_a_build_folder_is_caught(mac_wheels: MacWheels,
                                                         tmp_path: Path) -> None:
    broken = _changed(mac_wheels.paths["arm64"], tmp_path, EXTENSION, _name_tool(
        "-change", "@rpath/libedgert.dylib", "/Users/runner/build/lib/libedgert.dylib"))
    errors = _errors(broken)
    assert ("search-path", EXTENSION, "loads a library by an absolute path outside the "
            "system") in errors
    assert ("linkage", EXTENSION, "needs /Users/runner/build/lib/libedgert.dylib, which is "
            "not found after installation") in errors
    completed = run_release("verify", "--static", str(broken))
    assert completed.returncode == VerificationFailed.exit_code, completed.stderr
    assert "FAILED (2 errors" in completed.stdout


def test_a_missing_lc_rpath_is_caught(mac_wheels: MacWheels, tmp_path: Path) -> None:
    broken = _changed(mac_wheels.paths["x86_64"], tmp_path, EXTENSION,
                      _name_tool("-delete_rpath", "@loader_path/lib"))
    assert read_binary_data(wheel_module.read_entries(broken)[EXTENSION][0],
                            where=EXTENSION).runpath == ()
    errors = _errors(broken)
    # one finding for the file whose search path misses the shipped libraries
    (missing,) = [what for check, file, what in errors
                  if (check, file) == ("linkage", EXTENSION)]
    assert missing.startswith("needs libedgert.dylib, ") and missing.endswith(
        "which the wheel ships but this file does not find after installation"), missing


@pytest.mark.parametrize("arch", ["arm64", "universal2"])
def test_a_flipped_byte_in_a_signed_arm64_page_is_caught(mac_wheels: MacWheels,
                                                         tmp_path: Path, arch: str) -> None:
    broken = _changed(mac_wheels.paths[arch], tmp_path, KERNELS, _flip_arm64_code_byte)
    info = read_binary_data(wheel_module.read_entries(broken)[KERNELS][0], where=KERNELS)
    assert info.bad_signatures == ("arm64",)
    assert _errors(broken) == {("search-path", KERNELS, "has a code signature that does not "
                                "match its contents (arm64)")}


@pytest.mark.parametrize(("arch", "older", "needs"), [
    ("x86_64", "macosx_10_9_x86_64", "macOS-x86-64_10.13"),
    ("universal2", "macosx_10_12_universal2", "macOS-x86-64_10.13")])
def test_a_tag_older_than_the_minimum_macos_is_caught(mac_wheels: MacWheels, tmp_path: Path,
                                                      arch: str, older: str,
                                                      needs: str) -> None:
    retagged = _changed(mac_wheels.paths[arch], tmp_path, EXTENSION, None, platform=older)
    errors = _errors(retagged)
    tag = "_".join(older.split("_")[:3])
    # one finding for the root cause: every binary of the wheel (7) needs the newer macOS
    assert errors == {("metadata", "", f"7 files need {needs}, newer than the {tag} tag allows")}


def test_repair_refuses_a_library_from_outside_the_wheel(mac_wheels: MacWheels,
                                                         tmp_path: Path) -> None:
    broken = _changed(mac_wheels.paths["arm64"], tmp_path, KERNELS, _name_tool(
        "-change", "@rpath/libedgert.dylib", "/opt/homebrew/lib/libomp.dylib"))
    request = RepairRequest(wheel=broken, out_dir=tmp_path, keep=(), exclude=())
    with pytest.raises(WheelError, match="loads /opt/homebrew/lib/libomp.dylib, which "
                       "is neither in the wheel nor part of macOS"):
        MACOS.repair(request)
    target = Target(name="macos-arm64", platform="macos", arch="arm64")
    assert MACOS.wheel_platform_tag(target) == TAGS["arm64"]
