"""check-set on synthetic release folders: wheels carrying the METADATA and build record the
pipeline writes (no binaries), an sdist name, and a stand-in for verify --static. A complete
set passes; each way a set can be wrong is one error naming the file; what is not buildable
yet is listed, not required."""

from __future__ import annotations

import dataclasses
import json
import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from release import manifest, release_set
from release.__main__ import main as release_main
from release.build_options import Form
from release.building import distinfo
from release.building.matrix import MatrixEntry, release_matrix
from release.building.resolved import resolve
from release.distribution import core_metadata as metadata
from release.distribution import sbom
from release.distribution.buildrecord import RECORD_FILE
from release.distribution.wheel import normalize_distribution, read_entries, wheel_text, write_wheel
from release.distribution.wheel_variant import make_variant_wheel
from release.errors import WheelError
from release.findings import Finding, Severity
from release.host import Host
from release.release_set import check_set as release_set_run
from release.release_set import set_model as release_set_model
from release.tool import Tool
from release.verify.options import VerifyOptions
from release.verify.report import Report
from tests.conftest import ROOT

MANIFEST = manifest.load(ROOT)
TOOLCHAIN = (Tool("GNU CXX compiler (c++)", "12.2.0"), Tool("cmake", "4.4.5"))
HOST = Host.current()
ENTRIES = release_matrix(MANIFEST, HOST)
BUILDABLE = [entry for entry in ENTRIES if entry.route.buildable]


def write_synthetic_wheel(folder: Path, entry: MatrixEntry, *, version: str = "0.1.0",
                          platform_tag: str | None = None,
                          edit_metadata: Callable[[str], str] = lambda text: text,
                          edit_record: Callable[[dict], dict] = lambda data: data,
                          edit_sbom: Callable[[dict], dict | None] = lambda data: data) -> Path:
    """A wheel as the pipeline lays it out for ``entry``, with stand-ins for the binaries."""
    project = {**MANIFEST.project, "version": version}
    loaded = dataclasses.replace(MANIFEST, version=version, project=project,
                                 validated_project=metadata.project_metadata(project, ROOT))
    release = resolve(loaded, loaded.selection(entry.target, entry.variant),
                      host=entry.release.host, form=entry.release.form)
    platform, record = release.platform, release.record
    dist_info, files = distinfo.folder_name(release), distinfo.metadata_files(release)
    tag = platform_tag or (f"manylinux_2_28_{entry.target.arch}"
                           if entry.target.platform == "linux"
                           else platform.wheel_platform_tag(entry.target))
    files["METADATA"] = edit_metadata(files["METADATA"].decode()).encode()
    files["WHEEL"] = wheel_text([f"cp39-abi3-{tag}"]).encode()
    binaries = {file: f"stand-in for {file}".encode() for file in sbom.shipped_files(record)}
    document = edit_sbom(sbom.document(record, files=binaries, toolchain=TOOLCHAIN,
                                       license_expression="Apache-2.0", epoch=315532800,
                                       generator="test"))
    if document is not None:
        files[sbom.file_name("edgert")] = sbom.to_bytes(document)
    entries = {f"{dist_info}/{name}": (data, 0o644) for name, data in files.items()}
    entries.update({file: (data, 0o755) for file, data in binaries.items()})
    entries[f"edgert/{RECORD_FILE}"] = (json.dumps(edit_record(record.to_json())).encode(),
                                        0o644)
    path = folder / f"{normalize_distribution(entry.distribution)}-{version}-cp39-abi3-{tag}.whl"
    write_wheel(path, entries, dist_info=dist_info, epoch=315532800)
    return path


def write_sdist(folder: Path, version: str = "0.1.0") -> Path:
    path = folder / f"edgert-{version}.tar.gz"
    with tarfile.open(path, "w:gz"):
        pass
    return path


def passing_verify(path: Path) -> Report:
    return Report(wheel=path.name, static=True, checks={"components": "ran", "coverage": "ran",
                                                        "variant-properties": "ran"})


