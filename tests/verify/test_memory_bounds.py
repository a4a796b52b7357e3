"""Memory bounded by design: the binary readers pay for every table, string table and name
from one budget per wheel (release.binary.ReadLimits) before reading it, so verify's peak
resident size stays under 300 MB for any input the limits admit, and a binary past the
budget is refused in one line. Inputs come from tests/verify/crafted.py; each run is a child
process whose peak is read with getrusage(RUSAGE_CHILDREN) by a parent of its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.verify import crafted

_LIMIT_MIB = 300
# runs verify as its only child and reports that child's exit code, peak (KiB) and output
_PARENT = """
import json, resource, subprocess, sys
completed = subprocess.run([sys.executable, "-m", "release", "verify", *sys.argv[1:]],
                           capture_output=True, text=True)
print(json.dumps({"rc": completed.returncode, "stdout": completed.stdout,
                  "stderr": completed.stderr,
                  "peak_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""


def _verify(wheel: Path, *options: str) -> dict[str, object]:
    completed = subprocess.run([sys.executable, "-c", _PARENT, str(wheel), *options],
                               cwd=ROOT, capture_output=True, text=True, check=True)
    result: dict[str, object] = json.loads(completed.stdout)
    return result


def _refused_in_one_line(result: dict[str, object], words: str) -> None:
    assert result["rc"] == 6, result
    lines = str(result["stderr"]).strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], lines
    assert "(fix: " in lines[0]


@pytest.mark.parametrize("static", [True, False])
def test_a_100_mb_dense_dynsym_is_refused_in_one_line_within_300_mb(
        tmp_path: Path, static: bool) -> None:
    """The review's case: 4.3 million identical symbols, 100 MB, 240 KB compressed. It took
    verify --static to 1.19 GB and 28 s; now the count is refused before a row is read."""
    wheel = crafted.dense_dynsym_wheel(tmp_path, 4_300_000)
    assert wheel.stat().st_size < 400 << 10
    result = _verify(wheel, *(["--static"] if static else []))
    _refused_in_one_line(result, "symbol table .dynsym needs 4,300,000 symbols")
    assert int(str(result["peak_kib"])) < _LIMIT_MIB << 10, result["peak_kib"]


def test_names_decoded_past_the_budget_are_refused(tmp_path: Path) -> None:
    """100,000 symbols named by successive offsets into one 1 MiB string: the names would
    total about 100 GB; decoding stops at the budget's 32 MiB."""
    library = crafted.overlapping_names_elf(100_000)
    wheel = crafted.wheel(tmp_path, {"demo/lib/libnames.so": library})
    result = _verify(wheel, "--static")
    _refused_in_one_line(result, "bytes of symbol names")
    assert int(str(result["peak_kib"])) < _LIMIT_MIB << 10, result["peak_kib"]


def test_a_wheel_just_inside_the_budget_verifies_within_300_mb(tmp_path: Path) -> None:
    """Two libraries of 245,000 distinctly named symbols each (490,000 of the 500,000 the
    budget admits): verify reads them all and judges the wheel."""
    wheel = crafted.dense_dynsym_wheel(tmp_path, 245_000, distinct=True, copies=2)
    result = _verify(wheel, "--static", "--json")
    assert result["rc"] in (0, 7), result["stderr"]
    report = json.loads(str(result["stdout"]))
    assert report["checks"]["duplicates"] == "ran"
    assert int(str(result["peak_kib"])) < _LIMIT_MIB << 10, result["peak_kib"]


def test_one_more_symbol_than_the_budget_is_refused(tmp_path: Path) -> None:
    """The budget is for the wheel: two libraries of 250,001 symbols each pass alone but
    not together."""
    wheel = crafted.dense_dynsym_wheel(tmp_path, 250_001, copies=2)
    result = _verify(wheel, "--static")
    _refused_in_one_line(result, "readers' budget of 500,000 symbols for one wheel")


def test_files_read_whole_are_capped_together(tmp_path: Path) -> None:
    """Five 15 MiB .cmake files (75 MiB, 80 KB compressed): each is under the 16 MiB a
    file may have to be read whole, together they are over the 64 MiB kept."""
    result = _verify(crafted.many_configs(tmp_path), "--static")
    assert result["rc"] == 5, result
    lines = str(result["stderr"]).strip().splitlines()
    assert len(lines) == 1 and "over the limit of 67,108,864" in lines[0], lines
    assert int(str(result["peak_kib"])) < _LIMIT_MIB << 10, result["peak_kib"]


def test_a_record_longer_than_the_entry_limit_is_one_finding(tmp_path: Path) -> None:
    result = _verify(crafted.long_record(tmp_path), "--static", "--json")
    report = json.loads(str(result["stdout"]))
    record = [f for f in report["findings"] if f["check"] == "record"]
    assert [f["what"] for f in record].count(
        "RECORD has more than 100001 rows, more than the wheel may have entries") == 1
    assert len(record) <= 4, [f["what"] for f in record]   # and the 3 files it left unlisted
    assert int(str(result["peak_kib"])) < _LIMIT_MIB << 10, result["peak_kib"]
