"""The Linux loader model (platforms/linux/loader.py) behind the linkage, search-path and
metadata checks, on hand-made wheel models (no compiler): DT_RUNPATH vs inherited DT_RPATH,
declared vs undeclared foreign folders, system allow-lists, search-path hygiene, and the
round trip between writing a search-path entry and resolving it back."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.tags import Tag

from platforms.linux.loader import LOADER, origin_relative
from release.binary import BinaryInfo, VersionRequirement
from release.distribution.archive import Member
from release.errors import ConfigurationError
from release.findings import Severity
from release.host import Host, Runner
from release.loader import EntryKind, LoadItem
from release.verify import VerifyOptions, linkage_model
from release.verify.analyses import Analyses
from release.verify.checks import linkage, search_path
from release.verify.checks import metadata as metadata_check
from release.verify.context import VerifyContext
from release.verify.data import (
    load_distribution_dirs,
    load_imported_libraries,
    load_toolkit_libraries,
)
from release.verify.dist_info_files import Metadata
from release.verify.wheel_model import BinaryFile, WheelModel

TAG = "manylinux_2_17_x86_64"


def elf(path: str, *, needed: tuple[str, ...] = (), rpath: tuple[str, ...] = (),
        runpath: tuple[str, ...] = (), versions: tuple[str, ...] = (),
        machine: str = "x86_64") -> BinaryFile:
    info = BinaryInfo(format="elf", machine=machine, bits=64, little_endian=True,
                      file_type="shared", size=0, needed=needed, rpath=rpath, runpath=runpath,
                      version_requirements=(VersionRequirement("libc.so.6", versions),))
    return BinaryFile(path, path, None, info, Path("x.whl"), Member(path, 0, 0, 0, 0, 0, 0))


def model(*binaries: BinaryFile, requires: tuple[str, ...] = (),
          extra: tuple[str, ...] = (), tag: str = TAG) -> WheelModel:
    return WheelModel(
        filename="x.whl", archive=Path("x.whl"), root=Path("/nonexistent"),
        fully_extracted=False, files=frozenset([b.path for b in binaries] + list(extra)),
        metadata=Metadata("pkg", "1", tuple(Requirement(r) for r in requires)),
        tags=(Tag("cp311", "abi3", tag),), binaries=binaries,
        build_record=None, leaks={}, findings=())


def context(wheel: WheelModel, tag: str = TAG) -> VerifyContext:
    loader = LOADER.for_wheel(wheel.folders, {}, platform_tags=wheel.platforms)
    return VerifyContext(options=VerifyOptions(), static=True, host=Host("linux", "x86_64"),
                         loader=loader, policy=loader.policy([tag]),
                         distribution_dirs=load_distribution_dirs(),
                         imported_libraries=load_imported_libraries(),
                         toolkit_libraries=load_toolkit_libraries(),
                         workdir=Path("/nonexistent"), analyses=Analyses(wheel))


def kinds(wheel: WheelModel) -> dict[tuple[str, str], str]:
    return {(r.binary, r.needed): r.kind for r in linkage_model.resolutions(context(wheel))}


def test_runpath_into_the_wheel_and_system_libraries() -> None:
    wheel = model(elf("pkg/_C.so", needed=("libcore.so", "libc.so.6", "libfoo.so.1"),
                      runpath=("$ORIGIN/lib",)),
                  elf("pkg/lib/libcore.so"))
    assert kinds(wheel) == {("pkg/_C.so", "libcore.so"): "wheel",
                            ("pkg/_C.so", "libc.so.6"): "system",
                            ("pkg/_C.so", "libfoo.so.1"): "unresolved"}
    errors = [f for f in linkage.check(wheel, context(wheel)) if f.severity is Severity.ERROR]
    assert [(f.file, f.details["needed"]) for f in errors] == [("pkg/_C.so", "libfoo.so.1")]
    assert "not found after installation" in errors[0].what


def test_rpath_is_inherited_but_runpath_is_not() -> None:
    inherited = model(elf("pkg/_C.so", needed=("liba.so",), rpath=("$ORIGIN/lib",)),
                      elf("pkg/lib/liba.so", needed=("libb.so",)),
                      elf("pkg/lib/libb.so"))
    assert kinds(inherited)[("pkg/lib/liba.so", "libb.so")] == "wheel"
    (note,) = linkage.check(inherited, context(inherited))
    assert note.severity is Severity.INFO and note.details["files"] == ["pkg/lib/liba.so"]
    not_inherited = model(elf("pkg/_C.so", needed=("liba.so",), runpath=("$ORIGIN/lib",)),
                          elf("pkg/lib/liba.so", needed=("libb.so",)),
                          elf("pkg/lib/libb.so"))
    assert kinds(not_inherited)[("pkg/lib/liba.so", "libb.so")] == "unresolved"


def test_rpath_is_inherited_down_the_whole_loading_chain() -> None:
    """auditwheel's layout: only the extension has DT_RPATH; every bundled library, however
    deep, finds its siblings through it (rasterio's libgdal -> libproj -> libsqlite3)."""
    wheel = model(elf("pkg/_io.so", needed=("libgdal.so",), rpath=("$ORIGIN/../pkg.libs",)),
                  elf("pkg.libs/libgdal.so", needed=("libproj.so",)),
                  elf("pkg.libs/libproj.so", needed=("libsqlite3.so",)),
                  elf("pkg.libs/libsqlite3.so", needed=("libz.so",)),
                  elf("pkg.libs/libz.so"))
    assert set(kinds(wheel).values()) == {"wheel"}
    findings = linkage.check(wheel, context(wheel))
    assert [f.severity for f in findings] == [Severity.INFO], findings
    assert findings[0].details["count"] == 3


def test_rpath_passes_through_a_loader_with_runpath() -> None:
    """A library with DT_RUNPATH uses only it for its own needs, but the DT_RPATH of the
    binaries that loaded it still reaches the libraries it loads."""
    wheel = model(elf("pkg/_C.so", needed=("libmid.so",), rpath=("$ORIGIN/lib", "$ORIGIN/deep")),
                  elf("pkg/lib/libmid.so", needed=("libleaf.so",), runpath=("$ORIGIN",)),
                  elf("pkg/lib/libleaf.so", needed=("libdeep.so",)),
                  elf("pkg/deep/libdeep.so"))
    found = kinds(wheel)
    assert found[("pkg/lib/libleaf.so", "libdeep.so")] == "wheel"
    assert found[("pkg/lib/libmid.so", "libleaf.so")] == "wheel"


def test_a_library_only_some_loaders_serve_is_a_warning() -> None:
    """Loaded by an extension that passes its DT_RPATH down and by one with DT_RUNPATH,
    which does not: imported through the second first, it fails."""
    wheel = model(elf("pkg/_a.so", needed=("libx.so",), rpath=("$ORIGIN/lib",)),
                  elf("pkg/_b.so", needed=("libx.so",), runpath=("$ORIGIN/lib",)),
                  elf("pkg/lib/libx.so", needed=("liby.so",)),
                  elf("pkg/lib/liby.so"))
    (warning,) = [f for f in linkage.check(wheel, context(wheel))
                  if f.severity is Severity.WARNING]
    assert warning.file == "pkg/lib/libx.so" and warning.details["loaders"] == ["pkg/_b.so"]
    assert "not when loaded by pkg/_b.so" in warning.what


def test_one_error_per_root_cause() -> None:
    """A program that finds none of the three shipped libraries it needs is one error; a
    library nothing ships, needed by two files, is one more."""
    wheel = model(elf("pkg/bin/tool", needed=("liba.so", "libb.so", "libc.so")),
                  elf("pkg/_x.so", needed=("libgone.so",)),
                  elf("pkg/_y.so", needed=("libgone.so",)),
                  elf("pkg/lib/liba.so"), elf("pkg/lib/libb.so"), elf("pkg/lib/libc.so"))
    errors = [f for f in linkage.check(wheel, context(wheel)) if f.severity is Severity.ERROR]
    assert [(f.file, f.details["count"]) for f in errors] == [("pkg/bin/tool", 3), ("", 2)]
    assert "liba.so, libb.so, libc.so" in errors[0].what and "libgone.so" in errors[1].what


def test_declared_and_undeclared_foreign_folders() -> None:
    binary = elf("pkg/lib/libgpu.so", needed=("libcudart.so.12",),
                 runpath=("$ORIGIN", "$ORIGIN/../../nvidia/cuda_runtime/lib"))
    assert kinds(model(binary))[(binary.path, "libcudart.so.12")] == "undeclared"
    declared = model(binary, requires=("nvidia-cuda-runtime-cu12>=12",))
    assert kinds(declared)[(binary.path, "libcudart.so.12")] == "external"
    assert not [f for f in search_path.check(declared, context(declared))
                if f.severity is Severity.ERROR]


def test_search_path_hygiene() -> None:
    wheel = model(elf("pkg/lib/liba.so", rpath=("/home/me/build/lib",)),
                  elf("pkg/lib/libb.so", runpath=("$ORIGIN/../../nvidia/cuda_runtime/lib",
                                                  "$ORIGIN")),
                  elf("pkg/lib/libc.so", runpath=("$ORIGIN/missing", "")),
                  requires=("nvidia-cuda-runtime-cu12",))
    found = {(f.file, f.severity, f.what.split(" ")[0] + " " + f.what.split(" ")[-1])
             for f in search_path.check(wheel, context(wheel))}
    assert ("pkg/lib/liba.so", Severity.INFO, "uses DT_RUNPATH") in found     # DT_RPATH: a note
    # no build record: absolute and dangling entries are survivable (warnings), not errors
    assert ("pkg/lib/liba.so", Severity.WARNING, "search absolute") in found
    assert ("pkg/lib/libb.so", Severity.WARNING, "searches own") in found     # foreign first
    assert ("pkg/lib/libc.so", Severity.WARNING, "search wheel") in found     # dangling
    assert ("pkg/lib/libc.so", Severity.ERROR, "has entry") in found          # empty entry


@pytest.mark.parametrize(("binary", "folder", "entry"), [
    ("edgert/lib/libedgert.so", "edgert/lib", "$ORIGIN"),
    ("edgert/_C.abi3.so", "edgert/lib", "$ORIGIN/lib"),
    ("edgert/lib/libedgert_backend_cuda.so", "nvidia/cuda_runtime/lib",
     "$ORIGIN/../../nvidia/cuda_runtime/lib"),
    ("top.so", "", "$ORIGIN"),
])
def test_an_entry_resolves_back_to_the_folder_it_was_written_for(binary: str, folder: str,
                                                                 entry: str) -> None:
    assert origin_relative(binary, folder) == LOADER.search_entry(binary, folder) == entry
    installed = binary.rpartition("/")[0]
    resolved = LOADER.classify(entry, installed)
    assert (resolved.kind, resolved.folder) == (EntryKind.INSIDE, folder)


def test_entries_that_leave_or_ignore_site_packages() -> None:
    assert LOADER.classify("$ORIGIN/../../..", "edgert/lib").kind is EntryKind.OUTSIDE
    assert LOADER.classify("/usr/lib", "edgert/lib").kind is EntryKind.SYSTEM
    assert LOADER.classify("/home/me/build", "edgert/lib").kind is EntryKind.ABSOLUTE
    assert LOADER.classify("", "edgert/lib").kind is EntryKind.EMPTY


def test_the_tag_promise_limits_symbol_versions() -> None:
    old = model(elf("pkg/_C.so", needed=("libc.so.6",), versions=("GLIBC_2.17", "GLIBC_2.34")))
    errors = metadata_check.check(old, context(old))
    assert [f.details["versions"] for f in errors] == [["GLIBC_2.34"]]
    assert errors[0].details["policy"] == "manylinux_2_17"
    newer = model(elf("pkg/_C.so", needed=("libc.so.6",), versions=("GLIBC_2.34",)),
                  tag="manylinux_2_35_x86_64")
    assert metadata_check.check(newer, context(newer, "manylinux_2_35_x86_64")) == []


QEMU = Runner("aarch64", prefix=("/usr/bin/qemu-aarch64", "-L", "/root64"),
              python="/root64/usr/bin/python3.11", cmake_arguments=("-DCMAKE_TOOLCHAIN_FILE=t",))


def test_which_hosts_run_which_tags() -> None:
    native = LOADER.runner([TAG], Host("linux", "x86_64"))
    assert native == Runner("x86_64") and native.python == sys.executable
    assert LOADER.runner(["manylinux_2_17_aarch64"], Host("linux", "x86_64")) is None
    assert LOADER.runner([TAG], Host("darwin", "x86_64")) is None
    assert LOADER.runner(["manylinux_2_17_aarch64"], Host("linux", "x86_64", (QEMU,))) is QEMU
    assert LOADER.runner(["manylinux_2_17_aarch64", TAG], Host("linux", "x86_64", (QEMU,))) \
        is None, "a wheel tagged for two machines runs on neither"


def test_load_commands_start_the_runners_python() -> None:
    items = [LoadItem(Path("/w/pkg/lib/libcore.so"), extension=False),
             LoadItem(Path("/w/pkg/_C.abi3.so"), extension=True)]
    native = LOADER.load_command(items, Runner("x86_64"))
    emulated = LOADER.load_command(items, QEMU)
    assert native[:2] == [sys.executable, "-c"]
    assert emulated[:5] == ["/usr/bin/qemu-aarch64", "-L", "/root64",
                            "/root64/usr/bin/python3.11", "-c"]
    assert native[-2:] == emulated[-2:] == ["g:/w/pkg/lib/libcore.so", "l:/w/pkg/_C.abi3.so"]


def test_symbol_version_limits_are_per_architecture() -> None:
    """manylinux_2_17 allows GLIBC_2.2.5 on x86_64 (its first glibc symbols), while aarch64
    glibc starts at 2.17; GLIBCXX_3.4.21 is beyond manylinux2014 on both."""
    tag = "manylinux_2_17_aarch64"
    x86 = model(elf("pkg/_C.so", needed=("libc.so.6",), versions=("GLIBC_2.2.5",)))
    assert metadata_check.check(x86, context(x86)) == []
    arm = model(elf("pkg/_C.so", needed=("libc.so.6",), versions=("GLIBC_2.17", "GLIBC_2.34"),
                    machine="aarch64"), tag=tag)
    errors = metadata_check.check(arm, context(arm, tag))
    assert [f.details["versions"] for f in errors] == [["GLIBC_2.34"]]
    assert LOADER.policy([tag]).machine == "aarch64"
    assert LOADER.policy([tag]).symbol_versions["GLIBC"] >= {"2.17", "2.18"}
    assert "2.2.5" not in LOADER.policy([tag]).symbol_versions["GLIBC"]
    newer = "manylinux_2_35_aarch64"
    arm = model(elf("pkg/_C.so", needed=("libc.so.6",), versions=("GLIBC_2.34",),
                    machine="aarch64"), tag=newer)
    assert metadata_check.check(arm, context(arm, newer)) == []


def test_a_policy_applies_only_to_the_architectures_it_lists() -> None:
    assert LOADER.policy(["manylinux1_x86_64"]).name == "manylinux_2_5"
    assert LOADER.policy(["manylinux1_aarch64"]).name == "linux", \
        "manylinux1 was never defined for aarch64"


def test_binaries_for_another_machine_than_the_tag_are_errors() -> None:
    tag = "manylinux_2_35_aarch64"
    wheel = model(elf("pkg/_C.so", needed=("libc.so.6",), versions=("GLIBC_2.17",)), tag=tag)
    errors = metadata_check.check(wheel, context(wheel, tag))
    assert [(f.file, f.details["machine"], f.details["promised"]) for f in errors] == \
        [("pkg/_C.so", "x86_64", "aarch64")]
    assert errors[0].severity is Severity.ERROR
    plain = model(elf("pkg/_C.so"))
    assert metadata_check.check(plain, context(plain)) == []
    assert LOADER.claims_tag("linux_x86_64") and not LOADER.claims_tag("win_amd64")


def test_the_policies_are_the_pinned_copy_whatever_auditwheel_is_importable(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An importable auditwheel with other policies changes nothing: verify reads the pinned
    copy beside the Linux platform module, which names the auditwheel it came from."""
    from platforms.linux import policy

    fake = tmp_path / "auditwheel"
    (fake / "policy").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "policy" / "__init__.py").write_text("")
    (fake / "policy" / "manylinux-policy.json").write_text("[]")
    monkeypatch.syspath_prepend(str(tmp_path))
    policy.load_policies.cache_clear()
    try:
        loaded = policy.load_policies()
    finally:
        policy.load_policies.cache_clear()
    assert loaded.source.startswith("auditwheel 6.8.2 (pinned copy")
    assert {p.name for p in loaded.policies} >= {"manylinux_2_17", "musllinux_1_2"}
    assert LOADER.policy([TAG]).source == loaded.source


def test_musllinux_tags_promise_musl_and_its_c_library() -> None:
    tag = "musllinux_1_2_x86_64"
    musl = LOADER.policy([tag])
    assert musl.name == "musllinux_1_2" and musl.machine == "x86_64"
    assert "libc.musl-x86_64.so.1" in musl.libraries and "libc.so" not in musl.libraries
    wheel = model(elf("pkg/_C.so", needed=("libc.musl-x86_64.so.1", "libc.so.6")), tag=tag)
    resolved = {(r.binary, r.needed): r.kind
                for r in linkage_model.resolutions(context(wheel, tag))}
    assert resolved == {("pkg/_C.so", "libc.musl-x86_64.so.1"): "system",
                            ("pkg/_C.so", "libc.so.6"): "unresolved"}
    assert LOADER.policy(["musllinux_1_2_aarch64"]).libraries >= {"libc.musl-aarch64.so.1"}


def test_the_update_script_copies_and_records_the_source(tmp_path: Path) -> None:
    from platforms.linux import update_policies

    source = tmp_path / "site" / "auditwheel" / "policy"
    source.mkdir(parents=True)
    (tmp_path / "site" / "auditwheel-9.9.dist-info").mkdir()
    for name in update_policies.FILES:
        (source / name).write_text('[{"name": "linux"}]\n')
    out = tmp_path / "out"
    out.mkdir()
    record = update_policies.update(source, out)
    assert record["auditwheel"] == "9.9"
    assert sorted(p.name for p in out.iterdir()) == sorted([*update_policies.FILES,
                                                            "policy-source.json"])
    (source / "musllinux-policy.json").write_text("{broken")
    with pytest.raises(ConfigurationError, match="musllinux-policy.json is not JSON"):
        update_policies.update(source, out)
    assert update_policies.main([str(tmp_path / "nowhere")]) == ConfigurationError.exit_code


def test_the_search_path_s_folder_wins_over_an_extra_s_import() -> None:
    """libcudart.so.12 reached through the binary's own entry into an undeclared NVIDIA
    folder is that distribution's (undeclared), not torch's, which only an extra declares and
    whose import would load it."""
    binary = elf("pkg/lib/libgpu.so", needed=("libcudart.so.12",),
                 runpath=("$ORIGIN/../../nvidia/cuda_runtime/lib",))
    wheel = model(binary, requires=('torch; extra == "torch"',))
    (item,) = linkage_model.resolutions(context(wheel))
    assert (item.kind, item.distribution) == ("undeclared", "nvidia-cuda-runtime-cu12")
    declared = model(binary, requires=("torch>=2",))
    (through_torch,) = linkage_model.resolutions(context(declared))
    assert (through_torch.kind, through_torch.module) == ("imported", "torch")


MUSL = "musllinux_1_2_x86_64"


def test_musl_passes_every_search_path_down_glibc_only_rpath() -> None:
    """musl's load_library walks the chain of loaders and searches each one's path, DT_RUNPATH
    or DT_RPATH alike; glibc passes down only DT_RPATH of loaders without DT_RUNPATH."""
    binaries = (elf("pkg/_C.so", needed=("libmid.so",), runpath=("$ORIGIN/lib", "$ORIGIN/deep")),
                elf("pkg/lib/libmid.so", needed=("libdeep.so",)),
                elf("pkg/deep/libdeep.so"))
    glibc = model(*binaries)
    musl = model(*binaries, tag=MUSL)
    assert kinds(glibc)[("pkg/lib/libmid.so", "libdeep.so")] == "unresolved"
    assert kinds(musl)[("pkg/lib/libmid.so", "libdeep.so")] == "wheel"


def test_musl_explains_dt_rpath_by_its_own_rules() -> None:
    binary = elf("pkg/_C.so", rpath=("$ORIGIN",))
    (glibc,) = LOADER.for_wheel(set(), {}, platform_tags=(TAG,)).search_path_problems(binary.info)
    (musl,) = LOADER.for_wheel(set(), {}, platform_tags=(MUSL,)).search_path_problems(binary.info)
    assert "overrides LD_LIBRARY_PATH" in glibc.why
    assert "LD_LIBRARY_PATH" in musl.why and "overrides" not in musl.why
    assert "musl" in musl.why