@pytest.fixture(scope="module")
def _complete_set_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("complete-set")
    for entry in BUILDABLE:
        write_synthetic_wheel(folder, entry)
    write_sdist(folder)
    return folder


@pytest.fixture
def complete_set(_complete_set_once: Path, tmp_path: Path) -> Path:
    """A complete release folder of this test's own (written once per module, copied)."""
    shutil.copytree(_complete_set_once, tmp_path, dirs_exist_ok=True)
    return tmp_path


def entry(name: str) -> MatrixEntry:
    return next(item for item in ENTRIES if item.name == name)


def errors(folder: Path, **kwargs: object) -> list[Finding]:
    kwargs.setdefault("verify", passing_verify)
    report = release_set.check_release_set(folder, MANIFEST, host=HOST, **kwargs)  # type: ignore[arg-type]
    return [f for f in report.findings if f.severity is Severity.ERROR]


def only_error(folder: Path, **kwargs: object) -> Finding:
    found = errors(folder, **kwargs)
    assert len(found) == 1, found
    return found[0]


def test_a_complete_set_passes_and_lists_what_is_not_buildable(complete_set: Path) -> None:
    report = release_set.check_release_set(complete_set, MANIFEST, host=HOST,
                                           verify=passing_verify,
                                           expect_version="0.1.0")
    assert report.ok, report.render_text()
    assert set(report.wheels) == {e.name for e in BUILDABLE} and len(report.wheels) == 10
    assert {name for name in report.wheels if name.startswith("macos")} == {
        "macos-arm64-cpu", "macos-x86_64-cpu", "macos-universal2-cpu"}
    assert report.not_buildable == {}
    text = report.render_text()
    assert text.splitlines()[-1].endswith("OK (10 wheels, 0 not buildable yet, 0 errors)")


def test_a_missing_wheel_is_named(complete_set: Path) -> None:
    next(complete_set.glob("edgert_cu13-*aarch64.whl")).unlink()
    found = only_error(complete_set)
    assert found.check == "matrix" and "linux-aarch64-cu13: expected one wheel, found 0" in \
        found.what
    assert "ubuntu-24.04-arm" in found.fix


def test_two_wheels_for_one_entry_are_an_error(complete_set: Path) -> None:
    write_synthetic_wheel(complete_set, entry("linux-x86_64-cpu"),
                          platform_tag="manylinux_2_27_x86_64")
    assert "linux-x86_64-cpu: expected one wheel, found 2" in only_error(complete_set).what


def test_one_version_everywhere(complete_set: Path) -> None:
    next(complete_set.glob("edgert-*manylinux_2_28_x86_64.whl")).unlink()
    write_synthetic_wheel(complete_set, entry("linux-x86_64-cpu"), version="0.1.1")
    found = errors(complete_set)
    assert {f.check for f in found} == {"version"}
    assert {f.file for f in found} == {"edgert-0.1.1-cp39-abi3-manylinux_2_28_x86_64.whl"}
    assert len(found) == 3   # file name, METADATA and build record each say 0.1.1


def test_the_tag_s_version_must_be_the_manifest_s(complete_set: Path) -> None:
    found = errors(complete_set, expect_version="0.2.0")
    assert any(f.file == "pyproject.toml" and "release is 0.2.0" in f.what for f in found)
    assert any(f.file == "edgert-0.1.0.tar.gz" for f in found)
    assert len([f for f in found if f.file.endswith(".whl")]) == 10 * 3


def test_a_wheel_newer_than_the_build_image_is_refused(complete_set: Path) -> None:
    next(complete_set.glob("edgert-*manylinux_2_28_x86_64.whl")).unlink()
    write_synthetic_wheel(complete_set, entry("linux-x86_64-cpu"),
                          platform_tag="manylinux_2_35_x86_64")
    found = only_error(complete_set)
    assert found.check == "tag" and "needs glibc 2.35, newer than the manylinux_2_28 image" \
        in found.what


