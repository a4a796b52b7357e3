"""Platform steps that need no compiler: search paths, names, tags, host checks."""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

import pytest

from platforms.linux import PLATFORM as LINUX
from platforms.linux import cross, origin_relative
from platforms.macos import PLATFORM as MACOS
from platforms.macos import loader_relative
from platforms.windows import PLATFORM as WINDOWS
from release.errors import ConfigurationError, ToolError
from release.host import Host, Runner
from release.manifest import Target
from release.platform import Route, get_platform


def test_origin_relative_paths() -> None:
    assert origin_relative("edgert/lib/libedgert.so", "edgert/lib") == "$ORIGIN"
    assert origin_relative("edgert/_C.abi3.so", "edgert/lib") == "$ORIGIN/lib"
    assert (origin_relative("edgert/lib/libedgert_backend_cuda.so", "nvidia/cuda_runtime/lib")
            == "$ORIGIN/../../nvidia/cuda_runtime/lib")
    assert loader_relative("edgert/_C.abi3.so", "edgert/lib") == "@loader_path/lib"


def test_library_and_extension_names() -> None:
    assert LINUX.library_file("edgert_kernels") == "libedgert_kernels.so"
    assert MACOS.library_file("edgert_kernels") == "libedgert_kernels.dylib"
    assert WINDOWS.library_file("edgert_kernels") == "edgert_kernels.dll"
    assert LINUX.extension_file("_C") == "_C.abi3.so"
    assert WINDOWS.extension_file("_C") == "_C.pyd"


def test_platform_tags() -> None:
    assert LINUX.wheel_platform_tag(Target(name="l", platform="linux", arch="x86_64")) == \
        "linux_x86_64"
    assert MACOS.wheel_platform_tag(Target(name="m", platform="macos", arch="arm64")) == \
        "macosx_11_0_arm64"
    assert WINDOWS.wheel_platform_tag(Target(name="w", platform="windows", arch="amd64")) == \
        "win_amd64"


def test_registry() -> None:
    assert get_platform("linux") is LINUX
    with pytest.raises(ConfigurationError, match="no platform module"):
        get_platform("beos")


AARCH64 = Target(name="linux-aarch64", platform="linux", arch="aarch64")
X86_64 = Host("linux", "x86_64")


def test_cross_arch_without_a_toolchain_is_refused_with_a_fix(
        monkeypatch: pytest.MonkeyPatch) -> None:
    route = LINUX.build_route(Target(name="linux-riscv64", platform="linux", arch="riscv64"),
                              X86_64)
    assert not route.reachable and route.detail.startswith(
        "cross-building linux-riscv64 on a x86_64 host")
    assert route.fix == "build on a riscv64 machine or pass --arch x86_64"


def test_cross_build_needs_the_cross_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    route = LINUX.build_route(AARCH64, X86_64)
    assert not route.reachable and "aarch64-linux-gnu-gcc" in route.detail
    assert route.fix == "apt-get install g++-aarch64-linux-gnu"
    assert not LINUX.build_route(AARCH64, Host("darwin", "x86_64")).reachable


def test_cross_build_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    """aarch64 gets the toolchain file and this interpreter's headers (the stable ABI needs
    no target interpreter); the native build's arguments stay what they were."""
    arguments = LINUX.cmake_arguments(AARCH64, host=X86_64, ccache=False, cache=Path('/c'),
                                      build_dir=Path('/b'))
    toolchain = Path(arguments[0].partition("=")[2])
    assert arguments[0].startswith("-DCMAKE_TOOLCHAIN_FILE=") and toolchain.is_file()
    assert toolchain.parent == Path(cross.__file__).parent
    assert "CMAKE_SYSTEM_PROCESSOR aarch64" in toolchain.read_text()
    assert arguments[1] == f"-DPython_INCLUDE_DIR={sysconfig.get_paths()['include']}"
    native = Target(name="linux-x86_64", platform="linux", arch="x86_64")
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/bin/{name}")
    assert LINUX.cmake_arguments(native, host=X86_64, ccache=False, cache=Path('/c'),
                                 build_dir=Path('/b')) == []


