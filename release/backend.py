"""PEP 517 build backend: ``pip wheel .``, ``python -m build`` and cibuildwheel run the same
pipeline stages as ``python -m release build``.

config_settings (``pip wheel . -C variant=cu12``, ``python -m build -C...``) are the command
line of this edge; below them, as for the CLI, RELEASE_* and [tool.release.defaults]
(release/options.py):
  variant  cpu | cu12 | cu13 (default: cpu)
  verify   full | static | none (default here: static; cibuildwheel's test step runs the rest)
  until    last stage, e.g. ``fixup`` to leave repair to cibuildwheel's repair-wheel-command
"""

from __future__ import annotations

import io
import logging
import os
import sys
import tarfile
from pathlib import Path
from typing import Any

from release import manifest as manifest_module
from release import options as build_options
from release.manifest import Manifest
from release.options import BuildOptions, Stage
from release.pipeline import run as run_pipeline
from release.wheel import source_date_epoch

_SDIST_INCLUDE = ("pyproject.toml", "README.md", "release", "platforms", "cuda", "native", "docs")
_SDIST_EXCLUDE_PARTS = {"__pycache__", "build", "dist", ".git"}


def _setting(config_settings: dict[str, Any] | None, key: str, default: str) -> str:
    value = (config_settings or {}).get(key, default)
    return str(value[-1] if isinstance(value, list) else value)


def _options(manifest: Manifest, config_settings: dict[str, Any] | None, *,
             out_dir: Path | None = None) -> BuildOptions:
    platform = {"linux": "linux", "darwin": "macos", "win32": "windows"}.get(sys.platform,
                                                                          sys.platform)
    given: dict[str, object] = {key: _setting(config_settings, key, "")
                                for key in ("variant", "verify")}
    given = {key: value for key, value in given.items() if value}
    if out_dir is not None:
        given["out_dir"] = out_dir
    return build_options.resolve(
        platform=platform, given=given, manifest_defaults=manifest.defaults,
        environ=os.environ, caller_defaults={"verify": "static"},
        last_stage=Stage[_setting(config_settings, "until", "verify").upper()])


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    return []


def get_requires_for_build_sdist(config_settings: dict[str, Any] | None = None) -> list[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str,
                                     config_settings: dict[str, Any] | None = None) -> str:
    """Writes the .dist-info without compiling anything (pip asks for it before building)."""
    from release.pipeline import dist_info_files, write_files
    manifest = manifest_module.load(Path.cwd())
    name, files = dist_info_files(manifest, _options(manifest, config_settings).variant)
    write_files(Path(metadata_directory) / name, files)
    return name


def build_wheel(wheel_directory: str, config_settings: dict[str, Any] | None = None,
                metadata_directory: str | None = None) -> str:
    logging.basicConfig(level=logging.INFO, format="[release] %(message)s", stream=sys.stderr)
    manifest = manifest_module.load(Path.cwd())
    options = _options(manifest, config_settings, out_dir=Path(wheel_directory))
    result = run_pipeline(manifest, options)
    assert result.wheel is not None
    return result.wheel.name


def _sdist_filter(info: tarfile.TarInfo, *, epoch: int) -> tarfile.TarInfo | None:
    if _SDIST_EXCLUDE_PARTS & set(Path(info.name).parts) or info.name.endswith(".pyc"):
        return None
    info.mtime = epoch
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mode = 0o755 if info.isdir() or info.mode & 0o100 else 0o644
    return info


def build_sdist(sdist_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    root = Path.cwd()
    manifest = manifest_module.load(root)
    base = f"{manifest.distribution}-{manifest.version}"
    epoch = source_date_epoch(os.environ)
    path = Path(sdist_directory) / f"{base}.tar.gz"
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as archive:
        for name in _SDIST_INCLUDE:
            if (root / name).exists():
                archive.add(root / name, arcname=f"{base}/{name}",
                            filter=lambda info: _sdist_filter(info, epoch=epoch))
        pkg_info = (f"Metadata-Version: 2.4\nName: {manifest.distribution}\n"
                    f"Version: {manifest.version}\n").encode()
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size, info.mtime, info.mode = len(pkg_info), epoch, 0o644
        archive.addfile(info, io.BytesIO(pkg_info))
    return path.name
