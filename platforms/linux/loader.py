"""The Linux dynamic loaders as verify's loader model: $ORIGIN-relative DT_RUNPATH and
DT_RPATH entries, the manylinux and musllinux policies for system libraries, and ctypes for
load checks (run by this machine's Python, or by the emulated machine's Python for a wheel of
another one).

Two loaders, each by its own rules. glibc's ld.so (manylinux): a binary with DT_RUNPATH
searches it alone; one without searches its DT_RPATH, then the DT_RPATH of the binaries that
loaded it (inherited only while the loading binary has no DT_RUNPATH), and DT_RPATH comes
before LD_LIBRARY_PATH. musl's (musllinux, ldso/dynlink.c ``load_library``): one path per
binary, DT_RUNPATH if it has one, else DT_RPATH, searched after LD_LIBRARY_PATH, then the
path of the binary that loaded it, and of its loader, up the chain, whichever kind each
carries: under musl every search path is passed down."""

from __future__ import annotations

import posixpath
from collections.abc import Collection, Mapping, Sequence

from platforms.linux.policy import Policy, load_policies
from release.binary.model import BinaryInfo
from release.host import Host, Runner
from release.loader import (
    Entry,
    EntryKind,
    LoaderModel,
    LoaderWords,
    LoadItem,
    Problem,
    SearchFolder,
    SystemPolicy,
)

_SITE = "/@site-packages"
_ORIGIN = ("$ORIGIN", "${ORIGIN}")
_LOADER_NAMES = ("ld-linux", "ld64.so", "ld-musl")
_SYSTEM_DIRS = ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib")
_TAG_PREFIXES = ("linux_", "manylinux", "musllinux")

# Extension modules load RTLD_LOCAL (as importlib does), libraries RTLD_GLOBAL.
_LOAD_SCRIPT = """
import ctypes, importlib, sys
for item in sys.argv[1:]:
    mode, path = item.split(":", 1)
    if mode == "m":
        importlib.import_module(path)
    else:
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL if mode == "g" else ctypes.RTLD_LOCAL)
"""


def origin_relative(binary: str, folder: str) -> str:
    """The DT_RUNPATH entry that makes ``binary`` search ``folder`` (both wheel-relative)."""
    relative = posixpath.relpath(folder or ".", posixpath.dirname(binary) or ".")
    return "$ORIGIN" if relative == "." else f"$ORIGIN/{relative}"


def expand_origin(entry: str, folder: str) -> str | None:
    """A $ORIGIN entry as a folder relative to site-packages, for a binary installed in
    ``folder``; None for an entry that is not $ORIGIN-relative or leaves site-packages."""
    for token in _ORIGIN:
        if entry == token or entry.startswith(token + "/"):
            absolute = posixpath.normpath(posixpath.join(_SITE, folder) + entry[len(token):])
            if absolute == _SITE:
                return ""
            if absolute.startswith(_SITE + "/"):
                return absolute[len(_SITE) + 1:]
            return None
    return None


def tag_arch(platform_tag: str) -> str:
    """The architecture part of a Linux platform tag (manylinux_2_28_x86_64 -> x86_64)."""
    return "x86_64" if platform_tag.endswith("x86_64") else platform_tag.rsplit("_", 1)[-1]


# A tag's architecture as the ELF reader names the machine (release/binary/elf.py); the
# load checks and emulators use the tag's own word (aarch64).
_ELF_MACHINES = {"x86_64": "x86_64", "aarch64": "aarch64", "i686": "x86", "armv7l": "arm",
                 "ppc64le": "ppc64", "ppc64": "ppc64", "s390x": "s390", "riscv64": "riscv",
                 "loongarch64": "loongarch"}


def tags_arch(platform_tags: Sequence[str]) -> str:
    """The one architecture the Linux tags among ``platform_tags`` name ("" for none or
    several)."""
    arches = {tag_arch(tag) for tag in platform_tags if tag.startswith(_TAG_PREFIXES)}
    return arches.pop() if len(arches) == 1 else ""


