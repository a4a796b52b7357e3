"""verify --static on synthetic macOS wheels (Mach-O files from tests/verify/macho_writer.py
in a real zip with a RECORD), through the dyld loader model (platforms/macos/loader.py):
@rpath through the LC_RPATH of the binary and of its loaders, @loader_path folders, system
paths, build-machine leaks, the deployment target of the tag, machines of thin and fat
files, and the loader model's own rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from platforms.macos import PLATFORM, loader_relative
from platforms.macos.loader import LOADER, expand_loader_path, parse_tag
from release.binary import read_binary_data
from release.host import Host
from release.loader import EntryKind, SearchFolder
from release.manifest import Target
from release.verify import verify_wheel
from tests.verify.macho_writer import fat, macho
from tests.verify.test_wheel_safety import make_wheel

SYSTEM = "/usr/lib/libSystem.B.dylib"


def _wheel(folder: Path, files: dict[str, bytes], tag: str = "cp311-cp311-macosx_11_0_arm64",
           name: str = "demo") -> Path:
    return make_wheel(folder / f"{name}-1.0-{tag}.whl", files, tag=tag, name=name)


def _problems(report: object) -> list[tuple[str, str, str, str]]:
    return sorted((f.severity.value, f.check, f.file, f.what)
                  for f in report.findings if f.severity.value != "info")  # type: ignore[attr-defined]


def test_a_delocated_wheel_resolves_everything(tmp_path: Path) -> None:
    files = {
        "demo/_ext.cpython-311-darwin.so": macho(
            kind="bundle", exports=["PyInit__ext"], rpaths=["@loader_path/lib"],
            weak=["@rpath/liboptional.dylib"],   # absent: dyld carries on without it
            loads=["@rpath/libcore.dylib", "@loader_path/.dylibs/libz.1.dylib", SYSTEM,
                   "/usr/lib/libc++.1.dylib", "/System/Library/Frameworks/Accelerate."
                   "framework/Versions/A/Accelerate"]),
        "demo/lib/libcore.dylib": macho(install_name="@rpath/libcore.dylib",
                                        rpaths=["@loader_path"], exports=["core_run"],
                                        loads=["@rpath/libhelper.dylib", SYSTEM]),
        "demo/lib/libhelper.dylib": macho(install_name="@rpath/libhelper.dylib",
                                          exports=["helper"], loads=[SYSTEM]),
        "demo/.dylibs/libz.1.dylib": macho(install_name="/DLC/demo/.dylibs/libz.1.dylib",
                                           exports=["deflate"], loads=[SYSTEM]),
        "demo/__init__.py": b"",
    }
    report = verify_wheel(_wheel(tmp_path, files), static=True)
    assert _problems(report) == []
    assert report.ok and report.binaries == {"macho": 4}
    assert report.checks["linkage"] == "ran" and report.checks["search-path"] == "ran"
    assert report.checks["metadata"] == "ran"


def test_build_machine_paths_and_broken_promises_are_found(tmp_path: Path) -> None:
    files = {
        "demo/_ext.cpython-311-darwin.so": macho(
            kind="bundle", exports=["PyInit__ext"], minos=(13, 0), signed=False,
            rpaths=["/Users/me/build/lib", "@executable_path/../lib"],
            loads=["/opt/homebrew/lib/libomp.dylib", "@rpath/libmissing.dylib", SYSTEM]),
        "demo/libintel.dylib": macho(arch="x86_64", install_name="@rpath/libintel.dylib"),
    }
    found = _problems(verify_wheel(_wheel(tmp_path, files), static=True))
    ext = "demo/_ext.cpython-311-darwin.so"
    whats = {(severity, check, what) for severity, check, file, what in found}
    # one root cause: the extension needs two libraries nothing ships
    assert ("error", "linkage", "needs /opt/homebrew/lib/libomp.dylib, libmissing.dylib, "
            "which are not found after installation") in whats
    assert ("error", "search-path", "loads a library by an absolute path outside the "
            "system") in whats
    assert ("error", "search-path", "has no code signature for arm64") in whats
    assert ("warning", "search-path", "search path '/Users/me/build/lib' is absolute") in whats
    assert ("warning", "search-path", "search path '@executable_path/../lib' leaves "
            "site-packages") in whats
    assert ("error", "metadata", ext, "needs macOS-arm64_13.0, newer than the macosx_11_0 tag "
            "allows") in found
    assert ("error", "metadata", "demo/libintel.dylib", "is built for x86_64 but the platform "
            "tag promises arm64") in found


def test_universal2_deployment_targets_per_slice(tmp_path: Path) -> None:
    both = fat([("x86_64", macho(arch="x86_64", minos=(10, 9), loads=[SYSTEM])),
                ("arm64", macho(minos=(11, 0), loads=[SYSTEM]))])
    tag = "cp311-cp311-macosx_10_9_universal2"
    assert _problems(verify_wheel(_wheel(tmp_path, {"demo/libu.dylib": both}, tag),
                                  static=True)) == []
    newer = fat([("x86_64", macho(arch="x86_64", minos=(10, 15))),
                 ("arm64", macho(minos=(11, 0)))])
    thin = macho(minos=(11, 0))
    found = _problems(verify_wheel(_wheel(tmp_path, {"demo/libu.dylib": newer,
                                                     "demo/libarm.dylib": thin}, tag),
                                   static=True))
    assert found == [
        ("error", "metadata", "demo/libarm.dylib", "is built for arm64 but the platform tag "
         "promises universal2"),
        ("error", "metadata", "demo/libu.dylib", "needs macOS-x86-64_10.15, newer than the "
         "macosx_10_9 tag allows")]


def test_only_an_unsigned_arm64_slice_is_an_error(tmp_path: Path) -> None:
    tag = "cp311-cp311-macosx_10_9_universal2"
    intel_unsigned = fat([("x86_64", macho(arch="x86_64", minos=(10, 9), signed=False)),
                          ("arm64", macho())])
    assert _problems(verify_wheel(_wheel(tmp_path, {"demo/liba.dylib": intel_unsigned}, tag),
                                  static=True)) == []
    arm_unsigned = fat([("x86_64", macho(arch="x86_64", minos=(10, 9))),
                        ("arm64", macho(signed=False))])
    assert read_binary_data(arm_unsigned, where="x").unsigned == ("arm64",)
    assert _problems(verify_wheel(_wheel(tmp_path, {"demo/liba.dylib": arm_unsigned}, tag),
                                  static=True)) == [
        ("error", "search-path", "demo/liba.dylib", "has no code signature for arm64")]


def test_a_file_changed_after_signing_is_found(tmp_path: Path) -> None:
    signed = bytearray(macho(exports=["demo"]))
    text = read_binary_data(bytes(signed), where="x").section("__TEXT,__text")
    assert text is not None
    signed[text.offset] ^= 0xFF          # patched after signing, not signed again
    assert read_binary_data(bytes(signed), where="x").bad_signatures == ("arm64",)
    assert _problems(verify_wheel(_wheel(tmp_path, {"demo/liba.dylib": bytes(signed)}),
                                  static=True)) == [
        ("error", "search-path", "demo/liba.dylib", "has a code signature that does not match "
         "its contents (arm64)")]


def test_rpath_passed_down_by_every_loader_is_a_note(tmp_path: Path) -> None:
    """dyld searches the LC_RPATH of every image in the loading chain: a library only the
    extension loads finds its sibling through the extension's entry, as dyld does."""
    files = {
        "demo/_ext.cpython-311-darwin.so": macho(kind="bundle", exports=["PyInit__ext"],
                                                 rpaths=["@loader_path/lib"],
                                                 loads=["@rpath/libcore.dylib"]),
        "demo/lib/libcore.dylib": macho(loads=["@rpath/libhelper.dylib"]),
        "demo/lib/libhelper.dylib": macho(),
    }
    report = verify_wheel(_wheel(tmp_path, files), static=True)
    assert _problems(report) == []
    (note,) = [f for f in report.findings if f.check == "linkage"]
    assert note.details["files"] == ["demo/lib/libcore.dylib"]
    assert note.details["needed"] == ["libhelper.dylib"] and "passes down" in note.what


