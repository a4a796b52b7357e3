"""The sandbox full verify runs the wheel's code in (release/verify/sandbox.py): the
bubblewrap command it builds, the read-only view around unreadable mount points, and the
refusal where no sandbox can be made. That the sandbox holds is
tests/integration/test_verify_sandbox.py's."""

from __future__ import annotations

import io
import logging
import os
import stat
from pathlib import Path

import pytest

from release.distribution import wheel
from release.errors import (
    CommandError,
    DeadlineReached,
    EnvironmentCommandError,
    EnvironmentFailure,
)
from release.host import Runner
from release.toolchain import commands
from release.verify import sandbox as sandbox_module
from release.verify.sandbox import (
    Listing,
    ResourceLimits,
    Sandbox,
    dead_mounts,
    hidden_entries,
    list_back,
    make_sandbox,
    read_back,
    root_views,
)
from tests.conftest import verify_main as main

ISOLATION = ["--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL",
             "--new-session", "--die-with-parent", "--clearenv"]


def test_the_command_shows_a_fresh_machine_and_only_the_run_s_folders_writable(
        tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    sandbox = Sandbox(scratch, "/usr/bin/bwrap", views=("/usr", "/etc", "/venv"),
                      masked=("/etc/shadow", "/etc/ssl/private/"))
    command = sandbox.command(["python", "-c", "pass"], cwd=scratch / "work",
                              private=["/cache/wine/wine-8.0.tmp"],
                              writable=[scratch / "work" / "build"], env={"PYTHONPATH": "/x"})
    assert command[:9] == ["/usr/bin/bwrap", *ISOLATION]
    rest = command[9:]
    assert rest[:2] == ["--tmpfs", "/tmp"]   # a private /tmp; no home, /run or /var at all
    assert [rest[i + 1] for i, word in enumerate(rest) if word == "--ro-bind-try"] == \
        ["/usr", "/etc", "/venv"]
    assert "/" not in [rest[i + 1] for i, word in enumerate(rest) if word.startswith("--ro-bind")]
    # what an unprivileged user could not read is hidden: a file by an empty one, a folder
    # by an empty folder
    assert ["--ro-bind", "/dev/null", "/etc/shadow"] == rest[rest.index("/etc/shadow") - 2:
                                                             rest.index("/etc/shadow") + 1]
    assert rest[rest.index("/etc/ssl/private/") - 1] == "--tmpfs"
    # the scratch read-only; its home and temporary folders, the run's own folder and wine's
    # server folder (replaced by an empty folder of the scratch) writable
    assert rest[rest.index("--ro-bind", rest.index("/etc/shadow")) + 1:][:2] == \
        [str(scratch), str(scratch)]
    writable = [rest[i + 1:i + 3] for i, word in enumerate(rest) if word == "--bind"]
    (run,) = (scratch / "private").iterdir()
    assert writable == [[str(scratch / "home")] * 2, [str(scratch / "tmp")] * 2,
                        [str(scratch / "work" / "build")] * 2,
                        [str(run / "0"), "/cache/wine/wine-8.0.tmp"]]
    again = sandbox.command(["true"], private=["/cache/wine/wine-8.0.tmp"])
    assert str(run / "0") not in again   # each run its own (its own wineserver)
    environment = {rest[i + 1]: rest[i + 2] for i, word in enumerate(rest) if word == "--setenv"}
    assert environment["HOME"] == str(scratch / "home")
    assert environment["TMPDIR"] == str(scratch / "tmp")
    assert environment["PYTHONPATH"] == "/x"
    assert environment["PATH"].endswith("/usr/sbin:/usr/bin:/sbin:/bin")
    assert all(value.startswith(str(scratch)) for name, value in environment.items()
               if name.endswith(("_DIR", "_HOME")))
    assert environment["PYTHONDONTWRITEBYTECODE"] == "1"
    assert rest[rest.index("--chdir") + 1] == str(scratch / "work")
    assert rest[-4:] == ["--", "python", "-c", "pass"]
    # --trust-wheel: the program as it is, nothing added
    assert Sandbox(scratch).command(["python", "-c", "pass"]) == ["python", "-c", "pass"]


def test_an_emulated_runner_s_root_and_toolchain_file_are_shown_read_only(
        tmp_path: Path) -> None:
    """A cross runner's programs read its emulator root and the toolchain file its CMake
    arguments name: both are shown read-only (those under a view once), nothing else."""
    runner = Runner("aarch64", prefix=("/usr/bin/qemu-aarch64", "-L", "/cache/root"),
                    cmake_arguments=("-DCMAKE_TOOLCHAIN_FILE=/src/aarch64.cmake",),
                    helpers=(("load", "/cache/helpers/load"),))
    assert runner.reads() == ("/usr/bin/qemu-aarch64", "/cache/root", "/src/aarch64.cmake",
                              "/cache/helpers/load")
    sandbox = Sandbox(tmp_path, "/usr/bin/bwrap", views=("/usr", "/cache"))
    command = sandbox.command(["cmake"], shown=runner.reads())
    shown = [command[i + 1] for i, part in enumerate(command) if part == "--ro-bind-try"]
    assert shown == ["/usr", "/cache", "/src/aarch64.cmake"]


def test_each_program_runs_under_resource_limits(tmp_path: Path) -> None:
    limits = ResourceLimits(data=1 << 30, processes=64, file_size=1 << 20, cpu_seconds=9)
    sandbox = Sandbox(tmp_path, "/usr/bin/bwrap", limits=limits, prlimit="/usr/bin/prlimit")
    command = sandbox.command(["python"])
    assert command[command.index("--") + 1:] == [
        "/usr/bin/prlimit", f"--data={1 << 30}", "--nproc=64", f"--fsize={1 << 20}",
        "--cpu=9", "--core=0", "--", "python"]


def test_etc_entries_an_unprivileged_user_cannot_read_are_hidden() -> None:
    tree = [("/etc", ["ssl", "ssh"], ["passwd", "shadow"]), ("/etc/ssl", ["private"], []),
            ("/etc/ssh", [], ["ssh_host_key", "ssh_config"])]
    modes = {"/etc/ssl": 0o40755, "/etc/ssh": 0o40755, "/etc/ssl/private": 0o40700,
             "/etc/passwd": 0o100644, "/etc/shadow": 0o100640,
             "/etc/ssh/ssh_host_key": 0o100600, "/etc/ssh/ssh_config": 0o100644}

    def walk(top: str) -> list[tuple[str, list[str], list[str]]]:
        return tree

    assert hidden_entries("/etc", walk=walk, mode_of=modes.__getitem__) == (
        "/etc/shadow", "/etc/ssh/ssh_host_key", "/etc/ssl/private/")


def test_the_deadline_is_shared_by_every_run_and_stops_the_next(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    seen: list[object] = []
    monkeypatch.setattr(commands, "run", lambda command, **options: seen.append(
        options["timeout"]) or "")
    sandbox = Sandbox(tmp_path, "/usr/bin/bwrap", limits=ResourceLimits(deadline=30),
                      ends=130.0, clock=lambda: now[0])
    sandbox.run(["true"], timeout=60)
    now[0] = 125.0
    sandbox.run(["true"], timeout=60)
    assert seen == [30.0, 5.0]   # the sooner of the run's own limit and the deadline
    now[0] = 131.0
    with pytest.raises(DeadlineReached, match="deadline of 30 s passed while true ran"):
        sandbox.run(["true"], timeout=60)

    def slow(command: list[str], **options: object) -> str:
        raise CommandError("it did not finish", command=command, returncode=-1, output="")

    monkeypatch.setattr(commands, "run", slow)
    now[0] = 125.0
    with pytest.raises(DeadlineReached):   # timed out by the deadline: the deadline's
        sandbox.run(["sleep", "9"], timeout=60, what="a load")
    with pytest.raises(CommandError) as own:   # timed out by its own limit: its own
        sandbox.run(["sleep", "9"], timeout=1)
    assert not isinstance(own.value, DeadlineReached)


def test_what_a_sandboxed_run_wrote_is_read_back_without_following_anything(
        tmp_path: Path) -> None:
    folder = tmp_path / "build"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "answer.txt").write_text("TRUE")
    (tmp_path / "outside.txt").write_text("secret")
    (folder / "link.txt").symlink_to(tmp_path / "outside.txt")
    (folder / "through").symlink_to(folder / "sub")
    os.mkfifo(folder / "pipe.txt")
    (folder / "zero.txt").symlink_to("/dev/zero")
    (folder / "big.txt").write_bytes(b"x" * 100)
    assert read_back(folder, "sub/answer.txt") == b"TRUE"
    for name in ("link.txt", "through/answer.txt", "pipe.txt", "zero.txt", "missing.txt",
                 "sub"):
        assert read_back(folder, name) is None, name
    with pytest.raises(CommandError, match="over 10 bytes"):
        read_back(folder, "big.txt", limit=10)
    listed = dict(list_back(folder))
    assert stat.S_ISLNK(listed["link.txt"]) and stat.S_ISFIFO(listed["pipe.txt"])


def test_a_writable_folder_replaced_by_a_link_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(commands, "run", lambda command, **options: "")
    scratch = tmp_path / "scratch"
    (scratch / "work").mkdir(parents=True)
    (scratch / "work" / "build").symlink_to(tmp_path)
    with pytest.raises(CommandError, match="replaced by something that is not a folder"):
        Sandbox(scratch, "/usr/bin/bwrap").run(["cmake"], writable=[scratch / "work" / "build"])


def test_a_seeded_cache_is_copied_once_into_the_scratch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seed = tmp_path / "zig-seed"
    (seed / "o").mkdir(parents=True)
    (seed / "o" / "crt2.o").write_bytes(b"object")
    ran: list[list[str]] = []
    monkeypatch.setattr(commands, "run", lambda command, **options: ran.append(command) or "")
    sandbox = Sandbox(tmp_path / "scratch", "/usr/bin/bwrap")
    seeds = [("ZIG_GLOBAL_CACHE_DIR", str(seed)), ("ZIG_LOCAL_CACHE_DIR", str(seed))]
    for _ in range(2):
        sandbox.run(["zig", "cc"], seeds=seeds)
    (copy,) = (tmp_path / "scratch" / "seeds").iterdir()
    assert (copy / "o" / "crt2.o").read_bytes() == b"object"
    for command in ran:
        settings = [command[i + 1:i + 3] for i, word in enumerate(command) if word == "--setenv"]
        # the copy, set after the sandbox's own zig cache variables: it wins
        assert settings[-2:] == [["ZIG_GLOBAL_CACHE_DIR", str(copy)],
                                 ["ZIG_LOCAL_CACHE_DIR", str(copy)]]
        assert command[-3:] == ["--", "zig", "cc"]
    assert Sandbox(tmp_path / "trusted").seeded(seeds) == {}   # unsandboxed: the real cache


def test_unreadable_mount_points_are_left_out_of_the_view() -> None:
    mountinfo = ("22 1 0:1 / / rw - ext4 /dev/vda rw\n"
                 "23 22 0:2 / /proc rw - proc proc rw\n"
                 "24 22 0:3 / /tmp/b/dead\\040fuse rw - fuse disorderfs rw\n"
                 "25 22 0:4 / /mnt/ok rw - tmpfs tmpfs rw\n")
    dead = dead_mounts(mountinfo, alive=lambda point: point != "/tmp/b/dead fuse")
    assert dead == ["/tmp/b/dead fuse"]
    tree = {"/": ["bin", "dev", "proc", "tmp", "usr"], "/tmp": ["a", "b", "f"],
            "/tmp/b": ["dead fuse", "y"]}
    kinds = {"/bin": "link", "/tmp/f": "file"}
    listing = Listing(entries=lambda path: tree[path],
                      kind=lambda path: kinds.get(path, "dir"), target=lambda path: "usr/bin")
    assert root_views(dead, listing) == (("/tmp/a", "/tmp/b/y", "/tmp/f", "/usr"),
                                         (("/bin", "usr/bin"),))
    assert root_views([], listing) == (("/",), ())
    command = Sandbox(Path("/s"), "bwrap", ("/tmp/a", "/usr"), (("/bin", "usr/bin"),)).command(
        ["true"])
    assert ["--ro-bind-try", "/tmp/a", "/tmp/a"] == command[11:14]
    assert ["--symlink", "usr/bin", "/bin"] == command[17:20]
    # the folders asked for, not the whole tree: a link recreated, a missing one bound if
    # it exists by the time the sandbox runs
    assert root_views([], listing, ("/usr", "/bin", "/tmp/b")) == (
        ("/usr", "/tmp/b"), (("/bin", "usr/bin"),))


def test_no_sandbox_is_a_refusal_unless_the_wheel_is_trusted(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(EnvironmentFailure) as missing:
        make_sandbox(tmp_path, find=lambda name: None)
    assert missing.value.exit_code == 8
    assert missing.value.what == ("cannot sandbox the wheel's code here (bwrap is not installed "
                                  "(apt-get install bubblewrap)); use --static, or "
                                  "--trust-wheel to run it unsandboxed")
    with pytest.raises(EnvironmentFailure, match=r"bwrap cannot make a sandbox: bwrap: "
                                                 r"No permissions to create new namespace"):
        make_sandbox(tmp_path, find=lambda name: "/usr/bin/bwrap",
                     probe=lambda *args: "bwrap: No permissions to create new namespace")
    assert not make_sandbox(tmp_path, "prefer", find=lambda name: None).sandboxed
    with caplog.at_level(logging.WARNING, logger="release"):
        trusted = make_sandbox(tmp_path, "off", find=lambda name: "/usr/bin/bwrap")
    assert not trusted.sandboxed
    assert "unsandboxed (--trust-wheel)" in caplog.text
    made = make_sandbox(tmp_path, find=lambda name: "/usr/bin/bwrap", probe=lambda *args: "")
    assert made.sandboxed and made.bwrap == "/usr/bin/bwrap"


def test_verify_refuses_in_one_line_before_reading_the_wheel(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist_info = "demo-1.0.dist-info"
    path = tmp_path / "demo-1.0-py3-none-any.whl"
    wheel.write_wheel(path, {
        "demo/__init__.py": (b"x = 1\n", 0o644),
        f"{dist_info}/METADATA": (b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n", 0o644),
        f"{dist_info}/WHEEL": (wheel.wheel_text(["py3-none-any"]).encode(), 0o644)},
        dist_info=dist_info, epoch=315532800)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))   # no bwrap
    out, err = io.StringIO(), io.StringIO()
    assert main([str(path)], stdout=out, stderr=err) == 8
    lines = err.getvalue().splitlines()
    assert len(lines) == 1 and "cannot sandbox the wheel's code here" in lines[0], lines
    assert "use --static, or --trust-wheel to run it unsandboxed" in lines[0]
    assert out.getvalue() == ""
    # the same wheel, trusted, runs unsandboxed and verifies
    err = io.StringIO()
    assert main([str(path), "--trust-wheel"], stdout=io.StringIO(), stderr=err) == 0, \
        err.getvalue()
    assert main([str(path), "--static"], stdout=io.StringIO(), stderr=io.StringIO()) == 0


def test_a_write_the_sandbox_refused_is_the_wheel_s_failure_not_the_machine_s(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside the scratch everything is read-only on purpose: a shipped CMake config's
    file(WRITE) there fails with "Read-only file system", which for a compile of our own
    would be the machine's fault (exit 8); inside the sandbox it counts against the wheel."""
    def refused(command: list[object], **_: object) -> str:
        raise EnvironmentCommandError(
            "configure the consumer failed with exit status 1: file failed to open for "
            "writing (Read-only file system)", command=[str(word) for word in command],
            returncode=1, output="CMake Error: file failed to open for writing (Read-only "
            "file system): /work/elsewhere", fix="a folder it writes to is read-only")

    monkeypatch.setattr(commands, "run", refused)
    with pytest.raises(CommandError) as caught:
        Sandbox(tmp_path / "scratch", "/usr/bin/bwrap").run(["cmake", "-S", "x"],
                                                            machine_faults=True)
    assert not isinstance(caught.value, EnvironmentFailure)
    assert "outside verify's scratch folder" in caught.value.what

    def full(command: list[object], **_: object) -> str:
        raise EnvironmentCommandError("build failed", command=["cmake"], returncode=1,
                                      output="No space left on device", fix="free space")

    monkeypatch.setattr(commands, "run", full)
    # what the wheel printed is the wheel's: no machine fault, no fix read from its text
    with pytest.raises(CommandError) as printed:
        Sandbox(tmp_path / "scratch2", "/usr/bin/bwrap").run(["cmake"], machine_faults=True,
                                                             fix="fix the package")
    assert not isinstance(printed.value, EnvironmentFailure)
    assert printed.value.fix == "fix the package"
    # a full disk verify sees for itself stays the machine's
    monkeypatch.setattr(sandbox_module, "host_shortage", lambda scratch: "no space here")
    with pytest.raises(EnvironmentCommandError, match="no space here"):
        Sandbox(tmp_path / "scratch3", "/usr/bin/bwrap").run(["cmake"], machine_faults=True)