def test_a_native_build_looks_up_its_compilers_when_it_configures(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Planning and routing a native build need no compiler; the configure stage (the
    platform's cmake_arguments) refuses one without cc, saying what to install."""
    monkeypatch.setattr(shutil, "which", lambda name: None)
    native = Target(name="linux-x86_64", platform="linux", arch="x86_64")
    assert LINUX.build_route(native, X86_64).route is Route.NATIVE
    with pytest.raises(ToolError, match="cc") as error:
        LINUX.cmake_arguments(native, host=X86_64, ccache=False, cache=Path('/c'),
                              build_dir=Path('/b'))
    assert error.value.fix == "install gcc and g++ (apt-get install build-essential)"


def test_cross_table_is_validated(tmp_path: Path) -> None:
    target = cross.cross_targets()["aarch64"]
    assert target.compilers == ("aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++")
    assert target.debian_architecture == "arm64" == target.packages.architecture
    assert "python3.11-minimal" in [package.name for package in target.packages.packages]
    assert target.wheels.packages[0].startswith("numpy==")
    broken = tmp_path / "cross.toml"
    broken.write_text('schema = 1\n[targets.aarch64]\ntriplet = "x"\n')
    with pytest.raises(ConfigurationError, match="missing keys"):
        cross.cross_targets(broken)
    source = Path(cross.__file__).with_name("cross.toml").read_text()
    broken.write_text(source.replace('triplet = "aarch64-linux-gnu"', "triplet = 3"))
    with pytest.raises(ConfigurationError, match="targets.aarch64.triplet must be a string"):
        cross.cross_targets(broken)


def test_windows_is_cross_built_here_and_run_under_wine_when_installed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from platforms.windows import wine
    amd64 = Target("windows-amd64", "windows", "amd64")
    monkeypatch.setattr(wine, "find_wine", lambda: "/usr/bin/wine")
    route = WINDOWS.build_route(amd64, X86_64)
    assert route.route is Route.CROSS and route.reachable
    assert "zig x86_64-windows-gnu" in route.detail and "run under wine" in route.detail
    monkeypatch.setattr(wine, "find_wine", lambda: None)
    without = WINDOWS.build_route(amd64, X86_64)
    assert without.reachable and "apt-get install wine64" in without.detail
    arm = WINDOWS.build_route(Target("windows-arm64", "windows", "arm64"), X86_64)
    assert arm.route is Route.NOT_BUILDABLE and "only amd64 Windows wheels" in arm.detail
    assert WINDOWS.build_route(amd64, Host("windows", "x86_64")).route is Route.NATIVE
    assert WINDOWS.runner(amd64, host=Host("windows", "x86_64"), cache=Path("unused")) == \
        Runner("x86_64")
    elsewhere = WINDOWS.build_route(amd64, Host("freebsd", "x86_64"))
    assert elsewhere.route is Route.ELSEWHERE and elsewhere.fix == "build on one of those"


def test_linux_routes_follow_the_host_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    riscv = LINUX.build_route(Target(name="linux-riscv64", platform="linux", arch="riscv64"),
                              X86_64)
    assert riscv.route is Route.ELSEWHERE and riscv.buildable and not riscv.reachable
    assert riscv.fix == "build on a riscv64 machine or pass --arch x86_64"
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/bin/{name}"
                        if name.startswith("aarch64-") or name in ("cc", "c++") else None)
    cross_route = LINUX.build_route(AARCH64, X86_64)
    assert cross_route.route is Route.CROSS and cross_route.reachable
    assert "verify reads files only: apt-get install qemu-user" in cross_route.detail
    native = LINUX.build_route(Target(name="linux-x86_64", platform="linux", arch="x86_64"),
                               X86_64)
    assert native.route is Route.NATIVE and native.reachable
