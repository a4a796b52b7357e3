"""sdk-routes probes the CMake package of the distribution (not the first one alphabetically)
and reads libraries wrapped in linker flags from CMake's link line."""

from __future__ import annotations

from pathlib import Path

import pytest

from release.verify import VerifyOptions
from release.verify.argument import classify
from release.verify.checks._cmake_probe import libraries_in
from release.verify.checks.sdk_routes import find_package_dir
from release.verify.wheel_model import open_wheel
from tests.verify.test_wheel_safety import make_wheel


@pytest.mark.parametrize(("fragment", "names"), [
    ("/site/demo/lib/libdemo.so", ["libdemo.so"]),
    ('"/site with space/libdemo.so.1"', ["libdemo.so.1"]),
    ("-Wl,--push-state,--no-as-needed,/site/lib/libkeep.so,--pop-state", ["libkeep.so"]),
    ("-Wl,--push-state,--no-as-needed", []),
    ("-ldemo_kernels", ["libdemo_kernels.so"]),
    ("-Wl,-rpath,/site/lib", []),
])
def test_libraries_in_link_fragments(fragment: str, names: list[str]) -> None:
    assert libraries_in(fragment) == names


def test_the_distributions_own_package_is_probed(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "demo-1.0-py3-none-any.whl", {
        "demo/share/cmake/Abseil/AbseilConfig.cmake": b"",        # a vendored dependency's
        "demo/share/cmake/Demo/DemoConfig.cmake": b"",
        "demo/share/cmake/Zlib/zlib-config.cmake": b""})
    root = tmp_path / "site"
    root.mkdir()
    model = open_wheel(classify(wheel), root, extract_all=False, prefixes=(),
                       options=VerifyOptions(), readers=())
    assert find_package_dir(model) == ("demo/share/cmake/Demo", "Demo")
