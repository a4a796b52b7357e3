"""An installer without variant support (pip today) and a folder of variant wheels (PEP 825):
it installs the plain wheel of the distribution, which is the CPU build, and never a variant
wheel, whose file name (the label after the platform tag) is not a wheel name to it. The
wheels are small ones made here; pip reads a local folder, never an index."""

from __future__ import annotations

from pathlib import Path

import pytest

from release import manifest as manifest_module
from release.distribution import wheel
from release.distribution.wheel_variant import make_variant_wheel, update_index
from tests.conftest import ROOT, make_venv

pytestmark = pytest.mark.integration


def _plain(folder: Path, marker: str) -> Path:
    dist_info = "edgert-0.1.0.dist-info"
    files = {"edgert/__init__.py": (f"BUILD = {marker!r}\n".encode(), 0o644),
             f"{dist_info}/METADATA": (b"Metadata-Version: 2.4\nName: edgert\n"
                                       b"Version: 0.1.0\n", 0o644),
             f"{dist_info}/WHEEL": (wheel.wheel_text(["py3-none-any"]).encode(), 0o644)}
    path = folder / "edgert-0.1.0-py3-none-any.whl"
    wheel.write_wheel(path, files, dist_info=dist_info, epoch=315532800)
    return path


def _folder(tmp_path: Path, *, with_plain: bool) -> Path:
    manifest = manifest_module.load(ROOT)
    folder = tmp_path / "wheels"
    folder.mkdir()
    for variant in manifest.variants:
        scratch = tmp_path / variant.name
        scratch.mkdir()
        _, text = make_variant_wheel(_plain(scratch, variant.name), folder,
                                     variant.wheel_variant, manifest.variant_providers,
                                     epoch=315532800)
        update_index(folder, "edgert", "0.1.0", text)
    if with_plain:
        _plain(folder, "plain cpu")
    return folder


def test_pip_installs_the_plain_cpu_wheel_and_ignores_the_variant_wheels(tmp_path: Path) -> None:
    folder = _folder(tmp_path, with_plain=True)
    assert len(list(folder.glob("*.whl"))) == 4
    environment = make_venv(tmp_path / "env")
    done = environment.run("-m", "pip", "install", "--no-index", "--find-links", str(folder),
                           "--disable-pip-version-check", "edgert")
    assert done.returncode == 0, done.stdout + done.stderr
    shown = environment.run("-c", "import edgert; print(edgert.BUILD)")
    assert shown.stdout.strip() == "plain cpu", shown.stderr
    assert not list(environment.site_packages.glob("edgert-0.1.0.dist-info/variant.json"))


def test_pip_finds_nothing_in_a_folder_of_variant_wheels_only(tmp_path: Path) -> None:
    folder = _folder(tmp_path, with_plain=False)
    environment = make_venv(tmp_path / "env")
    done = environment.run("-m", "pip", "install", "--no-index", "--find-links", str(folder),
                           "--disable-pip-version-check", "edgert")
    assert done.returncode != 0
    assert "No matching distribution found for edgert" in done.stderr
    assert environment.run("-c", "import edgert").returncode != 0
