"""Duplicate definitions: strong exported symbols defined by more than one shipped library.

Ignored, since the loader cannot bind one user to the wrong copy or they are the same code:
linker-generated symbols every shared object defines (BENIGN), weak definitions (vague
linkage: inline functions, templates), STB_GNU_UNIQUE ones (merged into one copy per process
by design), version-node symbols (a version definition's own name: OPENSSL_1_1_0), module
init functions (PyInit_*), and symbols only extension modules define (loaded RTLD_LOCAL, they
do not interpose on each other).

Two definitions clash only where the loader can bind one image's reference to either: both
libraries are in one lookup scope (what one extension module, or one library the package
opens itself, loads with it: each such file is opened RTLD_LOCAL, unless the package's Python
opens libraries RTLD_GLOBAL, which puts those together), and an image in that scope binds by
name (the loader model says which images do: on Windows none, each import names its DLL; on
macOS only images outside the two-level namespace).

Reported apart: byte-identical copies of one library (one
finding per set of copies; a copy counts as its original among the definers) and C++
vague-linkage symbols (one note): std:: symbols, type information, vtables, guard variables
and template instances, which every C++ module that uses them may define, the same by the
one-definition rule. A third-party wheel's clashes beyond a few sets of libraries are one
finding with the largest sets in its details: one export policy, one root cause."""

from __future__ import annotations

from dataclasses import dataclass

from release.binary.model import GLOBAL
from release.findings import Finding, Severity
from release.loader import LoaderModel
from release.verify import linkage_model
from release.verify.checks._common import finding, not_run
from release.verify.context import VerifyContext
from release.verify.python_sources import python_files
from release.verify.wheel_model import BinaryFile, WheelModel

NAME = "duplicates"
RUNS_PROGRAMS = False
# Symbols a linker makes in every image (section bounds, the image's own handle and header;
# the readers drop a leading underscore, so __mh_dylib_header reads _mh_dylib_header). Some
# linkers (zig's) export them from every image; each image binds its own.
# GNU ld's AArch64 and Arm scripts add __bss_start__, _bss_end__ and __bss_end__ to every
# shared object (present in every aarch64 library), as its other scripts add __bss_start.
BENIGN = frozenset({"_init", "_fini", "__bss_start", "_edata", "_end", "__end__", "_etext",
                    "__bss_start__", "__bss_end__", "_bss_end__", "__bss_end", "_bss_start",
                    "__data_start", "data_start", "_IO_stdin_used", "__dso_handle",
                    "_mh_dylib_header", "_mh_bundle_header", "_mh_execute_header"})
_STD = ("_ZNSt", "_ZNKSt", "_ZSt", "_ZTISt", "_ZTSSt", "_ZTVSt", "_ZTTSt", "_ZGVZNSt",
        "_ZNSa", "_ZNKSa", "_ZNSs", "_ZNKSs", "_ZNSi", "_ZNSo", "_ZNSd")
# type information, vtables, guards, TLS wrappers, statics of inline functions (_ZZ) and
# the transactional-memory clones of std:: members (_ZGTt), which every C++ module that uses
# them may define, the same by the one-definition rule
_VAGUE = ("_ZTI", "_ZTS", "_ZTV", "_ZTT", "_ZGV", "_ZTH", "_ZTW", "_ZZ", "_ZGTt")
# the C++ ABI's support routines a toolchain links statically into each module (a devtoolset's
# libstdc++_nonshared.a): the same code in every copy
_RUNTIME = ("__cxa_", "__gxx_")
_SAMPLE = 10
_GROUPS_SHOWN = 3   # a third-party wheel's clash groups reported one by one, at most


def _loadable(wheel: WheelModel, loader: LoaderModel) -> list[BinaryFile]:
    return [binary for binary in wheel.binaries   # programs are not loaded together
            if loader.is_loadable_library(binary.info)]


@dataclass(frozen=True)
class Scope:
    """Libraries (wheel paths) in one lookup scope, and those of them that bind by name."""

    members: frozenset[str]
    by_name: frozenset[str]
    merged: bool = False   # only the package's RTLD_GLOBAL opens might put them together


