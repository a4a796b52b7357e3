"""The verify edge starts from its argument: a file that is not a zip is refused before the
checks or any platform are loaded; the platform is the one the wheel's file name names, and
only it is asked for a way to run programs, only when a check will run them (never under
--static); provider checks come from the wheel's build record or --provider, never from the
verifier's own project; the pipeline and the command line call the same function."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from platforms.linux.loader import LOADER as LINUX
from platforms.windows.loader import LOADER as WINDOWS
from release.__main__ import main as release_main
from release.binary.elf import ElfReader
from release.binary.pe import PeReader
from release.building import pipeline
from release.distribution import wheel
from release.errors import ConfigurationError, WheelError
from release.host import Host, Runner
from release.verify import VerifyOptions, verify_wheel
from tests.conftest import ROOT
from tests.verify.pe_images import pe_image

DIST_INFO = "demo-1.0.dist-info"


def _wheel(folder: Path, tag: str, files: dict[str, bytes] | None = None,
           wheel_tag: str | None = None) -> Path:
    path = folder / f"demo-1.0-{tag}.whl"
    entries = {name: (data, 0o644) for name, data in (files or {}).items()}
    entries.update({
        "demo/__init__.py": (b"x = 1\n", 0o644),
        f"{DIST_INFO}/METADATA": (b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n", 0o644),
        f"{DIST_INFO}/WHEEL": (wheel.wheel_text([wheel_tag or tag]).encode(), 0o644)})
    wheel.write_wheel(path, entries, dist_info=DIST_INFO, epoch=315532800)
    return path


class _Platform:
    """A platform that counts how often it is asked for its runners."""

    def __init__(self, name: str, loader: object, reader: object) -> None:
        self.name, self.loader, self.reader = name, loader, reader
        self.asked = 0
        self.hosts: list[Host] = []

    def emulated(self, host: Host, *, cache: Path) -> tuple[Runner, ...]:
        self.asked += 1
        self.hosts.append(host)
        return ()


def _platforms() -> tuple[_Platform, _Platform]:
    return _Platform("linux", LINUX, ElfReader()), _Platform("windows", WINDOWS, PeReader())


def test_a_file_that_is_not_a_zip_is_refused_before_anything_is_loaded(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a wheel\n")
    probe = ("import sys; from release.__main__ import main; code = main(['verify', sys.argv[1],"
             " '--static']); loaded = [m for m in ('release.verify.checks', 'release.platform',"
             " 'release.building.pipeline', 'release.toolchain.tools') if m in sys.modules];"
             " print(code, loaded)")
    completed = subprocess.run([sys.executable, "-c", probe, str(text)], cwd=ROOT,
                               capture_output=True, text=True, check=False)
    assert completed.stdout.strip() == f"{WheelError.exit_code} []", completed.stderr
    (line,) = completed.stderr.splitlines()
    assert line.startswith("error: notes.txt: not a readable zip archive") and "fix:" in line


def test_bad_arguments_are_one_line_through_the_one_handler(tmp_path: Path) -> None:
    for argv, words in ((["verify", str(tmp_path / "missing.whl")], "is not a file"),
                        (["verify", "--load-timeout", "x", str(tmp_path)], "invalid float"),
                        (["verify"], "the following arguments are required")):
        err = io.StringIO()
        assert release_main(argv, stdout=io.StringIO(), stderr=err) == \
            ConfigurationError.exit_code
        assert err.getvalue().count("\n") == 1 and words in err.getvalue(), err.getvalue()
        assert "fix:" in err.getvalue()


def test_static_asks_no_platform_for_a_runner(tmp_path: Path) -> None:
    linux, windows = _platforms()
    path = _wheel(tmp_path, "py3-none-win_amd64")
    report = verify_wheel(path, static=True, platforms=[linux, windows], cache=tmp_path)
    assert report.checks["load-matrix"] == "not run"
    assert (linux.asked, windows.asked) == (0, 0)


def test_only_the_wheels_platform_is_asked_and_only_when_programs_run(tmp_path: Path) -> None:
    linux, windows = _platforms()
    # the stand-in platforms run nothing: no sandbox (tests/integration/test_verify_sandbox.py
    # runs the real one)
    unsandboxed = VerifyOptions(sandbox="off")
    pure = _wheel(tmp_path, "py3-none-win_amd64")
    verify_wheel(pure, platforms=[linux, windows], cache=tmp_path, options=unsandboxed)
    assert (linux.asked, windows.asked) == (0, 0), "nothing to load: nothing asked for"
    module = pe_image(exports=("PyInit_helper",), name="helper.pyd")
    (tmp_path / "dll").mkdir()
    path = _wheel(tmp_path / "dll", "py3-none-win_amd64", {"demo/helper.pyd": module})
    report = verify_wheel(path, platforms=[linux, windows], cache=tmp_path,
                          options=unsandboxed)
    assert (linux.asked, windows.asked) == (0, 1), report.render_text()
    assert windows.hosts == [Host.current()]      # verify's edge hands its one Host down
    assert report.checks["load-matrix"] == "not run"


def test_the_file_name_tags_choose_the_platform_not_the_wheel_file(tmp_path: Path) -> None:
    """A wheel named win_amd64 whose WHEEL says manylinux: judged as a Windows wheel (what
    pip installs it as), and the disagreement is its own identity error."""
    path = _wheel(tmp_path, "py3-none-win_amd64", wheel_tag="py3-none-manylinux_2_17_x86_64")
    report = verify_wheel(path, static=True)
    identity = [f for f in report.findings if f.check == "identity"]
    assert [f.details["wheel_tags"] for f in identity] == [["py3-none-manylinux_2_17_x86_64"]]
    assert report.checks["linkage"] == "ran"
    assert not [f for f in report.findings if f.check == "platform"], report.render_text()


def _record_wheel(tmp_path: Path, providers: Sequence[str]) -> Path:
    record = {"schema": 1, "package": "demo", "target": "linux-x86_64", "components": [],
              "providers": list(providers)}
    return _wheel(tmp_path, "py3-none-manylinux_2_17_x86_64",
                  {"demo/_release.json": json.dumps(record).encode()})


def test_provider_checks_come_from_the_build_record_or_the_option(tmp_path: Path) -> None:
    (tmp_path / "named").mkdir()
    (tmp_path / "plain").mkdir()
    named = _record_wheel(tmp_path / "named", ["cuda"])
    assert "coverage" in verify_wheel(named, static=True).checks
    plain = _record_wheel(tmp_path / "plain", [])
    assert "coverage" not in verify_wheel(plain, static=True).checks, \
        "the verifier's own project names cuda; the wheel does not"
    asked = verify_wheel(plain, static=True, options=VerifyOptions(providers=("cuda",)))
    assert "coverage" in asked.checks


def test_an_unknown_provider_is_one_line(tmp_path: Path) -> None:
    err = io.StringIO()
    path = _wheel(tmp_path, "py3-none-any")
    assert release_main(["verify", str(path), "--static", "--provider", "nonesuch"],
                        stdout=io.StringIO(), stderr=err) == ConfigurationError.exit_code
    assert "no variant provider package 'nonesuch'" in err.getvalue()


def test_the_pipeline_calls_the_same_function(monkeypatch: pytest.MonkeyPatch) -> None:
    assert pipeline.verify_wheel is verify_wheel
    from release.release_set import check_set as release_set_run
    assert release_set_run.verify_wheel is verify_wheel
