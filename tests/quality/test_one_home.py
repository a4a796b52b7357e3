"""Facts the pipeline computes in one place only: the host machine is read by one function
(release.host.Host.current, called only at the edges; everything below them, the
platforms included, is handed the Host value), the facts of one target x variant by
release/building/resolved.py (the variant loaded from its provider, the build route, the
distribution name, the wheel's core metadata), and each format has one reader: TOML tables
(release/_toml.py), ELF (release/binary/elf.py) and wheels (release/distribution/archive.py). A
platform's optional capabilities are Protocol members, never looked up by name. An AST scan
of release/, platforms/ and cuda/ holds each."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import ROOT
from tests.quality.sources import sources
from tests.quality.sources import tree as parsed

# calls that read the host machine's architecture
MACHINE_READERS = {("platform", "machine"), ("platform", "uname"), ("os", "uname")}



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
    for path in sources():
        tree = parsed(path)
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
    assert _machine_reads() == ["release/host.py:current"]


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
    for path in sources():
        tree = parsed(path)
        for call, function in _calls(tree):
            hit = (attribute and isinstance(call.func, ast.Attribute) and call.func.attr == name) \
                or (plain and isinstance(call.func, ast.Name) and call.func.id == name)
            if hit:
                callers.append(f"{path.relative_to(ROOT)}:{function}")
    return callers


def test_one_module_loads_variants() -> None:
    assert _callers("load_variant") == ["release/building/resolved.py:build_variant"]
    # a provider's own build_variant is called by load_variant; the manifest's variants are
    # built only by release/building/resolved.py (the matrix loads each once: load_variants)
    assert sorted(set(_callers("build_variant", attribute=False))) == [
        "release/building/resolved.py:load_variants", "release/building/resolved.py:resolve"]


def test_one_function_computes_the_build_route() -> None:
    """The plan, ``plan`` and ``check-set`` read ResolvedRelease.route; nothing asks the
    platform a second time (the plan once called check_host, then the route)."""
    assert _callers("build_route", plain=False) == ["release/building/resolved.py:build_route"]
    assert _callers("build_route", attribute=False) == ["release/building/resolved.py:route"]
    assert _callers("check_host") == []


def _distribution_choices() -> list[str]:
    """Where a distribution name is chosen: ``x.distribution or y.distribution``, or a
    conditional between two ``.distribution`` values keyed on the variant form."""
    found = []
    for path in sources():
        tree = parsed(path)
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
    assert _distribution_choices() == ["release/building/resolved.py:distribution_of"]


def test_the_wheel_s_core_metadata_has_one_home() -> None:
    """[project] is read and validated once, when the manifest is loaded (manifest.parse
    keeps the result, Manifest.metadata); the wheel's METADATA, for any distribution, is
    rendered from it only by ResolvedRelease.metadata (the lay-out stage and the backend
    read it from there). core_metadata reads [project] afresh: only the sdist's PKG-INFO
    (the project's own name) uses it."""
    assert sorted(_callers("project_metadata")) == [
        "release/distribution/core_metadata.py:core_metadata", "release/manifest.py:parse"]
    assert sorted(_callers("core_metadata")) == ["release/building/sdist.py:write_sdist"]
    assert sorted(_callers("for_distribution")) == [
        "release/building/resolved.py:metadata",
        "release/distribution/core_metadata.py:core_metadata"]
    # the library reads [project] in one function (the sdist's file list asks it too)
    assert sorted(_callers("from_pyproject")) == ["release/distribution/core_metadata.py:standard"]
    tree = ast.parse((ROOT / "release" / "building" / "sdist.py").read_text())
    assert not [call for call, _ in _calls(tree) if isinstance(call.func, ast.Name)
                and call.func.id == "core_metadata"
                and any(keyword.arg == "name" for keyword in call.keywords)]


def test_no_platform_reads_the_host_itself() -> None:
    """Platforms are handed the edge's Host (build_route, cmake_arguments, toolchain_tools,
    runner, emulated); none makes its own or reads the operating system."""
    assert [caller for caller in _callers("current") if caller.startswith("platforms/")] == []
    for path in sources("platforms"):
        assert "Host.current" not in path.read_text(), path
    # nor the operating system: ``emulated`` too is handed verify's Host
    reads = []
    for path in sources("platforms"):
        tree = parsed(path)
        aliases = _module_aliases(tree)
        for node, function in _nodes(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and (
                    (aliases.get(node.value.id) == "platform" and node.attr == "system")
                    or (aliases.get(node.value.id) == "os" and node.attr == "name")):
                reads.append(f"{path.relative_to(ROOT)}:{function}")
    assert reads == []


# The edges, which make the one Host of a command and hand it down: the CLI's commands, the
# PEP 517 backend's hooks and verify's run for a caller that hands it none
HOST_EDGES = ["release/__main__.py:_build", "release/__main__.py:_check_set",
              "release/__main__.py:_plan", "release/backend.py:build_wheel",
              "release/backend.py:prepare_metadata_for_build_wheel",
              "release/verify/platform_claim.py:host_for"]
# verify's API, which a caller may use without a Host (host_for then makes it)
HOST_OPTIONAL = ["release/verify/api.py:verify_argument", "release/verify/api.py:verify_wheel",
                 "release/verify/platform_claim.py:claim_wheel",
                 "release/verify/run.py:run_verify"]


def _host_makers() -> list[str]:
    """``path:function`` of each ``Host.current()``."""
    found = []
    for path in sources():
        tree = parsed(path)
        for call, function in _calls(tree):
            if isinstance(call.func, ast.Attribute) and call.func.attr == "current" \
                    and isinstance(call.func.value, ast.Name) and call.func.value.id == "Host":
                found.append(f"{path.relative_to(ROOT)}:{function}")
    return sorted(found)


def test_only_the_edges_make_the_host() -> None:
    assert _host_makers() == HOST_EDGES


def test_below_the_edges_the_host_is_never_optional() -> None:
    """No ``host: Host | None = None`` that would make its own Host below the edge (the
    plan, the matrix, check-set and the backend's release once did)."""
    optional = []
    for path in sources():
        tree = parsed(path)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
                if any(argument.annotation is not None
                       and re.fullmatch(r"Host \| None|None \| Host|Optional\[Host\]",
                                        ast.unparse(argument.annotation))
                       for argument in arguments):
                    optional.append(f"{path.relative_to(ROOT)}:{node.name}")
    assert sorted(optional) == HOST_OPTIONAL


def test_the_host_scans_see_what_they_look_for() -> None:
    """The scans' own forms: a Host.current() call and an optional Host parameter."""
    tree = ast.parse("def f(host: Host | None = None):\n    return Host.current()\n")
    (call, function), = [(c, f) for c, f in _calls(tree)
                         if isinstance(c.func, ast.Attribute) and c.func.attr == "current"]
    assert function == "f" and ast.unparse(call) == "Host.current()"
    (function_node,) = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    annotation = function_node.args.args[0].annotation
    assert annotation is not None and ast.unparse(annotation) == "Host | None"


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
    for path in sources():
        tree = parsed(path)
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
    """Other modules take only the loop from release/building/pipeline.py; the facts they share come
    from the modules that own them (resolved, distinfo, repair), not through the pipeline."""
    imported = {}
    for path in sources():
        if path == ROOT / "release" / "building" / "pipeline.py":
            continue
        tree = parsed(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "release.building.pipeline":
                imported[str(path.relative_to(ROOT))] = sorted(a.name for a in node.names)
            if isinstance(node, ast.ImportFrom) and node.module == "release" and any(
                    alias.name == "pipeline" for alias in node.names):
                imported[str(path.relative_to(ROOT))] = ["pipeline (the module)"]
    assert imported == {"release/__main__.py": ["run"], "release/backend.py": ["run"],
                        "release/building/matrix.py": ["run"]}


# -- one reader per format: TOML tables, ELF, wheels ---------------------------------------


def _relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _toml_imports(tree: ast.Module) -> bool:
    """Whether a module imports tomllib or tomli (directly, or the _compat shim's name)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(
                alias.name.split(".")[0] in ("tomllib", "tomli") for alias in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (
                (node.module or "").split(".")[0] in ("tomllib", "tomli")
                or any(alias.name in ("tomllib", "tomli") for alias in node.names)):
            return True
        if isinstance(node, ast.Attribute) and node.attr in ("tomllib", "tomli"):
            return True
    return False


def test_only_the_toml_module_imports_tomllib() -> None:
    """release/_toml.py read_toml is the one TOML reader; release/_compat.py holds the import
    for Pythons before 3.11."""
    importers = [_relative(path) for path in sources() if _toml_imports(parsed(path))]
    assert importers == ["release/_compat.py", "release/_toml.py"]


def test_the_toml_scan_sees_each_form() -> None:
    for text in ("import tomllib", "import tomli as t", "from release._compat import tomllib",
                 "from tomllib import loads", "from release import _compat\n_compat.tomllib"):
        assert _toml_imports(ast.parse(text)), text
    assert not _toml_imports(ast.parse("from release._toml import read_toml"))


ELF_MAGIC = b"\x7fELF"
# struct layouts of ELF's file header and section / program headers, 32- and 64-bit
_ELF_LAYOUT = re.compile(r"HHIQQQIHHHHHH|HHIIIIIHHHHHH|IIQQQQIIQQ|IIIIIIIIII|IIQQQQQQ")
_STRUCT_CALLS = {"Struct", "unpack", "unpack_from", "iter_unpack", "calcsize"}
# the ELF magic outside the reader: format detection only (which members are binaries)
ELF_MAGIC_USERS = ["release/binary/elf.py", "release/distribution/archive.py"]


def _elf_parsing(tree: ast.Module) -> list[str]:
    """The ELF table layouts a module unpacks with struct."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else \
            node.func.id if isinstance(node.func, ast.Name) else ""
        if name in _STRUCT_CALLS and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str) \
                and _ELF_LAYOUT.search(node.args[0].value):
            found.append(node.args[0].value)
    return found


def _names_elf_magic(tree: ast.Module) -> bool:
    return any(isinstance(node, ast.Constant) and isinstance(node.value, bytes)
               and node.value.startswith(ELF_MAGIC) for node in ast.walk(tree))


def test_only_release_binary_parses_elf() -> None:
    """release/binary/elf.py is the one ELF reader (cuda/fatbin.py reads a library's section
    table and a cubin's through it): no struct unpacking of ELF tables anywhere else, no
    second module named for ELF, and the magic named only where members are classified."""
    outside = [path for path in sources() if "release/binary" not in _relative(path)]
    parsers = {_relative(path): _elf_parsing(parsed(path)) for path in outside}
    assert {path: layouts for path, layouts in parsers.items() if layouts} == {}
    assert [_relative(path) for path in outside if "elf" in path.stem.lower()] == []
    assert [_relative(path) for path in sources()
            if _names_elf_magic(parsed(path))] == ELF_MAGIC_USERS


def test_the_elf_scan_sees_the_old_second_reader() -> None:
    """The form cuda/_elf.py had: an ELF64 header and section layout unpacked with struct."""
    tree = ast.parse('import struct\n_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")\n'
                     'def f(t):\n    return struct.unpack_from("<IIQQQQIIQQ", t, 0)\n'
                     'MAGIC = b"\\x7fELF"\n')
    assert _elf_parsing(tree) == ["<16sHHIQQQIHHHHHH", "<IIQQQQIIQQ"]
    assert _names_elf_magic(tree)


WHEEL_READER = "release/distribution/archive.py"


def _zip_reads(tree: ast.Module) -> list[str]:
    """Each place a module opens a zip for reading: ZipFile with no mode or a reading one
    ('r', 'a'), is_zipfile, zipfile.Path; through the module or names imported from it."""
    modules = {name for name, module in _module_aliases(tree).items() if module == "zipfile"}
    imported = {alias.asname or alias.name: alias.name for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module == "zipfile"
                for alias in node.names}
    found = []
    for call, function in _calls(tree):
        target = call.func
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                and target.value.id in modules:
            name = target.attr
        elif isinstance(target, ast.Name) and target.id in imported:
            name = imported[target.id]
        else:
            continue
        if name == "ZipFile":
            mode = call.args[1] if len(call.args) > 1 else next(
                (keyword.value for keyword in call.keywords if keyword.arg == "mode"), None)
            writing = isinstance(mode, ast.Constant) and mode.value in ("w", "x")
            if not writing:
                found.append(f"{function}: ZipFile")
        elif name in ("is_zipfile", "Path"):
            found.append(f"{function}: {name}")
    return found


def test_one_module_reads_wheels() -> None:
    """release/distribution/archive.py is the one wheel reader (pip's rules, CRC-32 streaming,
    budgets): verify, repair, check-set, the platforms and the rewrite paths of
    release/distribution/wheel.py read through it; release/distribution/wheel.py opens zips for
    writing only."""
    readers = {_relative(path): _zip_reads(parsed(path)) for path in sources()}
    assert {path: reads for path, reads in readers.items() if reads and path != WHEEL_READER} \
        == {}
    assert readers[WHEEL_READER] == ["list_members: ZipFile", "has_zip_directory: is_zipfile"]


def test_the_zip_scan_sees_each_form() -> None:
    tree = ast.parse('import zipfile as z\nfrom zipfile import ZipFile, is_zipfile as seen\n'
                     'def a(p):\n    z.ZipFile(p)\n    z.ZipFile(p, "r")\n'
                     '    ZipFile(p, mode="a")\n    seen(p)\n    z.Path(p)\n'
                     'def b(p):\n    z.ZipFile(p, "w")\n    ZipFile(p, mode="x")\n')
    assert _zip_reads(tree) == ["a: ZipFile", "a: ZipFile", "a: ZipFile", "a: is_zipfile",
                                "a: Path"]


# -- the device code of a wheel's binaries: read by one function of the CUDA provider ------

DEVICE_CODE_READERS = {"read_device_code", "read_containers"}


def _device_code_reads(tree: ast.Module) -> list[str]:
    """The functions that call cuda/fatbin.py's readers, by name, attribute or alias."""
    aliases = {alias.asname or alias.name for node in ast.walk(tree)
               if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("fatbin")
               for alias in node.names if alias.name in DEVICE_CODE_READERS}
    found = []
    for call, function in _calls(tree):
        target = call.func
        if (isinstance(target, ast.Attribute) and target.attr in DEVICE_CODE_READERS) or (
                isinstance(target, ast.Name) and target.id in aliases | DEVICE_CODE_READERS):
            found.append(function)
    return found


def test_one_function_reads_the_device_code() -> None:
    """cuda/device_code.py ``_read`` is the provider's one reader of fatbinaries (the
    coverage and variant-properties checks share its result through the run's analyses);
    cuda/fatbin.py, which defines the readers, is left out."""
    callers = [f"{_relative(path)}:{function}"
               for path in sources("cuda") if path.name != "fatbin.py"
               for function in _device_code_reads(parsed(path))]
    assert callers == ["cuda/device_code.py:_read", "cuda/device_code.py:_read"]


def test_the_device_code_scan_sees_each_form() -> None:
    tree = ast.parse("from cuda.fatbin import read_containers as rc\nfrom cuda import fatbin\n"
                     "def a():\n    return rc(b'')\n"
                     "def b():\n    return fatbin.read_device_code('x')\n"
                     "def c():\n    return read_containers(b'')\n")
    assert _device_code_reads(tree) == ["a", "b", "c"]


def test_the_cuda_checks_ask_the_analyses_for_the_device_code() -> None:
    """Both checks reach the device code as ``context.analysis(device_code.of_wheel)``."""
    for name in ("cuda/coverage.py", "cuda/variant_properties.py"):
        asked = [ast.unparse(node) for node in ast.walk(parsed(ROOT / name))
                 if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                 and node.func.attr == "analysis"]
        assert asked == ["context.analysis(device_code.of_wheel)"], name
