"""The manifest is validated at the edge: good data parses, every mistake names its key."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from release import manifest
from release.errors import ConfigurationError

ROOT = Path(__file__).resolve().parents[2]


def _project() -> dict:
    import tomllib
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_repository_manifest_parses_with_every_component() -> None:
    loaded = manifest.load(ROOT)
    names = [c.name for c in loaded.components]
    assert names[:6] == ["runtime", "threadpool", "kernels", "kernels_quantized", "backend_cpu",
                         "export_plugin"]
    assert loaded.component("kernels_quantized").opt_in
    quantized = loaded.component("kernels_quantized")
    assert quantized.cmake_variable == "EDGERT_QUANTIZED_KERNELS_LIBRARY"
    assert loaded.component("export_plugin").kind == "plugin"
    assert not loaded.component("kernels").opt_in


def test_variant_filters_components() -> None:
    loaded = manifest.load(ROOT)
    assert "backend_cuda" not in [c.name for c in loaded.components_for("cpu")]
    assert "backend_cuda" in [c.name for c in loaded.components_for("cu12")]
    assert loaded.variant("cu12").distribution == "edgert-cu12"
    assert loaded.variant("cpu").distribution is None


def _error(data: dict) -> str:
    with pytest.raises(ConfigurationError) as caught:
        manifest.parse(data, ROOT)
    return caught.value.message


def test_unknown_key_is_named() -> None:
    data = _project()
    data["tool"]["release"]["components"]["kernels"]["optin"] = True
    assert "unknown key tool.release.components.kernels.optin" in _error(data)


def test_unknown_top_level_key_is_named() -> None:
    data = _project()
    data["tool"]["release"]["pakage"] = "x"
    assert "tool.release.pakage" in _error(data)


def test_wrong_type_is_named() -> None:
    data = _project()
    data["tool"]["release"]["components"]["kernels"]["opt-in"] = "yes"
    message = _error(data)
    assert "tool.release.components.kernels.opt-in must be a bool" in message


def test_wrong_list_item_type_is_named() -> None:
    data = _project()
    data["tool"]["release"]["components"]["kernels"]["depends"] = ["runtime", 3]
    assert "tool.release.components.kernels.depends[1]" in _error(data)


def test_missing_library_is_named() -> None:
    data = _project()
    del data["tool"]["release"]["components"]["kernels"]["library"]
    assert "tool.release.components.kernels.library is missing" in _error(data)


def test_unknown_dependency_is_reported() -> None:
    data = _project()
    data["tool"]["release"]["components"]["kernels"]["depends"] = ["runtme"]
    assert "unknown component 'runtme'" in _error(data)


def test_opt_in_needs_a_variable() -> None:
    data = _project()
    del data["tool"]["release"]["components"]["kernels_quantized"]["cmake-variable"]
    assert "cmake-variable is missing" in _error(data)


def test_bad_platform_choice() -> None:
    data = _project()
    data["tool"]["release"]["targets"]["linux-x86_64"]["platform"] = "beos"
    assert "tool.release.targets.linux-x86_64.platform is 'beos'" in _error(data)


def test_adding_a_component_is_a_data_change() -> None:
    data = copy.deepcopy(_project())
    data["tool"]["release"]["components"]["backend_npu"] = {
        "library": "edgert_backend_npu", "cmake-component": "backend_npu",
        "depends": ["runtime"], "registers": ["backends"],
        "markers": ["edgert_backend_npu_component"]}
    loaded = manifest.parse(data, ROOT)
    assert loaded.component("backend_npu").library == "edgert_backend_npu"
    assert "backend_npu" in [c.name for c in loaded.components_for("cpu")]


def test_target_lookup_errors() -> None:
    loaded = manifest.load(ROOT)
    with pytest.raises(ConfigurationError, match="unknown platform 'beos'"):
        loaded.target("beos", "x86_64")
    with pytest.raises(ConfigurationError, match="unknown arch 'sparc'"):
        loaded.target("linux", "sparc")


def test_missing_pyproject(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="does not exist"):
        manifest.load(tmp_path)


def test_broken_toml(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.release\n")
    with pytest.raises(ConfigurationError, match="not valid TOML"):
        manifest.load(tmp_path)


@pytest.mark.parametrize(("edit", "words"), [
    (lambda d: d["project"].__setitem__("dependencies", "numpy"),
     "project.dependencies must be a list of strings"),
    (lambda d: d["project"].__setitem__("dependencies", ["numpy>>1"]), "not a valid requirement"),
    (lambda d: d["project"].__setitem__("description", "A runtime\nRequires-Dist: evil"),
     "project.description contains a line break"),
    (lambda d: d["project"].__setitem__("name", "edge/rt"), "not a valid distribution name"),
    (lambda d: d["project"].__setitem__("version", "1.0/2"), "not a valid version"),
    (lambda d: d["tool"]["release"]["components"]["runtime"].__setitem__("depends", ["runtime"]),
     "dependency cycle runtime -> runtime"),
    (lambda d: d["tool"]["release"]["components"]["runtime"].__setitem__("depends", ["kernels"]),
     "dependency cycle"),
])
def test_metadata_mistakes_are_one_error(edit, words: str) -> None:  # type: ignore[no-untyped-def]
    data = copy.deepcopy(_project())
    edit(data)
    with pytest.raises(ConfigurationError, match=words.replace("(", r"\(")):
        manifest.parse(data, ROOT)


@pytest.mark.parametrize(("content", "words"), [
    (b"tool = 'x'\n", "tool must be a table"),
    (b"[project]\nname = '\xff'\n", "is not UTF-8"),
])
def test_unreadable_pyproject_is_one_error(tmp_path: Path, content: bytes, words: str) -> None:
    (tmp_path / "pyproject.toml").write_bytes(content)
    with pytest.raises(ConfigurationError, match=words):
        manifest.load(tmp_path)


# Every name and path the manifest hands on is checked before any work; each error names
# the file, the key and the fix.

def _named_error(data: dict) -> str:
    message = _error(data)
    assert message.startswith(f"{ROOT / 'pyproject.toml'}: "), message
    assert "(fix: " in message, message
    return message


@pytest.mark.parametrize("package", ["../../../tmp/x", "ed-gert", "edgert/sub", "", "1edgert",
                                     "class", "edgert..x", "/abs"])
def test_the_package_must_be_an_import_name(package: str) -> None:
    data = _project()
    data["tool"]["release"]["package"] = package
    data["tool"]["release"]["extension"] = f"{package}._C"
    assert "tool.release.package" in _named_error(data)


def test_a_dotted_package_is_an_import_name() -> None:
    data = _project()
    data["tool"]["release"]["package"] = "vendor.edgert"
    data["tool"]["release"]["extension"] = "vendor.edgert._C"
    assert manifest.parse(data, ROOT).package == "vendor.edgert"


@pytest.mark.parametrize("extension", ["other._C", "edgert", "edgert.../x", "edgert._C-1"])
def test_the_extension_must_be_a_module_of_the_package(extension: str) -> None:
    data = _project()
    data["tool"]["release"]["extension"] = extension
    assert "tool.release.extension" in _named_error(data)


@pytest.mark.parametrize(("key", "value"), [("native-source", "../elsewhere"),
                                            ("python-source", "/usr/lib"),
                                            # (a name no checkout folder has: ../x is the
                                            # project itself when it is checked out as x)
                                            ("native-source", "native/../../no-such-checkout")])
def test_source_folders_stay_inside_the_project(key: str, value: str) -> None:
    data = _project()
    data["tool"]["release"][key] = value
    assert f"tool.release.{key}" in _named_error(data)


def test_a_variant_config_stays_inside_the_project() -> None:
    data = _project()
    data["tool"]["release"]["variants"]["cu12"]["config"] = "../../etc/cu12.toml"
    assert "tool.release.variants.cu12.config" in _named_error(data)


@pytest.mark.parametrize(("field", "words"), [("library", "library"),
                                              ("cmake-component", "cmake-component"),
                                              ("markers", "markers")])
def test_no_two_components_share_a_name(field: str, words: str) -> None:
    data = _project()
    components = data["tool"]["release"]["components"]
    value = components["runtime"][field]
    components["threadpool"][field] = value
    message = _named_error(data)
    assert f"tool.release.components.threadpool.{words}" in message
    assert "tool.release.components.runtime's" in message


def test_no_two_components_share_a_cmake_variable() -> None:
    data = _project()
    components = data["tool"]["release"]["components"]
    components["backend_cuda"]["cmake-variable"] = components["kernels_quantized"][
        "cmake-variable"]
    assert "backend_cuda.cmake-variable" in _named_error(data)


@pytest.mark.parametrize(("field", "value"), [("library", "../lib/x"), ("library", "lib x"),
                                              ("cmake-component", "a;b"),
                                              ("markers", ["bad marker"])])
def test_component_names_are_checked(field: str, value: object) -> None:
    data = _project()
    data["tool"]["release"]["components"]["kernels"][field] = value
    assert f"tool.release.components.kernels.{field}" in _named_error(data)


def test_a_component_name_is_an_identifier() -> None:
    data = _project()
    components = data["tool"]["release"]["components"]
    components["bad-name/x"] = components.pop("export_plugin")
    assert "tool.release.components.bad-name/x" in _named_error(data)


@pytest.mark.parametrize("table", ["variants", "targets"])
def test_variant_and_target_names_are_plain_words(table: str) -> None:
    data = _project()
    entries = data["tool"]["release"][table]
    first = next(iter(entries))
    entries["../x"] = entries.pop(first)
    if table == "variants":
        for component in data["tool"]["release"]["components"].values():
            component.pop("variants", None)
    assert f"tool.release.{table}.../x" in _named_error(data)


def test_a_variant_distribution_is_a_valid_name() -> None:
    data = _project()
    data["tool"]["release"]["variants"]["cu12"]["distribution"] = "edgert cu12"
    assert "tool.release.variants.cu12.distribution" in _named_error(data)
