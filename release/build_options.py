"""Build options, resolved once at the edge (the CLI or the PEP 517 backend) and passed down:

    built-in defaults < a caller's own defaults < [tool.release.defaults]
                      < environment (RELEASE_*) < command line / config settings

Nothing below the edge reads the environment for these; the pipeline receives one frozen
``BuildOptions``. (The environment still reaches the toolchains it configures, e.g.
CUDA_HOME and SOURCE_DATE_EPOCH, through ``environ``.)"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from release._compat import StrEnum
from release.errors import ConfigurationError


class Stage(enum.IntEnum):
    """The pipeline's stages in order (release/building/pipeline.py); ``--until`` names one by its
    lower-case name (``fixup``, ``pack``)."""

    CONFIGURE = 1
    BUILD = 2
    INSTALL = 3
    LAYOUT = 4
    FIXUP = 5
    PACK = 6
    REPAIR = 7
    VERIFY = 8

    @property
    def label(self) -> str:
        return self.name.lower().replace("fixup", "fix up").replace("layout", "lay out")

    @property
    def option(self) -> str:
        """The stage's name for ``--until`` and ``-C until=``, and in the JSON timings."""
        return self.name.lower()

    @classmethod
    def named(cls, text: str, *, where: str = "--until") -> Stage:
        """The stage ``text`` names; anything else is one line naming the valid stages."""
        for stage in cls:
            if stage.option == text.strip().lower():
                return stage
        names = ", ".join(stage.option for stage in cls)
        raise ConfigurationError(f"{where}: '{text}' is not a stage (the stages are {names})",
                                 fix=f"pass one of: {names}")


class VerifyMode(StrEnum):
    FULL = "full"
    STATIC = "static"
    NONE = "none"


class Form(StrEnum):
    """How a variant is distributed: its own distribution (``edgert-cu12``, the default, for
    every installer) or a variant wheel of the project's distribution (PEP 825)."""

    SEPARATE = "separate"
    VARIANT = "variant"


def default_cache_dir() -> Path:
    return Path.home() / ".cache" / "edgert-release"


@dataclass(frozen=True)
class BuildOptions:
    platform: str
    arch: str | None = None           # None: the host's architecture
    variant: str = "cpu"
    out_dir: Path = Path("dist")
    build_dir: Path | None = None     # None: <project>/build/<target>-<variant>
    last_stage: Stage = Stage.VERIFY
    verify: VerifyMode = VerifyMode.FULL
    jobs: int = 0                     # 0: one per core
    cmake_arguments: tuple[str, ...] = ()
    cache_dir: Path | None = None     # None: default_cache_dir()
    ccache: bool = True               # use ccache as the compiler launcher when installed
    allow_unchecked: bool = False     # publish even if verify could not run a check here
    form: Form = Form.SEPARATE        # variant: a PEP 825 variant wheel of the one distribution


MAX_JOBS = 4096          # parallel compile jobs: more than any machine's cores
MAX_SETTING_LENGTH = 1024  # a setting's text (a path, a name) from any layer


def shown(text: object, limit: int = 60) -> str:
    """``text`` for a one-line message: a hostile value thousands of characters long is cut
    to its first ``limit`` characters and its length."""
    text = str(text)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _jobs(text: str) -> int:
    """A job count: a whole number from 0 (one per core) to MAX_JOBS, read without handing
    int() thousands of digits."""
    digits = text.strip()
    if (not digits.isdigit() or not digits.isascii() or len(digits.lstrip("0")) > 4
            or int(digits) > MAX_JOBS):
        raise ValueError(f"jobs must be a whole number from 0 (one per core) to {MAX_JOBS}, "
                         f"not '{shown(text)}'")
    return int(digits)


def _boolean(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"'{text}' is not a boolean")


@dataclass(frozen=True)
class Setting:
    """One option: its BuildOptions field, manifest key, environment variable and parser."""

    field: str
    key: str                          # in [tool.release.defaults]
    env: str
    parse: Callable[[str], Any]


SETTINGS = (
    Setting("arch", "arch", "RELEASE_ARCH", str),
    Setting("variant", "variant", "RELEASE_VARIANT", str),
    Setting("out_dir", "out", "RELEASE_OUT", Path),
    Setting("build_dir", "build-dir", "RELEASE_BUILD_DIR", Path),
    Setting("verify", "verify", "RELEASE_VERIFY", VerifyMode),
    Setting("jobs", "jobs", "RELEASE_JOBS", _jobs),
    Setting("cache_dir", "cache-dir", "RELEASE_CACHE_DIR", Path),
    Setting("ccache", "ccache", "RELEASE_CCACHE", _boolean),
    Setting("form", "form", "RELEASE_FORM", Form),
)
KEYS = tuple(setting.key for setting in SETTINGS)


def _parsed(setting: Setting, value: object, where: str) -> Any:
    if setting.parse is _boolean and isinstance(value, bool):
        return value
    text = str(value)
    if len(text) > MAX_SETTING_LENGTH:
        raise ConfigurationError(f"{where}: '{shown(text)}' is longer than "
                                 f"{MAX_SETTING_LENGTH} characters",
                                 fix=f"give {setting.key} a valid value")
    try:
        return setting.parse(text)
    except ValueError as error:
        raise ConfigurationError(f"{where}: {shown(error, 200)}",
                                 fix=f"give {setting.key} a valid value") from None


def check_default(key: str, value: object, where: str) -> None:
    """Refuses a value of [tool.release.defaults] its setting would refuse (a job count out
    of range, an unknown verify mode), when the manifest is read."""
    for setting in SETTINGS:
        if setting.key == key:
            _parsed(setting, value, where)


def resolve(*, platform: str, given: Mapping[str, object],
            manifest_defaults: Mapping[str, object], environ: Mapping[str, str],
            caller_defaults: Mapping[str, object] | None = None, last_stage: Stage = Stage.VERIFY,
            cmake_arguments: tuple[str, ...] = (), allow_unchecked: bool = False
            ) -> BuildOptions:
    """The options in force; ``given`` holds only what the command line really set."""
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        layers = [((caller_defaults or {}).get(setting.field), "default"),
                  (manifest_defaults.get(setting.key), f"tool.release.defaults.{setting.key}"),
                  (environ.get(setting.env) or None, setting.env),
                  (given.get(setting.field), f"--{setting.key}")]
        for value, where in layers:
            if value is not None:
                values[setting.field] = _parsed(setting, value, where)
    if not 0 <= values.get("jobs", 0) <= MAX_JOBS:
        raise ConfigurationError(f"jobs must be a whole number from 0 (one per core) to "
                                 f"{MAX_JOBS}",
                                 fix="pass --jobs / RELEASE_JOBS within that range")
    return BuildOptions(platform=platform, last_stage=last_stage,
                        cmake_arguments=cmake_arguments, allow_unchecked=allow_unchecked,
                        **values)
