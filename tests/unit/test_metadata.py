"""Core metadata comes from every [project] key (through pyproject-metadata); a misspelled key
is an error; the license text ships with its License-File; readme links work on the index."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import pytest

from release import manifest
from release.building import distinfo
from release.building.resolved import resolve
from release.distribution import core_metadata as metadata
from release.distribution.wheel import parse_metadata
from release.errors import ConfigurationError
from release.host import Host
from tests.conftest import ROOT

# sha256 of https://www.apache.org/licenses/LICENSE-2.0.txt
APACHE_2_0 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"


def _everything() -> dict[str, Any]:
    return {
        "name": "edgert", "version": "1.2.0", "description": "A runtime",
        "readme": "README.md", "requires-python": ">=3.9", "license": "Apache-2.0",
        "license-files": ["LICENSE", "licenses/*.txt"],
        "authors": [{"name": "Ada Example", "email": "ada@example.org"}, {"name": "The Team"}],
        "maintainers": [{"name": "Bo", "email": "bo@example.org"}],
        "keywords": ["inference", "runtime"],
        "classifiers": ["Programming Language :: C++"],
        "urls": {"Source": "https://example.org/edgert", "Issues": "https://example.org/i"},
        "dependencies": ["numpy>=1.22"],
        "optional-dependencies": {"export": ["onnx>=1.15"], "dev": ["pytest; python_version>'3'"]},
        "scripts": {"edgert-run": "edgert.run_program:main"},
        "gui-scripts": {"edgert-view": "edgert.view:main"},
        "entry-points": {"edgert.backends": {"cpu": "edgert.backends:cpu"}},
    }


@pytest.fixture
def project_dir(tmp_path: Path) -> Path:
    (tmp_path / "README.md").write_text("# edgert\n\nSee [the guide](docs/guide.md).\n")
    (tmp_path / "LICENSE").write_text("license text\n")
    (tmp_path / "licenses").mkdir()
    (tmp_path / "licenses" / "third-party.txt").write_text("third party\n")
    return tmp_path


def test_every_project_key_reaches_the_metadata(project_dir: Path) -> None:
    core = metadata.core_metadata(_everything(), project_dir)
    message = parse_metadata(core.text)
    assert message["Metadata-Version"] == "2.4"
    assert (message["Name"], message["Version"], message["Summary"]) == ("edgert", "1.2.0",
                                                                         "A runtime")
    assert message["Requires-Python"] == ">=3.9"
    assert message["Keywords"] == "inference,runtime"
    assert message["Author"] == "The Team"
    assert message["Author-Email"] == "Ada Example <ada@example.org>"
    assert message["Maintainer-Email"] == "Bo <bo@example.org>"
    assert message["License-Expression"] == "Apache-2.0"
    assert message.get_all("License-File") == ["LICENSE", "licenses/third-party.txt"]
    assert message.get_all("Classifier") == ["Programming Language :: C++"]
    assert message.get_all("Project-URL") == ["Source, https://example.org/edgert",
                                              "Issues, https://example.org/i"]
    assert sorted(message.get_all("Provides-Extra")) == ["dev", "export"]
    requires = message.get_all("Requires-Dist")
    assert requires[0] == "numpy>=1.22"
    assert 'onnx>=1.15; extra == "export"' in requires
    assert message["Description-Content-Type"] == "text/markdown"
    assert "[the guide](https://example.org/edgert/blob/main/docs/guide.md)" in \
        message.get_payload()
    assert core.license_files == ("LICENSE", "licenses/third-party.txt")
    assert core.entry_points is not None
    assert "[console_scripts]\nedgert-run = edgert.run_program:main\n" in core.entry_points
    assert "[gui_scripts]\nedgert-view = edgert.view:main\n" in core.entry_points
    assert "[edgert.backends]\ncpu = edgert.backends:cpu\n" in core.entry_points


def test_a_variant_renames_and_appends_its_runtime(project_dir: Path) -> None:
    core = metadata.core_metadata(_everything(), project_dir, name="edgert-cu12",
                                  extra_requires=["nvidia-cuda-runtime-cu12>=12.8,<13"])
    message = parse_metadata(core.text)
    assert message["Name"] == "edgert-cu12"
    requires = message.get_all("Requires-Dist")
    assert requires[:2] == ["numpy>=1.22", "nvidia-cuda-runtime-cu12<13,>=12.8"]


@pytest.mark.parametrize(("edit", "words"), [
    (lambda p: p.__setitem__("licence", "MIT"), "unknown key project.licence"),
    (lambda p: p.__setitem__("keyword", ["x"]), "unknown key project.keyword"),
    (lambda p: p.__setitem__("dynamic", ["readme"]), "project.dynamic"),
    (lambda p: p.__setitem__("license-files", ["COPYING"]), "project.license-files"),
    (lambda p: p.__setitem__("authors", "Ada"), "project.authors"),
    (lambda p: p.__setitem__("optional-dependencies", {"a b!": ["x"]}), "a b!"),
    (lambda p: p.__setitem__("urls", {"Home": "https://example.org"}), "relative link"),
])
def test_mistakes_are_one_error(project_dir: Path, edit, words: str) -> None:  # type: ignore[no-untyped-def]
    project = _everything()
    edit(project)
    with pytest.raises(ConfigurationError) as caught:
        metadata.core_metadata(project, project_dir)
    assert words in caught.value.message
    assert "\n" not in caught.value.message and "fix:" in caught.value.message


def test_a_misspelled_key_in_pyproject_fails_the_manifest() -> None:
    import tomllib
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    data["project"]["licence"] = data["project"].pop("license")
    with pytest.raises(ConfigurationError) as caught:
        manifest.parse(data, ROOT)
    assert caught.value.message.startswith("unknown key project.licence (fix: did you mean "
                                           "'license'?")


def dist_info_files(loaded: manifest.Manifest, variant: str) -> tuple[str, dict[str, bytes]]:
    """The .dist-info the lay-out stage writes for ``variant`` (but WHEEL)."""
    release = resolve(loaded, loaded.select("linux", "x86_64", variant),
                      host=Host("linux", "x86_64"))
    return distinfo.folder_name(release), distinfo.metadata_files(release)


def test_the_wheel_ships_the_license_it_names() -> None:
    loaded = manifest.load(ROOT)
    assert hashlib.sha256((ROOT / "LICENSE").read_bytes()).hexdigest() == APACHE_2_0
    for variant in ("cpu", "cu12"):
        name, files = dist_info_files(loaded, variant)
        message = parse_metadata(files["METADATA"].decode())
        assert message["License-Expression"] == "Apache-2.0"
        assert message.get_all("License-File") == ["LICENSE"]
        assert files["licenses/LICENSE"] == (ROOT / "LICENSE").read_bytes()
        assert files == dist_info_files(loaded, variant)[1], "METADATA is deterministic"
    assert name == "edgert_cu12-0.1.0.dist-info"


def test_the_repository_readme_has_no_relative_link_on_the_index() -> None:
    _, files = dist_info_files(manifest.load(ROOT), "cpu")
    description = parse_metadata(files["METADATA"].decode()).get_payload()
    outside_code = re.sub(r"```.*?```|`[^`\n]+`", "", description, flags=re.DOTALL)
    targets = re.findall(r"\]\(([^)\s]+)", outside_code)
    assert targets, "the readme has links"
    assert all(re.match(r"https://|#", target) for target in targets), targets
    assert "https://github.com/edgert/edgert/blob/main/docs/cuda.md" in targets


def test_links_in_code_stay_and_images_use_raw_files() -> None:
    text = ("![logo](img/logo.png) [doc](/docs/a.md#x) `[code](kept.md)`\n"
            "```\n[fenced](kept.md)\n```\n[ref]: ../sdk.md\n")
    assert metadata.absolute_links(text, base="https://h/r", folder="docs") == (
        "![logo](https://h/r/raw/main/docs/img/logo.png) [doc](https://h/r/blob/main/docs/a.md#x)"
        " `[code](kept.md)`\n```\n[fenced](kept.md)\n```\n[ref]: https://h/r/blob/main/sdk.md\n")


def _read_afresh(project: dict[str, Any], root: Path, name: str,
                 extra_requires: list[str]) -> str:
    """METADATA as it was made before the manifest kept its validated [project]: read from
    pyproject.toml's table again, renamed, the requirement appended, the links absolute."""
    from packaging.requirements import Requirement
    from pyproject_metadata import Readme
    fresh = metadata.standard(project, root)
    fresh.name = name
    fresh.dependencies.extend(Requirement(text) for text in extra_requires)
    readme = fresh.readme
    assert readme is not None and readme.file is not None
    fresh.readme = Readme(metadata.absolute_links(readme.text, base=metadata.source_url(
        fresh.urls), where=readme.file.name), readme.file, readme.content_type)
    return str(fresh.as_rfc822())


