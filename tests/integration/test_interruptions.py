"""Kills, shared folders and bad output paths: no wheel anywhere under --out, no child left
running, no scratch folder left, and one ``error:`` line with the environment's exit code."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from release.building import buildfolder
from release.errors import EnvironmentFailure
from tests.conftest import ROOT, assert_clean_failure, run_release

pytestmark = pytest.mark.integration


def _start(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "release", "build", "--platform", "linux",
                             *args], cwd=ROOT, env={**os.environ, **(env or {})},
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)


def _wait_for(process: subprocess.Popen[str], words: str, limit: float = 300) -> str:
    assert process.stderr is not None
    seen, deadline = [], time.monotonic() + limit
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        seen.append(line)
        if words in line:
            return "".join(seen)
    raise AssertionError(f"never saw {words!r}:\n{''.join(seen)}")


def _descendants_of(marker: str) -> list[str]:
    """Processes whose command line names ``marker`` (our build folder), read from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in command:
            found.append(f"{entry.name} {command}")
    return found


@pytest.mark.parametrize(("stage", "cold"), [("[1/8] configure ...", True),
                                             ("[2/8] build ...", True),
                                             ("[7/8] repair ...", False),
                                             ("[8/8] verify ...", False)])
def test_sigterm_leaves_nothing_behind(tmp_path: Path, stage: str, cold: bool) -> None:
    out = tmp_path / "dist"
    build_dir = tmp_path / "build" if cold else ROOT / "build" / "linux-x86_64-cpu"
    process = _start("--out", str(out), "--build-dir", str(build_dir),
                     env={"RELEASE_CCACHE": "0"})
    _wait_for(process, stage)
    time.sleep(0.2)
    process.send_signal(signal.SIGTERM)
    _, rest = process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGTERM, rest
    assert "error: interrupted (SIGTERM); no wheel was written" in rest
    assert "Traceback" not in rest
    assert not list(out.rglob("*.whl")) and not list(out.rglob("*.partial"))
    assert not list(build_dir.glob(buildfolder.SCRATCH_PREFIX + "*"))
    assert _descendants_of(str(build_dir)) == []


def test_a_second_build_on_the_same_folder_fails_at_once(tmp_path: Path) -> None:
    build_dir, out = tmp_path / "build", tmp_path / "dist"
    with buildfolder.locked(build_dir):
        completed = run_release("build", "--platform", "linux", "--out", str(out),
                                "--build-dir", str(build_dir))
    assert_clean_failure(completed, out, code=EnvironmentFailure.exit_code,
                         words="another build is using")


@pytest.mark.parametrize("layout", ["out is a file", "out below a file", "out is a dangling link",
                                    "out has too long a name"])
