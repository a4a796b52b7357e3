"""The check interface is typed, and each of its facts has one home (an AST scan of
release/, platforms/ and cuda/):

- a check's status is a ``CheckStatus`` (release/findings.py): nothing reads or writes it as
  ``details["status"]``, and its strings are written nowhere else;
- checks share analyses through ``context.analyses`` (release/verify/analyses.py), never a
  ``context.cache`` dict, and ``VerifyContext`` has no ``cache`` field;
- the CUDA checks hand the build record's typed device-code section to coverage: no
  ``to_json()`` in cuda/'s checks, and coverage takes a ``DeviceCodeRecord``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from release.findings import CheckStatus
from tests.conftest import ROOT
from tests.quality.sources import relative, sources, tree

STATUS_HOME = "release/findings.py"


def _trees() -> Iterator[tuple[str, ast.Module]]:
    for path in sources():
        yield relative(path), tree(path)


def _is_status_key(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == "status"


def _details_status(tree: ast.Module) -> list[int]:
    """Lines reading ``<x>.details["status"]`` / ``<x>.details.get("status")`` or writing a
    ``details={"status": ...}`` / ``finding(..., status=...)`` (the helper's details)."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) \
                and node.value.attr == "details" and _is_status_key(node.slice):
            lines.append(node.lineno)
        elif isinstance(node, ast.Call):
            target = node.func
            if isinstance(target, ast.Attribute) and target.attr == "get" \
                    and isinstance(target.value, ast.Attribute) \
                    and target.value.attr == "details" and node.args \
                    and _is_status_key(node.args[0]):
                lines.append(node.lineno)
            for keyword in node.keywords:
                if keyword.arg == "details" and isinstance(keyword.value, ast.Dict) \
                        and any(key is not None and _is_status_key(key)
                                for key in keyword.value.keys):
                    lines.append(node.lineno)
                if keyword.arg == "status" and isinstance(target, ast.Name) \
                        and target.id == "finding":
                    lines.append(node.lineno)
    return lines


def test_no_check_reads_or_writes_a_status_in_the_details() -> None:
    offenders = [f"{name}:{line}" for name, tree in _trees() for line in _details_status(tree)]
    assert offenders == []


def test_the_status_strings_are_written_only_in_their_home() -> None:
    values = {status.value for status in CheckStatus}
    found = {name for name, tree in _trees() if name != STATUS_HOME
             for node in ast.walk(tree)
             if isinstance(node, ast.Constant) and node.value in values}
    assert not found, sorted(found)


def test_checks_share_analyses_not_a_cache() -> None:
    offenders = [f"{name}:{node.lineno}" for name, tree in _trees() for node in ast.walk(tree)
                 if isinstance(node, ast.Attribute) and node.attr == "cache"
                 and isinstance(node.value, ast.Name) and node.value.id == "context"]
    assert offenders == []
    context = tree(ROOT / "release/verify/context.py")
    (verify_context,) = [node for node in ast.walk(context)
                         if isinstance(node, ast.ClassDef) and node.name == "VerifyContext"]
    fields = {node.target.id for node in verify_context.body
              if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)}
    assert "analyses" in fields and "cache" not in fields


def test_the_cuda_checks_hand_the_typed_record_to_coverage() -> None:
    for name in ("cuda/coverage.py", "cuda/coverage_model.py", "cuda/variant_properties.py"):
        calls = [node.lineno for node in ast.walk(tree(ROOT / name)) if isinstance(node, ast.Call)
                 and isinstance(node.func, ast.Attribute) and node.func.attr == "to_json"]
        assert calls == [], f"{name}:{calls}"
    coverage = tree(ROOT / "cuda/coverage_model.py")
    annotations = {node.name: ast.unparse(node.args.args[1].annotation or ast.Constant(None))
                   for node in ast.walk(coverage) if isinstance(node, ast.FunctionDef)
                   and node.name in ("check_wheel", "check_device_code")}
    assert annotations == {"check_wheel": "DeviceCodeRecord | None",
                           "check_device_code": "DeviceCodeRecord | None"}