def test_an_unrepaired_or_foreign_tag_is_refused(complete_set: Path) -> None:
    next(complete_set.glob("edgert-*manylinux_2_28_x86_64.whl")).unlink()
    write_synthetic_wheel(complete_set, entry("linux-x86_64-cpu"), platform_tag="linux_x86_64")
    assert "not a manylinux tag" in only_error(complete_set).what
    next(complete_set.glob("edgert-*linux_x86_64.whl")).unlink()
    write_synthetic_wheel(complete_set, entry("linux-x86_64-cpu"),
                          platform_tag="manylinux_2_28_ppc64le")
    assert "platform tag manylinux_2_28_ppc64le is not for x86_64" in \
        only_error(complete_set).what


def test_the_cuda_runtime_requirement_must_be_declared(complete_set: Path) -> None:
    next(complete_set.glob("edgert_cu12-*x86_64.whl")).unlink()
    write_synthetic_wheel(
        complete_set, entry("linux-x86_64-cu12"),
        edit_metadata=lambda text: "".join(line for line in text.splitlines(keepends=True)
                                           if "nvidia-cuda-runtime" not in line))
    found = only_error(complete_set)
    assert found.check == "requirements" and "nvidia-cuda-runtime-cu12" in found.what


def test_claims_must_be_the_variant_s_and_covered(complete_set: Path) -> None:
    def fewer_claims(data: dict) -> dict:
        data["cuda"]["claims"] = ["8.0"]
        return data
    next(complete_set.glob("edgert_cu13-*x86_64.whl")).unlink()
    write_synthetic_wheel(complete_set, entry("linux-x86_64-cu13"), edit_record=fewer_claims)
    found = only_error(complete_set)
    assert found.check == "claims"
    assert "section holds claims 8.0; variant cu13 declares claims 7.5" in found.what

    def no_coverage(path: Path) -> Report:
        return Report(wheel=path.name, static=True, checks={"components": "ran"})
    found = errors(complete_set, verify=no_coverage)
    assert {f.check for f in found} == {"claims"}
    assert len([f for f in found if "coverage check did not run (absent)" in f.what]) == 4


def test_verify_errors_are_the_set_s(complete_set: Path) -> None:
    def verify(path: Path) -> Report:
        report = passing_verify(path)
        if "aarch64" in path.name and path.name.startswith("edgert-"):
            report.findings.append(Finding("linkage", Severity.ERROR, "edgert/lib/libedgert.so",
                                           "libfoo.so.1 not found", fix="declare it"))
            report.findings.append(Finding("leaks", Severity.WARNING, "", "a warning"))
        return report
    found = only_error(complete_set, verify=verify)
    assert found.check == "verify" and found.file.startswith("edgert-0.1.0-cp39-abi3-manyl")
    assert found.what == "[linkage] edgert/lib/libedgert.so: libfoo.so.1 not found"

    def unreadable(path: Path) -> Report:
        raise WheelError("duplicate entries", fix="rebuild it")
    assert len(errors(complete_set, verify=unreadable)) == 10


def test_stray_files_and_undeclared_wheels_are_errors(complete_set: Path) -> None:
    (complete_set / "notes.txt").write_text("x")
    known = entry("linux-x86_64-cpu")
    riscv = MatrixEntry(resolve(MANIFEST, MANIFEST.selection(
        manifest.Target("linux-riscv64", "linux", "riscv64"), known.variant),
        host=known.release.host))
    write_synthetic_wheel(complete_set, riscv)
    found = {f.file: f for f in errors(complete_set)}
    assert "neither a wheel nor the sdist" in found["notes.txt"].what
    assert "linux-riscv64 x cpu is not in the manifest's release matrix" in \
        found["edgert-0.1.0-cp39-abi3-manylinux_2_28_riscv64.whl"].what


def test_the_sdist_is_part_of_the_set(complete_set: Path) -> None:
    (complete_set / "edgert-0.1.0.tar.gz").unlink()
    assert "expected one sdist of edgert, found 0" in only_error(complete_set).what


