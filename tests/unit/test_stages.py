"""The stages are one ordered list (release/build_options.py Stage,
release/building/pipeline.py STEPS): pack is a stage of its own between fix up and repair,
``--until`` names any of them, and a run that stops before pack publishes nothing."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import pytest

from release import backend, manifest
from release.__main__ import main as release_main
from release.build_options import BuildOptions, Stage, VerifyMode
from release.building import pipeline
from release.errors import ConfigurationError
from release.host import Host
from tests.conftest import ROOT

NAMES = ["configure", "build", "install", "layout", "fixup", "pack", "repair", "verify"]


def test_the_stages_in_order() -> None:
    assert [stage.option for stage in Stage] == NAMES
    assert [stage.value for stage in Stage] == list(range(1, len(NAMES) + 1))
    assert Stage.FIXUP < Stage.PACK < Stage.REPAIR
    assert [stage.label for stage in Stage][3:6] == ["lay out", "fix up", "pack"]


def test_the_pipeline_runs_each_stage_once_in_order_and_pack_alone_packs() -> None:
    assert [stage for stage, _ in pipeline.STEPS] == list(Stage)
    steps = dict(pipeline.STEPS)
    assert steps[Stage.FIXUP] == (pipeline._fix_up,)
    assert steps[Stage.PACK] == (pipeline._pack,)
    assert not any(pipeline._pack in found for stage, found in pipeline.STEPS
                   if stage is not Stage.PACK)


def test_an_unknown_stage_is_one_line_naming_the_stages() -> None:
    assert Stage.named("pack") is Stage.PACK and Stage.named(" FixUp ") is Stage.FIXUP
    with pytest.raises(ConfigurationError) as raised:
        Stage.named("fix-up")
    message = raised.value.message
    assert "\n" not in message and "'fix-up' is not a stage" in message
    assert ", ".join(NAMES) in message


def test_the_cli_refuses_an_unknown_until(tmp_path: Path) -> None:
    out, err = tmp_path / "dist", io.StringIO()
    code = release_main(["build", "--platform", "linux", "--until", "packing",
                         "--out", str(out)], stdout=io.StringIO(), stderr=err)
    assert code == ConfigurationError.exit_code and not out.exists()
    (line,) = err.getvalue().splitlines()
    assert line.startswith("error: ") and "invalid choice: 'packing'" in line
    assert ", ".join(f"'{name}'" for name in NAMES) in line and "fix:" in line


def test_the_backend_needs_a_stage_that_packs() -> None:
    loaded = manifest.load(ROOT)
    assert backend._options(loaded, {"until": "pack"}).last_stage is Stage.PACK
    assert backend._options(loaded, None).last_stage is Stage.VERIFY
    with pytest.raises(ConfigurationError) as raised:
        backend._options(loaded, {"until": "fixup"})
    assert "-C until=fixup stops before the wheel is packed" in raised.value.message
    assert "pack, repair, verify" in raised.value.message
    with pytest.raises(ConfigurationError) as unknown:
        backend._options(loaded, {"until": "bogus"})
    assert "-C until: 'bogus' is not a stage" in unknown.value.message


def _fake_steps(monkeypatch: pytest.MonkeyPatch, ran: list[str]) -> None:
    """Every stage's steps replaced by one that notes the stage; pack writes a wheel."""
    def step_for(stage: Stage):  # type: ignore[no-untyped-def]
        def step(plan: pipeline.Plan, state: pipeline._State) -> None:
            ran.append(stage.option)
            if stage is Stage.PACK:
                state.wheel = state.scratch / "edgert-0.1.0-cp39-abi3-linux_x86_64.whl"
                state.wheel.write_bytes(b"packed")
        return step
    monkeypatch.setattr(pipeline, "STEPS", tuple((stage, (step_for(stage),))
                                                 for stage in Stage))


@pytest.mark.parametrize(("until", "published"), [(Stage.FIXUP, False), (Stage.PACK, True)])
def test_until_stops_after_its_stage(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                     caplog: pytest.LogCaptureFixture, until: Stage,
                                     published: bool) -> None:
    ran: list[str] = []
    _fake_steps(monkeypatch, ran)
    out = tmp_path / "dist"
    options = BuildOptions(platform="linux", arch="x86_64", out_dir=out,
                           build_dir=tmp_path / "build", last_stage=until,
                           verify=VerifyMode.NONE)
    with caplog.at_level(logging.INFO, logger="release"):
        result = pipeline.run(manifest.load(ROOT), options, environ={},
                              host=Host("linux", "x86_64"))
    assert ran == NAMES[:until.value]
    assert list(result.stages) == NAMES[:until.value]
    assert list(result.to_json()["stages"]) == NAMES[:until.value]
    assert f"[{until.value}/8] {until.label} ..." in caplog.messages
    assert (result.wheel is not None) is published
    assert sorted(path.name for path in out.iterdir()) == (
        ["edgert-0.1.0-cp39-abi3-linux_x86_64.whl"] if published else [])


def test_the_docs_list_the_stages_as_the_pipeline_runs_them() -> None:
    arrows = " → ".join(stage.label for stage in Stage)
    concepts = " ".join((ROOT / "docs" / "concepts.md").read_text(encoding="utf-8").split())
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert f"`{arrows}`" in concepts and f"Stages: {arrows}," in readme
    assert ", ".join(f"`{name}`" for name in NAMES) in concepts
    assert f"[n/{len(Stage)}]" in concepts and f"[n/{len(Stage)}]" in readme