def test_an_unusable_output_folder_is_one_line(tmp_path: Path, layout: str) -> None:
    blocker = tmp_path / "blocker"
    if layout == "out has too long a name":
        out = tmp_path / ("x" * 300)
    elif layout == "out is a dangling link":
        blocker.symlink_to(tmp_path / "missing" / "deeper")
        out = blocker
    else:
        blocker.write_text("a file")
        out = blocker if layout == "out is a file" else blocker / "dist"
    completed = run_release("build", "--platform", "linux", "--out", str(out),
                            "--build-dir", str(tmp_path / "build"))
    assert completed.returncode == EnvironmentFailure.exit_code, completed.stderr
    lines = [line for line in completed.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "cannot create the output folder" in lines[0], completed.stderr
    assert "Traceback" not in completed.stderr


def test_a_folder_with_the_wheel_name_is_one_line(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    first = run_release("build", "--platform", "linux", "--out", str(out), "--verify", "none")
    assert first.returncode == 0, first.stderr
    wheel = next(out.glob("*.whl"))
    wheel.unlink()
    wheel.mkdir()
    completed = run_release("build", "--platform", "linux", "--out", str(out), "--verify", "none")
    assert completed.returncode == EnvironmentFailure.exit_code, completed.stderr
    assert "is a folder" in completed.stderr and "Traceback" not in completed.stderr


# Runs a command with a 64 KiB tmpfs mounted on a folder, in a user and mount namespace of its
# own: no root needed (an unprivileged user may mount a tmpfs there), nothing to unmount (the
# mount ends with the namespace), and the folder's contents listed, before it goes, into a
# file outside it.
_ON_SMALL_DISK = """
options=$1 folder=$2 listing=$3
shift 3
mount -t tmpfs -o "$options" tmpfs "$folder" || exit 97
"$@"
status=$?
find "$folder" -mindepth 1 -printf '%P\\n' > "$listing"
exit $status
"""
_NAMESPACE = ["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private"]


@dataclass
class SmallDisk:
    """A 64 KiB disk at ``folder`` for one command (``run``): full once 64 KiB are written, or
    read-only; ``left`` is what the command left on it."""

    folder: Path
    listing: Path
    left: list[str] = field(default_factory=list)

    def run(self, *args: str, options: tuple[str, ...] = (), env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
        command = [*_NAMESPACE, "sh", "-c", _ON_SMALL_DISK, "sh",
                   ",".join(["size=64k", *options]), str(self.folder), str(self.listing),
                   sys.executable, "-m", "release", *args]
        completed = subprocess.run(command, cwd=ROOT, env={**os.environ, **(env or {})},
                                   capture_output=True, text=True, check=False)
        assert completed.returncode != 97, f"cannot mount the tmpfs: {completed.stderr}"
        self.left = self.listing.read_text().splitlines()
        return completed


@pytest.fixture()
def small_disk(tmp_path: Path) -> SmallDisk:
    """Needs unshare(1) and user namespaces (or root), not root itself: the user_namespaces
    tool tier (tests/tools.toml), reported as not run on a machine that allows neither."""
    folder = tmp_path / "mount"
    folder.mkdir()
    probe = subprocess.run([*_NAMESPACE, "mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs",
                            str(folder)], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        pytest.fail("no user and mount namespace for a small tmpfs here (unshare --user "
                    f"--mount): {probe.stderr.strip()}")
    return SmallDisk(folder, tmp_path / "left-on-the-disk.txt")


def test_a_full_disk_while_publishing_is_one_line(small_disk: SmallDisk) -> None:
    out = small_disk.folder
    completed = small_disk.run("build", "--platform", "linux", "--out", str(out),
                               "--verify", "none")
    assert completed.returncode == EnvironmentFailure.exit_code, completed.stderr[-2000:]
    lines = [line for line in completed.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "No space left on device" in lines[0], completed.stderr[-2000:]
    assert "free disk space" in lines[0] and "Traceback" not in completed.stderr
    assert small_disk.left == []


def test_a_read_only_output_folder_is_one_line(small_disk: SmallDisk) -> None:
    out = small_disk.folder / "dist"
    completed = small_disk.run("build", "--platform", "linux", "--out", str(out),
                               "--verify", "none", options=("ro",))
    assert completed.returncode == EnvironmentFailure.exit_code, completed.stderr[-2000:]
    assert "Read-only file system" in completed.stderr and "Traceback" not in completed.stderr
    assert small_disk.left == []


def test_auditwheel_on_a_full_disk_is_told_as_a_full_disk(small_disk: SmallDisk,
                                                          tmp_path: Path) -> None:
    built = run_release("build", "--platform", "linux", "--out", str(tmp_path / "raw"),
                        "--until", "pack")
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "raw").glob("*.whl")
    out = tmp_path / "dist"
    completed = small_disk.run("repair", str(wheel), "-w", str(out),
                               env={"TMPDIR": str(small_disk.folder)})
    assert completed.returncode != 0
    lines = [line for line in completed.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "disk is full" in lines[0], completed.stderr[-2000:]
    assert "glibc" not in lines[0] and "Traceback" not in completed.stderr
    assert not out.exists() or not list(out.glob("*.whl"))


_SIGNAL_AFTER_PUBLISH = """
import os, signal, sys
from release.building import buildfolder
real = buildfolder._fsync_folder
def then_signal(folder):
    real(folder)
    os.kill(os.getpid(), signal.SIGTERM)
buildfolder._fsync_folder = then_signal
from release.__main__ import main
sys.exit(main(sys.argv[1:]))
"""


def test_sigterm_right_after_publish_says_the_wheel_is_there(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    completed = subprocess.run([sys.executable, "-c", _SIGNAL_AFTER_PUBLISH, "build",
                                "--platform", "linux", "--out", str(out), "--until", "pack",
                                "--verify", "none"], cwd=ROOT, capture_output=True, text=True)
    assert completed.returncode == 128 + signal.SIGTERM, completed.stderr[-2000:]
    (wheel,) = out.glob("*.whl")
    assert completed.stderr.splitlines()[-1] == (
        f"error: interrupted (SIGTERM); the wheel {wheel} was published complete before the "
        "signal")
    with zipfile.ZipFile(wheel) as archive:
        assert archive.testzip() is None
    assert sorted(p.name for p in out.iterdir()) == [wheel.name]


def test_the_next_build_stops_what_a_killed_one_left_running(tmp_path: Path) -> None:
    build_dir, out = tmp_path / "build", tmp_path / "dist"
    process = _start("--out", str(out), "--build-dir", str(build_dir), "-j", "1",
                     env={"RELEASE_CCACHE": "0"})
    _wait_for(process, "[2/8] build ...")
    time.sleep(1)
    process.kill()   # SIGKILL: nothing of ours runs to clean up
    process.wait()
    assert list(build_dir.glob(buildfolder.SCRATCH_PREFIX + "*"))
    # CMake and Ninja die of a broken pipe once their reader is gone, but a compiler whose
    # output goes elsewhere runs on: one stands in for it here, started as ninja starts its
    # compilers (the build's environment, a process group of its own)
    compiler = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)",
                                 str(build_dir)], start_new_session=True,
                                env={**os.environ, "EDGERT_RELEASE_BUILD_FOLDER":
                                     str(build_dir.resolve())})
    try:
        again = run_release("build", "--platform", "linux", "--out", str(out), "--build-dir",
                            str(build_dir), "--until", "configure")
        assert again.returncode == 0, again.stderr[-2000:]
        assert compiler.wait(timeout=60) == -signal.SIGKILL
    finally:
        compiler.kill()
        compiler.wait()
    stopped = re.search(r"stopped (\d+) programs left running", again.stderr)
    assert stopped is not None and int(stopped[1]) >= 1, again.stderr[-2000:]
    assert "left by an interrupted build" in again.stderr
    assert _descendants_of(str(build_dir)) == []
    assert not list(build_dir.glob(buildfolder.SCRATCH_PREFIX + "*"))


def test_a_full_build_disk_is_the_environment_whatever_cmake_says(small_disk: SmallDisk,
                                                                  tmp_path: Path) -> None:
    out = tmp_path / "dist"
    completed = small_disk.run("build", "--platform", "linux", "--out", str(out),
                               "--build-dir", str(small_disk.folder / "build"), "-j", "1")
    assert_clean_failure(completed, out, code=EnvironmentFailure.exit_code,
                         words="is full")