def test_loader_model_words_and_entries() -> None:
    assert PLATFORM.loader is LOADER and PLATFORM.reader is not None
    assert all(LOADER.claims_tag(tag) for tag in ("macosx_11_0_arm64", "macosx_10_9_x86_64",
                                                  "macosx_10_9_universal2"))
    assert not LOADER.claims_tag("manylinux_2_28_x86_64") and not LOADER.claims_tag("win_amd64")
    assert parse_tag("macosx_14_2_arm64") == ((14, 2), "arm64")
    assert loader_relative("pkg/sub/_ext.so", "pkg/lib") == "@loader_path/../lib"
    assert loader_relative("pkg/_ext.so", "pkg") == "@loader_path"
    for binary, folder in (("pkg/sub/_ext.so", "pkg/lib"), ("pkg/_ext.so", "pkg"),
                           ("pkg/_ext.so", "")):
        entry = LOADER.search_entry(binary, folder)
        assert expand_loader_path(entry, binary.rsplit("/", 1)[0]) == folder
    assert LOADER.classify("/usr/lib", "pkg").kind is EntryKind.SYSTEM
    assert LOADER.classify("/System/Library/Frameworks", "pkg").kind is EntryKind.SYSTEM
    assert LOADER.classify("/usr/local/lib", "pkg").kind is EntryKind.ABSOLUTE
    assert LOADER.classify("@loader_path/../../..", "pkg").kind is EntryKind.OUTSIDE
    assert LOADER.classify("@executable_path/lib", "pkg").kind is EntryKind.OUTSIDE
    assert LOADER.classify("", "pkg").kind is EntryKind.EMPTY
    inside = LOADER.classify("@loader_path/../lib", "pkg/sub")
    assert (inside.kind, inside.folder) == (EntryKind.INSIDE, "pkg/lib")