class LinuxLoader(LoaderModel):
    words = LoaderWords(search_path="DT_RUNPATH", relative_entry="$ORIGIN-relative",
                        how_to_set="CMake: INSTALL_RPATH \"$ORIGIN/...\"")

    def __init__(self, libc: str = "glibc") -> None:
        self.libc = libc   # "glibc" (manylinux, linux_*) or "musl" (musllinux)

    def for_wheel(self, folders: Collection[str], init_modules: Mapping[str, str], *,
                  platform_tags: Sequence[str] = ()) -> LinuxLoader:
        linux = [tag for tag in platform_tags if tag.startswith(_TAG_PREFIXES)]
        musl = bool(linux) and all(tag.startswith("musllinux") for tag in linux)
        return LinuxLoader("musl" if musl else "glibc")

    def claims_tag(self, platform_tag: str) -> bool:
        return platform_tag.startswith(_TAG_PREFIXES)

    def search_entry(self, binary: str, folder: str) -> str:
        return origin_relative(binary, folder)

    def entries(self, info: BinaryInfo) -> tuple[str, ...]:
        return info.runpath or info.rpath

    def classify(self, entry: str, folder: str) -> Entry:
        if entry == "":
            return Entry(entry, EntryKind.EMPTY)
        if not entry.startswith(_ORIGIN):
            system = entry.rstrip("/") in _SYSTEM_DIRS
            return Entry(entry, EntryKind.SYSTEM if system else EntryKind.ABSOLUTE)
        expanded = expand_origin(entry, folder)
        if expanded is None:
            return Entry(entry, EntryKind.OUTSIDE)
        return Entry(entry, EntryKind.INSIDE, expanded)

    def _own(self, info: BinaryInfo, folder: str, via: str,
             inherited_from: str = "") -> list[SearchFolder]:
        return [SearchFolder(expanded, via, inherited_from) for entry in self.entries(info)
                if (expanded := expand_origin(entry, folder)) is not None]

    def search_folders(self, info: BinaryInfo, folder: str,
                       inherited: Sequence[SearchFolder]) -> list[SearchFolder]:
        kind = "DT_RUNPATH" if info.runpath else "DT_RPATH"
        if info.runpath and self.libc != "musl":
            return self._own(info, folder, kind)
        return [*self._own(info, folder, kind), *inherited]

    def passes_down(self, info: BinaryInfo, folder: str, path: str) -> list[SearchFolder]:
        kind = "DT_RUNPATH" if info.runpath else "DT_RPATH"
        if info.runpath and self.libc != "musl":
            return []
        return self._own(info, folder, f"{kind} of {path}", inherited_from=path)

    def search_path_problems(self, info: BinaryInfo) -> list[Problem]:
        if info.rpath and info.runpath:
            return [Problem("warning", "carries both DT_RPATH and DT_RUNPATH",
                            why="the loader ignores DT_RPATH then; it is dead weight that "
                                "confuses readers", fix="drop DT_RPATH")]
        if info.rpath and self.libc == "musl":
            return [Problem("info", "uses DT_RPATH, not DT_RUNPATH",
                            why="musl's loader treats DT_RPATH as it treats DT_RUNPATH: "
                                "searched after LD_LIBRARY_PATH and passed down to the "
                                "libraries this file loads",
                            fix="nothing needed for musl; -Wl,--enable-new-dtags writes "
                                "DT_RUNPATH",
                            details={"rpath": list(info.rpath)})]
        if info.rpath:
            # auditwheel writes DT_RPATH on purpose: a note, not a defect
            return [Problem("info", "uses DT_RPATH, not DT_RUNPATH",
                            why="DT_RPATH is inherited by every library this file loads and "
                                "overrides LD_LIBRARY_PATH",
                            fix="link with -Wl,--enable-new-dtags (CMake does by default)",
                            details={"rpath": list(info.rpath)})]
        return []

    def policy(self, platform_tags: Sequence[str]) -> SystemPolicy:
        policies = load_policies()
        found = [(policy, tag) for tag in platform_tags
                 if (policy := policies.for_tag(tag)) is not None and policy.libraries]
        machine = _ELF_MACHINES.get(tags_arch(platform_tags), "")
        if not found:
            # A plain linux_<arch> tag (auditwheel's "linux" policy, which lists nothing)
            # promises no glibc version, but every Linux still has the C/C++ runtime: the
            # most permissive allow-list, with no symbol-version limit.
            permissive = min((p for p in policies.policies
                              if p.family == "manylinux" and p.libraries),
                             key=lambda p: p.priority)
            return SystemPolicy(name="linux", libraries=permissive.libraries, machine=machine,
                                source=policies.source, provided_by=DRIVER_LIBRARIES)
        policy, tag = max(found, key=lambda pair: pair[0].priority)
        return _system_policy(policy, tag_arch(tag), policies.source, machine)

    def is_system(self, name: str, policy: SystemPolicy) -> bool:
        return (name in policy.libraries or name in policy.provided_by
                or name.startswith(_LOADER_NAMES))

    def is_loadable_library(self, info: BinaryInfo) -> bool:
        return info.file_type == "shared" and info.section(".interp") is None

    def binds_by_name(self, info: BinaryInfo) -> bool:
        return True   # ld.so looks every symbol up by name in the object's scope

    def runner(self, platform_tags: Sequence[str], host: Host) -> Runner | None:
        arch = tags_arch(platform_tags)
        if host.system != "linux" or not arch:
            return None
        return host.runner(arch)

    def unloadable(self, info: BinaryInfo, runner: Runner) -> str:
        return ""

    def load_command(self, items: Sequence[LoadItem], runner: Runner,
                     imports: Sequence[str] = ()) -> list[str]:
        return runner.python_command(
            "-c", _LOAD_SCRIPT, *(f"m:{module}" for module in imports),
            *(("l:" if item.extension else "g:") + str(item.path) for item in items))


# Installed with a GPU driver, never by a wheel (auditwheel leaves them out too): the user-mode
# driver libraries of NVIDIA's driver package. A wheel that needs one loads only where the
# driver is installed, which is the promise of a GPU wheel, not a defect.
DRIVER_LIBRARIES: Mapping[str, str] = {
    name: "the NVIDIA driver" for name in (
        "libcuda.so.1", "libcuda.so", "libnvidia-ml.so.1", "libnvcuvid.so.1",
        "libnvidia-encode.so.1", "libnvidia-opticalflow.so.1", "libnvidia-fbc.so.1",
        "libnvidia-ptxjitcompiler.so.1", "libnvidia-nvvm.so.4")}


def _system_policy(policy: Policy, arch: str, source: str, machine: str) -> SystemPolicy:
    return SystemPolicy(name=policy.name, libraries=policy.libraries_for(arch), machine=machine,
                        symbol_versions=policy.symbol_versions.get(arch, {}),
                        fix=f"build in an older {policy.family} image or raise the platform tag",
                        source=source, provided_by=DRIVER_LIBRARIES)


LOADER = LinuxLoader()
