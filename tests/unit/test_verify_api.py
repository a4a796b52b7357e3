"""``release.verify.verify_wheel`` as a library call: the path may be a ``str`` or any
``os.PathLike``, not only a ``pathlib.Path``."""

from __future__ import annotations

from pathlib import Path

import pytest

from release.distribution import wheel
from release.verify import verify_wheel

DIST_INFO = "demo-1.0.dist-info"


class _PathLike:
    """A path-like object that is not a pathlib.Path."""

    def __init__(self, path: Path) -> None:
        self._path = path

    def __fspath__(self) -> str:
        return str(self._path)


def _pure_wheel(folder: Path) -> Path:
    path = folder / "demo-1.0-py3-none-any.whl"
    files = {
        "demo/__init__.py": (b"x = 1\n", 0o644),
        f"{DIST_INFO}/METADATA": (b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n", 0o644),
        f"{DIST_INFO}/WHEEL": (wheel.wheel_text(["py3-none-any"]).encode(), 0o644),
    }
    wheel.write_wheel(path, files, dist_info=DIST_INFO, epoch=315532800)
    return path


@pytest.mark.parametrize("kind", [str, _PathLike, Path])
def test_verify_wheel_takes_str_and_path_like(tmp_path: Path, kind: type) -> None:
    path = _pure_wheel(tmp_path)
    report = verify_wheel(kind(path), static=True)
    assert report.wheel == path.name
    assert report.ok, report.render_text()


def test_an_sbom_is_a_legitimate_dist_info_member(tmp_path: Path) -> None:
    """PEP 770: SBOMs live in .dist-info/sboms/; verify reports nothing about them."""
    path = tmp_path / "demo-1.0-py3-none-any.whl"
    files = {
        "demo/__init__.py": (b"x = 1\n", 0o644),
        f"{DIST_INFO}/METADATA": (b"Metadata-Version: 2.4\nName: demo\nVersion: 1.0\n", 0o644),
        f"{DIST_INFO}/WHEEL": (wheel.wheel_text(["py3-none-any"]).encode(), 0o644),
        f"{DIST_INFO}/sboms/demo.cdx.json": (b'{"bomFormat": "CycloneDX"}\n', 0o644),
    }
    wheel.write_wheel(path, files, dist_info=DIST_INFO, epoch=315532800)
    report = verify_wheel(path, static=True)
    assert report.ok, report.render_text()
    assert not [f for f in report.findings if "sboms" in f.file or "sbom" in f.what.lower()]