def test_a_build_reads_project_once_and_each_distribution_gets_its_own_metadata(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """[project] is read and validated when the manifest loads; each variant's METADATA is
    rendered from that reading (only the name and the appended requirement differ), and
    equals what reading it afresh gives."""
    reads: list[object] = []
    original = metadata.standard
    monkeypatch.setattr(metadata, "standard",
                        lambda *args: reads.append(args) or original(*args))
    loaded = manifest.load(ROOT)
    assert len(reads) == 1
    host = Host("linux", "x86_64")
    made = {}
    for declared in loaded.variants:
        release = resolve(loaded, loaded.select("linux", "x86_64", declared.name), host=host)
        runtime = release.variant.runtime
        made[declared.name] = (distinfo.metadata_files(release)["METADATA"].decode(),
                               release.distribution,
                               [] if runtime is None else [runtime.requirement])
    assert len(reads) == 1, "the manifest's reading is reused"
    monkeypatch.setattr(metadata, "standard", original)
    for text, distribution, requirements in made.values():
        assert text == _read_afresh(loaded.project, ROOT, distribution, requirements)
    assert parse_metadata(made["cpu"][0])["Name"] == "edgert"
    cu12 = parse_metadata(made["cu12"][0])
    assert cu12["Name"] == "edgert-cu12"
    assert cu12.get_all("Requires-Dist")[:2] == [
        "numpy>=1.22", 'nvidia-cuda-runtime-cu12<13,>=12.8; sys_platform == "linux"']
    assert loaded.metadata.for_distribution("edgert") is loaded.metadata.core
    # the kept reading is never changed
    assert parse_metadata(loaded.metadata.core.text).get_all("Requires-Dist") == [
        "numpy>=1.22", 'torch>=2.5; extra == "torch"']


def test_a_copy_with_another_project_table_does_not_reuse_the_reading() -> None:
    import dataclasses
    loaded = manifest.load(ROOT)
    copy = dataclasses.replace(loaded, project={**loaded.project, "version": "9.9"})
    with pytest.raises(ConfigurationError, match="not the one that was validated"):
        copy.metadata  # noqa: B018


def test_an_invalid_distribution_name_is_one_error() -> None:
    with pytest.raises(ConfigurationError) as raised:
        manifest.load(ROOT).metadata.for_distribution("edgert cu12")
    assert raised.value.message.startswith("distribution edgert cu12: ")
    assert "\n" not in raised.value.message


def test_a_table_changed_in_place_after_loading_does_not_reuse_the_reading() -> None:
    loaded = manifest.load(ROOT)
    loaded.project["description"] = "changed after validation"
    with pytest.raises(ConfigurationError, match="not the one that was validated"):
        loaded.metadata  # noqa: B018
