"""The docs say what the code does: every page of docs/ is in docs/index.md, the README keeps
the two command lines CI runs first and its sections in the order a new user needs them, its
C++ lines link what it says they link, the build record's documented example has the
record's keys, the stage list matches the pipeline, and every command-line argument has help."""

from __future__ import annotations

import argparse
import ast
import json
import re

import pytest

from release import manifest
from release.distribution.buildrecord import BuildRecord
from tests.conftest import ROOT

pytestmark = pytest.mark.unit

README = (ROOT / "README.md").read_text(encoding="utf-8")
LINK = re.compile(r"\]\(([^)#]+)(?:#[^)]*)?\)")


def test_every_docs_page_is_listed_in_the_index_with_a_line_of_its_own() -> None:
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    pages = sorted(path.name for path in (ROOT / "docs").glob("*.md") if path.name != "index.md")
    rows = {LINK.search(line).group(1): line for line in index.splitlines()  # type: ignore[union-attr]
            if line.startswith("| [")}
    assert sorted(rows) == pages, "docs/index.md must list every page of docs/, and only those"
    for page, line in rows.items():
        description = line.split("|")[2].strip()
        assert len(description) > 20, f"{page} has no description in docs/index.md"
    assert "(docs/index.md)" in README


def test_the_readme_links_only_files_that_exist() -> None:
    for target in LINK.findall(README):
        if not target.startswith(("http://", "https://")):
            assert (ROOT / target).exists(), target


def test_the_readme_starts_with_the_two_commands_ci_relies_on() -> None:
    commands = [line for line in README.splitlines() if line.startswith("python3 -m venv")]
    assert commands[:2] == [
        "python3 -m venv .venv && . .venv/bin/activate && pip install -r requirements-dev.txt "
        "&& python -m release build --platform linux --out dist",
        "python3 -m venv .venv && . .venv/bin/activate && pip install -r requirements-dev.txt "
        "&& python -m tests.tool_tiers install && python -m pytest -ra",
    ]


def test_ci_runs_the_readmes_second_command_and_nothing_else() -> None:
    """.ci/run may set environment variables first; its one command is the README's."""
    command = [line for line in README.splitlines() if line.startswith("python3 -m venv")][1]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    doing = [line for line in ci if line.strip() and not line.startswith(("#", "export "))
             and line not in ("set -euo pipefail", 'cd "$(dirname "$0")/.."')]
    assert doing == [command]


def test_the_readme_goes_from_what_it_is_to_install_use_build_develop() -> None:
    sections = [line[3:] for line in README.splitlines() if line.startswith("## ")]
    order = ["Installing", "Using it", "Building wheels", "Developing"]
    assert [name for name in sections if name in order] == order
    before_installing = README[:README.index("## Installing")]
    assert "tests/unit" not in before_installing     # development comes after using
    assert "## " not in before_installing.split("\n", 1)[1]   # only what it is, and the two lines


def test_the_readme_timings_are_not_the_warm_rebuild_alone() -> None:
    assert "31 s" not in README
    assert "fresh clone" in README


def test_the_readme_plan_build_line_says_it_builds_every_wheel() -> None:
    line = next(line for line in README.splitlines() if "release plan --build" in line)
    assert "every wheel" in line and "minutes" in line


def _components(words: str, prefix: str) -> set[str]:
    return set(re.findall(prefix + r"([a-z_]+)", words))


def test_the_readmes_two_cmake_lines_link_the_same_libraries() -> None:
    """``edgert::...`` targets (with what they depend on) against ``${EDGERT_LIBRARIES}``
    (every component that is not opt-in, from the manifest) plus the opt-in variable named."""
    loaded = manifest.load(ROOT)
    block = README[README.index("```cmake"):]
    block = block[:block.index("```", 3)]
    targets_line = next(line for line in block.splitlines()
                        if line.startswith("target_link_libraries"))
    variables_line = next(line for line in block.splitlines() if "${EDGERT_LIBRARIES}" in line)
    assert "the same" in variables_line
    by_cmake = {c.cmake_component: c for c in loaded.components if c.cmake_component}

    def closure(names: set[str]) -> set[str]:
        todo, seen = list(names), set()
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(by_cmake[name].depends)
        return seen

    targets = closure(_components(targets_line, "edgert::"))
    variable = {c.cmake_component for c in loaded.components
                if c.cmake_component and not c.opt_in}
    opt_in = {c.cmake_component for c in loaded.components
              if c.cmake_variable and f"${{{c.cmake_variable}}}" in variables_line}
    assert targets == closure(variable | opt_in)
    assert "backend_cpu" in variable       # what a list without edgert::backend_cpu misses


