"""The macOS platform module without a compiler: routes on Linux and on a Mac, the thin parts
of universal2, tags and deployment targets, the zig toolchain's settings, the fix-up's edits
and checks, the repair route's refusal, and the universal merge's refusals. (The builds
themselves are tests/integration/test_macos.py.)"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import platforms.macos as macos
from platforms.macos import PLATFORM as MACOS
from release.binary.model import BinaryInfo
from release.errors import ToolError, WheelError
from release.host import Host
from release.manifest import Target
from release.platform import Route, SearchPath
from tests.verify.macho_writer import macho
from tests.verify.test_wheel_safety import make_wheel

ARM64 = Target(name="macos-arm64", platform="macos", arch="arm64")
INTEL = Target(name="macos-x86_64", platform="macos", arch="x86_64")
UNIVERSAL = Target(name="macos-universal2", platform="macos", arch="universal2")
LLVM = {"llvm-install-name-tool-14", "llvm-lipo-14", "llvm-otool-14"}
SYSTEM = "/usr/lib/libSystem.B.dylib"
LINUX_HOST, MAC = Host("linux", "x86_64"), Host("darwin", "aarch64")


def _tools(monkeypatch: pytest.MonkeyPatch, tools: set[str]) -> None:
    """The tools on PATH (the machine itself is the Host each call is handed)."""
    monkeypatch.setattr(shutil, "which", lambda name, *args, **kwargs:
                        f"/usr/bin/{name}" if name in tools else None)


def test_linux_cross_builds_with_zig_and_runs_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    _tools(monkeypatch, LLVM)
    route = MACOS.build_route(UNIVERSAL, LINUX_HOST)
    assert route.route is Route.CROSS and route.reachable
    assert route.detail == ("zig 0.17.1 from the package index (aarch64-macos.11.0, "
                            "x86_64-macos.10.13); programs not run (verify reads files only)")
    assert MACOS.runner(ARM64, host=LINUX_HOST, cache=Path("unused")) is None
    assert [tool.name for tool in MACOS.toolchain_tools(ARM64, LINUX_HOST)] == ["ziglang"]
    assert MACOS.emulated(Host("darwin", "aarch64"), cache=Path("unused")) == ()


def test_missing_llvm_tools_are_named_with_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    _tools(monkeypatch, {"llvm-install-name-tool-14"})
    assert MACOS.build_route(ARM64, LINUX_HOST).reachable   # a thin build needs no lipo
    route = MACOS.build_route(UNIVERSAL, LINUX_HOST)
    assert route.route is Route.CROSS and not route.reachable and route.buildable
    assert route.detail.endswith("; llvm-lipo not found")
    assert route.fix.startswith("apt-get install llvm-14")


def test_a_mac_builds_natively_with_its_clang(monkeypatch: pytest.MonkeyPatch) -> None:
    _tools(monkeypatch, {"clang", "install_name_tool", "lipo", "otool"})
    route = MACOS.build_route(UNIVERSAL, MAC)
    assert (route.route, route.detail, route.fix) == (
        Route.NATIVE, "this Mac's clang (arm64 + x86_64)", "")
    assert MACOS.toolchain_tools(ARM64, MAC) == ()
    assert MACOS.cmake_arguments(INTEL, host=MAC, ccache=False, cache=Path("unused"),
                                 build_dir=Path("unused")) == [
        "-DCMAKE_OSX_ARCHITECTURES=x86_64", "-DCMAKE_OSX_DEPLOYMENT_TARGET=10.13"]
    _tools(monkeypatch, set())
    assert MACOS.build_route(ARM64, MAC).fix == "xcode-select --install"


def test_an_unknown_architecture_is_refused_with_the_known_ones() -> None:
    route = MACOS.build_route(Target(name="macos-ppc", platform="macos", arch="ppc"), MAC)
    assert route.route is Route.ELSEWHERE and not route.reachable
    assert route.fix == "use one of: arm64, x86_64, universal2"


def test_universal2_is_built_as_two_thin_parts() -> None:
    assert MACOS.parts(ARM64) == (ARM64,)
    assert MACOS.parts(UNIVERSAL) == (
        Target(name="macos-arm64", platform="macos", arch="arm64"),
        Target(name="macos-x86_64", platform="macos", arch="x86_64"))


def test_one_deployment_target_per_architecture_gives_tag_and_triple() -> None:
    assert [MACOS.wheel_platform_tag(t) for t in (ARM64, INTEL, UNIVERSAL)] == [
        "macosx_11_0_arm64", "macosx_10_13_x86_64", "macosx_10_13_universal2"]
    for arch, triple in (("arm64", "aarch64-macos.11.0"), ("x86_64", "x86_64-macos.10.13")):
        target = macos.zig_target(arch)
        assert (target.triple, target.system, target.processor) == (triple, "Darwin", arch)
        version = macos.DEPLOYMENT_TARGETS[arch]
        assert target.settings["CMAKE_OSX_DEPLOYMENT_TARGET"] == f'"{version}"'
        assert target.settings["CMAKE_SHARED_LIBRARY_RUNTIME_CXX_FLAG"] == '"-Wl,-rpath,"'
        assert target.settings["CMAKE_SHARED_LINKER_FLAGS_INIT"] == '"-Wl,-S"'


def _info(**fields: object) -> BinaryInfo:
    base: dict[str, object] = dict(format="macho", machine="arm64", bits=64, little_endian=True,
                                   file_type="shared", size=1)
    return BinaryInfo(**{**base, **fields})  # type: ignore[arg-type]


def test_fix_up_edits_only_what_differs_from_the_decision() -> None:
    library = SearchPath("edgert/lib/libedgert_kernels.dylib", ("edgert/lib",), ("@loader_path",))
    fixed = _info(soname="@rpath/libedgert_kernels.dylib", runpath=("@loader_path",))
    assert macos.name_edits(fixed, library) == []
    macos.check_fixed(fixed, library)
    built = _info(soname="/build/lib/libedgert_kernels.dylib",
                  runpath=("/build/lib", "@loader_path", "/build/lib"))
    assert macos.name_edits(built, library) == [
        "-id", "@rpath/libedgert_kernels.dylib", "-delete_rpath", "/build/lib",
        "-delete_rpath", "@loader_path", "-add_rpath", "@loader_path"]
    extension = SearchPath("edgert/_C.abi3.so", ("edgert/lib",), ("@loader_path/lib",))
    assert macos.name_edits(_info(soname="_C.abi3.so", runpath=("@loader_path/lib",)),
                            extension) == []


def test_fix_up_refuses_a_binary_left_wrong_or_unsigned() -> None:
    library = SearchPath("edgert/lib/libedgert.dylib", ("edgert/lib",), ("@loader_path",))
    with pytest.raises(ToolError, match="arm64 code signature is missing or does not match"):
        macos.check_fixed(_info(soname="@rpath/libedgert.dylib", runpath=("@loader_path",),
                                bad_signatures=("arm64",)), library)
    with pytest.raises(ToolError, match=r"LC_RPATH \[\], wanted \['@loader_path'\]"):
        macos.check_fixed(_info(soname="@rpath/libedgert.dylib"), library)
    # an unsigned x86_64 slice is what the linker makes; macOS loads it
    macos.check_fixed(_info(machine="universal2", soname="@rpath/libedgert.dylib",
                            runpath=("@loader_path",), unsigned=("x86_64",)), library)


def test_repair_passes_a_self_contained_wheel_and_names_an_outside_library(
        tmp_path: Path) -> None:
    tag = "cp39-abi3-macosx_11_0_arm64"
    files = {"demo/lib/libcore.dylib": macho(install_name="@rpath/libcore.dylib",
                                             loads=[SYSTEM, "/System/Library/Frameworks/"
                                                    "Accelerate.framework/Accelerate"]),
             "demo/_ext.abi3.so": macho(rpaths=["@loader_path/lib"],
                                        loads=["@rpath/libcore.dylib", SYSTEM])}
    good = make_wheel(tmp_path / f"demo-1.0-{tag}.whl", files, tag=tag)
    out = tmp_path / "out"
    out.mkdir()
    request = macos.RepairRequest(wheel=good, out_dir=out, keep=(), exclude=())
    assert MACOS.repair(request).read_bytes() == good.read_bytes()
    files["demo/_ext.abi3.so"] = macho(loads=["@rpath/libcore.dylib",
                                              "/opt/homebrew/lib/libomp.dylib"])
    bad = make_wheel(tmp_path / f"bad-1.0-{tag}.whl", files, tag=tag, name="bad")
    with pytest.raises(WheelError) as refused:
        MACOS.repair(macos.RepairRequest(wheel=bad, out_dir=out, keep=(), exclude=()))
    assert refused.value.message == (
        f"demo/_ext.abi3.so in {bad.name} loads /opt/homebrew/lib/libomp.dylib, which is "
        "neither in the wheel nor part of macOS (/usr/lib, /System) (fix: link that library "
        "statically, or build on a Mac and bundle it with delocate-wheel (docs/macos.md, "
        "Repair))")


def _tree(root: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def test_the_universal_merge_copies_what_is_the_same_and_refuses_the_rest(
        tmp_path: Path) -> None:
    common = {"pkg/__init__.py": b"x = 1\n", "pkg/lib/cmake/pkg/pkgConfig.cmake": b"# c\n"}
    first = _tree(tmp_path / "arm64", common)
    second = _tree(tmp_path / "x86_64", common)
    (first / "pkg/lib/libz.dylib").symlink_to("libz.1.dylib")
    (second / "pkg/lib/libz.dylib").symlink_to("libz.1.dylib")
    # nothing Mach-O
    assert MACOS.merge([first, second], tmp_path / "merged", host=LINUX_HOST) == []
    assert (tmp_path / "merged/pkg/__init__.py").read_bytes() == b"x = 1\n"
    assert (tmp_path / "merged/pkg/lib/libz.dylib").readlink() == Path("libz.1.dylib")
    (second / "pkg/__init__.py").write_bytes(b"x = 2\n")
    with pytest.raises(ToolError, match="pkg/__init__.py differs between the thin builds"):
        MACOS.merge([first, second], tmp_path / "merged", host=LINUX_HOST)
    (second / "pkg/extra.txt").write_bytes(b"")
    with pytest.raises(ToolError, match=r"installed different files \(pkg/extra.txt in only"):
        MACOS.merge([first, second], tmp_path / "merged", host=LINUX_HOST)


def test_the_arch_a_mac_build_is_asked_for_comes_from_archflags() -> None:
    assert macos.requested_arch({"ARCHFLAGS": "-arch arm64 -arch x86_64"}) == "universal2"
    assert macos.requested_arch({"ARCHFLAGS": "-arch x86_64"}) == "x86_64"
    assert macos.requested_arch({"ARCHFLAGS": "-arch arm64"}) == "arm64"
    assert macos.requested_arch({"ARCHFLAGS": "-arch ppc"}) is None
    assert macos.requested_arch({}) is None
    assert MACOS.requested_arch({"ARCHFLAGS": "-arch x86_64"}) == "x86_64"


def test_the_backend_builds_what_archflags_ask_for(monkeypatch: pytest.MonkeyPatch) -> None:
    from release import backend, manifest
    from tests.conftest import ROOT
    monkeypatch.setattr(backend.sys, "platform", "darwin")
    monkeypatch.delenv("RELEASE_ARCH", raising=False)
    monkeypatch.setenv("ARCHFLAGS", "-arch arm64 -arch x86_64")
    options = backend._options(manifest.load(ROOT), None)
    assert (options.platform, options.arch) == ("macos", "universal2")
    monkeypatch.setenv("RELEASE_ARCH", "arm64")          # the pipeline's own setting wins
    assert backend._options(manifest.load(ROOT), None).arch == "arm64"
