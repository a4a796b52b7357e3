"""``python -m edgert.run_program``: one-line errors (exit 2 for the command line and input
files, 1 for the program) that name the file; generated inputs within each input's valid range
(indices within the table they index), from the pattern or ``--seed``; run-time dimensions
from ``--shape``, the input file's size, or 1 with a note naming the flag."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from tests.native.support import MLP_MODEL, NativeInstall

pytestmark = pytest.mark.native


def run_program(native_install: NativeInstall, *args: str | Path, cwd: Path
                ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "edgert.run_program", *map(str, args)],
                          capture_output=True, text=True, env=native_install.env(), cwd=cwd,
                          check=False, timeout=120)


def one_error_line(completed: subprocess.CompletedProcess[str], code: int) -> str:
    assert completed.returncode == code, completed.stderr
    assert "Traceback" not in completed.stderr and completed.stdout == ""
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), completed.stderr
    return lines[0]


@pytest.fixture()
def embedding_program(native_install: NativeInstall, tmp_path: Path) -> Path:
    """Token ids [batch, 6] (batch left to run time) into a table of 10 rows, through a
    reshape: the rows' values are their own row numbers times 10 plus the column."""
    code = (
        "import sys, numpy as np\n"
        "from edgert.export import ProgramBuilder\n"
        "builder = ProgramBuilder()\n"
        "ids = builder.input(np.int64, (-1, 6))\n"
        "flat = builder.op('edgert::reshape', [ids], {'shape': [-1]})\n"
        "table = builder.constant((np.arange(10)[:, None] * 10 + np.arange(3)).astype("
        "np.float32))\n"
        "builder.output(builder.op('edgert::embedding', [table, flat]))\n"
        "open(sys.argv[1], 'wb').write(builder.to_bytes())\n")
    path = tmp_path / "embedding.edgert"
    completed = native_install.python(code, str(path))
    assert completed.returncode == 0, completed.stderr
    return path


def rows(stdout: str) -> list[int]:
    values = [float(line) for line in stdout.splitlines()[1:]]
    return [int(value) // 10 for value in values[0::3]]


def test_generated_token_ids_are_rows_of_the_table(native_install: NativeInstall,
                                                   embedding_program: Path,
                                                   tmp_path: Path) -> None:
    completed = run_program(native_install, embedding_program, "--shape", "0=2,6", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith("output 0 float32 [12,3]\n")
    pattern = [((k * 7) % 17) / 8.0 - 1.0 for k in range(12)]
    assert rows(completed.stdout) == [int(value * 8) % 10 for value in pattern]
    seeded = [run_program(native_install, embedding_program, "--shape", "0=3,6", "--seed",
                          str(seed), cwd=tmp_path) for seed in (1, 1, 2)]
    assert all(run.returncode == 0 for run in seeded), seeded[0].stderr
    assert seeded[0].stdout == seeded[1].stdout != seeded[2].stdout
    assert all(0 <= row < 10 for row in rows(seeded[0].stdout))


def test_a_run_time_dimension_comes_from_the_flag_the_file_or_is_one_said_so(
        native_install: NativeInstall, embedding_program: Path, tmp_path: Path) -> None:
    alone = run_program(native_install, embedding_program, cwd=tmp_path)
    assert alone.returncode == 0 and alone.stdout.startswith("output 0 float32 [6,3]\n")
    assert "--shape 0=4,6" in alone.stderr and alone.stderr.startswith("note: ")
    ids = tmp_path / "ids.raw"
    np.array([3, 1, 4, 1, 5, 9] * 2, dtype="<i8").tofile(ids)
    from_file = run_program(native_install, embedding_program, ids, cwd=tmp_path)
    assert from_file.returncode == 0, from_file.stderr
    assert rows(from_file.stdout) == [3, 1, 4, 1, 5, 9] * 2 and from_file.stderr == ""
    wrong = one_error_line(run_program(native_install, embedding_program, "--shape", "0=2,7",
                                       cwd=tmp_path), 2)
    assert "--shape 0=2,7 does not fit input 0's declared shape [-1,6]" in wrong


def test_missing_and_short_input_files_are_one_line(native_install: NativeInstall,
                                                     tmp_path: Path) -> None:
    missing = one_error_line(run_program(native_install, MLP_MODEL, "absent.raw", cwd=tmp_path), 2)
    assert missing == "error: input file absent.raw: No such file or directory"
    (tmp_path / "odd.raw").write_bytes(b"\0" * 10)
    odd = one_error_line(run_program(native_install, MLP_MODEL, "odd.raw", cwd=tmp_path), 2)
    assert "odd.raw holds 10 bytes, not a whole number of float32 values" in odd
    (tmp_path / "short.raw").write_bytes(b"\0" * 12)
    short = one_error_line(run_program(native_install, MLP_MODEL, "short.raw", "--shape",
                                       "0=1,16", cwd=tmp_path), 2)
    assert short == ("error: input file short.raw holds 12 bytes, input 0 (float32 [1,16]) "
                     "needs 64")


def test_a_file_that_is_not_a_program_is_named(native_install: NativeInstall,
                                               tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_bytes(b"these are not the bytes of a program at all\n" * 4)
    line = one_error_line(run_program(native_install, "notes.txt", cwd=tmp_path), 1)
    assert line.startswith("error: notes.txt: ") and "magic" in line
    absent = one_error_line(run_program(native_install, "absent.edgert", cwd=tmp_path), 1)
    assert "absent.edgert" in absent


def test_the_profile_says_where_the_runs_after_the_first_went(
        native_install: NativeInstall, edgert: ModuleType, tmp_path: Path) -> None:
    from edgert.program_format import read_program
    ops = Counter(node.op for node in read_program(MLP_MODEL.read_bytes()).nodes)
    plain = run_program(native_install, MLP_MODEL, "--shape", "0=4,16", "--runs", "3", cwd=tmp_path)
    assert plain.returncode == 0 and plain.stderr == "", plain.stderr
    profiled = subprocess.run(
        [sys.executable, "-m", "edgert.run_program", str(MLP_MODEL), "--shape", "0=4,16", "--runs",
         "3"],
        capture_output=True, text=True, env={**native_install.env(), "EDGERT_PROFILE": "1"},
        cwd=tmp_path, check=False, timeout=120)
    assert profiled.returncode == 0, profiled.stderr
    assert profiled.stdout == plain.stdout   # timing changes nothing the program computes
    lines = profiled.stderr.splitlines()
    header = lines[0]
    assert header.startswith("edgert profile: ") and " steps, " in header, header
    assert header.endswith("ms per run (mean of the 2 runs after the first)"), header
    steps = int(header.split()[2])
    slowest = lines.index("  slowest steps:")
    table = [line.rsplit(None, 3) for line in lines[2:slowest]]
    # every node is counted once: run by its own kernel (a row per operator) or in the step
    # of the backend that took it (here the cpu backend takes the first linear layers)
    assert sum(int(row[1]) for row in table) == sum(ops.values())
    assert {row[0].strip() for row in table} <= {*ops, "backend cpu"}
    assert all(row[3].endswith("%") for row in table)
    assert len(lines) == slowest + 1 + min(10, steps)
    assert all(" ms  node" in line and " -> " in line for line in lines[slowest + 1:])
