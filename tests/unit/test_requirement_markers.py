"""Requires-Dist is read for the wheel's own target: markers are evaluated for its platform
tag, and a dependency declared only under an extra is optional, not declared."""

from __future__ import annotations

from packaging.tags import parse_tag

from release.verify.dist_info_files import marker_environment, parse_metadata

_METADATA = """\
Metadata-Version: 2.1
Name: demo
Version: 1.0
Provides-Extra: cuda
Requires-Dist: numpy>=1.22
Requires-Dist: nvidia-cublas-cu12; extra == "cuda"
Requires-Dist: pywin32; sys_platform == "win32"
Requires-Dist: nvidia-nccl-cu12; platform_machine == "x86_64" and sys_platform == "linux"
Requires-Dist: tomli; python_version < "3.11"
"""


def _declared(tag: str, name: str) -> tuple[bool, tuple[str, ...]]:
    metadata, findings = parse_metadata(_METADATA, where="METADATA")
    assert not findings
    declaration = metadata.requires_distribution(name, marker_environment(tuple(parse_tag(tag))))
    return declaration.required, declaration.extras


def test_markers_are_evaluated_for_the_wheels_tag() -> None:
    linux = "cp39-abi3-manylinux_2_28_x86_64"
    assert _declared(linux, "numpy") == (True, ())
    assert _declared(linux, "pywin32") == (False, ())
    assert _declared("cp39-abi3-win_amd64", "pywin32") == (True, ())
    assert _declared(linux, "nvidia-nccl-cu12") == (True, ())
    assert _declared("cp39-abi3-manylinux_2_28_aarch64", "nvidia-nccl-cu12") == (False, ())
    assert _declared("cp310-cp310-macosx_11_0_arm64", "tomli") == (True, ())
    assert _declared("cp312-cp312-macosx_11_0_arm64", "tomli") == (False, ())


def test_an_extra_makes_a_dependency_optional() -> None:
    assert _declared("cp39-abi3-manylinux_2_28_x86_64", "nvidia-cublas-cu12") == (False, ("cuda",))


def test_a_pure_tag_decides_nothing() -> None:
    assert marker_environment(tuple(parse_tag("py3-none-any"))) is None
    metadata, _ = parse_metadata(_METADATA, where="METADATA")
    assert metadata.requires_distribution("pywin32", None).required
