"""zizmor, the GitHub Actions security linter from the package index (requirements-dev.txt),
run offline over the release workflow: nothing of medium or high severity (cache poisoning,
template injection, excessive permissions, unpinned actions, credentials kept by checkout)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"


def zizmor() -> str:
    beside = Path(sys.executable).with_name("zizmor")
    found = str(beside) if beside.is_file() else shutil.which("zizmor")
    assert found, "zizmor is missing: pip install -r requirements-dev.txt"
    return found


def findings(*options: str) -> list[dict[str, object]]:
    completed = subprocess.run([zizmor(), "--offline", "--format", "json", *options,
                                str(WORKFLOW)], capture_output=True, text=True, check=False)
    assert completed.returncode in (0, 10, 11, 12, 13, 14), completed.stderr
    found: list[dict[str, object]] = json.loads(completed.stdout)
    return found


def test_zizmor_finds_nothing_of_medium_or_high_severity() -> None:
    serious = [(f["ident"], f["determinations"]) for f in findings("--min-severity", "medium")]
    assert serious == []


def test_zizmor_still_sees_cache_poisoning(tmp_path: Path) -> None:
    """The check is live: the workflow as it was (actions/cache restoring for tag runs too)
    is a high finding."""
    poisoned = tmp_path / "release.yml"
    text = WORKFLOW.read_text()
    restore = text.index("        uses: actions/cache/restore@")
    line_end = text.index("\n", restore)
    pin = text[restore:line_end].split("@", 1)[1]
    start = text.rindex("      - name: Restore the tool cache", 0, restore)
    poisoned.write_text(text[:start] + f"      - uses: actions/cache@{pin}\n"
                        + text[line_end + 1:])
    completed = subprocess.run([zizmor(), "--offline", "--format", "json", str(poisoned)],
                               capture_output=True, text=True, check=False)
    idents = {finding["ident"] for finding in json.loads(completed.stdout)}
    assert "cache-poisoning" in idents, completed.stdout[:2000]
