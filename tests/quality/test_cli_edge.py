"""One command-line edge: a ReleaseError becomes its one line and exit code only in
release.__main__.report_error. The PEP 517 backend's hooks (called by a build frontend in
its own process) and the maintainers' script platforms/linux/update_policies.py end through
it; verify's command line delegates to release.__main__.main; cuda/_fatbin_tool.py is a build
step CMake runs, raising no ReleaseError (its docstring says so)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.quality.sources import sources
from tests.quality.sources import tree as parsed


def _function_of(tree: ast.Module) -> dict[ast.AST, str]:
    owner: dict[ast.AST, str] = {}

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                else function
            owner[child] = inner
            visit(child, inner)
    visit(tree, "")
    return owner


def _error_lines() -> list[str]:
    """Where a string starting "error: " (the edge's message form) is written."""
    found = []
    for path in sources():
        tree = parsed(path)
        owner = _function_of(tree)
        for node in ast.walk(tree):
            first = node.values[0] if isinstance(node, ast.JoinedStr) and node.values else node
            if isinstance(first, ast.Constant) and isinstance(first.value, str) \
                    and first.value.startswith("error: "):
                found.append(f"{path.relative_to(ROOT)}:{owner.get(node, '')}")
    return sorted(set(found))


def test_only_the_edge_writes_error_lines() -> None:
    # report_error: a ReleaseError; main: an interrupt and an unexplained OSError
    assert _error_lines() == ["release/__main__.py:main", "release/__main__.py:report_error"]


def test_the_scan_sees_an_error_line() -> None:
    tree = ast.parse('def f(e):\n    raise SystemExit(f"error: {e}")\n')
    strings = [node for node in ast.walk(tree) if isinstance(node, ast.JoinedStr)]
    assert isinstance(strings[0].values[0], ast.Constant)
    assert strings[0].values[0].value.startswith("error: ")


def test_no_exit_with_a_message_outside_the_edge() -> None:
    """``raise SystemExit("...")`` prints its own message: a second edge."""
    found = []
    for path in sources():
        tree = parsed(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) \
                    and isinstance(node.exc.func, ast.Name) and node.exc.func.id == "SystemExit" \
                    and node.exc.args and isinstance(node.exc.args[0],
                                                     (ast.Constant, ast.JoinedStr)):
                found.append(str(path.relative_to(ROOT)))
    assert found == []


def test_the_backend_and_the_script_end_through_the_edge(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    from platforms.linux import update_policies
    from release import backend
    from release.errors import ConfigurationError
    assert update_policies.main([str(tmp_path)]) == ConfigurationError.exit_code
    assert capsys.readouterr().err == (
        f"error: {tmp_path} has no manylinux-policy.json, musllinux-policy.json (fix: pass "
        "the 'policy' folder of an auditwheel installation)\n")
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("RELEASE_VARIANT", "cu99")
    with pytest.raises(SystemExit) as stopped:
        backend.get_requires_for_build_wheel({})
    assert stopped.value.code == ConfigurationError.exit_code
    err = capsys.readouterr().err
    assert err.startswith("error: unknown variant 'cu99' (fix: use one of: cpu")
    assert err.count("\n") == 1
