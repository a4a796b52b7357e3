"""What a download through pip shows (release/toolchain/tools.py): off a terminal, pip's line naming
each file and its size before the file comes, and one summary line at the end; on a
terminal, pip's own progress bars. A stand-in for ``python -m pip`` prints what pip prints,
so no index is used."""

from __future__ import annotations

import logging
import stat
import sys
from pathlib import Path

import pytest

from release.errors import EnvironmentFailure, ToolError
from release.toolchain import tools

pytestmark = pytest.mark.unit

PIP_OUTPUT = """\
Collecting nvidia-cuda-nvcc-cu12==12.9.86
  Downloading nvidia_cuda_nvcc_cu12-12.9.86-py3-none-manylinux_2_27_x86_64.whl (40.5 MB)
Collecting nvidia-cuda-runtime-cu12==12.9.79
  Using cached nvidia_cuda_runtime_cu12-12.9.79-py3-none-manylinux_2_27_x86_64.whl (3.5 MB)
Processing /wheels/ninja-1.13.2-py3-none-manylinux2014_x86_64.whl
Installing collected packages: nvidia-cuda-runtime-cu12, nvidia-cuda-nvcc-cu12, ninja
Successfully installed ninja-1.13.2 nvidia-cuda-nvcc-cu12-12.9.86
"""


def _fake_python(folder: Path, body: str) -> Path:
    """An executable standing in for ``sys.executable -m pip install ...``: it writes the
    arguments it got to args.txt and runs ``body`` (shell)."""
    script = folder / "python"
    script.write_text(f'#!/bin/sh\necho "$@" > "{folder}/args.txt"\n{body}\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_pip_output_is_counted_as_files_and_bytes() -> None:
    assert tools.downloaded(PIP_OUTPUT) == (3, 44_000_000)
    assert tools.downloaded("Collecting x\nSuccessfully installed x\n") == (0, 0)
    assert tools.downloaded("  Downloading a.whl (812 kB)\n  Downloading b.whl (1.2 GB)\n") \
        == (2, 1_200_812_000)


def test_off_a_terminal_each_file_is_named_with_its_size_then_one_summary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "out.txt").write_text(PIP_OUTPUT)
    monkeypatch.setattr(sys, "executable", str(_fake_python(tmp_path, f'cat "{tmp_path}/out.txt"')))
    with caplog.at_level(logging.INFO, logger="release"):
        tools._pip_install(["x"], what="pip install of the pinned cuda-cu12-toolchain",
                           fix="check the connection", scratch=tmp_path / "scratch")
    shown = capfd.readouterr().err.splitlines()
    assert shown == [line for line in PIP_OUTPUT.splitlines()
                     if "Downloading" in line or "cached" in line or "Processing" in line
                     or line.startswith("Installing collected")]
    summary = [r.getMessage() for r in caplog.records if "file" in r.getMessage()]
    assert len(summary) == 1
    assert summary[0].startswith(
        "pip install of the pinned cuda-cu12-toolchain: 3 files, 44 MB, in ")
    arguments = (tmp_path / "args.txt").read_text().split()
    assert arguments[arguments.index("--progress-bar") + 1] == "off"
    assert not (tmp_path / "scratch").exists()     # pip's scratch (and its log) is removed


