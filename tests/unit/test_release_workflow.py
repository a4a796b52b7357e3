"""The release workflow (.github/workflows/release.yml) against the manifest: its job matrix
is the plan's (no target or variant is written into it), what the plan's jobs carry is what
the workflow reads, every build-producing job gates the set check, the set check gates
publishing, publishing happens only from a version tag with trusted publishing and
provenance, and every action is pinned to a full commit SHA."""

from __future__ import annotations

import copy
import functools
import re
from typing import Any

import yaml

from release import manifest
from release.building import matrix
from release.host import Host
from tests.conftest import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"
MATRIX = "${{ fromJSON(needs.plan.outputs.build) }}"
PINNED = re.compile(r"^\s*(?:-\s+)?uses:\s+([\w.-]+/[\w./-]+)@([0-9a-f]{40}) # v\d+\.\d+\.\d+$")


@functools.cache
def _parsed(text: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(text)
    return data


def workflow() -> dict[str, Any]:
    """The workflow file as it is now, parsed once per text (each caller gets its own copy)."""
    return copy.deepcopy(_parsed(WORKFLOW.read_text()))


def jobs() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = workflow()["jobs"]
    return found


def steps(job: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = jobs()[job]["steps"]
    return found


def run_text(job: str) -> str:
    return "\n".join(str(step.get("run", "")) for step in steps(job))


def used(job: str) -> list[str]:
    return [str(step["uses"]).split("@")[0] for step in steps(job) if "uses" in step]


def test_pull_requests_build_and_tags_publish() -> None:
    data = workflow()
    triggers = data.get("on", data.get(True))   # YAML 1.1 reads a bare `on` as true
    assert "pull_request" in triggers and triggers["push"]["tags"] == ["v*"]
    publish = jobs()["publish"]
    assert publish["if"] == ("github.event_name == 'push' && github.ref_type == 'tag' && "
                             "startsWith(github.ref_name, 'v')")
    assert not [name for name, job in jobs().items() if name != "publish"
                and "gh-action-pypi-publish" in str(job)]


def test_every_action_is_pinned_to_a_commit_with_its_release() -> None:
    lines = [line for line in WORKFLOW.read_text().splitlines()
             if re.match(r"^\s*(-\s+)?uses:", line)]
    assert lines and [line for line in lines if not PINNED.match(line)] == []
    shas: dict[str, set[str]] = {}
    for line in lines:
        match = PINNED.match(line)
        assert match is not None
        shas.setdefault(match.group(1), set()).add(match.group(2))
    assert all(len(pins) == 1 for pins in shas.values()), shas   # one pin per action


def test_the_job_matrix_is_the_plan_s() -> None:
    assert "python -m release plan --json" in run_text("plan")
    assert jobs()["plan"]["outputs"]["build"] == "${{ steps.plan.outputs.build }}"
    for name in ("build", "examples"):
        job = jobs()[name]
        assert job["strategy"]["matrix"] == {"include": MATRIX}
        assert job["runs-on"] == "${{ matrix.runner }}" and "plan" in job["needs"]
        assert job["strategy"]["fail-fast"] is False


def test_no_target_or_variant_is_written_into_the_workflow() -> None:
    """A hand-written matrix would name them, and would miss the next one added."""
    loaded = manifest.load(ROOT)
    text = WORKFLOW.read_text()
    names = [t.name for t in loaded.targets] + [v.name for v in loaded.variants]
    assert [name for name in names if re.search(rf"\b{re.escape(name)}\b", text)] == []


def test_what_the_workflow_reads_from_a_job_is_what_the_plan_gives() -> None:
    loaded = manifest.load(ROOT)
    given = set(matrix.workflow_jobs(loaded, matrix.release_matrix(loaded, Host.current()))[0])
    read = set(re.findall(r"matrix\.(\w+)", WORKFLOW.read_text()))
    assert read and read <= given
    build = next(step for step in steps("build") if "cibuildwheel" in str(step.get("run")))
    assert build["env"]["CIBW_PLATFORM"] == "${{ matrix.platform }}"
    assert build["env"]["CIBW_ARCHS"] == "${{ matrix.archs }}"
    assert build["env"]["CIBW_CONFIG_SETTINGS"] == "variant=${{ matrix.variant }}"


def test_aarch64_builds_natively_on_arm_runners() -> None:
    loaded = manifest.load(ROOT)
    entries = matrix.release_matrix(loaded, Host.current())
    jobs_by_arch = {job["arch"]: job["runner"] for job in matrix.workflow_jobs(loaded, entries)}
    assert jobs_by_arch["aarch64"].endswith("-arm") and not jobs_by_arch["x86_64"].endswith("-arm")


def _cache_steps() -> list[tuple[str, dict[str, Any]]]:
    return [(name, step) for name in jobs() for step in steps(name)
            if str(step.get("uses", "")).startswith("actions/cache")]


def test_the_tool_cache_is_cached_and_reaches_the_container() -> None:
    restore = next(step for name, step in _cache_steps()
                   if step["uses"].startswith("actions/cache/restore@"))
    folder = "${{ runner.temp }}/release-cache"
    assert restore["with"]["path"] == folder and "matrix.name" in restore["with"]["key"]
    assert "release/toolchain/pinned-tools.toml" in restore["with"]["key"]
    build = next(step for step in steps("build") if "cibuildwheel" in str(step.get("run")))
    assert build["env"]["RELEASE_CACHE_DIR"] == folder
    assert f"--volume={folder}:/release-cache" in build["env"]["CIBW_CONTAINER_ENGINE"]
    assert build["env"]["CIBW_ENVIRONMENT_LINUX"] == "RELEASE_CACHE_DIR=/release-cache"


def test_a_run_that_can_publish_restores_no_cache() -> None:
    """Only pull requests read and write the tool cache, under their own keys: a tag's run
    (and a manual one) fetches every pinned tool afresh, so nothing a pull request wrote can
    reach a published wheel."""
    found = _cache_steps()
    assert {step["uses"].split("@")[0] for _, step in found} == {
        "actions/cache/restore", "actions/cache/save"}, "restore and save apart, never both"
    for name, step in found:
        assert name == "build"
        assert step["if"].startswith("github.event_name == 'pull_request'"), step
        assert step["with"]["key"].startswith("release-cache-pr-")
        assert "restore-keys" not in step["with"]
    save = next(step for _, step in found if step["uses"].startswith("actions/cache/save@"))
    restore = next(step for _, step in found if step["uses"].startswith("actions/cache/restore@"))
    assert save["with"] == restore["with"]
    assert "steps.tool-cache.outputs.cache-hit != 'true'" in save["if"]


def test_the_set_check_gates_publishing() -> None:
    check = jobs()["check-set"]
    producing = {name for name, job in jobs().items()
                 if "actions/upload-artifact" in used(name) or name == "examples"}
    assert producing == {"sdist", "build", "examples"} and producing <= set(check["needs"])
    assert "python -m release check-set dist" in run_text("check-set")
    assert '--expect-version "${REF_NAME#v}"' in run_text("check-set")
    publish = jobs()["publish"]
    assert publish["needs"] == "check-set"
    downloads = [step["with"] for step in steps("check-set")
                 if str(step.get("uses", "")).startswith("actions/download-artifact@")]
    assert downloads == [step["with"] for step in steps("publish")
                         if str(step.get("uses", "")).startswith("actions/download-artifact@")]


def test_publishing_is_trusted_and_attested() -> None:
    publish = jobs()["publish"]
    assert publish["environment"]["name"] == "pypi"
    assert publish["permissions"] == {"contents": "read", "id-token": "write",
                                      "attestations": "write"}
    assert used("publish")[-2:] == ["actions/attest-build-provenance",
                                    "pypa/gh-action-pypi-publish"]
    assert steps("publish")[-2]["with"]["subject-path"] == "dist/*"
    assert "password" not in steps("publish")[-1].get("with", {})
    assert workflow()["permissions"] == {"contents": "read"}


def test_runs_of_a_pull_request_replace_each_other_but_tags_finish() -> None:
    concurrency = workflow()["concurrency"]
    assert concurrency["group"] == "release-${{ github.ref }}"
    assert concurrency["cancel-in-progress"] == "${{ github.event_name == 'pull_request' }}"


def test_the_examples_run_against_the_installed_wheel() -> None:
    text = run_text("examples")
    assert "python -m pip install dist/*.whl" in text
    assert "python .ci/check_examples.py" in text
    assert (ROOT / ".ci" / "check_examples.py").is_file()
    setup = next(step for step in steps("examples")
                 if str(step.get("uses", "")).startswith("actions/setup-python@"))
    assert setup["with"]["python-version"] == "${{ matrix.python }}"


def test_checkout_keeps_no_credentials() -> None:
    checkouts = [step for name in jobs() for step in steps(name)
                 if str(step.get("uses", "")).startswith("actions/checkout@")]
    assert checkouts and all(step["with"]["persist-credentials"] is False
                             for step in checkouts)

