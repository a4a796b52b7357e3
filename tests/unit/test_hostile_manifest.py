"""Hostile manifest values (issue 35, item 9): nesting deep enough to exhaust tomllib's
recursion, numbers and versions of thousands of digits, job counts beyond any machine, names
and lists out of proportion. Each is refused in one ``error: … (fix: …)`` line with exit 2,
the value cut short in it, never a traceback."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from release import _toml, build_options, manifest
from release.errors import ConfigurationError
from tests.conftest import ROOT, assert_clean_failure, release_in_process

TEXT = (ROOT / "pyproject.toml").read_text()
LONGEST_LINE = 400   # a refusal shows a hostile value cut short, never whole


def _project(tmp_path: Path, text: str) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(text)
    return project


def _with_version(version: str) -> str:
    text, count = re.subn(r'(?m)^version = ".*"$', f'version = "{version}"', TEXT, count=1)
    assert count == 1
    return text


def _with_defaults(line: str) -> str:
    assert "[tool.release.defaults]" not in TEXT
    return f"{TEXT}\n[tool.release.defaults]\n{line}\n"


def _refused(tmp_path: Path, text: str, words: str) -> str:
    """``python -m release build`` of a project with ``text`` as pyproject.toml: exit 2 and
    one short line naming ``words``."""
    project = _project(tmp_path, text)
    out = tmp_path / "dist"
    completed = release_in_process("build", "--platform", "linux", "--project", str(project),
                                   "--out", str(out))
    assert_clean_failure(completed, out, code=2, words=words)
    assert len(completed.stderr.strip()) < LONGEST_LINE, completed.stderr[:1000]
    return completed.stderr


@pytest.mark.parametrize(("value", "words"), [
    ("[" * 5000 + "]" * 5000, "nests arrays or tables more than 32 deep"),
    ("{a = " * 5000 + "1" + "}" * 5000, "nests arrays or tables more than 32 deep"),
    ("[" * 40 + "]" * 40, "nests arrays or tables more than 32 deep"),   # parses, too deep
    ("1" * 5000, "holds a number too long to read"),
])
def test_hostile_toml_values_are_one_line(tmp_path: Path, value: str, words: str) -> None:
    _refused(tmp_path, f"{TEXT}\n[tool.hostile]\nx = {value}\n", words)


def test_deep_dotted_table_headers_are_refused(tmp_path: Path) -> None:
    header = ".".join(f"t{i}" for i in range(5000))
    _refused(tmp_path, f"{TEXT}\n[tool.{header}]\nx = 1\n", "more than 32 deep")


def test_an_oversized_data_file_is_refused_before_parsing(tmp_path: Path) -> None:
    filler = "# " + "x" * 1000 + "\n"
    text = TEXT + filler * ((_toml.MAX_BYTES // len(filler)) + 1)
    _refused(tmp_path, text, "is larger than 4 MiB")


@pytest.mark.parametrize(("version", "words"), [
    ("1" * 5000, "project.version is 5000 characters long"),      # int() refuses 4300 digits
    ("1." * 60 + "0", "project.version is 121 characters long"),  # valid PEP 440, absurd
])
def test_absurd_versions_are_refused(tmp_path: Path, version: str, words: str) -> None:
    stderr = _refused(tmp_path, _with_version(version), words)
    assert "keep it to 100 characters" in stderr


def test_a_version_of_thousands_of_digits_is_refused_by_parse_itself() -> None:
    data = _toml.tomllib.loads(TEXT)
    data["project"]["version"] = "1" * 4400    # past int()'s 4300-digit limit
    with pytest.raises(ConfigurationError, match="project.version is 4400 characters long"):
        manifest.parse(data, ROOT)


RANGE = "jobs must be a whole number from 0 (one per core) to 4096"


@pytest.mark.parametrize(("jobs", "words"), [
    ("100000000000000000000", RANGE), ("4097", RANGE), ("-1", RANGE),
    ("1" * 4000, "is longer than 1024 characters"),
])
def test_jobs_beyond_any_machine_are_refused_in_the_manifest(tmp_path: Path, jobs: str,
                                                             words: str) -> None:
    stderr = _refused(tmp_path, _with_defaults(f"jobs = {jobs}"), words)
    assert stderr.startswith("error: tool.release.defaults.jobs: ")


def test_the_largest_job_count_is_accepted() -> None:
    data = _toml.tomllib.loads(_with_defaults("jobs = 4096"))
    assert manifest.parse(data, ROOT).defaults["jobs"] == 4096


@pytest.mark.parametrize(("layer", "value", "where"), [
    ("environ", {"RELEASE_JOBS": "1" * 5000}, "RELEASE_JOBS"),
    ("environ", {"RELEASE_JOBS": "99999"}, "RELEASE_JOBS"),
    ("given", {"jobs": 10 ** 20}, "--jobs"),
    ("environ", {"RELEASE_OUT": "d" * 5000}, "RELEASE_OUT"),
])
def test_every_layer_bounds_its_settings(layer: str, value: dict[str, object],
                                         where: str) -> None:
    layers: dict[str, object] = {"given": {}, "environ": {}, "manifest_defaults": {}}
    layers[layer] = value
    with pytest.raises(ConfigurationError) as caught:
        build_options.resolve(platform="linux", **layers)  # type: ignore[arg-type]
    assert caught.value.message.startswith(f"{where}: ")
    assert len(caught.value.message) < LONGEST_LINE


def test_jobs_from_the_command_line_are_bounded(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    completed = release_in_process("build", "--platform", "linux", "--jobs", str(10 ** 20),
                                   "--out", str(out))
    assert_clean_failure(completed, out, code=2, words="--jobs: jobs must be a whole number")


@pytest.mark.parametrize(("old", "new", "words"), [
    ('name = "edgert"', f'name = "{"e" * 65}"', "project.name is 65 characters long"),
    ('description = "', f'description = "{"d" * 2000}', "project.description is 2"),
    ('dependencies = ["numpy>=1.22"]', f'dependencies = ["numpy>=1.{"2" * 2000}"]',
     "project.dependencies[0] is 2"),
    ('requires-python = ">=3.9"', f'requires-python = ">=3.{"9" * 4200}"',
     "project.requires-python is 4"),
    ('Source = "', f'{"S" * 200} = "x"\nSource = "', "project.urls key is 200 characters"),
    ('classifiers = [', "classifiers = [" + '"x",' * 1001, "project.classifiers has 1006 items"),
    ('library = "edgert"', f'library = "{"l" * 65}"', "runtime.library is a name of 65"),
    ('package = "edgert"', f'package = "{"p" * 2000}"', "tool.release.package is 2000"),
    ("[tool.release.components.runtime]", f"[tool.release.components.{'c' * 200}]",
     "tool.release.components has a key of 200 characters"),
    ('markers = ["edgert_runtime_component"]', f'markers = ["{"m" * 2000}"]',
     "tool.release.components.runtime.markers[0] is 2000 characters long"),
    ('extension-depends = ["runtime", ', "extension-depends = [" + '"runtime", ' * 1002,
     "tool.release.extension-depends has 1006 items"),
])
def test_long_texts_and_lists_are_refused(tmp_path: Path, old: str, new: str,
                                          words: str) -> None:
    assert old in TEXT, old
    _refused(tmp_path, TEXT.replace(old, new, 1), words)


def test_a_long_default_path_is_refused_when_the_manifest_is_read(tmp_path: Path) -> None:
    _refused(tmp_path, _with_defaults(f'out = "{"o" * 2000}"'),
             "tool.release.defaults.out: ")


def test_nesting_is_measured_without_recursion() -> None:
    deep: list[object] = []
    for _ in range(100_000):
        deep = [deep]
    assert _toml.depth(deep) == _toml.MAX_DEPTH + 1      # stops once past the bound
    assert _toml.depth({"a": {"b": [1, 2]}}) == 3 and _toml.depth(5) == 0


@pytest.mark.parametrize("major", ["100000000000000000000", "0", "-12", "100"])
def test_a_cuda_variant_major_version_is_bounded(tmp_path: Path, major: str) -> None:
    """The variant file a manifest's variant names (its `config`) is bounded the same way."""
    from cuda import gpu_variant
    source = ROOT / "cuda" / "variants" / "cu12.toml"
    text, count = re.subn(r"(?m)^major = 12$", f"major = {major}", source.read_text())
    assert count == 1
    path = tmp_path / "cu12.toml"
    path.write_text(text)
    with pytest.raises(ConfigurationError, match=r"\.major is -?\d+, not a CUDA major version"):
        gpu_variant.load(path)
