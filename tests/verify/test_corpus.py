"""verify on other people's wheels: eleven real wheels from the package index, from different
ecosystems (scientific: numpy, scipy, h5py; data: pyarrow, psycopg2-binary, lxml; ML:
onnxruntime, torch; image processing: pillow, opencv-python-headless; GPU: cupy-cuda12x), each with
an expected-findings file in tests/fixtures/corpus/ whose every warning and error was reviewed
by hand (the 'review' says why it is real). The suite fails on a new warning or error (a false
positive until reviewed) and on a lost expected one. Downloaded once into the tool cache."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from release import tools
from release.verify import verify_wheel
from tests.conftest import ROOT

pytestmark = pytest.mark.index

EXPECTED = ROOT / "tests" / "fixtures" / "corpus"
CASES = sorted(path.stem for path in EXPECTED.glob("*.json"))
_SAMPLE = re.compile(r"'/tmp/pip-build-env-[^']*'|e\.g\. .*$")


def _wheel(case: str) -> Path:
    expected = json.loads((EXPECTED / f"{case}.json").read_text())
    folder = tools.cache_dir() / "wheels" / "corpus"
    path = folder / expected["wheel"]
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        completed = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--only-binary=:all:", "--dest", str(folder), expected["requirement"]],
            capture_output=True, text=True, check=False)
        assert completed.returncode == 0, f"cannot download {expected['requirement']}: " \
            f"{completed.stderr.strip()[-500:]}"
    if not path.exists():
        pytest.skip(f"this interpreter ({sys.version_info[:2]}, {sys.platform}) gets another "
                    f"wheel of {expected['requirement']} than the reviewed {expected['wheel']}")
    return path


def _key(row: dict[str, str]) -> tuple[str, str, str, str]:
    return row["severity"], row["check"], row["file"], _SAMPLE.sub("", row["what"]).strip() \
        .rstrip(",")


@pytest.mark.parametrize("case", CASES)
def test_findings_match_the_reviewed_expectations(case: str) -> None:
    expected = json.loads((EXPECTED / f"{case}.json").read_text())
    report = verify_wheel(_wheel(case), static=True)
    actual = sorted(_key(f.to_json()) for f in report.findings if f.severity.value != "info")
    wanted = sorted(_key(row) for row in expected["findings"])
    new = [row for row in actual if row not in wanted]
    lost = [row for row in wanted if row not in actual]
    assert not new and not lost, (f"new (unreviewed) findings: {new}\n"
                                  f"expected findings no longer found: {lost}")
    assert all(row["review"] for row in expected["findings"])


def test_findings_do_not_depend_on_the_process_or_the_user(tmp_path: Path) -> None:
    """The same wheels under other hash seeds, another HOME and TMPDIR: the same JSON."""
    wheels = [_wheel(case) for case in ("scipy", "h5py")]
    outputs = []
    for seed, home in (("1", "/root"), ("2", str(tmp_path))):
        environment = {**os.environ, "PYTHONHASHSEED": seed, "HOME": home,
                       "TMPDIR": str(tmp_path), "RELEASE_CACHE_DIR": str(tools.cache_dir())}
        completed = subprocess.run(
            [sys.executable, "-c", "import json, sys; from release.verify import verify_wheel;"
             "print(json.dumps([verify_wheel(p, static=True).to_json() for p in sys.argv[1:]]))",
             *map(str, wheels)], cwd=ROOT, env=environment, capture_output=True, text=True,
            check=False)
        assert completed.returncode == 0, completed.stderr[-2000:]
        outputs.append(completed.stdout)
    assert outputs[0] == outputs[1]
