"""The typed check interface: a check's status is a CheckStatus (the JSON report keeps the
strings users' scripts read), and the analyses several checks share are computed once per
verify run (counted, not timed)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

from release.errors import ConfigurationError, ToolError
from release.findings import CheckStatus, Finding, Severity
from release.verify import linkage_model, ownership_model
from release.verify.analyses import Analyses
from release.verify.argument import classify
from release.verify.checks import run_checks
from release.verify.checks._common import environment, not_run
from release.verify.report import Report
from release.verify.run import run_verify
from tests.unit.test_synthetic_format import TAG, TOKEN, ToyLoader, ToyPlatform, toy, toy_wheel

JSON_STRINGS = {"ran", "not run", "not run (environment)", "failed"}


def test_the_statuses_are_the_strings_the_json_report_always_had() -> None:
    assert {status.value for status in CheckStatus} == JSON_STRINGS
    assert CheckStatus.ENVIRONMENT == "not run (environment)"   # a str, as scripts compare


def test_the_report_writes_each_status_as_its_plain_string() -> None:
    report = Report(wheel="x.whl", static=False, checks={
        "linkage": CheckStatus.RAN, "load-matrix": CheckStatus.NOT_RUN,
        "sdk-routes": CheckStatus.ENVIRONMENT, "coverage": CheckStatus.FAILED})
    checks = report.to_json()["checks"]
    assert isinstance(checks, dict)
    assert [type(value) for value in checks.values()] == [str] * 4
    assert json.loads(json.dumps(report.to_json()))["checks"] == {
        "linkage": "ran", "load-matrix": "not run", "sdk-routes": "not run (environment)",
        "coverage": "failed"}


def test_a_findings_status_is_written_where_it_always_was() -> None:
    skipped = not_run("load-matrix", "--static reads files only")
    absent = environment("load-matrix", "pkg/_C.so", "2 file(s) need libraries from x",
                         fix="pass --site DIR", files=["pkg/_C.so"], providers=["x"])
    plain = Finding("linkage", Severity.INFO, "", "3 files need libfoo")
    assert skipped.status is CheckStatus.NOT_RUN and absent.status is CheckStatus.ENVIRONMENT
    assert skipped.to_json() == {"check": "load-matrix", "severity": "info", "file": "",
                                 "what": "not run: --static reads files only", "why": "",
                                 "fix": "", "details": {"status": "not run"}}
    assert absent.to_json()["what"] == "not run (environment): 2 file(s) need libraries from x"
    assert json.dumps(absent.to_json()["details"]) == \
        '{"status": "not run (environment)", "files": ["pkg/_C.so"], "providers": ["x"]}'
    assert plain.status is None and "status" not in json.dumps(plain.to_json())


def test_a_status_in_the_details_is_refused() -> None:
    with pytest.raises(TypeError, match="status"):
        Finding("x", Severity.INFO, "", "not run", details={"status": "not run"})


def _check(name: str, body: Callable[[], list[Finding]],
           runs_programs: bool = False) -> SimpleNamespace:
    return SimpleNamespace(NAME=name, RUNS_PROGRAMS=runs_programs,
                           check=lambda wheel, context: body())


def _raise(error: Exception) -> Callable[[], list[Finding]]:
    def body() -> list[Finding]:
        raise error
    return body


def test_the_run_turns_what_each_check_said_into_its_status() -> None:
    checks = [
        _check("plain", lambda: [Finding("plain", Severity.WARNING, "a.so", "odd")]),
        _check("skipped", lambda: [not_run("skipped", "nothing to check")]),
        _check("partly", lambda: [Finding("partly", Severity.INFO, "", "ran some"),
                                  environment("partly", "", "no index"),
                                  not_run("partly", "the rest")]),
        _check("tool", _raise(ToolError("cmake 3.24 cannot be provisioned", fix="go online"))),
        _check("broken", _raise(ConfigurationError("bad data file", fix="restore it"))),
        _check("loads", lambda: [], runs_programs=True),
    ]
    findings, status = run_checks(SimpleNamespace(findings=()),  # type: ignore[arg-type]
                                  SimpleNamespace(static=True),  # type: ignore[arg-type]
                                  checks)  # type: ignore[arg-type]
    assert status == {"plain": CheckStatus.RAN, "skipped": CheckStatus.NOT_RUN,
                      "partly": CheckStatus.ENVIRONMENT, "tool": CheckStatus.ENVIRONMENT,
                      "broken": CheckStatus.FAILED, "loads": CheckStatus.NOT_RUN}
    assert all(isinstance(value, CheckStatus) for value in status.values())
    report = Report(wheel="x.whl", static=True, findings=findings, checks=status)
    assert report.unchecked() == {"partly": "not run (environment): no index",
                                  "tool": "not run (environment): cmake 3.24 cannot be "
                                          "provisioned"}
    (tool,) = [f for f in findings if f.check == "tool"]
    assert tool.status is CheckStatus.ENVIRONMENT and tool.fix == "go online"


def _count(monkeypatch: pytest.MonkeyPatch, module: ModuleType) -> list[int]:
    """Counts the calls of ``module.analyze``, the analysis the checks share through
    ``context.analysis``."""
    calls = [0]
    original = module.analyze

    def analyze(*arguments: object) -> object:
        calls[0] += 1
        return original(*arguments)
    monkeypatch.setattr(module, "analyze", analyze)
    return calls


def test_the_linkage_analysis_is_computed_once_per_run(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    computed = _count(monkeypatch, linkage_model)
    asked = [0]
    of = Analyses.of

    def counted(self: Analyses[object], factory: Callable[..., object],
                context: object) -> object:
        asked[0] += factory is linkage_model.analyze
        return of(self, factory, context)
    monkeypatch.setattr(Analyses, "of", counted)
    loader = ToyLoader()
    path = toy_wheel(tmp_path / f"toy-1.0-py3-none-{TAG}.whl", {
        "toy/_C.toy": toy(["core", "toysys"], [loader.search_entry("toy/_C.toy", "toy/lib")]),
        "toy/lib/core": toy([], [TOKEN], exports=["core_run"])})
    report = run_verify(classify(path), static=True, platforms=[ToyPlatform()])
    # linkage and the checks after it ask for the resolutions; one computation serves all
    assert {report.checks[name] for name in ("linkage", "duplicates", "metadata")} == {"ran"}
    assert asked[0] >= 2 and computed == [1]
    run_verify(classify(path), static=True, platforms=[ToyPlatform()])
    assert computed == [2]   # a new run, a new wheel model: computed afresh


def test_the_ownership_analysis_is_computed_once_per_analyses(
        monkeypatch: pytest.MonkeyPatch) -> None:
    computed = _count(monkeypatch, ownership_model)
    shared: Analyses[object] = Analyses(SimpleNamespace(build_record=None))  # type: ignore[arg-type]
    context = SimpleNamespace(options=SimpleNamespace(heuristic_ownership=False),
                              analyses=shared)
    context.analysis = lambda factory: shared.of(factory, context)
    first, second = ownership_model.of(context), ownership_model.of(context)  # type: ignore[arg-type]
    assert first is second and first.mode == "none" and computed == [1]


def test_analyses_serve_one_context() -> None:
    shared = Analyses(SimpleNamespace())  # type: ignore[arg-type]
    first = SimpleNamespace()
    assert shared.of(lambda wheel, context: context, first) is first  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="another verify context"):
        shared.of(lambda wheel, context: 1, SimpleNamespace())  # type: ignore[arg-type]


class _Bound:
    """Analyses asked always with one context, as ``VerifyContext.analysis`` asks."""

    def __init__(self, wheel: object) -> None:
        self.shared: Analyses[object] = Analyses(wheel)  # type: ignore[arg-type]
        self.context = SimpleNamespace()

    def of(self, factory: Callable[..., object]) -> object:
        return self.shared.of(factory, self.context)


def _bound(wheel: object) -> _Bound:
    return _Bound(wheel)


def test_a_providers_analysis_is_computed_once_per_factory() -> None:
    """``of(factory)``: keyed by the function, the same value for every caller, afresh for
    new Analyses; a factory that raised is asked again."""
    calls: list[str] = []

    def names(wheel: SimpleNamespace, context: object) -> tuple[str, ...]:
        calls.append("names")
        return tuple(wheel.names)

    def count(wheel: SimpleNamespace, context: object) -> int:
        calls.append("count")
        return len(wheel.names)

    shared = _bound(SimpleNamespace(names=["a.so", "b.so"]))
    first = shared.of(names)  # type: ignore[arg-type]
    assert first == ("a.so", "b.so") and shared.of(names) is first  # type: ignore[arg-type]
    assert shared.of(count) == 2 and shared.of(count) == 2  # type: ignore[arg-type]
    assert calls == ["names", "count"]
    assert _bound(SimpleNamespace(names=[])).of(count) == 0  # type: ignore[arg-type]
    failures = [0]

    def flaky(wheel: object, context: object) -> str:
        failures[0] += 1
        if failures[0] == 1:
            raise ValueError("first time")
        return "second time"
    with pytest.raises(ValueError, match="first time"):
        shared.of(flaky)
    assert shared.of(flaky) == "second time" and shared.of(flaky) == "second time"
    assert failures == [2]
