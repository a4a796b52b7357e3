"""``python -m release verify``: exit codes, one-line errors, the JSON schema and its version."""

from __future__ import annotations

import io
import json
from pathlib import Path

from release.errors import ConfigurationError, VerificationFailed, WheelError
from release.verify import SCHEMA_VERSION
from tests.conftest import verify_main as main


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_good_wheel_json(fixture_wheels: dict[str, Path]) -> None:
    code, out, err = run([str(fixture_wheels["good"]), "--static", "--json"])
    assert code == 0 and err == ""
    data = json.loads(out)
    assert data["version"] == SCHEMA_VERSION == 1
    assert data["ok"] is True and data["static"] is True
    assert set(data["summary"]) == {"error", "warning", "info"}
    assert {"check", "severity", "file", "what", "why", "fix", "details"} <= set(
        data["findings"][0])
    assert data["checks"]["linkage"] == "ran"


def test_broken_wheel_exits_with_verification_failed(fixture_wheels: dict[str, Path]) -> None:
    code, out, _ = run([str(fixture_wheels["escaping_search_path"]), "--static"])
    assert code == VerificationFailed.exit_code
    assert "error   [search-path] edgert/lib/libedgert_kernels.so" in out
    assert out.strip().endswith("FAILED (1 errors, 0 warnings, 3 notes)")


def test_unsafe_wheel_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.whl"
    path.write_bytes(b"garbage")
    code, out, err = run([str(path), "--static"])
    assert code == WheelError.exit_code and out == ""
    assert err.count("\n") == 1 and err.startswith("error: bad.whl: not a readable zip")


def test_bad_arguments_are_one_line(tmp_path: Path) -> None:
    code, _, err = run(["--load-timeout", "x", str(tmp_path)])
    assert code == ConfigurationError.exit_code and err.count("\n") == 1
    code, _, err = run([str(tmp_path / "missing.whl")])
    assert code == ConfigurationError.exit_code and "is not a file" in err


def test_no_space_for_the_extraction_is_one_line(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A failing temporary folder (here: one that does not exist) is the environment: one
    line, exit 8, no traceback."""
    import io

    from tests.verify.test_wheel_safety import make_wheel
    wheel = make_wheel(tmp_path / "demo-1.0-py3-none-any.whl", {"demo/__init__.py": b"x=1\n"})
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    out, err = io.StringIO(), io.StringIO()
    assert main([str(wheel)], stdout=out, stderr=err) == 8
    assert err.getvalue().startswith("error: ") and err.getvalue().count("\n") == 1
