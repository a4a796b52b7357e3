"""Tool-cache entries are complete and intact, or made again: a folder pip was killed in the
middle of (no manifest) is discarded and installed again, a failed install leaves nothing
behind and is the environment's failure, a file changed after install (one byte flipped, its
modification time put back), removed or added is found by the manifest check at the next use
and the entry is installed again, and an entry that is damaged right after it was made is
refused. Pinned tools are installed in pip's hash-checking mode. Processes that start
together provision an entry once (a lock), say what they download and how big it is, and
leave nothing in TMPDIR. pip is replaced by a stand-in here."""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from pathlib import Path

import pytest

from release.errors import CommandError, EnvironmentFailure, ToolError
from release.toolchain import commands, pins, toolcache, tools

REQUIREMENT = "demo-tool==1.0"
# taken before this tier's fixture refuses build tools: pip itself is the stand-in below
pip_tool = tools.pip_tool
pinned_folder = tools.pinned_folder
PIN = pins.PythonPin(name="demo", purpose="a test", packages=("demo-tool==1.0",),
                     files=(pins.PinnedFile("demo_tool-1.0-py3-none-any.whl", "ab" * 32),),
                     executable="bin/demo")


def _fake_pip(calls: list[list[str]], *, fail: str = "",  # type: ignore[no-untyped-def]
              pause: float = 0.0, environments: list[dict[str, str]] | None = None):
    def run(command: list[object], env: dict[str, str] | None = None, **_: object) -> str:
        words = [str(part) for part in command]
        calls.append(words)
        if environments is not None:
            environments.append(dict(env or {}))
        time.sleep(pause)
        target = Path(words[words.index("--target") + 1])
        (target / "bin").mkdir(parents=True, exist_ok=True)
        (target / "bin" / "demo").write_bytes(b"#!/bin/sh\n" + b"x" * 4096)
        (target / "share").mkdir(exist_ok=True)
        (target / "share" / "module.cmake").write_text("set(X 1)\n")
        if fail:   # pip dies after writing part of the tree, or refuses a file
            raise CommandError("pip install demo-tool==1.0 failed", command=words,
                               returncode=1, output=fail)
        return ""
    return run


def _flip_one_byte(path: Path) -> None:
    """Changes the middle byte of ``path`` and puts its modification time back."""
    status = path.stat()
    with path.open("r+b") as handle:
        handle.seek(status.st_size // 2)
        byte = handle.read(1)
        handle.seek(status.st_size // 2)
        handle.write(bytes([byte[0] ^ 0xFF]))
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))


def test_a_complete_entry_is_used_as_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(commands, "run", _fake_pip(calls))
    monkeypatch.setattr(commands, "stream", _fake_pip(calls))
    first = pip_tool(REQUIREMENT, "bin/demo", cache=tmp_path)
    assert pip_tool(REQUIREMENT, "bin/demo", cache=tmp_path) == first
    assert len(calls) == 1 and (first.parents[1] / toolcache.MANIFEST).is_file()
    assert toolcache.damage(first.parents[1]) is None
    assert "--only-binary=:all:" not in calls[0]
    # a declared dependency of a wheel being verified: wheels only (an sdist's build would
    # run its code outside verify's sandbox)
    monkeypatch.setattr(tools, "pip_tool", pip_tool)   # the real one, pip still faked
    tools.pip_site("demo-dependency==2.0", cache=tmp_path)
    assert "--only-binary=:all:" in calls[1] and calls[1][-1] == "demo-dependency==2.0"


def test_a_half_deleted_entry_is_installed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(commands, "run", _fake_pip(calls))
    monkeypatch.setattr(commands, "stream", _fake_pip(calls))
    binary = pip_tool(REQUIREMENT, "bin/demo", cache=tmp_path)
    (binary.parents[1] / toolcache.MANIFEST).unlink()           # half deleted by hand
    assert pip_tool(REQUIREMENT, "bin/demo", cache=tmp_path) == binary
    assert len(calls) == 2 and "the entry is incomplete" in caplog.text
    binary.unlink()   # the manifest stays, the tool is gone
    assert pip_tool(REQUIREMENT, "bin/demo", cache=tmp_path).is_file()
    assert len(calls) == 3 and "bin/demo is missing" in caplog.text