def scopes(wheel: WheelModel, context: VerifyContext, loader: LoaderModel) -> list[Scope]:
    """The lookup scopes in which some image binds by name: each file loaded on its own (an
    extension module; a library no shipped binary needs, which the package opens itself)
    with everything it loads; the libraries the package opens, all together, when its
    Python opens libraries RTLD_GLOBAL (``merged``: which of them it opens in one process,
    and whether together, the files do not say: alternatives chosen at run time never
    meet)."""
    binaries = _loadable(wheel, loader)
    loads = _loads(wheel, context, loader)
    loaded = {path for targets in loads.values() for path in targets}
    entries = [binary for binary in binaries if binary.is_extension or binary.path not in loaded]
    closures = {binary.path: _closure(binary.path, loads) for binary in entries}
    found = [Scope(closures[binary.path], frozenset()) for binary in entries]
    opened = {binary.path: closures[binary.path] for binary in entries
              if not binary.is_extension}
    if wheel.global_openers and len(opened) > 1:
        spelled = _named_by_openers(wheel, context, opened)
        if len(spelled) > 1:   # the opener names them: it opens them together
            found.append(Scope(frozenset().union(*(opened[path] for path in spelled)),
                               frozenset()))
        found.append(Scope(frozenset().union(*opened.values()), frozenset(), merged=True))
    infos = {binary.path: binary.info for binary in binaries}
    named = [Scope(scope.members, frozenset(path for path in scope.members
                                            if loader.binds_by_name(infos[path])), scope.merged)
             for scope in found if len(scope.members) > 1]
    return [scope for scope in named if scope.by_name]


def _loads(wheel: WheelModel, context: VerifyContext,
           loader: LoaderModel) -> dict[str, set[str]]:
    """For each loadable library (wheel path), the shipped libraries it loads itself."""
    by_installed = {binary.installed: binary.path for binary in _loadable(wheel, loader)}
    loads: dict[str, set[str]] = {}
    for item in linkage_model.resolutions(context):
        target = by_installed.get(item.target) if item.kind == linkage_model.IN_WHEEL else None
        if target is not None and target != item.binary:
            loads.setdefault(item.binary, set()).add(target)
    return loads


def _unprovided(wheel: WheelModel, context: VerifyContext, loader: LoaderModel,
                definers: dict[str, list[str]]) -> list[Finding]:
    """One warning per image that binds by name although its format can record each
    import's library (``names_providers``: a flat-namespace image; where the loader model
    resolves from the process's global scope by design, nothing is judged) and imports
    symbols that none of the libraries it loads define but another shipped library does: the
    loader resolves them from whatever image defining the name was loaded first, or fails
    when none was."""
    loads = _loads(wheel, context, loader)
    findings = []
    for binary in _loadable(wheel, loader):
        if not (loader.binds_by_name(binary.info) and loader.names_providers(binary.info)):
            continue
        closure = _closure(binary.path, loads)
        missing = sorted(
            symbol.name for symbol in binary.info.dynamic_symbols
            if not symbol.defined and symbol.binding == GLOBAL and symbol.name in definers
            and not closure.intersection(definers[symbol.name]))
        if missing:
            providers = sorted({path for name in missing for path in definers[name]})
            findings.append(finding(
                NAME, Severity.WARNING, binary.path, f"imports {len(missing)} symbols by name "
                f"(flat namespace) that none of the libraries it loads define, e.g. "
                f"{missing[0]}; only {', '.join(providers[:3])} defines them",
                why="the loader binds them to whatever loaded image defines them first: they "
                    "resolve only when that library happens to be loaded before, else the load "
                    "fails",
                fix="link the image against the library that defines them (two-level "
                    "namespace, -Wl,-twolevel_namespace), or load it from this image",
                count=len(missing), sample=missing[:_SAMPLE], providers=providers[:_SAMPLE]))
    return findings


def _named_by_openers(wheel: WheelModel, context: VerifyContext,
                      opened: dict[str, frozenset[str]]) -> list[str]:
    """The libraries the package opens itself whose file names its RTLD_GLOBAL openers spell
    out (``ctypes.CDLL(join(here, 'liba.so'), RTLD_GLOBAL)`` for each of a list): those it
    opens together. A name built at run time (one backend of several) is not spelled."""
    openers = set(wheel.global_openers)
    texts = [text for _, text in python_files(wheel, openers.__contains__,
                                              context.options.limits)]
    return sorted(path for path in opened
                  if any(path.rsplit("/", 1)[-1] in text for text in texts))


def _closure(start: str, loads: dict[str, set[str]]) -> frozenset[str]:
    seen, pending = {start}, [start]
    while pending:
        for target in loads.get(pending.pop(), ()):
            if target not in seen:
                seen.add(target)
                pending.append(target)
    return frozenset(seen)


