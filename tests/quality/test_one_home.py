"""Facts the pipeline computes in one place only: the host machine is read by one function
(release.loader.Host.current; everything else, the platforms included, is handed the Host
value), and the facts of one target x variant by release/resolved.py: the variant loaded
from its provider, the build route, the distribution name, the wheel's core metadata. A
platform's optional capabilities are Protocol members, never looked up by name. An AST scan
of release/, platforms/ and cuda/ holds each."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import ROOT

PACKAGES = ("release", "platforms", "cuda")
# calls that read the host machine's architecture
MACHINE_READERS = {("platform", "machine"), ("platform", "uname"), ("os", "uname")}


def _sources() -> Iterator[Path]:
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))


def _module_aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> module, for `import platform as host_platform` and the like."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                aliases[alias.asname or alias.name] = alias.name
    return aliases


def _calls(tree: ast.Module) -> Iterator[tuple[ast.Call, str]]:
    """Each call with the name of the function it is in ("" at module level)."""
    def visit(node: ast.AST, function: str) -> Iterator[tuple[ast.Call, str]]:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                else function
            if isinstance(child, ast.Call):
                yield child, inner
            yield from visit(child, inner)
    yield from visit(tree, "")


def _machine_reads() -> list[str]:
    found = []
    for path in _sources():
        tree = ast.parse(path.read_text(), filename=str(path))
        aliases = _module_aliases(tree)
        imported = {alias.asname or alias.name for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) and node.module in ("platform", "os")
                    for alias in node.names if alias.name in ("machine", "uname")}
        for call, function in _calls(tree):
            target = call.func
            hit = isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                and (aliases.get(target.value.id, ""), target.attr) in MACHINE_READERS
            hit = hit or (isinstance(target, ast.Name) and target.id in imported)
            if hit:
                found.append(f"{path.relative_to(ROOT)}:{function}")
    return found


def test_one_function_reads_the_host_machine() -> None:
    assert _machine_reads() == ["release/loader.py:current"]


def test_the_scan_sees_an_aliased_read() -> None:
    """The scan finds the forms the pipeline used before (an aliased module, a local import)."""
    tree = ast.parse("import platform as p\ndef f():\n    import os\n    return p.machine(), "
                     "os.uname()\n")
    aliases = _module_aliases(tree)
    hits = [(aliases[c.func.value.id], c.func.attr, f) for c, f in _calls(tree)
            if isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Name)]
    assert hits == [("platform", "machine", "f"), ("os", "uname", "f")]


def _callers(name: str, *, attribute: bool = True, plain: bool = True) -> list[str]:
    """``path:function`` of each call of ``name`` (``name(...)`` when ``plain``,
    ``x.name(...)`` when ``attribute``)."""
    callers = []
    for path in _sources():
        tree = ast.parse(path.read_text(), filename=str(path))
        for call, function in _calls(tree):
            hit = (attribute and isinstance(call.func, ast.Attribute) and call.func.attr == name) \
                or (plain and isinstance(call.func, ast.Name) and call.func.id == name)
            if hit:
                callers.append(f"{path.relative_to(ROOT)}:{function}")
    return callers


def test_one_module_loads_variants() -> None:
    assert _callers("load_variant") == ["release/resolved.py:build_variant"]
    # a provider's own build_variant is called by load_variant; the manifest's variants are
    # built only by release/resolved.py (the matrix loads each once: load_variants)
    assert sorted(set(_callers("build_variant", attribute=False))) == [
        "release/resolved.py:load_variants", "release/resolved.py:resolve"]


def test_one_function_computes_the_build_route() -> None:
    """The plan, ``plan`` and ``check-set`` read ResolvedRelease.route; nothing asks the
    platform a second time (the plan once called check_host, then the route)."""
    assert _callers("build_route", plain=False) == ["release/resolved.py:build_route"]
    assert _callers("build_route", attribute=False) == ["release/resolved.py:route"]
    assert _callers("check_host") == []


def _distribution_choices() -> list[str]:
    """Where a distribution name is chosen: ``x.distribution or y.distribution``, or a
    conditional between two ``.distribution`` values keyed on the variant form."""
    found = []
    for path in _sources():
        tree = ast.parse(path.read_text(), filename=str(path))
        for node, function in _nodes(tree):
            if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and all(
                    isinstance(value, ast.Attribute) and value.attr == "distribution"
                    for value in node.values):
                found.append(f"{path.relative_to(ROOT)}:{function}")
            if isinstance(node, ast.IfExp) and "VARIANT" in ast.dump(node.test) and any(
                    isinstance(branch, ast.Attribute) and branch.attr == "distribution"
                    for branch in (node.body, node.orelse)):
                found.append(f"{path.relative_to(ROOT)}:{function}")
    return found


def _nodes(tree: ast.Module) -> Iterator[tuple[ast.AST, str]]:
    def visit(node: ast.AST, function: str) -> Iterator[tuple[ast.AST, str]]:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                else function
            yield child, inner
            yield from visit(child, inner)
    yield from visit(tree, "")


def test_one_function_names_the_distribution() -> None:
    assert _distribution_choices() == ["release/resolved.py:distribution_of"]


def test_the_wheel_s_core_metadata_has_one_home() -> None:
    """The manifest validates [project] when it is loaded and the sdist writes PKG-INFO (the
    project's own name); the wheel's METADATA, for any distribution, is computed only by
    ResolvedRelease.metadata (the lay-out stage and the backend read it from there)."""
    assert sorted(_callers("core_metadata")) == [
        "release/manifest.py:parse", "release/resolved.py:metadata",
        "release/sdist.py:write_sdist"]
    named = [caller for caller in _callers("core_metadata") if "resolved" not in caller]
    for path in {caller.split(":")[0] for caller in named}:
        tree = ast.parse((ROOT / path).read_text())
        assert not [call for call, _ in _calls(tree) if isinstance(call.func, ast.Name)
                    and call.func.id == "core_metadata"
                    and any(keyword.arg == "name" for keyword in call.keywords)], path


def test_no_platform_reads_the_host_itself() -> None:
    """Platforms are handed the plan's Host (build_route, cmake_arguments, toolchain_tools,
    runner); none makes its own."""
    assert [caller for caller in _callers("current") if caller.startswith("platforms/")] == []
    for path in sorted((ROOT / "platforms").rglob("*.py")):
        assert "Host.current" not in path.read_text(), path
    # the operating system: only in ``emulated``, which verify's edge asks while it makes
    # its Host (release/verify/run.py passes it no Host)
    reads = []
    for path in sorted((ROOT / "platforms").rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        aliases = _module_aliases(tree)
        for node, function in _nodes(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and (
                    (aliases.get(node.value.id) == "platform" and node.attr == "system")
                    or (aliases.get(node.value.id) == "os" and node.attr == "name")):
                reads.append(f"{path.relative_to(ROOT)}:{function}")
    assert reads == ["platforms/linux/__init__.py:emulated",
                     "platforms/windows/__init__.py:emulated"]


def _capabilities() -> set[str]:
    """The members of the Platform and LoaderModel protocols."""
    names: set[str] = set()
    for path, protocol in (("release/platform.py", "Platform"),
                           ("release/loader.py", "LoaderModel")):
        tree = ast.parse((ROOT / path).read_text())
        (found,) = [node for node in tree.body
                    if isinstance(node, ast.ClassDef) and node.name == protocol]
        for member in found.body:
            if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(member.name)
            elif isinstance(member, ast.AnnAssign) and isinstance(member.target, ast.Name):
                names.add(member.target.id)
    return names


def test_platform_capabilities_are_not_looked_up_by_name() -> None:
    """``getattr(platform, "parts")`` and the like: a capability the type checker cannot
    see. Each is a Protocol member with a default instead."""
    capabilities = _capabilities()
    assert {"parts", "merge", "requested_arch", "first_configure_note", "for_wheel",
            "build_route", "runner"} <= capabilities
    lookups = []
    for path in _sources():
        tree = ast.parse(path.read_text(), filename=str(path))
        for call, function in _calls(tree):
            if isinstance(call.func, ast.Name) and call.func.id in ("getattr", "hasattr") \
                    and len(call.args) >= 2 and isinstance(call.args[1], ast.Constant) \
                    and call.args[1].value in capabilities:
                lookups.append(f"{path.relative_to(ROOT)}:{function}:{call.args[1].value}")
    assert lookups == []


def test_the_capability_scan_sees_a_lookup() -> None:
    tree = ast.parse('def f(platform):\n    return getattr(platform, "parts", None)\n')
    (call, function), = [(c, f) for c, f in _calls(tree) if isinstance(c.func, ast.Name)]
    assert (call.func.id, call.args[1].value, function) == ("getattr", "parts", "f")


def test_the_pipeline_is_no_hub() -> None:
    """Other modules take only the loop from release/pipeline.py; the facts they share come
    from the modules that own them (resolved, distinfo, repair), not through the pipeline."""
    imported = {}
    for path in _sources():
        if path == ROOT / "release" / "pipeline.py":
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "release.pipeline":
                imported[str(path.relative_to(ROOT))] = sorted(a.name for a in node.names)
            if isinstance(node, ast.ImportFrom) and node.module == "release" and any(
                    alias.name == "pipeline" for alias in node.names):
                imported[str(path.relative_to(ROOT))] = ["pipeline (the module)"]
    assert imported == {"release/__main__.py": ["run"], "release/backend.py": ["run"],
                        "release/matrix.py": ["run"]}
