"""One ResolvedRelease per target x variant: the plan, the release matrix (``plan``),
check-set and the PEP 517 backend read the same facts, each worked out once: the variant is
loaded from its provider once, the platform is asked for the route once, the core metadata
is computed once, and the lay-out stage and the backend write the same .dist-info."""

from __future__ import annotations

from pathlib import Path

import pytest

from platforms.linux import PLATFORM as LINUX
from release import backend, manifest
from release.build_options import BuildOptions, Form
from release.building import distinfo, matrix, resolved
from release.building.pipeline import make_plan
from release.distribution import core_metadata as metadata_module
from release.errors import ConfigurationError, ToolError
from release.host import Host
from release.manifest import Target
from release.platform import BuildRoute, Platform, Route
from tests.conftest import ROOT

X86_64 = Host("linux", "x86_64")
LOADED = manifest.load(ROOT)


def _count(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> list[object]:
    """Records each call of ``owner.name`` (the calls still happen)."""
    calls: list[object] = []
    original = getattr(owner, name)

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(args)
        return original(*args, **kwargs)
    monkeypatch.setattr(owner, name, counted)
    return calls


def test_a_plan_asks_the_platform_for_its_route_once(monkeypatch: pytest.MonkeyPatch) -> None:
    routes = _count(monkeypatch, LINUX, "build_route")
    loads = _count(monkeypatch, resolved, "load_variant")
    read = _count(monkeypatch, metadata_module, "standard")
    rendered = _count(monkeypatch, metadata_module.ProjectMetadata, "for_distribution")
    plan = make_plan(LOADED, BuildOptions(platform="linux", arch="x86_64", variant="cu12"),
                     environ={}, host=X86_64)
    assert (len(routes), len(loads), len(rendered)) == (1, 1, 0)
    assert plan.release.route is plan.release.route and len(routes) == 1   # kept
    assert plan.release.metadata is plan.release.metadata and len(rendered) == 1
    assert read == []      # [project] was read when the manifest was loaded, not again


def test_the_matrix_loads_each_variant_once(monkeypatch: pytest.MonkeyPatch) -> None:
    loads = _count(monkeypatch, resolved, "load_variant")
    entries = matrix.release_matrix(LOADED, X86_64)
    assert len(entries) > len(LOADED.variants)      # several targets share each variant
    assert len(loads) == len(LOADED.variants)
    by_name = {entry.name: entry for entry in entries}
    assert by_name["linux-x86_64-cu12"].release.variant is \
        by_name["linux-aarch64-cu12"].release.variant


def test_the_plan_and_the_matrix_entry_hold_the_same_facts() -> None:
    plan = make_plan(LOADED, BuildOptions(platform="linux", arch="x86_64", variant="cu12"),
                     environ={}, host=X86_64)
    entry = {e.name: e for e in matrix.release_matrix(LOADED, X86_64)}["linux-x86_64-cu12"]
    mine, theirs = plan.release, entry.release
    assert (mine.distribution, mine.record, mine.search_paths, mine.route) == \
        (theirs.distribution, theirs.record, theirs.search_paths, theirs.route)
    assert mine.distribution == "edgert-cu12" == plan.release.record.distribution
    assert mine.metadata == theirs.metadata
    assert "Name: edgert-cu12" in mine.metadata.text.splitlines()


def test_a_variant_wheel_belongs_to_the_project_s_distribution() -> None:
    cu12 = LOADED.select("linux", "x86_64", "cu12")
    separate = resolved.resolve(LOADED, cu12, host=X86_64)
    variant = resolved.resolve(LOADED, cu12, host=X86_64, form=Form.VARIANT)
    assert (separate.distribution, variant.distribution) == ("edgert-cu12", "edgert")
    assert variant.record.distribution == "edgert"
    assert distinfo.folder_name(variant) == "edgert-0.1.0.dist-info"


def test_an_unreachable_route_is_refused_with_its_own_words(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(LINUX, "build_route", lambda target, host: BuildRoute(
        Route.CROSS, "the aarch64 cross compiler was not found", fix="apt-get install it"))
    with pytest.raises(ToolError) as refused:
        make_plan(LOADED, BuildOptions(platform="linux", arch="aarch64"), environ={},
                  host=X86_64)
    assert refused.value.message == ("the aarch64 cross compiler was not found "
                                     "(fix: apt-get install it)")


def test_the_backend_writes_the_lay_out_stage_s_metadata(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(ROOT)
    for key in ("RELEASE_VARIANT", "RELEASE_FORM", "RELEASE_ARCH"):
        monkeypatch.delenv(key, raising=False)
    name = backend.prepare_metadata_for_build_wheel(str(tmp_path), {"variant": "cu12"})
    release = resolved.resolve(LOADED, LOADED.select(
        "linux", Host.current().arch("linux"), "cu12"), host=Host.current())
    assert name == distinfo.folder_name(release) == "edgert_cu12-0.1.0.dist-info"
    written = {path.relative_to(tmp_path / name).as_posix(): path.read_bytes()
               for path in (tmp_path / name).rglob("*") if path.is_file()}
    laid_out = distinfo.layout_files(release)
    assert written == {key: data for key, data in laid_out.items() if key != "WHEEL"}
    assert laid_out["WHEEL"].decode().splitlines()[-1] == \
        f"Tag: cp39-abi3-linux_{release.target.arch}"


class _Thin(Platform):
    """A platform that declares none of the optional capabilities."""

    name = "thin"
    loader = None
    reader = None


def test_optional_capabilities_have_their_defaults() -> None:
    thin = Target("thin-x", "thin", "x")
    platform = _Thin()
    assert platform.parts(thin) == (thin,)
    assert platform.requested_arch({"ARCHFLAGS": "-arch arm64"}) is None
    assert platform.first_configure_note == "seconds with the host's compilers"
    with pytest.raises(ConfigurationError, match="the thin platform builds no target from "
                                                 "parts"):
        platform.merge([Path("a"), Path("b")], Path("c"), host=X86_64)
    assert LINUX.parts(LOADED.target("linux", "x86_64")) == (LOADED.target("linux", "x86_64"),)


def test_a_plan_takes_the_release_it_is_handed_when_it_is_the_one_asked_for(
        monkeypatch: pytest.MonkeyPatch) -> None:
    entry = {e.name: e for e in matrix.release_matrix(LOADED, X86_64)}["linux-x86_64-cu12"]
    assert entry.route.reachable                   # plan --build asks this first
    routes = _count(monkeypatch, LINUX, "build_route")
    loads = _count(monkeypatch, resolved, "load_variant")
    options = BuildOptions(platform="linux", arch="x86_64", variant="cu12")
    assert make_plan(LOADED, options, environ={}, host=X86_64,
                     resolved=entry.release).release is entry.release
    assert (len(routes), len(loads)) == (0, 0)     # the entry's route was already known
    other = make_plan(LOADED, BuildOptions(platform="linux", arch="x86_64", variant="cu12",
                                           form=Form.VARIANT), environ={}, host=X86_64,
                      resolved=entry.release)
    assert other.release is not entry.release and other.release.distribution == "edgert"
    assert (len(routes), len(loads)) == (1, 1)