@pytest.mark.parametrize("damage", ["one byte flipped", "truncated", "a file added"])
def test_a_tampered_entry_is_found_and_installed_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        damage: str) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(commands, "run", _fake_pip(calls))
    monkeypatch.setattr(commands, "stream", _fake_pip(calls))
    binary = pip_tool(REQUIREMENT, "bin/demo", cache=tmp_path)
    original = binary.read_bytes()
    if damage == "one byte flipped":
        _flip_one_byte(binary)
        named = "bin/demo is changed since it was installed"
    elif damage == "truncated":
        binary.write_bytes(original[:100])
        named = "bin/demo is changed since it was installed"
    else:
        (binary.parents[1] / "share" / "evil.cmake").write_text("message(hello)\n")
        named = "share/evil.cmake is not in its manifest"
    with caplog.at_level(logging.WARNING, logger="release"):
        assert pip_tool(REQUIREMENT, "bin/demo", cache=tmp_path) == binary
    assert len(calls) == 2, "installed again"
    warnings = [record.getMessage() for record in caplog.records
                if record.levelno >= logging.WARNING]
    assert len(warnings) == 1 and named in warnings[0] and "installing it again" in warnings[0]
    assert binary.read_bytes() == original and toolcache.damage(binary.parents[1]) is None


def test_a_touched_file_with_its_bytes_is_kept_and_checked_cheaply_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache restored elsewhere has other file times: the bytes are checked once, then the
    manifest records the new times."""
    calls: list[list[str]] = []
    monkeypatch.setattr(commands, "run", _fake_pip(calls))
    monkeypatch.setattr(commands, "stream", _fake_pip(calls))
    binary = pip_tool(REQUIREMENT, "bin/demo", cache=tmp_path)
    os.utime(binary, ns=(1, 1))
    hashed: list[Path] = []
    original = toolcache.file_sha256
    monkeypatch.setattr(toolcache, "file_sha256", lambda path: hashed.append(path) or
                        original(path))
    assert toolcache.damage(binary.parents[1]) is None and hashed == [binary]
    assert toolcache.damage(binary.parents[1]) is None and hashed == [binary], "cheap again"
    assert pip_tool(REQUIREMENT, "bin/demo", cache=tmp_path) == binary and len(calls) == 1


def test_an_entry_damaged_right_after_it_is_made_is_refused(tmp_path: Path) -> None:
    def make(partial: Path) -> None:
        (partial / "tool").write_text("v1")

    folder = tmp_path / "entry"
    toolcache.provision(folder, make, what="the demo", describes={})
    original_seal = toolcache.seal

    def seal_then_change(partial: Path, *, describes: object) -> None:
        original_seal(partial, describes=describes)   # type: ignore[arg-type]
        (partial / "tool").write_text("v2")           # something rewrites the cache

    (folder / "tool").write_text("tampered")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(toolcache, "seal", seal_then_change)
        with pytest.raises(ToolError, match=r"the demo: .*entry/tool is changed since it was "
                                            "installed right after it was installed"):
            toolcache.provision(folder, make, what="the demo", describes={})


def test_a_failed_install_leaves_nothing_and_blames_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(commands, "run", _fake_pip(calls, fail="Killed"))
    monkeypatch.setattr(commands, "stream", _fake_pip(calls, fail="Killed"))
    with pytest.raises(EnvironmentFailure, match="demo-tool") as caught:
        pip_tool(REQUIREMENT, "bin/demo", cache=tmp_path)
    assert "package index" in caught.value.fix
    left = sorted(path.name for path in (tmp_path / "tools").iterdir())
    assert left == ["demo_tool_1.0.lock"]       # neither the entry nor .partial: the lock file


def test_processes_that_start_together_provision_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Four callers at once (each with its own lock handle, as separate processes have):
    pip runs once, the others wait and use what it made."""
    calls: list[list[str]] = []
    monkeypatch.setattr(commands, "run", _fake_pip(calls, pause=0.1))
    monkeypatch.setattr(commands, "stream", _fake_pip(calls, pause=0.1))
    found: list[Path] = []
    workers = [threading.Thread(target=lambda: found.append(
        pip_tool(REQUIREMENT, "bin/demo", cache=tmp_path))) for _ in range(4)]
    with caplog.at_level("INFO", logger="release"):
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    assert len(calls) == 1 and len(set(found)) == 1 and found[0].is_file()
    assert "waiting for another process that is provisioning demo-tool==1.0" in caplog.text


