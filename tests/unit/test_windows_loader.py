"""The Windows loader model (platforms/windows/loader.py): which tags it claims, which DLLs
count as system DLLs (in any case), which folders a DLL's imports are searched in once the
model reads the folders the wheel's packages add (their os.add_dll_directory calls, evaluated
without running them), and how it loads files: with Python on Windows, with the load-dlls
helper under wine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from platforms import windows
from platforms.windows.loader import (
    LOADER,
    SYSTEM_DLLS,
    WindowsLoader,
    added_folders,
    collides_by_name,
    dll_directories,
    system_dlls,
)
from release.binary.model import BinaryInfo
from release.binary.pe import PeReader
from release.errors import ToolError
from release.host import Host, Runner
from release.loader import EntryKind, LoadItem, SearchFolder, bind_to_wheel

# What delvewheel 1.11 writes at the top of a package's __init__.py (numpy 2.4.6 for Windows).
DELVEWHEEL_PATCH = """
def _delvewheel_patch_1_11_2():
    import os
    if os.path.isdir(libs_dir := os.path.abspath(os.path.join(os.path.dirname(__file__), \
os.pardir, 'numpy.libs'))):
        os.add_dll_directory(libs_dir)


_delvewheel_patch_1_11_2()
"""


def pe(file_type: str = "shared") -> BinaryInfo:
    return BinaryInfo(format="pe", machine="x86_64", bits=64, little_endian=True,
                      file_type=file_type, size=0)


def test_the_platform_module_wires_the_reader_and_the_model() -> None:
    assert windows.PLATFORM.loader is LOADER
    assert isinstance(windows.PLATFORM.reader, PeReader)


@pytest.mark.parametrize("tag,claimed", [("win_amd64", True), ("win_arm64", True),
                                         ("win32", True), ("manylinux_2_28_x86_64", False),
                                         ("macosx_11_0_arm64", False), ("any", False)])
def test_claims_the_windows_tags(tag: str, claimed: bool) -> None:
    assert LOADER.claims_tag(tag) is claimed


@pytest.mark.parametrize("tags,machine", [(["win_amd64"], "x86_64"), (["win_arm64"], "aarch64"),
                                          (["win32"], "x86"), (["win32", "win_amd64"], "")])
def test_the_policy_promises_the_tags_machine(tags: list[str], machine: str) -> None:
    policy = LOADER.policy(tags)
    assert policy.machine == machine and "kernel32.dll" in policy.libraries
    assert "os.add_dll_directory" in policy.fix


@pytest.mark.parametrize("name", [
    "KERNEL32.dll", "kernel32.DLL", "USER32.dll", "api-ms-win-crt-runtime-l1-1-0.dll",
    "API-MS-WIN-CORE-SYNCH-L1-2-0.DLL", "ext-ms-win-ntuser-window-l1-1-0.dll", "ucrtbase.dll",
    "VCRUNTIME140.dll", "VCRUNTIME140_1.dll", "python3.dll", "python311.dll", "python39.dll",
    "ws2_32.dll", "bcrypt.dll", "ADVAPI32.dll", "msvcrt.dll"])
def test_system_dlls_in_any_case(name: str) -> None:
    assert LOADER.is_system(name, LOADER.policy(["win_amd64"]))


@pytest.mark.parametrize("name", [
    "msvcp140.dll", "MSVCP140_1.dll", "vcomp140.dll", "concrt140.dll", "libopenblas.dll",
    "python.dll", "zlib1.dll", "libgcc_s_seh-1.dll", "libwinpthread-1.dll"])
def test_not_system(name: str) -> None:
    """msvcp140, OpenMP and the mingw runtime: CPython does not install them."""
    assert not LOADER.is_system(name, LOADER.policy(["win_amd64"]))


def test_the_allow_list_documents_itself() -> None:
    dlls = system_dlls()
    assert "msvcp140" in dlls.about and "vcruntime140.dll" in dlls.libraries
    assert all(name == name.lower() for name in dlls.libraries)


def test_added_folders_from_the_wheels_layout() -> None:
    folders = {"", "numpy", "numpy/_core", "numpy.libs", "numpy-2.0.dist-info", "pkg",
               "pkg/lib", "pkg/lib/deep", "other/lib"}
    assert added_folders(folders) == ("pkg/lib", "numpy.libs")   # other/lib: not top-level


@pytest.mark.parametrize("source,folders", [
    (DELVEWHEEL_PATCH, ("numpy.libs",)),
    ('import os\nif os.name == "nt":\n    _d = os.add_dll_directory(os.path.join('
     'os.path.dirname(__file__), "lib"))\n', ("numpy/lib",)),
    ("from pathlib import Path\nimport os\n"
     "os.add_dll_directory(str(Path(__file__).resolve().parent / 'bin'))\n", ("numpy/bin",)),
    ("import os\nos.add_dll_directory(os.path.dirname(__file__))\n", ("numpy",)),
    # the package's folder as os.path.split, abspath, Path.parent and parents[N] give it
    ("import os\nhere = os.path.split(__file__)[0]\n"
     "os.add_dll_directory(os.path.join(here, 'bin', 'x64'))\n", ("numpy/bin/x64",)),
    ("import os.path as op, os\nos.add_dll_directory(op.dirname(op.abspath(__file__)))\n",
     ("numpy",)),
    ("import pathlib, os\nos.add_dll_directory(pathlib.Path(__file__).parent)\n", ("numpy",)),
    ("import pathlib, os\nos.add_dll_directory(str(pathlib.Path(__file__).parents[1] / "
     "'numpy.libs'))\n", ("numpy.libs",)),
    ("import os\nos.add_dll_directory('/opt/x/../../..')\n", ()),   # leaves site-packages
    ("import os\n", ()),
    ("def broken(:\n", ()),
])
def test_dll_directories_are_read_without_running_the_code(source: str,
                                                             folders: tuple[str, ...]) -> None:
    found = dll_directories({"numpy/__init__.py": source})
    assert found.folders == folders and found.unknown == ()


def test_an_unevaluable_call_falls_back_to_the_conventional_folders() -> None:
    source = "import os\nos.add_dll_directory(find_the_folder())\n"
    assert dll_directories({"pkg/__init__.py": source}).unknown == ("pkg/__init__.py",)
    bound = bind_to_wheel(LOADER, {"", "pkg", "pkg/lib", "pkg.libs"}, {"pkg/__init__.py": source})
    # the conventional folders, and the package's own folder (the commonest argument)
    assert isinstance(bound, WindowsLoader) and bound.added == ("pkg/lib", "pkg.libs", "pkg")
    # no call at all: no folder is added, whatever the layout suggests
    nothing = bind_to_wheel(LOADER, {"", "pkg", "pkg/lib"}, {"pkg/__init__.py": "x = 1\n"})
    assert isinstance(nothing, WindowsLoader) and nothing.added == ()


def test_search_folders_own_folder_first_then_added_ones() -> None:
    bound = bind_to_wheel(LOADER, {"", "numpy", "numpy/_core", "numpy.libs"},
                          {"numpy/__init__.py": DELVEWHEEL_PATCH})
    assert isinstance(bound, WindowsLoader)
    assert bound.search_folders(pe(), "numpy/_core", [SearchFolder("x", "inherited")]) == [
        SearchFolder("numpy/_core", "the DLL's own folder"),
        SearchFolder("numpy.libs", "os.add_dll_directory")]
    # a DLL in numpy.libs finds its neighbours once, through its own folder
    assert [f.folder for f in bound.search_folders(pe(), "numpy.libs", [])] == ["numpy.libs"]
    assert bound.passes_down(pe(), "numpy/_core", "numpy/_core/x.pyd") == []


def test_a_model_that_keeps_the_default_for_wheel_is_used_as_it_is() -> None:
    from platforms.linux.loader import LOADER as LINUX
    from platforms.linux.loader import LinuxLoader
    from platforms.macos.loader import LOADER as MACOS
    assert MACOS.for_wheel({"", "pkg"}, {}) is MACOS
    assert bind_to_wheel(LOADER, {"", "pkg"}, {}) is not LOADER   # Windows overrides it
    # Linux picks its C library's loader by the tags (musllinux: musl's rules)
    for tag, libc in (("manylinux_2_28_x86_64", "glibc"), ("musllinux_1_2_x86_64", "musl")):
        bound = bind_to_wheel(LINUX, {"", "pkg"}, {}, platform_tags=(tag,))
        assert isinstance(bound, LinuxLoader) and bound.libc == libc


def test_entries_classify_and_loading() -> None:
    assert LOADER.entries(pe()) == () and LOADER.search_path_problems(pe()) == []
    assert LOADER.search_entry("pkg/_C.pyd", "pkg.libs") == "pkg.libs"
    assert LOADER.classify("pkg.libs", "pkg").kind is EntryKind.INSIDE
    assert LOADER.classify("../x", "").kind is EntryKind.OUTSIDE
    assert LOADER.classify("C:/tools", "").kind is EntryKind.ABSOLUTE
    assert LOADER.is_loadable_library(pe()) and not LOADER.is_loadable_library(pe("executable"))
    assert LOADER.runner(["win_amd64"], Host("windows", "x86_64")) == Runner("x86_64")
    assert LOADER.runner(["win_amd64"], Host("linux", "x86_64")) is None
    under_wine = Runner("x86_64", prefix=("env", "WINEPREFIX=/p", "wine"), python="",
                        system="windows", helpers=(("load-dlls", "/h/load-dlls.exe"),))
    assert LOADER.runner(["win_amd64"], Host("linux", "x86_64", (under_wine,))) is under_wine
    assert LOADER.runner(["win_arm64"], Host("linux", "x86_64", (under_wine,))) is None


def test_load_commands_add_the_wheel_s_folders_then_load_in_order() -> None:
    bound = bind_to_wheel(LOADER, {"", "edgert", "edgert/lib"},
                          {"edgert/__init__.py": "import os\nos.add_dll_directory("
                           "os.path.join(os.path.dirname(__file__), 'lib'))\n"})
    items = [LoadItem(Path("/s/edgert/_C.pyd"), True, "edgert/_C.pyd"),
             LoadItem(Path("/s/edgert/lib/k.dll"), False, "edgert/lib/k.dll")]
    wine = Runner("x86_64", prefix=("env", "wine"), python="", system="windows",
                  helpers=(("load-dlls", "/h/load-dlls.exe"),))
    assert bound.load_command(items, wine) == [
        "env", "wine", "/h/load-dlls.exe", "--add-dll-directory", "Z:\\s\\edgert\\lib",
        "--extension", "Z:\\s\\edgert\\_C.pyd", "--library", "Z:\\s\\edgert\\lib\\k.dll"]
    native = bound.load_command(items, Runner("x86_64", python="python.exe"))
    assert native[:2] == ["python.exe", "-c"] and "os.add_dll_directory" in native[2]
    assert native[3:] == ["/s/edgert/lib", "--", "e:/s/edgert/_C.pyd", "l:/s/edgert/lib/k.dll"]
    with pytest.raises(ToolError, match="no helper 'load-dlls'"):
        bound.load_command(items, Runner("x86_64", prefix=("wine",), python="",
                                         system="windows"))


def test_under_wine_a_module_for_one_python_version_cannot_be_loaded() -> None:
    """The helper's stand-in is the stable ABI's python3.dll: a cp311 module (python311.dll)
    is the machine's limit, not the wheel's failure; a Windows Python loads it."""
    info = BinaryInfo(format="pe", machine="x86_64", bits=64, little_endian=True,
                      file_type="shared", size=0, needed=("python311.dll", "kernel32.dll"))
    stable = BinaryInfo(format="pe", machine="x86_64", bits=64, little_endian=True,
                        file_type="shared", size=0, needed=("python3.dll",))
    wine = Runner("x86_64", prefix=("wine",), python="", system="windows")
    assert "python311.dll" in LOADER.unloadable(info, wine)
    assert LOADER.unloadable(stable, wine) == ""
    assert LOADER.unloadable(info, Runner("x86_64", python="python.exe")) == ""


SKLEARN_DISTRIBUTOR_INIT = """
import os
import os.path as op
from ctypes import WinDLL