def test_the_documented_build_record_has_the_records_keys() -> None:
    text = (ROOT / "docs" / "build-record.md").read_text(encoding="utf-8")
    start = text.index("```json") + len("```json")
    example = json.loads(text[start:text.index("```", start)])
    record = BuildRecord.from_json(json.dumps(example), where="docs/build-record.md")
    assert sorted(example) == sorted(record.to_json())
    for key in record.to_json():
        assert f"`{key}`" in text or f'"{key}"' in text


def _stage_calls() -> dict[str, set[str]]:
    """Each function of pipeline.py -> the functions it calls (``f``, ``module.f``,
    ``object.f``: the name after the last dot)."""
    tree = ast.parse((ROOT / "release" / "building" / "pipeline.py").read_text(encoding="utf-8"))
    return {node.name: {call.func.id if isinstance(call.func, ast.Name) else call.func.attr
                        for call in ast.walk(node) if isinstance(call, ast.Call)
                        and isinstance(call.func, (ast.Name, ast.Attribute))}
            for node in tree.body if isinstance(node, ast.FunctionDef)}


def test_the_stages_documentation_matches_the_pipeline() -> None:
    """concepts.md and the code: lay out writes the build record and the .dist-info, fix up
    touches only the binaries, pack writes the SBOM and the wheel."""
    calls = _stage_calls()
    assert {"layout_files", "write_files"} <= calls["_lay_out"]
    assert calls["_fix_up"] == {"fix_up", "info", "len"}   # patcher.fix_up; the binaries, logged
    assert {"sbom_file", "write_wheel"} <= calls["_pack"]
    assert not {"write_wheel", "sbom_file"} & (calls["_lay_out"] | calls["_fix_up"])
    assert "layout_files" not in calls["_pack"] | calls["_fix_up"]
    concepts = (ROOT / "docs" / "concepts.md").read_text(encoding="utf-8")
    lay_out = concepts[concepts.index("2. **lay out**"):concepts.index("3. **fix up**")]
    fix_up = concepts[concepts.index("3. **fix up**"):concepts.index("4. **pack**")]
    pack = concepts[concepts.index("4. **pack**"):concepts.index("5. **repair**")]
    assert "_release.json" in lay_out and ".dist-info" in lay_out
    assert ".dist-info" not in fix_up and "SBOM" not in fix_up
    assert "SBOM" in pack and "RECORD" in pack


def test_windows_is_not_said_to_be_unbuildable() -> None:
    for path in (ROOT / "pyproject.toml", ROOT / "docs" / "concepts.md"):
        text = " ".join(path.read_text(encoding="utf-8").split())
        assert not re.search(r"Windows (is declared but )?not buildable yet", text), path
        assert "as Windows today" not in text, path


def _arguments(parser: argparse.ArgumentParser, where: str) -> list[tuple[str, str | None]]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _arguments(sub, f"{where} {name}")
        elif not isinstance(action, argparse._HelpAction):
            found.append((f"{where} {'/'.join(action.option_strings) or action.dest}",
                          action.help))
    return found


def test_every_argument_of_every_command_has_help() -> None:
    from release.__main__ import _parser
    arguments = _arguments(_parser(), "python -m release")
    assert len(arguments) > 30
    assert [name for name, help in arguments if not help] == []
    assert ("python -m release repair wheel",
            "the .whl file to repair (one with edgert/_release.json)") in arguments


def test_every_code_block_runs_or_says_why_not() -> None:
    """A Python or shell block of the README or docs/ runs as written in
    tests/integration/test_doc_blocks.py, unless the line before its fence says it is not run
    (and why, in a sentence) or names the test that does what it does."""
    import ast

    from tests import doc_blocks
    found = doc_blocks.blocks()
    assert len(found) >= 20 and len(doc_blocks.runnable()) >= 4
    for block in found:
        if block.marker == "not run":
            assert len(block.reason.split()) >= 6, f"{block.name}: say why it is not run"
        elif block.marker == "covered by":
            path, _, name = block.reason.partition("::")
            assert (ROOT / path).is_file(), f"{block.name}: no {path}"
            tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
            names = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
            assert name.startswith("test_") and name in names, f"{block.name}: no test {name}"


def test_the_readmes_figures_are_the_measuring_scripts_output() -> None:
    """Tests, minutes and disk in the README come from benchmarks/suite_figures.py, which
    writes them between its markers, or say they are not measured."""
    blocks = dict(re.findall(r"<!-- figures:(\w+) -->(.*?)<!-- /figures:\1 -->", README,
                             re.DOTALL))
    assert set(blocks) == {"unit", "suite"}
    for key, text in blocks.items():
        assert text.startswith("not measured") or (
            "by benchmarks/suite_figures.py)" in text and " passed, " in text), key
    assert "968 tests" not in README