def test_provisioning_says_what_and_how_big_and_keeps_pip_scratch_in_the_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    calls: list[list[str]] = []
    environments: list[dict[str, str]] = []
    monkeypatch.setattr(commands, "run", _fake_pip(calls, environments=environments))
    monkeypatch.setattr(commands, "stream", _fake_pip(calls, environments=environments))
    with caplog.at_level("INFO", logger="release"):
        binary = pip_tool(REQUIREMENT, "bin/demo", cache=tmp_path)
    assert "downloading demo-tool==1.0 from the package index into" in caplog.text
    assert re.search(rf"demo-tool==1.0: [1-9]\d* kB in {re.escape(str(binary.parents[1]))}$",
                     caplog.text, re.MULTILINE)
    (environment,) = environments
    partial = Path(calls[0][calls[0].index("--target") + 1])
    assert Path(environment["TMPDIR"]).parent == partial       # inside the partial folder
    assert not (binary.parents[1] / ".tmp").exists()


def test_a_pinned_tool_is_installed_in_hash_checking_mode(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    requirements: list[str] = []

    def run(command: list[object], **kwargs: object) -> str:
        words = [str(part) for part in command]
        requirements.append(Path(words[words.index("-r") + 1]).read_text())
        return str(_fake_pip(calls)(command, **kwargs))

    monkeypatch.setattr(commands, "run", run)

    monkeypatch.setattr(commands, "stream", run)
    folder = pinned_folder(PIN, tmp_path)
    assert folder == tmp_path / "tools" / f"demo-{PIN.digest}" and (folder / "bin/demo").is_file()
    assert {"--require-hashes", "--no-deps", "--only-binary=:all:"} <= set(calls[0])
    assert requirements == [f"demo-tool==1.0 --hash=sha256:{'ab' * 32}\n"]
    assert not list(tmp_path.glob("tools/*.requirements.txt")), "the requirements file is gone"


def test_a_file_that_is_not_the_pin_is_refused_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    refusal = (
        "ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE. If you have "
        "updated the package versions, please update the hashes.\n"
        "    demo-tool==1.0 from https://files.example/d/demo_tool-1.0-py3-none-any.whl "
        "(from -r /tmp/r.txt (line 1)):\n"
        f"        Expected sha256 {'ab' * 32}\n"
        f"             Got        {'cd' * 32}\n")
    monkeypatch.setattr(commands, "run", _fake_pip([], fail=refusal))
    monkeypatch.setattr(commands, "stream", _fake_pip([], fail=refusal))
    with pytest.raises(ToolError) as caught:
        pinned_folder(PIN, tmp_path)
    assert caught.value.what == (f"pip install of the pinned demo (demo-tool==1.0): "
                                 f"demo_tool-1.0-py3-none-any.whl (demo-tool==1.0) has sha256 "
                                 f"{'cd' * 32}, the pin says {'ab' * 32}")
    assert "\n" not in caught.value.message and "pinned-tools.toml" in caught.value.fix
    assert [path.suffix for path in (tmp_path / "tools").iterdir()] == [".lock"]
