"""Duplicate exports are findings only where the loader can bind a reference to either
definition: both libraries in one lookup scope (one extension module and what it loads, one
library the package opens itself, or everything the package opens when its Python opens
libraries RTLD_GLOBAL) and images there that bind by name (never on Windows, where each
import names its DLL; on macOS only outside the two-level namespace)."""

from __future__ import annotations

from pathlib import Path

from packaging.tags import Tag

from platforms.linux.loader import LOADER as LINUX
from platforms.macos.loader import LOADER as MACOS
from platforms.windows.loader import LOADER as WINDOWS
from release.binary import BinaryInfo
from release.binary.model import DEFAULT, GLOBAL, Symbol
from release.distribution.archive import Member
from release.host import Host
from release.loader import LoaderModel
from release.verify import VerifyOptions
from release.verify.analyses import Analyses
from release.verify.checks import duplicates
from release.verify.context import VerifyContext
from release.verify.data import load_distribution_dirs
from release.verify.dist_info_files import Metadata
from release.verify.wheel_model import BinaryFile, WheelModel

SHARED = ("api_open", "api_close")


def _binary(path: str, fmt: str, *, needed: tuple[str, ...] = (), exports: tuple[str, ...] = (),
            runpath: tuple[str, ...] = (), two_level: bool = False) -> BinaryFile:
    symbols = tuple(Symbol(name, GLOBAL, DEFAULT, True, "func") for name in exports)
    info = BinaryInfo(format=fmt, machine="x86_64", bits=64, little_endian=True,
                      file_type="bundle" if fmt == "macho" and "PyInit_x" in exports
                      else "shared", size=0, needed=needed, runpath=runpath,
                      dynamic_symbols=symbols, two_level_namespace=two_level)
    return BinaryFile(path, path, None, info, Path("x.whl"), Member(path, 0, 0, 0, 0, 0, 0))


def _findings(loader: LoaderModel, tag: str, *binaries: BinaryFile,
              openers: tuple[str, ...] = ()) -> list[str]:
    wheel = WheelModel(
        filename="x.whl", archive=Path("x.whl"), root=Path("/nonexistent"),
        fully_extracted=False, files=frozenset(b.path for b in binaries),
        metadata=Metadata("pkg", "1", ()), tags=(Tag("cp311", "abi3", tag),),
        binaries=binaries, build_record=None, leaks={}, findings=(), global_openers=openers)
    context = VerifyContext(options=VerifyOptions(), static=True, host=Host("linux", "x86_64"),
                            loader=loader, policy=loader.policy([tag]),
                            distribution_dirs=load_distribution_dirs(),
                            workdir=Path("/nonexistent"), analyses=Analyses(wheel))
    return [f.what for f in duplicates.check(wheel, context) if f.severity != "info"]


def _linux_pair(shared_scope: bool) -> tuple[BinaryFile, ...]:
    """Two libraries exporting the same API, loaded by one extension or one each."""
    if shared_scope:
        loaders = (_binary("pkg/_x.so", "elf", needed=("liba.so", "libb.so"),
                           runpath=("$ORIGIN/lib",), exports=("PyInit_x",)),)
    else:
        loaders = (_binary("pkg/_x.so", "elf", needed=("liba.so",), runpath=("$ORIGIN/lib",),
                           exports=("PyInit_x",)),
                   _binary("pkg/_y.so", "elf", needed=("libb.so",), runpath=("$ORIGIN/lib",),
                           exports=("PyInit_y",)))
    return (*loaders, _binary("pkg/lib/liba.so", "elf", exports=SHARED),
            _binary("pkg/lib/libb.so", "elf", exports=SHARED))


def test_libraries_in_one_scope_clash_and_in_separate_scopes_do_not() -> None:
    tag = "manylinux_2_17_x86_64"
    (clash,) = _findings(LINUX, tag, *_linux_pair(shared_scope=True))
    assert clash.startswith("2 exported symbols defined by both pkg/lib/liba.so")
    assert _findings(LINUX, tag, *_linux_pair(shared_scope=False)) == []


def test_libraries_the_package_opens_itself_are_local_unless_it_opens_them_globally() -> None:
    """bitsandbytes' backends: one per accelerator, all exporting the same functions, each
    opened by ctypes (RTLD_LOCAL) on its own."""
    tag = "manylinux_2_17_x86_64"
    backends = (_binary("pkg/libbackend_cpu.so", "elf", exports=SHARED),
                _binary("pkg/libbackend_cuda.so", "elf", exports=SHARED))
    assert _findings(LINUX, tag, *backends) == []
    # an opener that mentions RTLD_GLOBAL but spells out neither file name (one backend,
    # chosen at run time): they might meet, which is a note, not a clash
    assert _findings(LINUX, tag, *backends, openers=("pkg/__init__.py",)) == []


def test_windows_images_never_interpose() -> None:
    dlls = (_binary("pkg/_x.pyd", "pe", needed=("a.dll", "b.dll"), exports=("PyInit_x",)),
            _binary("pkg/a.dll", "pe", exports=SHARED), _binary("pkg/b.dll", "pe", exports=SHARED))
    assert _findings(WINDOWS.for_wheel({"pkg"}, {}), "win_amd64", *dlls) == []


def test_macos_images_interpose_only_outside_the_two_level_namespace() -> None:
    tag = "macosx_11_0_arm64"

    def wheel(two_level: bool) -> tuple[BinaryFile, ...]:
        return (_binary("pkg/_x.so", "macho", needed=("liba.dylib", "libb.dylib"),
                        runpath=("@loader_path",), exports=("PyInit_x",), two_level=two_level),
                _binary("pkg/liba.dylib", "macho", exports=SHARED, two_level=two_level),
                _binary("pkg/libb.dylib", "macho", exports=SHARED, two_level=two_level))
    assert _findings(MACOS, tag, *wheel(two_level=True)) == []
    assert len(_findings(MACOS, tag, *wheel(two_level=False))) == 1
