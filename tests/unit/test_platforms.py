"""Platform steps that need no compiler: search paths, names, tags, host checks."""

from __future__ import annotations

import pytest

from platforms.linux import PLATFORM as LINUX
from platforms.linux import origin_relative
from platforms.macos import PLATFORM as MACOS
from platforms.macos import loader_relative
from platforms.windows import PLATFORM as WINDOWS
from release.errors import ConfigurationError, ToolError
from release.manifest import Target
from release.platform import get_platform


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


def test_cross_arch_is_refused_with_a_fix() -> None:
    other = "aarch64" if LINUX.host_arch() == "x86_64" else "x86_64"
    with pytest.raises(ToolError, match="cross-building"):
        LINUX.check_host(Target(name=f"linux-{other}", platform="linux", arch=other))


def test_macos_refuses_until_supported() -> None:
    with pytest.raises(ToolError, match="not supported"):
        MACOS.check_host(Target(name="macos-arm64", platform="macos", arch="arm64"))
