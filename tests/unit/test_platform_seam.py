"""A platform is added by its folder alone: a copy of the project gains
``platforms/toyos/`` (a made-up operating system) and nothing else, and the manifest accepts
a toyos target, the plan resolves it through the new module, and verify's list of platforms
holds it. Nothing in release/ lists the platforms (release.manifest.platform_names finds
them)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_TOY_PLATFORM = '''
from release.platform import BuildRoute, Platform, Route


class ToyPlatform(Platform):
    name = "toyos"
    loader = None
    reader = None

    def build_route(self, target, host):
        return BuildRoute(Route.NATIVE, "the toy compilers")

    def cmake_arguments(self, target, *, host, ccache, cache, build_dir):
        return []

    def toolchain_tools(self, target, host):
        return ()

    def library_file(self, library):
        return f"{library}.toylib"

    def extension_file(self, module):
        return f"{module}.toyext"

    def wheel_platform_tag(self, target):
        return "toyos_1_any"

    def python_tag(self):
        return "cp39-abi3"

    def search_entries(self, binary, folders):
        return tuple(f"@here/{folder}" for folder in folders)

    def repair(self, request):
        return request.wheel

    def runner(self, target, *, host, cache):
        return None

    def emulated(self, host, *, cache):
        return ()


PLATFORM = ToyPlatform()
'''

_PROBE = '''
import json, tomllib
from pathlib import Path
from release import manifest
from release.build_options import BuildOptions
from release.building.pipeline import make_plan
from release.host import Host
from release.platform import all_platforms

data = tomllib.loads(Path("pyproject.toml").read_text())
data["tool"]["release"]["targets"]["toyos-any"] = {"platform": "toyos", "arch": "any"}
loaded = manifest.parse(data, Path.cwd())
release = make_plan(loaded, BuildOptions(platform="toyos", variant="cpu"), environ={},
                    host=Host.current()).release
print(json.dumps({"platforms": [p.name for p in all_platforms()],
                  "names": list(manifest.platform_names()),
                  "target": release.target.name, "extension": release.extension_file,
                  "route": release.route.route.value,
                  "search": list(release.search_paths[0].entries)}))
'''


def _copy(source: Path, target: Path) -> None:
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "build"))


def test_a_platform_is_added_by_its_folder_alone(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    for name in ("release", "platforms", "cuda", "docs"):
        _copy(ROOT / name, project / name)
    _copy(ROOT / "native" / "python", project / "native" / "python")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copyfile(ROOT / name, project / name)
    (project / "platforms" / "toyos").mkdir()
    (project / "platforms" / "toyos" / "__init__.py").write_text(_TOY_PLATFORM)
    completed = subprocess.run([sys.executable, "-c", _PROBE], cwd=project,
                               capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stderr
    found = json.loads(completed.stdout)
    assert found == {"platforms": ["linux", "macos", "toyos", "windows"],
                     "names": ["linux", "macos", "toyos", "windows"],
                     "target": "toyos-any", "extension": "edgert/_C.toyext",
                     "route": "native", "search": ["@here/edgert/lib"]}
    sources = "".join(path.read_text() for path in (ROOT / "release").rglob("*.py"))
    assert "toyos" not in sources and '("linux", "macos", "windows")' not in sources