if os.name == "nt":
    libs_path = op.join(op.dirname(__file__), ".libs")
    vcomp140_dll_filename = op.join(libs_path, "vcomp140.dll")
    WinDLL(op.abspath(vcomp140_dll_filename))
"""


def test_a_dll_loaded_by_its_path_first_serves_every_import_of_its_name_in_any_case() -> None:
    """scikit-learn's _distributor_init.py preloads .libs/vcomp140.dll; its modules import
    VCOMP140.DLL, which Windows matches to the loaded module whatever the case."""
    found = dll_directories({"sklearn/_distributor_init.py": SKLEARN_DISTRIBUTOR_INIT})
    assert found.preloads == (("sklearn/.libs/vcomp140.dll", "sklearn/_distributor_init.py"),)
    bound = bind_to_wheel(LOADER, {"", "sklearn", "sklearn/.libs"},
                          {"sklearn/_distributor_init.py": SKLEARN_DISTRIBUTOR_INIT})
    assert bound.preloaded("VCOMP140.DLL") == ("sklearn/.libs/vcomp140.dll",
                                               "sklearn/_distributor_init.py")
    assert bound.preloaded("msvcp140.dll") is None
    assert bound.file_key("Pkg/VCOMP140.DLL") == bound.file_key("pkg/vcomp140.dll")


def test_a_load_by_name_or_of_an_unknown_path_is_no_preload() -> None:
    source = ("import ctypes, os\nctypes.WinDLL('kernel32')\n"
              "for lib in os.listdir('x'):\n    ctypes.WinDLL(os.path.join('x', lib))\n")
    found = dll_directories({"pkg/__init__.py": source})
    assert found.preloads == () and found.unknown == ()


@pytest.mark.parametrize(("name", "collides"), [
    ("msvcp140.dll", True), ("zlib1.dll", True), ("libpng16-16.dll", True),
    ("FREETYPE.DLL", True), ("hdf5.dll", True),
    ("msvcp140-0f2ea95580b32bcfc81c235d5751ce78.dll", False),   # mangled by delvewheel
    ("edgert_runtime.dll", False), ("geosx.pyd", False)])
def test_dlls_many_packages_ship_collide_by_name_unless_mangled(name: str,
                                                                collides: bool) -> None:
    assert collides_by_name(name) is collides


def test_system_dlls_are_generated_from_a_pinned_source() -> None:
    """The list holds real System32 DLLs (AVICAP32.dll, USP10.dll) and none of the
    redistributables a wheel must ship, and names the package and digest it came from."""
    data = json.loads(SYSTEM_DLLS.read_text())
    source = data["source"]
    assert source["package"] == "libwine" and len(source["deb_sha256"]) == 64
    dlls = system_dlls()
    for name in ("avicap32.dll", "usp10.dll", "kernel32.dll", "msvcp60.dll",
                 "vcruntime140.dll", "winspool.drv"):
        assert name in dlls.libraries
    for name in ("msvcp140.dll", "vcomp140.dll", "concrt140.dll", "d3dx9_43.dll",
                 "wined3d.dll", "opencl.dll"):
        assert name not in dlls.libraries
