"""The sandbox full verify runs the wheel's code in (release/verify/sandbox.py): the
bubblewrap command it builds, the read-only view around unreadable mount points, and the
refusal where no sandbox can be made. That the sandbox holds is
tests/integration/test_verify_sandbox.py's."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import pytest

from release import _cmd, wheel
from release.errors import CommandError, EnvironmentCommandError, EnvironmentFailure
from release.verify.cli import main
from release.verify.sandbox import Listing, Sandbox, dead_mounts, make_sandbox, root_views

ISOLATION = ["--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL",
             "--new-session", "--die-with-parent"]


def test_the_command_shows_everything_read_only_and_only_the_scratch_writable(
        tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    sandbox = Sandbox(scratch, "/usr/bin/bwrap")
    command = sandbox.command(["python", "-c", "pass"], cwd=scratch / "work",
                              private=["/cache/wine/wine-8.0.tmp"])
    assert command[:8] == ["/usr/bin/bwrap", *ISOLATION]
    rest = command[8:]
    assert rest[:3] == ["--ro-bind", "/", "/"]
    writable = [rest[i + 1:i + 3] for i, word in enumerate(rest) if word == "--bind"]
    # the scratch, then wine's server folder replaced by an empty folder of the scratch
    (run,) = (scratch / "private").iterdir()
    assert writable == [[str(scratch), str(scratch)],
                        [str(run / "0"), "/cache/wine/wine-8.0.tmp"]]
    assert (run / "0").is_dir()
    again = sandbox.command(["true"], private=["/cache/wine/wine-8.0.tmp"])
    assert str(run / "0") not in again   # each run its own (its own wineserver)
    assert rest.index("--ro-bind") < rest.index("--bind")   # later mounts win
    environment = {rest[i + 1]: rest[i + 2] for i, word in enumerate(rest) if word == "--setenv"}
    assert environment["HOME"] == str(scratch / "home")
    assert environment["TMPDIR"] == str(scratch / "tmp")
    assert all(value.startswith(str(scratch)) for name, value in environment.items()
               if name.endswith(("_DIR", "_HOME")) and name != "CCACHE_DIR")
    assert environment["PYTHONDONTWRITEBYTECODE"] == "1"
    assert rest[rest.index("--chdir") + 1] == str(scratch / "work")
    assert rest[-4:] == ["--", "python", "-c", "pass"]
    # --trust-wheel: the program as it is, nothing added
    assert Sandbox(scratch).command(["python", "-c", "pass"]) == ["python", "-c", "pass"]


def test_a_seeded_cache_is_copied_once_into_the_scratch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seed = tmp_path / "zig-seed"
    (seed / "o").mkdir(parents=True)
    (seed / "o" / "crt2.o").write_bytes(b"object")
    commands: list[list[str]] = []
    monkeypatch.setattr(_cmd, "run", lambda command, **options: commands.append(command) or "")
    sandbox = Sandbox(tmp_path / "scratch", "/usr/bin/bwrap")
    seeds = [("ZIG_GLOBAL_CACHE_DIR", str(seed)), ("ZIG_LOCAL_CACHE_DIR", str(seed))]
    for _ in range(2):
        sandbox.run(["zig", "cc"], seeds=seeds)
    (copy,) = (tmp_path / "scratch" / "seeds").iterdir()
    assert (copy / "o" / "crt2.o").read_bytes() == b"object"
    for command in commands:
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
    assert ["--ro-bind-try", "/tmp/a", "/tmp/a"] == command[8:11]
    assert ["--symlink", "usr/bin", "/bin"] == command[14:17]


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

    monkeypatch.setattr(_cmd, "run", refused)
    with pytest.raises(CommandError) as caught:
        Sandbox(tmp_path / "scratch", "/usr/bin/bwrap").run(["cmake", "-S", "x"],
                                                            machine_faults=True)
    assert not isinstance(caught.value, EnvironmentFailure)
    assert "outside verify's scratch folder" in caught.value.what

    def full(command: list[object], **_: object) -> str:
        raise EnvironmentCommandError("build failed", command=["cmake"], returncode=1,
                                      output="No space left on device", fix="free space")

    monkeypatch.setattr(_cmd, "run", full)
    with pytest.raises(EnvironmentCommandError):   # a full disk stays the machine's
        Sandbox(tmp_path / "scratch2", "/usr/bin/bwrap").run(["cmake"], machine_faults=True)