def _meeting(libraries: tuple[str, ...], found: list[Scope], users: frozenset[str]
             ) -> tuple[tuple[str, ...], bool]:
    """The definers that share a scope with another definer where an image binding by name
    uses the symbol (defines or imports it: each image of a two-level namespace binds to
    the library it was linked against, whatever another image in its scope does), and
    whether they meet only in the scope the package's RTLD_GLOBAL opens might make."""
    together: set[str] = set()
    merged_only = True
    for scope in found:
        inside = scope.members.intersection(libraries)
        if len(inside) > 1 and (inside & scope.by_name or users & scope.by_name):
            together |= inside
            merged_only = merged_only and scope.merged
    return tuple(sorted(together)), merged_only and bool(together)


def check(wheel: WheelModel, context: VerifyContext) -> list[Finding]:
    loader = context.loader
    if loader is None:
        return [not_run(NAME, "no loader model claims the wheel's platform tag")]
    binaries = _loadable(wheel, loader)
    extensions = {binary.path for binary in binaries if binary.is_extension}
    findings, copies = _copies(wheel, binaries)
    copy_of = {path: group[0] for group in copies for path in group}
    found = scopes(wheel, context, loader)
    definers: dict[str, list[str]] = {}
    importers: dict[str, set[str]] = {}
    for binary in binaries:
        # whose imports matter: a by-name image that may sit beside definers that do not
        # bind by name (a flat image among two-level ones)
        flat = loader.binds_by_name(binary.info) and loader.names_providers(binary.info)
        for symbol in binary.info.dynamic_symbols:
            if not symbol.defined:
                if flat:
                    importers.setdefault(symbol.name, set()).add(binary.path)
            elif (symbol.exported and symbol.binding == GLOBAL and symbol.name not in BENIGN
                    and symbol.name != symbol.version and not symbol.name.startswith("PyInit_")):
                definers.setdefault(symbol.name, []).append(binary.path)
    # One group per set of definers: linear in the symbols, one finding per root cause
    # (the same code shipped N times is one finding, not N*(N-1)/2 pairs).
    groups: dict[tuple[str, ...], list[str]] = {}
    standard: dict[tuple[str, ...], list[str]] = {}
    maybe: dict[tuple[str, ...], list[str]] = {}   # meeting only if opened together
    for name, paths in definers.items():
        libraries = tuple(sorted(set(paths)))
        if len(libraries) < 2 or set(libraries) <= extensions:
            continue
        libraries, merged_only = _meeting(libraries, found,
                                          frozenset(importers.get(name, ())))
        if len(libraries) < 2 or set(libraries) <= extensions:
            continue  # never in one scope: they cannot interpose
        if len({copy_of.get(path, path) for path in libraries}) < 2:
            continue  # only copies of one library: reported once as copies
        libraries = tuple(sorted({copy_of.get(path, path) for path in libraries}))
        target = standard if _vague(name) else maybe if merged_only else groups
        target.setdefault(libraries, []).append(name)
    record = wheel.build_record
    components = {c.file for c in record.components} if record else set()
    theirs = [(libraries, names) for libraries, names in groups.items()
              if not all(path in components for path in libraries)]
    if len(theirs) > _GROUPS_SHOWN:
        findings.append(_summary(theirs))
        groups = {libraries: names for libraries, names in groups.items()
                  if all(path in components for path in libraries)}
    for libraries, names in sorted(groups.items()):
        ours = all(path in components for path in libraries)
        findings.append(finding(
            NAME, Severity.ERROR if ours else Severity.WARNING, libraries[-1],
            _what(len(names), "exported symbols", libraries),
            why="the loader binds every user to whichever loads first",
            fix="define each symbol in one library (hide internals with -fvisibility=hidden)",
            pair=list(libraries[:2]), libraries=list(libraries[:_SAMPLE]),
            library_count=len(libraries), count=len(names), sample=sorted(names)[:_SAMPLE]))
    if maybe:
        findings.append(_opened_together(maybe, wheel.global_openers))
    findings += _unprovided(wheel, context, loader, definers)
    if standard:
        names = sorted({name for group in standard.values() for name in group})
        exporters = sorted({path for group in standard for path in group})
        findings.append(finding(
            NAME, Severity.INFO, "", f"{len(names)} C++ vague-linkage symbols (std::, type "
            f"information, template instances) are exported by more than one of "
            f"{len(exporters)} libraries", why="every C++ module that uses them may define "
            "them; one copy wins, and the one-definition rule makes them the same",
            fix="export only the API (a version script or -fvisibility=hidden)",
            count=len(names), libraries=exporters[:_SAMPLE], sample=names[:_SAMPLE]))
    return findings


