"""Shared fixtures: the CPU wheel is built once per test session (incrementally, in the
pipeline's own build folder) and installed once into a clean virtual environment.

Tiers: every test is marked by its folder (``unit``: no compiler, no CMake, no index;
``native``, ``integration``, ``verify``, ``cuda``, ``quality``, ``gpu``); tests that reach the
package index also carry ``index``. ``pytest -m unit`` is the quick loop."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import signal
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

import pytest

# The tool tiers (tests/tools.toml): tests needing a tool beyond Python, gcc and the index;
# the long steps (release/progress.py) shown on the terminal as they happen.
pytest_plugins = ["tests.tool_tiers", "tests.progress"]

ROOT = Path(__file__).resolve().parents[1]
TIERS = ("unit", "native", "integration", "verify", "cuda", "quality", "gpu")
# Python code that prints, as the last line on stderr, its process's own peak resident size
# in KiB: the memory map's high-water mark (VmHWM). Not ru_maxrss, which Linux carries over
# from the forked parent across exec and so would count the test runner's own memory.
PRINT_OWN_PEAK = """
import re as _re, sys as _sys
with open("/proc/self/status") as _status:
    print(_re.search(r"VmHWM:\\s+(\\d+) kB", _status.read()).group(1), file=_sys.stderr)
"""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from tests import tool_tiers
    for item in items:
        parts = Path(str(item.fspath)).relative_to(ROOT).parts
        if len(parts) > 1 and parts[0] == "tests" and parts[1] in TIERS:
            item.add_marker(getattr(pytest.mark, parts[1]))
    tool_tiers.mark(config, items)


def assert_clean_failure(completed: subprocess.CompletedProcess[str], out: Path, *, code: int,
                         words: str) -> None:
    """One ``error: … fix: …`` line naming ``words``, exit ``code``, nothing in ``out``."""
    assert completed.returncode == code, completed.stderr
    lines = [line for line in completed.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and words in lines[0], completed.stderr
    assert "fix:" in lines[0]
    assert "Traceback" not in completed.stderr
    assert not out.exists() or not any(out.iterdir()), list(out.iterdir())


@dataclass(frozen=True)
class BuiltWheel:
    path: Path
    result: dict


@pytest.fixture(scope="session")
def cpu_wheel(tmp_path_factory: pytest.TempPathFactory) -> BuiltWheel:
    """The repaired, fully verified CPU wheel for this machine."""
    from release import manifest
    from release.building.pipeline import BuildOptions, VerifyMode, run
    from release.host import Host
    out = tmp_path_factory.mktemp("dist")
    result = run(manifest.load(ROOT), BuildOptions(platform="linux", out_dir=out,
                                                   verify=VerifyMode.FULL), host=Host.current())
    assert result.wheel is not None
    return BuiltWheel(path=result.wheel, result=result.to_json())


@dataclass(frozen=True)
class Venv:
    root: Path
    python: Path
    site_packages: Path

    def run(self, *args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.python), *args], capture_output=True, text=True,
                              check=False, **kwargs)  # type: ignore[call-overload]


def make_venv(path: Path) -> Venv:
    venv.EnvBuilder(with_pip=True, clear=True).create(path)
    python = path / "bin" / "python"
    code = "import sysconfig; print(sysconfig.get_paths()['platlib'])"
    site = subprocess.run([str(python), "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip()
    return Venv(root=path, python=python, site_packages=Path(site))


@pytest.fixture(scope="session")
def installed_cpu_wheel(cpu_wheel: BuiltWheel, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """A clean virtual environment with only the CPU wheel (and numpy) installed."""
    environment = make_venv(tmp_path_factory.mktemp("venv") / "env")
    completed = environment.run("-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                                str(cpu_wheel.path))
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return environment


def run_release(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None
                ) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "release", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, check=False)


def verify_main(argv: list[str], *, stdout: io.StringIO | None = None,
                stderr: io.StringIO | None = None) -> int:
    """``python -m release verify ARGV`` in this process, its streams the caller's."""
    from release.__main__ import main
    return main(["verify", *argv], stdout=stdout, stderr=stderr)


def release_in_process(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """``python -m release ARGS`` run by ``release.__main__.main`` in this process, for tests
    that are not about the process boundary: its exit status and what it wrote, in the form
    ``run_release`` returns. What ``main`` changes in the process (the working folder, the
    SIGTERM and SIGHUP handlers, the root logger's handlers) is put back."""
    from release.__main__ import main
    handled = (signal.SIGTERM, signal.SIGHUP)
    saved_handlers = {signum: signal.getsignal(signum) for signum in handled}
    saved_cwd = os.getcwd()
    root = logging.getLogger()
    saved_logging = (list(root.handlers), root.level)
    out, err = io.StringIO(), io.StringIO()
    try:
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args), stdout=out, stderr=err)
            except SystemExit as exit_:   # what sys.exit(main()) would have exited with
                code = 0 if exit_.code is None else exit_.code if isinstance(
                    exit_.code, int) else 1
    finally:
        os.chdir(saved_cwd)
        for signum, handler in saved_handlers.items():
            signal.signal(signum, handler)
        root.handlers[:], root.level = saved_logging[0], saved_logging[1]
    return subprocess.CompletedProcess(["release", *args], code, out.getvalue(), err.getvalue())
