"""The quick tier: these tests need no compiler, no CMake and no package index. Asking the
pipeline for a build tool here fails the test instead of quietly provisioning one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from release import tools


@pytest.fixture(autouse=True)
def _no_build_tools(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a tests/unit test asked for a build tool; it belongs in "
                             "tests/integration or tests/native")
    for name in ("cmake", "ninja", "pip_tool", "pinned_tool", "pinned_folder"):
        monkeypatch.setattr(tools, name, refuse)
    yield
