"""Modules are named by what they hold: no two modules of release/, platforms/ and cuda/
share a file name, so a name in an import, a traceback or a doc says which one is meant. The
one exception is by design: each platform's loader model (platforms/<os>/loader.py)
implements the interface of release/loader.py under its name."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from tests.quality.sources import relative, sources

PACKAGE_FILES = {"__init__.py", "__main__.py"}
# a name shared by an interface in release/ and its implementation in each platform module
IMPLEMENTED_PER_PLATFORM = {"loader.py"}


def _names() -> dict[str, list[str]]:
    found: dict[str, list[str]] = defaultdict(list)
    for path in sources():
        found[path.name].append(relative(path))
    return found


def _platform_implementations(name: str, paths: list[str]) -> bool:
    platforms = [Path(path) for path in paths if path.startswith("platforms/")]
    interface = [path for path in paths if not path.startswith("platforms/")]
    return (name in IMPLEMENTED_PER_PLATFORM and interface == [f"release/{name}"]
            and all(len(path.parts) == 3 for path in platforms)
            and len({path.parts[1] for path in platforms}) == len(platforms))


def test_no_two_modules_share_a_name() -> None:
    shared = {name: paths for name, paths in _names().items()
              if len(paths) > 1 and name not in PACKAGE_FILES
              and not _platform_implementations(name, paths)}
    assert shared == {}


def test_the_loader_exception_is_what_it_says() -> None:
    paths = _names()["loader.py"]
    assert "release/loader.py" in paths and len(paths) >= 2
    assert _platform_implementations("loader.py", paths)
    assert not _platform_implementations("loader.py", [*paths, "cuda/loader.py"])


def test_every_public_name_of_release_verify_resolves() -> None:
    """release.verify imports its public names when first used, from the module its table
    names: a renamed module must not leave the table pointing at the old name."""
    import release.verify

    for name in release.verify.__all__:
        assert getattr(release.verify, name) is not None, name