def test_search_folders_follow_dyld() -> None:
    info = read_binary_data(macho(rpaths=["@loader_path/lib", "/abs"],
                                  loads=["@rpath/liba.dylib", "@loader_path/../x/libb.dylib"]),
                            where="x")
    passed = [SearchFolder("other", "LC_RPATH of pkg/y.so", "pkg/y.so")]
    assert [(p.folder, p.via) for p in LOADER.search_folders(info, "pkg/sub", passed)] == [
        ("pkg/sub/lib", "LC_RPATH"), ("other", "LC_RPATH of pkg/y.so"), ("pkg/x", "@loader_path")]
    assert [p.folder for p in LOADER.passes_down(info, "pkg/sub", "pkg/sub/z.so")] == \
        ["pkg/sub/lib"]


def test_policy_and_no_runner() -> None:
    policy = LOADER.policy(["macosx_11_0_arm64"])
    assert (policy.name, policy.machine) == ("macosx_11_0", "arm64")
    assert policy.too_new(["macOS-arm64_11.0", "macOS-arm64_10.15", "macOS-arm64_11.0.1"]) == \
        ["macOS-arm64_11.0.1"]
    assert policy.too_new(["macOS-arm64_12.0"]) == ["macOS-arm64_12.0"]
    old = LOADER.policy(["macosx_10_13_x86_64"])
    assert old.too_new(["macOS-x86-64_10.13", "macOS-x86-64_10.14"]) == ["macOS-x86-64_10.14"]
    assert LOADER.is_system("/usr/lib/libz.1.dylib", policy)
    assert not LOADER.is_system("libz.1.dylib", policy)
    assert LOADER.runner(["macosx_11_0_arm64"], Host("darwin", "aarch64")) is None
    target = Target(name="macos-arm64", platform="macos", arch="arm64")
    assert PLATFORM.runner(target, host=Host("linux", "x86_64"),
                           cache=Path("unused")) is None   # files are read, not run


@pytest.mark.parametrize("kind,loadable", [("dylib", True), ("bundle", True),
                                           ("execute", False)])
def test_loadable_libraries(kind: str, loadable: bool) -> None:
    info = read_binary_data(macho(kind=kind), where="x")
    assert LOADER.is_loadable_library(info) is loadable


def test_a_universal2_file_serves_a_thin_wheel(tmp_path: Path) -> None:
    """A fat file carries a slice for the thin wheel's machine: no mismatch."""
    both = fat([("x86_64", macho(arch="x86_64", minos=(10, 9), loads=[SYSTEM])),
                ("arm64", macho(minos=(11, 0), loads=[SYSTEM]))])
    assert _problems(verify_wheel(_wheel(tmp_path, {"demo/libu.dylib": both}),
                                  static=True)) == []
    intel_only = macho(arch="x86_64", minos=(10, 9), loads=[SYSTEM])
    found = _problems(verify_wheel(_wheel(tmp_path, {"demo/libu.dylib": intel_only}),
                                   static=True))
    assert ("error", "metadata", "demo/libu.dylib", "is built for x86_64 but the platform tag "
            "promises arm64") in found
