"""Options are resolved once: defaults < a caller's defaults < [tool.release.defaults] <
RELEASE_* < command line; mistakes at any layer are one error naming where."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path

import pytest

from release import build_options as options
from release import manifest
from release.build_options import VerifyMode
from release.errors import ConfigurationError
from tests.conftest import ROOT


def resolve(given: dict[str, object] | None = None, *, defaults: dict[str, object] | None = None,
            environ: dict[str, str] | None = None,
            caller: dict[str, object] | None = None) -> options.BuildOptions:
    return options.resolve(platform="linux", given=given or {},
                           manifest_defaults=defaults or {}, environ=environ or {},
                           caller_defaults=caller)


def test_built_in_defaults() -> None:
    resolved = resolve()
    assert (resolved.variant, resolved.out_dir, resolved.verify, resolved.jobs) == (
        "cpu", Path("dist"), VerifyMode.FULL, 0)
    assert resolved.ccache is True and resolved.cache_dir is None


def test_each_layer_overrides_the_one_below() -> None:
    caller = {"verify": "static"}
    defaults = {"verify": "none", "jobs": 3, "variant": "cu12"}
    environ = {"RELEASE_JOBS": "5", "RELEASE_VARIANT": "cu13", "RELEASE_CCACHE": "0"}
    given = {"variant": "cpu"}
    assert resolve(caller=caller).verify is VerifyMode.STATIC
    assert resolve(caller=caller, defaults=defaults).verify is VerifyMode.NONE
    layered = resolve(given, caller=caller, defaults=defaults, environ=environ)
    assert (layered.verify, layered.jobs, layered.variant, layered.ccache) == (
        VerifyMode.NONE, 5, "cpu", False)
    assert resolve(environ={"RELEASE_CACHE_DIR": "/c"}).cache_dir == Path("/c")


@pytest.mark.parametrize(("layer", "value", "where"), [
    ("environ", {"RELEASE_JOBS": "many"}, "RELEASE_JOBS"),
    ("environ", {"RELEASE_CCACHE": "maybe"}, "RELEASE_CCACHE"),
    ("defaults", {"verify": "sometimes"}, "tool.release.defaults.verify"),
    ("given", {"jobs": -2}, "jobs must be a whole number from 0"),
])
def test_bad_values_name_their_layer(layer: str, value: dict[str, str], where: str) -> None:
    with pytest.raises(ConfigurationError, match=where):
        resolve(**{layer: value})  # type: ignore[arg-type]


def _pyproject() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_manifest_carries_defaults_and_refuses_unknown_keys() -> None:
    data = copy.deepcopy(_pyproject())
    data["tool"]["release"]["defaults"] = {"variant": "cu12", "jobs": 2}  # type: ignore[index]
    assert manifest.parse(data, ROOT).defaults == {"variant": "cu12", "jobs": 2}
    data["tool"]["release"]["defaults"] = {"colour": "red"}  # type: ignore[index]
    with pytest.raises(ConfigurationError, match="tool.release.defaults.colour"):
        manifest.parse(data, ROOT)