def test_a_wheel_without_a_build_record_was_not_built_by_the_pipeline(
        complete_set: Path) -> None:
    path = next(complete_set.glob("edgert-*manylinux_2_28_x86_64.whl"))
    write_wheel(path, {"edgert-0.1.0.dist-info/METADATA": (b"Name: edgert\n", 0o644)},
                dist_info="edgert-0.1.0.dist-info", epoch=315532800)
    found = errors(complete_set)
    assert any("has no build record" in f.what for f in found)
    assert any("linux-x86_64-cpu: expected one wheel, found 0" in f.what for f in found)


def test_the_default_verify_is_static_with_the_project_s_providers(
        complete_set: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, bool, object]] = []

    def fake_verify_wheel(path: Path, *, static: bool, options: VerifyOptions,
                          host: Host) -> Report:
        assert host is HOST   # the edge's Host, handed down
        calls.append((Path(path).name, static, options.providers))
        return passing_verify(Path(path))
    monkeypatch.setattr(release_set_run, "verify_wheel", fake_verify_wheel)
    assert release_set.check_release_set(complete_set, MANIFEST, host=HOST).ok
    assert len(calls) == 10 and all(static and providers == MANIFEST.providers == ("cuda",)
                                    for _, static, providers in calls)


def test_cli_exit_codes_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert release_main(["check-set", str(tmp_path), "--project", str(ROOT), "--json"]) == 7
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False and len(report["not_buildable"]) == 0
    assert {f["check"] for f in report["findings"]} == {"files", "matrix"}
    assert release_main(["check-set", str(tmp_path / "absent"), "--project", str(ROOT)]) == 2
    assert "is not a folder" in capsys.readouterr().err


def test_glibc_of_policies_and_tags() -> None:
    assert release_set_model.glibc_of("manylinux_2_28") == (2, 28)
    assert release_set_model.glibc_of("manylinux2014_x86_64") == (2, 17)
    assert release_set_model.glibc_of("quay.io/pypa/manylinux_2_28_x86_64:2025.01.01") is None
    assert release_set_model.manylinux_images(ROOT / "pyproject.toml") == {
        "x86_64": "manylinux_2_28", "aarch64": "manylinux_2_28"}


def _tamper_component(document: dict) -> dict:
    document["components"][0]["hashes"][0]["content"] = "0" * 64
    return document


def _no_toolchain(document: dict) -> dict:
    document["formulation"][0]["components"] = []
    return document


@pytest.mark.parametrize("edit, words", [
    (lambda document: None, "has no SBOM"),
    (_tamper_component, "gives edgert/lib/libedgert.so the sha256 " + "0" * 64),
    (_no_toolchain, "names no compiler or no CMake"),
    (lambda document: {**document, "bomFormat": "SPDX"}, "is not a CycloneDX document"),
])
def test_each_wheel_carries_an_sbom_naming_its_files_and_toolchain(
        complete_set: Path, edit: Callable[[dict], dict | None], words: str) -> None:
    next(complete_set.glob("edgert-*manylinux_2_28_x86_64.whl")).unlink()
    write_synthetic_wheel(complete_set, entry("linux-x86_64-cpu"), edit_sbom=edit)
    found = only_error(complete_set)
    assert found.check == "sbom" and words in found.what
    assert found.file.startswith("edgert-0.1.0-cp39-abi3-manylinux_2_28_x86_64")


def _variant_set(folder: Path, *, null_only: bool = False) -> dict[str, Path]:
    """The Linux entries as variant wheels of the one distribution (PEP 825), the CPU ones
    also as plain wheels unless ``null_only``; the other entries as before. Returns the
    linux-x86_64 ones by variant name."""
    scratch = folder / "scratch"
    scratch.mkdir()
    made = {}
    for item in BUILDABLE:
        if item.target.platform != "linux":
            write_synthetic_wheel(folder, item)
            continue
        plain = write_synthetic_wheel(
            scratch, MatrixEntry(resolve(MANIFEST, MANIFEST.selection(item.target, item.variant),
                                         host=item.release.host, form=Form.VARIANT)))
        path, _ = make_variant_wheel(plain, folder, item.variant.wheel_variant,
                                     MANIFEST.variant_providers, epoch=315532800)
        plain.unlink()
        if item.target.name == "linux-x86_64":
            made[item.variant.name] = path
        if item.variant.name == "cpu" and not null_only:
            written = write_synthetic_wheel(folder, item)
            if item.target.name == "linux-x86_64":
                made["plain"] = written
    scratch.rmdir()
    write_sdist(folder)
    return made


