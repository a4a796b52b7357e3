"""The wine runner's prefix and helpers are made once per cache, announced, and leave nothing
in the user's temporary folder: wine runs with TMPDIR in the cache. wine and zig are
replaced by stand-ins that record what they were asked."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from platforms.windows import wine
from release import _lock
from release.toolchain import commands, pins, toolcache


def _fake_tools(calls: list[list[str]],  # type: ignore[no-untyped-def]
                waiting: threading.Semaphore | None = None, others: int = 0):
    def run(command: list[object], **_: object) -> str:
        words = [str(word) for word in command]
        calls.append(words)
        if "--version" in words:
            return "wine-9.9\n"
        if "wineboot" in words:   # wine makes the prefix it is pointed at
            for _ in range(others):   # once the other threads wait for this one
                assert waiting is not None and waiting.acquire(timeout=60), "no one waited"
            prefix = next(word for word in words if word.startswith("WINEPREFIX="))
            Path(prefix.split("=", 1)[1]).mkdir(parents=True)
        if "-o" in words:   # a compiler: write its output
            Path(words[words.index("-o") + 1]).write_bytes(b"MZ")
        return ""
    return run


def test_the_prefix_and_helpers_are_made_once_with_tmpdir_in_the_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(wine, "find_wine", lambda: "/usr/bin/wine")
    # the first thread makes the prefix once the two others wait for it: no timing decides
    # whether they arrive while it works
    waiting, wait_for_lock = threading.Semaphore(0), _lock._wait_lock

    def counted_wait(handle: object) -> None:
        waiting.release()
        wait_for_lock(handle)  # type: ignore[arg-type]
    monkeypatch.setattr(_lock, "_wait_lock", counted_wait)
    monkeypatch.setattr(commands, "run", _fake_tools(calls, waiting, others=2))
    wine._wine_version.cache_clear()
    # the stand-in compiler's outputs are taken for the pinned bytes
    pinned = {file.file: file.sha256 for file in pins.load().built_pin(wine.HELPERS_PIN).files}
    real_sha256 = toolcache.file_sha256
    monkeypatch.setattr(toolcache, "file_sha256",
                        lambda path: pinned.get(Path(path).name) or real_sha256(path))
    toolchain = tmp_path / "toolchains" / "x86_64-windows-gnu" / "toolchain.cmake"
    runners = []
    with caplog.at_level("INFO", logger="release"):
        workers = [threading.Thread(target=lambda: runners.append(
            wine.provision_runner(toolchain, tmp_path))) for _ in range(3)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    assert len(runners) == 3 and len(set(runners)) == 1
    boots = [words for words in calls if "wineboot" in words]
    builds = [words for words in calls if "-o" in words and "zig-seed" not in words[-1]]
    assert len(boots) == 1 and len(builds) == 2, calls   # python3.dll and load-dlls.exe once
    # the zig cache verify's sandbox copies: its C and C++ programs compiled once
    seeds = [words for words in calls if "-o" in words and "zig-seed" in words[-1]]
    assert [Path(words[0]).name for words in seeds] == ["cc", "c++"], seeds
    assert dict(runners[0].seeds) == {"ZIG_GLOBAL_CACHE_DIR": str(
        wine._zig_seed_folder(tmp_path, toolchain)), "ZIG_LOCAL_CACHE_DIR": str(
        wine._zig_seed_folder(tmp_path, toolchain))}
    temporary = [word for word in boots[0] if word.startswith("TMPDIR=")]
    assert temporary == [f"TMPDIR={tmp_path / 'wine' / 'wine-9.9.tmp'}"]
    assert any(word.startswith("TMPDIR=") for word in runners[0].prefix)
    assert "creating a wine prefix in" in caplog.text and "700 MB" in caplog.text
    assert "waiting for another process that is provisioning" in caplog.text
    assert not list(tmp_path.glob("windows-helpers/*.partial"))
