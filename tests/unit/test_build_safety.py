"""Builds that cannot race, tell exactly what an interruption left, clean up after a killed
run, and refuse what they could not check; and crafted inputs that must be one line, never a
traceback (issue 25)."""

from __future__ import annotations

import io
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from release.__main__ import TEMPORARY_PREFIX, Terminated, main, process_temporary_folder
from release.building import buildfolder, pipeline
from release.distribution import wheel
from release.errors import (
    CommandError,
    ConfigurationError,
    EnvironmentCommandError,
    EnvironmentFailure,
    ToolError,
    WheelError,
)
from release.findings import CheckStatus, Finding, Severity
from release.host import Host
from release.toolchain import commands, tools
from release.verify.report import Report
from tests.conftest import ROOT

WHEEL_NAME = "edgert-0.1.0-cp39-abi3-manylinux_2_35_x86_64.whl"


@pytest.fixture(autouse=True)
def _fresh_publications(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(buildfolder, "_published", [])


def zip_of(path: Path, payload: bytes) -> Path:
    """A wheel-like zip holding ``payload`` (the publishing tests' input)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("edgert/data.bin", payload)
    return path


def is_complete_zip(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path) as archive:
            return archive.testzip() is None
    except zipfile.BadZipFile:
        return False


# --- publishing ------------------------------------------------------------------------


def two_wheels_and_out(folder: Path) -> tuple[list[Path], Path]:
    """Two different wheels of one name (200 kB of random bytes each, in folders 0 and 1)
    and an empty output folder: what two builds racing to publish hold."""
    sources = []
    for index in range(2):
        (folder / str(index)).mkdir()
        sources.append(zip_of(folder / str(index) / WHEEL_NAME, os.urandom(200_000)))
    out = folder / "dist"
    out.mkdir()
    return sources, out


def _widened(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pause between writing the temporary file and renaming it: the window in which a
    second build sharing the temporary name truncated the first one's file."""
    monkeypatch.setattr(buildfolder, "_pause_before_rename", lambda: time.sleep(0.002))


def test_two_threads_publishing_one_wheel_both_publish_complete_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _widened(monkeypatch)
    sources, out = two_wheels_and_out(tmp_path)
    for _ in range(100):
        results: list[Path] = []
        threads = [threading.Thread(target=lambda s=source, r=results: r.append(
            buildfolder.publish(s, out))) for source in sources]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(results) == 2
        final = out / WHEEL_NAME
        assert is_complete_zip(final)
        assert final.read_bytes() in (sources[0].read_bytes(), sources[1].read_bytes())
        assert sorted(p.name for p in out.iterdir()) == [WHEEL_NAME]


# the same race between two processes: tests/integration/test_publish_race.py


def test_temporary_names_are_per_process_and_hidden(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    source = zip_of(tmp_path / WHEEL_NAME, b"x")
    out = tmp_path / "dist"
    out.mkdir()
    seen = []
    monkeypatch.setattr(buildfolder, "_pause_before_rename",
                        lambda: seen.extend(p.name for p in out.iterdir()))
    buildfolder.publish(source, out)
    (name,) = seen
    assert name.startswith(f".{WHEEL_NAME}.") and f"-{os.getpid()}." in name
    assert name.endswith(buildfolder.PARTIAL_SUFFIX)


def test_a_failed_copy_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = zip_of(tmp_path / WHEEL_NAME, b"x")
    out = tmp_path / "dist"
    out.mkdir()

    def full(*args: object) -> None:
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(buildfolder.shutil, "copyfileobj", full)
    with pytest.raises(EnvironmentFailure) as raised:
        buildfolder.publish(source, out)
    assert "free disk space" in raised.value.message
    assert list(out.iterdir()) == [] and buildfolder.published() == ()


def test_a_signal_right_after_the_rename_counts_as_published(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = zip_of(tmp_path / WHEEL_NAME, b"x")
    out = tmp_path / "dist"
    out.mkdir()
    real = os.replace

    def replace_then_signal(a: object, b: object) -> None:
        real(a, b)  # type: ignore[arg-type]
        raise Terminated(signal.SIGTERM)
    monkeypatch.setattr(buildfolder.os, "replace", replace_then_signal)
    with pytest.raises(Terminated):
        buildfolder.publish(source, out)
    assert buildfolder.published() == (out / WHEEL_NAME,)
    assert sorted(p.name for p in out.iterdir()) == [WHEEL_NAME]


def test_a_signal_before_the_rename_leaves_nothing(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    source = zip_of(tmp_path / WHEEL_NAME, b"x")
    out = tmp_path / "dist"
    out.mkdir()

    def interrupted() -> None:
        raise Terminated(signal.SIGTERM)
    monkeypatch.setattr(buildfolder, "_pause_before_rename", interrupted)
    with pytest.raises(Terminated):
        buildfolder.publish(source, out)
    assert buildfolder.published() == () and list(out.iterdir()) == []


@pytest.mark.parametrize("after_publish", [True, False])
def test_an_interrupted_build_says_what_is_on_disk(tmp_path: Path, after_publish: bool,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    source = zip_of(tmp_path / WHEEL_NAME, b"x")
    out = tmp_path / "dist"
    out.mkdir()

    def build(manifest: object, options: object, *, host: Host) -> None:
        if after_publish:
            buildfolder.publish(source, out)
        raise Terminated(signal.SIGTERM)
    monkeypatch.setattr(pipeline, "run", build)
    err = io.StringIO()
    code = main(["build", "--platform", "linux", "--project", str(ROOT), "--out", str(out)],
                stdout=io.StringIO(), stderr=err)
    assert code == 128 + signal.SIGTERM
    if after_publish:
        assert err.getvalue() == (f"error: interrupted (SIGTERM); the wheel {out / WHEEL_NAME} "
                                  "was published complete before the signal\n")
        assert is_complete_zip(out / WHEEL_NAME)
    else:
        assert err.getvalue() == "error: interrupted (SIGTERM); no wheel was written\n"
        assert list(out.iterdir()) == []


# --- --out and leftovers ---------------------------------------------------------------


def test_an_unwritable_out_is_refused_before_the_build(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    def read_only(*args: object, **kwargs: object) -> None:
        raise OSError(30, "Read-only file system")
    monkeypatch.setattr(buildfolder.tempfile, "mkstemp", read_only)
    with pytest.raises(EnvironmentFailure) as raised:
        buildfolder.check_writable(tmp_path / "dist")
    assert raised.value.message == (f"cannot write to the output folder {tmp_path / 'dist'}: "
                                    "Read-only file system (fix: choose a writable folder)")


def test_writability_is_checked_before_the_build_folder_is_touched(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from release import manifest
    (tmp_path / "dist").write_text("a file")
    plan = SimpleNamespace(release=SimpleNamespace(target=SimpleNamespace(name="t"),
                                                   variant=SimpleNamespace(name="v")),
                           build_dir=tmp_path / "build")
    monkeypatch.setattr(pipeline, "make_plan", lambda *args, **kwargs: plan)
    with pytest.raises(EnvironmentFailure) as raised:
        pipeline.run(manifest.load(ROOT), pipeline.BuildOptions(platform="linux",
                                                                 out_dir=tmp_path / "dist"),
                     host=Host("linux", "x86_64"))
    assert "cannot create the output folder" in raised.value.message
    assert not (tmp_path / "build").exists()


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", ""])
    child.wait()
    return child.pid


def test_stale_temporary_files_in_out_are_removed(tmp_path: Path) -> None:
    host = buildfolder._host()
    stale = tmp_path / f".{WHEEL_NAME}.{host}-{_dead_pid()}.k2j3.partial"
    legacy = tmp_path / f".{WHEEL_NAME}.partial"
    live = tmp_path / f".{WHEEL_NAME}.{host}-{os.getpid()}.k2j3.partial"
    elsewhere = tmp_path / f".{WHEEL_NAME}.otherhost-{_dead_pid()}.k2j3.partial"
    for path in (stale, legacy, live, elsewhere):
        path.write_bytes(b"PK")
    (tmp_path / WHEEL_NAME).write_bytes(b"kept")
    assert sorted(buildfolder.remove_stale_partials(tmp_path)) == sorted([stale, legacy])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, elsewhere.name,
                                                                  WHEEL_NAME])


def test_a_folder_in_place_of_the_lock_heals(tmp_path: Path,
                                             caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / buildfolder.LOCK_FILE).mkdir(parents=True)
    with caplog.at_level(logging.WARNING, logger="release"), buildfolder.locked(tmp_path):
        assert (tmp_path / buildfolder.LOCK_FILE).is_file()
    assert "in place of the lock file" in caplog.text


def test_a_full_folder_in_place_of_the_lock_is_one_line(tmp_path: Path) -> None:
    (tmp_path / buildfolder.LOCK_FILE / "inner").mkdir(parents=True)
    with pytest.raises(EnvironmentFailure) as raised, buildfolder.locked(tmp_path):
        pass
    assert "is a folder, not the lock file" in raised.value.message
    assert "(fix: remove" in raised.value.message


def test_a_folder_in_place_of_the_configure_stamp_heals(tmp_path: Path) -> None:
    stamp = tmp_path / pipeline.STAMP_FILE
    (stamp / "x").mkdir(parents=True)
    assert pipeline._read_stamp(stamp) is None
    assert not stamp.exists()


def test_programs_a_killed_build_left_running_are_stopped(tmp_path: Path) -> None:
    folder = str(tmp_path / "build")
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],
                             env={**os.environ, commands.OWNER_VARIABLE: folder})
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],
                             env={**os.environ, commands.OWNER_VARIABLE: folder + "-other"})
    try:
        (tmp_path / "build").mkdir()
        with buildfolder.locked(tmp_path / "build"):
            pass
        assert child.wait(timeout=30) == -signal.SIGKILL
        assert other.poll() is None
    finally:
        for process in (child, other):
            process.kill()
            process.wait()


def test_programs_run_inside_a_build_carry_its_folder(tmp_path: Path) -> None:
    with buildfolder.locked(tmp_path), buildfolder.scratch(tmp_path) as scratch:
        printed = commands.run([sys.executable, "-c", "import os, tempfile; print(os.environ["
                                f"'{commands.OWNER_VARIABLE}']); print(tempfile.gettempdir())"])
    owner, temporary = printed.splitlines()
    assert owner == str(tmp_path)
    assert Path(temporary) == scratch / "tmp"
    assert not scratch.exists()


def test_temporary_folders_of_dead_runs_are_removed(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = tmp_path / f"{TEMPORARY_PREFIX}{_dead_pid()}.abc"
    (dead / "auditwheel-unpacked").mkdir(parents=True)
    live = tmp_path / f"{TEMPORARY_PREFIX}{os.getppid()}.abc"
    live.mkdir()
    with process_temporary_folder():
        inside = Path(os.environ["TMPDIR"])
        assert inside.parent == tmp_path and inside.name.startswith(
            f"{TEMPORARY_PREFIX}{os.getpid()}.")
        assert Path(tempfile.gettempdir()) == inside
        assert not dead.exists() and live.exists()
    assert not inside.exists() and tempfile.gettempdir() == str(tmp_path)


# --- checks that could not run ----------------------------------------------------------


def _report(status: CheckStatus) -> Report:
    findings = [Finding(check="sdk-routes", severity=Severity.INFO, file="",
                        what="not run (environment): no package index to provision CMake "
                             "3.24 from", status=status)]
    return Report(wheel=WHEEL_NAME, static=False, findings=findings,
                  checks={"linkage": CheckStatus.RAN, "sdk-routes": status})


def test_a_check_that_did_not_run_stops_the_publish(caplog: pytest.LogCaptureFixture) -> None:
    plan = SimpleNamespace(options=SimpleNamespace(allow_unchecked=False))
    with caplog.at_level(logging.WARNING, logger="release"), \
            pytest.raises(EnvironmentFailure) as raised:
        pipeline._check_unchecked(plan, WHEEL_NAME, _report(CheckStatus.ENVIRONMENT))  # type: ignore[arg-type]
    assert raised.value.exit_code == 8
    assert f"{WHEEL_NAME} was not published: verify could not run sdk-routes" in \
        raised.value.message and "--allow-unchecked" in raised.value.message
    assert "could not run the sdk-routes check here: not run (environment): no package " \
        "index" in caplog.text


def test_allow_unchecked_publishes_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    plan = SimpleNamespace(options=SimpleNamespace(allow_unchecked=True))
    with caplog.at_level(logging.WARNING, logger="release"):
        pipeline._check_unchecked(plan, WHEEL_NAME, _report(CheckStatus.ENVIRONMENT))  # type: ignore[arg-type]
    assert f"publishing {WHEEL_NAME} although verify could not run: sdk-routes" in caplog.text


def test_a_check_left_out_on_purpose_does_not_stop_the_publish() -> None:
    plan = SimpleNamespace(options=SimpleNamespace(allow_unchecked=False))
    pipeline._check_unchecked(plan, WHEEL_NAME, _report(CheckStatus.NOT_RUN))  # type: ignore[arg-type]


def test_the_option_reaches_the_build_options() -> None:
    from release import build_options as options
    resolved = options.resolve(platform="linux", given={}, manifest_defaults={}, environ={},
                               allow_unchecked=True)
    assert resolved.allow_unchecked and not options.BuildOptions(platform="linux").allow_unchecked


def test_a_cmake_probe_that_times_out_is_the_environment() -> None:
    with pytest.raises(EnvironmentCommandError) as raised:
        commands.run([sys.executable, "-c", "import time; time.sleep(30)"], what="configure of the "
                 "CMake probe", timeout=0.2, machine_faults=True)
    assert isinstance(raised.value, EnvironmentFailure) and raised.value.exit_code == 8
    with pytest.raises(CommandError) as plain:
        commands.run([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.2)
    assert not isinstance(plain.value, EnvironmentFailure)


def test_an_environment_failure_in_a_check_is_not_counted_against_the_wheel() -> None:
    from release.verify.checks import run_checks

    def slow(wheel: object, context: object) -> list[Finding]:
        commands.run([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.2,
                 what="configure of the CMake probe", machine_faults=True)
        return []
    module = SimpleNamespace(NAME="sdk-routes", RUNS_PROGRAMS=True, check=slow)
    findings, status = run_checks(SimpleNamespace(findings=[]),  # type: ignore[arg-type]
                                  SimpleNamespace(static=False),  # type: ignore[arg-type]
                                  [module])  # type: ignore[list-item]
    assert status == {"sdk-routes": CheckStatus.ENVIRONMENT}
    assert [f.severity for f in findings] == [Severity.INFO]


def test_a_full_disk_during_a_compile_is_the_environment() -> None:
    with pytest.raises(EnvironmentCommandError) as raised:
        commands.run([sys.executable, "-c", "import sys; print('x.o: No space left on device');"
                      "sys.exit(1)"], what="native build", machine_faults=True)
    assert raised.value.exit_code == 8 and "disk is full" in raised.value.fix


def test_a_full_disk_in_the_cache_names_the_disk(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    def full(*args: object, **kwargs: object) -> str:
        raise CommandError("pip install x failed with exit status 1: ERROR: Could not install "
                           "packages due to an OSError", command=["pip"], returncode=1,
                           output="OSError: [Errno 28] No space left on device", fix="")
    monkeypatch.setattr(tools.commands, "run", full)
    monkeypatch.setattr(tools.commands, "stream", full)
    with pytest.raises(EnvironmentFailure) as raised:
        tools._pip_install(["x"], what="pip install x", fix="check the connection to the "
                           "package index", scratch=tmp_path / "s")
    assert "disk is full" in raised.value.fix and "connection" not in raised.value.fix


# --- crafted inputs: one line, never a traceback -----------------------------------------


def _wheel_with(path: Path, files: dict[str, bytes]) -> Path:
    dist_info = "edgert-0.1.0.dist-info"
    contents = {name: (data, 0o644) for name, data in files.items()}
    contents[f"{dist_info}/METADATA"] = (b"Metadata-Version: 2.1\nName: edgert\n"
                                         b"Version: 0.1.0\n", 0o644)
    contents[f"{dist_info}/WHEEL"] = (wheel.wheel_text(["cp39-abi3-manylinux_2_35_x86_64"])
                                      .encode(), 0o644)
    wheel.write_wheel(path, contents, dist_info=dist_info, epoch=315532800)
    return path


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture()
def deep_record_wheel(tmp_path: Path) -> Path:
    depth = 100_000
    return _wheel_with(tmp_path / WHEEL_NAME, {
        "edgert/__init__.py": b"",
        "edgert/_release.json": b"[" * depth + b"]" * depth})


def test_verify_on_a_deeply_nested_build_record_is_one_line(deep_record_wheel: Path) -> None:
    code, _, err = _run("verify", "--static", str(deep_record_wheel))
    assert code == WheelError.exit_code, err
    assert err.count("\n") == 1 and err.startswith("error: ") and "nested too deeply" in err


def test_repair_on_a_deeply_nested_build_record_is_one_line(deep_record_wheel: Path,
                                                           tmp_path: Path) -> None:
    code, _, err = _run("repair", str(deep_record_wheel), "-w", str(tmp_path / "out"))
    assert code == WheelError.exit_code, err
    assert err.count("\n") == 1 and "nested too deeply" in err
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_a_deeply_nested_sbom_is_a_sentence() -> None:
    from release.distribution import sbom
    record = SimpleNamespace(distribution="edgert", version="0.1.0")
    assert sbom.check_sbom(b"[" * 100_000, record, {}) == [  # type: ignore[arg-type]
        "is nested too deeply to read"]


def test_repair_refuses_a_bad_source_date_epoch_before_the_repair_tool(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import release.building.repair

    def never(*args: object, **kwargs: object) -> Path:
        raise AssertionError("the repair ran")
    monkeypatch.setattr(release.building.repair, "repair_wheel", never)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "abc")
    code, _, err = _run("repair", str(tmp_path / WHEEL_NAME), "-w", str(tmp_path / "out"))
    assert code == WheelError.exit_code
    assert err == ("error: SOURCE_DATE_EPOCH is 'abc' (fix: set it to a number of seconds "
                   "since 1970)\n")


def test_check_set_on_a_name_flagged_utf8_with_invalid_bytes_is_a_finding(
        tmp_path: Path) -> None:
    folder = tmp_path / "release"
    folder.mkdir()
    buffer = io.BytesIO()
    name = "edgert/\u00e9.py"
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(name, b"x = 1\n")   # not ASCII: zipfile sets the UTF-8 flag
    data = buffer.getvalue().replace(name.encode(), b"edgert/\xff\xfe.py")
    (folder / WHEEL_NAME).write_bytes(data)
    code, out, err = _run("check-set", str(folder), "--project", str(ROOT), "--json")
    assert code == 7 and err == "", err
    findings = json.loads(out)["findings"]
    assert any("a member name flagged as UTF-8 is not UTF-8" in f["what"] for f in findings)


def test_a_folder_in_place_of_a_tool_cache_lock_heals(tmp_path: Path) -> None:
    from release import _lock
    entry = tmp_path / "tools" / "cmake-3.24"
    _lock.lock_path(entry).mkdir(parents=True)
    with _lock.provisioning(entry, "cmake"):
        assert _lock.lock_path(entry).is_file()


def test_the_backend_takes_allow_unchecked_as_a_config_setting() -> None:
    from release import backend, manifest
    loaded = manifest.load(ROOT)
    assert backend._options(loaded, {"allow-unchecked": "true"}).allow_unchecked
    assert not backend._options(loaded, None).allow_unchecked
    with pytest.raises(ConfigurationError) as raised:
        backend._options(loaded, {"allow-unchecked": "maybe"})
    assert "-C allow-unchecked=maybe is not a boolean" in raised.value.message


@pytest.mark.parametrize(("free", "environment"), [(1 << 10, True), (1 << 30, False)])
def test_a_failed_native_step_on_a_nearly_full_disk_is_a_full_disk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, free: int, environment: bool) -> None:
    monkeypatch.setattr(pipeline.shutil, "disk_usage",
                        lambda path: SimpleNamespace(total=1 << 40, used=0, free=free))
    with pytest.raises(CommandError) as raised:
        pipeline._native(commands.run, [sys.executable, "-c", "import sys; print('CMake "
                         "Error: Could NOT find Threads'); sys.exit(1)"], tmp_path,
                         what="CMake configure", fix="read the CMake error above")
    assert isinstance(raised.value, EnvironmentFailure) is environment
    assert raised.value.exit_code == (8 if environment else 4)
    assert ("is full (1 KiB free)" in raised.value.fix) is environment


# --- full verify's runner, provisioned beside the build -----------------------------------


class _SlowRunnerPlatform:
    """A platform whose runner takes until ``release`` is set, and says on which thread."""

    def __init__(self, fails: bool = False) -> None:
        self.release, self.fails, self.threads = threading.Event(), fails, []

    def runner(self, target: object, *, host: object, cache: Path) -> object:
        self.threads.append(threading.current_thread().name)
        assert self.release.wait(10)
        if self.fails:
            raise ToolError("no wine prefix could be made", fix="apt-get install wine64")
        return "runner"


def _runner_plan(platform: _SlowRunnerPlatform, verify: object) -> SimpleNamespace:
    from release.build_options import Stage
    return SimpleNamespace(release=SimpleNamespace(platform=platform, target="t", host="h"),
                           cache=Path("cache"),
                           options=SimpleNamespace(verify=verify, last_stage=Stage.VERIFY))


def test_full_verify_s_runner_is_provisioned_while_the_build_runs() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from release.build_options import VerifyMode
    platform = _SlowRunnerPlatform()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="runner") as beside:
        state = pipeline._State(scratch=Path("scratch"), beside=beside)
        pipeline._provision_runner_beside(_runner_plan(platform, VerifyMode.FULL), state)  # type: ignore[arg-type]
        assert state.runner is not None and not state.runner.done()   # the build goes on
        platform.release.set()
        assert state.runner.result(10) == "runner"
    assert len(platform.threads) == 1 and platform.threads[0].startswith("runner")


def test_a_runner_that_fails_beside_the_build_fails_where_it_is_used() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from release.build_options import VerifyMode
    platform = _SlowRunnerPlatform(fails=True)
    platform.release.set()
    with ThreadPoolExecutor(max_workers=1) as beside:
        state = pipeline._State(scratch=Path("scratch"), beside=beside)
        pipeline._provision_runner_beside(_runner_plan(platform, VerifyMode.FULL), state)  # type: ignore[arg-type]
        assert state.runner is not None
        with pytest.raises(ToolError, match="no wine prefix"):
            state.runner.result(10)


def test_static_verify_provisions_no_runner() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from release.build_options import VerifyMode
    platform = _SlowRunnerPlatform()
    with ThreadPoolExecutor(max_workers=1) as beside:
        state = pipeline._State(scratch=Path("scratch"), beside=beside)
        pipeline._provision_runner_beside(_runner_plan(platform, VerifyMode.STATIC), state)  # type: ignore[arg-type]
    assert state.runner is None and platform.threads == []