VariantSet = Callable[..., dict[str, Path]]


@pytest.fixture(scope="module")
def _variant_sets(tmp_path_factory: pytest.TempPathFactory
                  ) -> dict[bool, tuple[Path, dict[str, str]]]:
    """_variant_set's folders, each written once per module when first asked for."""
    return {}


@pytest.fixture
def variant_set(_variant_sets: dict[bool, tuple[Path, dict[str, str]]],
                tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> VariantSet:
    """``_variant_set(tmp_path, null_only=...)``, copied into this test's own folder."""
    def copied(*, null_only: bool = False) -> dict[str, Path]:
        if null_only not in _variant_sets:
            template = tmp_path_factory.mktemp("variant-set")
            _variant_sets[null_only] = (template, {
                name: path.name for name, path in _variant_set(template,
                                                               null_only=null_only).items()})
        template, names = _variant_sets[null_only]
        shutil.copytree(template, tmp_path, dirs_exist_ok=True)
        return {name: tmp_path / file for name, file in names.items()}
    return copied


def test_a_set_of_variant_wheels_passes_once_its_index_is_written(
        tmp_path: Path, variant_set: VariantSet) -> None:
    made = variant_set()
    assert made["cu12"].name == "edgert-0.1.0-cp39-abi3-manylinux_2_28_x86_64-cu12.whl"
    missing = only_error(tmp_path)
    assert (missing.check, missing.file) == ("variants", "edgert-0.1.0-variants.json")
    assert "missing" in missing.what
    assert errors(tmp_path, write_index=True) == []
    index = json.loads((tmp_path / "edgert-0.1.0-variants.json").read_text())
    assert set(index["variants"]) == {"null", "cu12", "cu13"}
    report = release_set.check_release_set(tmp_path, MANIFEST, host=HOST, verify=passing_verify)
    assert report.wheels["linux-x86_64-cu12"] == made["cu12"].name
    assert report.wheels["linux-x86_64-cpu"] == made["plain"].name


def test_the_null_variant_covers_the_cpu_entry_without_a_plain_wheel(
        tmp_path: Path, variant_set: VariantSet) -> None:
    made = variant_set(null_only=True)
    assert errors(tmp_path, write_index=True) == []
    report = release_set.check_release_set(tmp_path, MANIFEST, host=HOST, verify=passing_verify)
    assert report.wheels["linux-x86_64-cpu"] == made["cpu"].name


def test_a_stale_index_and_a_missing_variant_wheel_are_errors(
        tmp_path: Path, variant_set: VariantSet) -> None:
    variant_set()
    assert errors(tmp_path, write_index=True) == []
    for path in tmp_path.glob("*-cu13.whl"):     # every target's cu13 wheel
        path.unlink()
    found = errors(tmp_path)
    stale = [f.what for f in found if f.file == "edgert-0.1.0-variants.json"]
    assert len(stale) == 1 and "disagrees with the wheels on cu13" in stale[0]
    assert {f.what for f in found if f.check == "matrix"} == {
        f"linux-{arch}-cu13: expected one wheel, found 0" for arch in ("x86_64", "aarch64")}


def test_a_variant_wheel_must_claim_its_variant_s_properties(
        tmp_path: Path, variant_set: VariantSet) -> None:
    made = variant_set()
    path = made["cu12"]
    files = read_entries(path)
    name = "edgert-0.1.0.dist-info/variant.json"
    files[name] = (files[name][0].replace(b'"75_real",', b""), 0o644)
    write_wheel(path, files, dist_info="edgert-0.1.0.dist-info", epoch=315532800)
    found = [f for f in errors(tmp_path, write_index=True) if f.file == path.name]
    assert len(found) == 1 and found[0].check == "variants"
    assert "variant cu12 declares 'cu12' with" in found[0].what