def test_on_a_terminal_pip_draws_its_progress_and_its_log_explains_a_failure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pip gets the terminal (its bars need one); when it fails, its --log file gives the
    error line and what the hash check refused."""
    log_lines = ("2026-12-02T03:00:00,100 Collecting cmake==4.4.5\n"
                 "2026-12-02T03:00:01,200 ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM "
                 "THE REQUIREMENTS FILE.\n"
                 "2026-12-02T03:00:01,300     cmake==4.4.5 from https://files/cmake-4.4.5.whl "
                 "(from -r r.txt (line 1)):\n"
                 "2026-12-02T03:00:01,300         Expected sha256 " + "a" * 64 + "\n"
                 "2026-12-02T03:00:01,300              Got        " + "b" * 64 + "\n")
    body = ('log=$(sed -n "s/.*--log \\([^ ]*\\).*/\\1/p" "' + str(tmp_path) + '/args.txt")\n'
            f"printf '%s' '{log_lines}' > \"$log\"\nexit 1")
    monkeypatch.setattr(sys, "executable", str(_fake_python(tmp_path, body)))
    monkeypatch.setattr(tools, "_progress_shown", lambda: True)
    with pytest.raises(ToolError) as raised:
        tools._pip_install(["x"], what="pip install of the pinned cmake-new", fix="retry",
                           scratch=tmp_path / "scratch")
    assert raised.value.what == ("pip install of the pinned cmake-new: cmake-4.4.5.whl "
                                 f"(cmake==4.4.5) has sha256 {'b' * 64}, the pin says {'a' * 64}")
    arguments = (tmp_path / "args.txt").read_text().split()
    assert arguments[arguments.index("--progress-bar") + 1] == "on"


def test_on_a_terminal_a_failure_names_pips_error_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    body = ('log=$(sed -n "s/.*--log \\([^ ]*\\).*/\\1/p" "' + str(tmp_path) + '/args.txt")\n'
            "printf '2026-12-02T03:00:00,100 ERROR: Could not find a version that satisfies "
            "the requirement zig==9\\n' > \"$log\"\nexit 1")
    monkeypatch.setattr(sys, "executable", str(_fake_python(tmp_path, body)))
    monkeypatch.setattr(tools, "_progress_shown", lambda: True)
    with pytest.raises(EnvironmentFailure) as raised:
        tools._pip_install(["x"], what="pip install zig==9", fix="check the index",
                           scratch=tmp_path / "scratch")
    assert raised.value.what == ("pip install zig==9 failed with exit status 1: ERROR: Could "
                                 "not find a version that satisfies the requirement zig==9")


@pytest.mark.parametrize(("platform", "words"), [
    ("windows", "zig for x86_64-windows-gnu, which first builds its C and C++ runtime"),
    ("linux", "seconds with the host's compilers"),
])
def test_a_first_configure_says_what_it_waits_for_and_a_second_does_not(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        platform: str, words: str) -> None:
    """CMake prints nothing while it checks the compilers (minutes for a first Windows cross
    build): the line before says so, once per build folder."""
    from types import SimpleNamespace

    from release.building import pipeline
    from release.platform import get_platform

    ran: list[list[str]] = []

    def fake_cmake(command: list[str], **_: object) -> str:
        ran.append([str(part) for part in command])
        (tmp_path / "build" / "CMakeCache.txt").write_text(   # what _tree_intact reads
            f"CMAKE_HOME_DIRECTORY:INTERNAL={(tmp_path / 'native').resolve()}\n")
        (tmp_path / "build" / "build.ninja").write_text("build all: phony\ndefault all\n")
        return ""

    monkeypatch.setattr(pipeline.commands, "run", fake_cmake)

    monkeypatch.setattr(pipeline.commands, "stream", fake_cmake)
    monkeypatch.setattr(pipeline.tools, "cmake", lambda cache=None: Path("cmake"))
    monkeypatch.setattr(pipeline, "_configure_arguments", lambda plan, part, arguments: [])
    plan = SimpleNamespace(release=SimpleNamespace(
        manifest=SimpleNamespace(native_source=str(tmp_path / "native")),
        platform=get_platform(platform)), cache=tmp_path / "cache")
    part = SimpleNamespace(build_dir=tmp_path / "build")
    (tmp_path / "native").mkdir()
    with caplog.at_level(logging.INFO, logger="release"):
        pipeline._configure_part(plan, part, [])  # type: ignore[arg-type]
        first = [r.getMessage() for r in caplog.records if "first configure" in r.getMessage()]
        caplog.clear()
        (tmp_path / "build" / pipeline.STAMP_FILE).unlink()   # configure again, same folder
        pipeline._configure_part(plan, part, [])  # type: ignore[arg-type]
    assert len(ran) == 2
    assert len(first) == 2 and words in first[0]   # before, and after with its time
    assert first[1].startswith("first configure of ") and " done in " in first[1]
    assert first[0].startswith(f"first configure of {tmp_path / 'build'}: CMake detects the "
                               "compilers and the platform before it prints anything")
    assert not [r for r in caplog.records if "first configure" in r.getMessage()]