def _opened_together(groups: dict[tuple[str, ...], list[str]],
                     openers: tuple[str, ...]) -> Finding:
    """One note for the libraries that define the same symbols and meet only if the
    package opens them together with RTLD_GLOBAL (alternatives it chooses between, or a
    library for another vendor's runtime, never do)."""
    libraries = sorted({path for paths in groups for path in paths})
    symbols = sum(len(names) for names in groups.values())
    return finding(
        NAME, Severity.INFO, "", f"{symbols} exported symbols are defined by more than one of "
        f"{len(libraries)} libraries the package opens itself; they clash only if it opens "
        f"them together with RTLD_GLOBAL ({', '.join(openers[:3])})",
        why="nothing shipped loads them together, and which of them the package opens in one "
            "process is decided at run time", count=symbols, library_count=len(libraries),
        libraries=libraries[:_SAMPLE], openers=list(openers[:_SAMPLE]))


def _vague(name: str) -> bool:
    return (name.startswith(_STD) or name.startswith(_VAGUE) or name.startswith(_RUNTIME) or
        _template_instance(name))


def _template_instance(name: str) -> bool:
    """Whether an Itanium-mangled name has a template argument list (a source name directly
    followed by 'I'): an instance every user of the template may define."""
    if not name.startswith("_Z"):
        return False
    index, size = 2, len(name)
    while index < size:
        if name[index].isdigit():
            end = index
            while end < size and name[end].isdigit():
                end += 1
            length = int(name[index:end])
            after = end + length
            if after < size and name[after] == "I":
                return True
            index = max(after, end)
        else:
            index += 1
    return False


def _summary(groups: list[tuple[tuple[str, ...], list[str]]]) -> Finding:
    largest = sorted(groups, key=lambda group: (-len(group[1]), group[0]))
    symbols = sum(len(names) for _, names in groups)
    libraries = sorted({path for paths, _ in groups for path in paths})
    first_paths, first_names = largest[0]
    return finding(
        NAME, Severity.WARNING, "", f"{symbols} exported symbols are defined by more than one "
        f"library, in {len(groups)} sets of {len(libraries)} libraries; the largest: "
        + _what(len(first_names), "symbols", first_paths),
        why="the loader binds every user to whichever loads first",
        fix="export only each library's API (a version script or -fvisibility=hidden)",
        count=symbols, library_count=len(libraries), libraries=libraries[:_SAMPLE],
        groups=[{"libraries": list(paths[:_SAMPLE]), "count": len(names),
                 "sample": sorted(names)[:_SAMPLE]} for paths, names in largest[:20]])


def _what(count: int, kind: str, libraries: tuple[str, ...]) -> str:
    if len(libraries) == 2:
        return f"{count} {kind} defined by both {libraries[0]} and {libraries[1]}"
    return (f"{count} {kind} defined by each of {len(libraries)} libraries "
            f"({', '.join(libraries[:3])}, ...)")


def _copies(wheel: WheelModel, binaries: list[BinaryFile]
            ) -> tuple[list[Finding], list[list[str]]]:
    """Byte-identical libraries: one warning per set of copies."""
    by_digest: dict[str, list[str]] = {}
    for binary in binaries:
        digest = wheel.digests.get(binary.path)
        if digest:
            by_digest.setdefault(digest, []).append(binary.path)
    groups = sorted(sorted(paths) for paths in by_digest.values() if len(paths) > 1)
    if not groups:
        return [], groups
    # one finding: one packing step copied each of them (a wheel holds no symbolic links)
    files = sum(len(group) for group in groups)
    first = groups[0]
    what = ((f"{len(first)} byte-identical copies of one library: {', '.join(first[:4])}"
            + (", ..." if len(first) > 4 else "")) if len(groups) == 1 else
        (f"{len(groups)} libraries are each shipped as byte-identical copies ({files} files), "
         f"e.g. {', '.join(first[:3])}"))
    findings = [finding(
        NAME, Severity.WARNING, first[-1] if len(groups) == 1 else "", what,
        why="both can be loaded into one process, each with its own state",
        fix="ship each library once and point the others' search paths at it",
        copies=first[:_SAMPLE], count=len(first),
        sets=[group[:_SAMPLE] for group in groups[:20]], set_count=len(groups))]
    return findings, groups
