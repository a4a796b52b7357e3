"""Measures a run of the test suite (README command 2's pytest, or a tier of it) and writes
the README's figures from what it measured: tests passed, failed, not run; minutes of wall
and CPU time; the disk the run left (tool cache, pytest's temporary folder).

    python benchmarks/suite_figures.py               # the whole suite, caches as they are
    python benchmarks/suite_figures.py --cold        # empty HOME and tool cache: a fresh machine
    python benchmarks/suite_figures.py --tier unit --write README.md
    python benchmarks/suite_figures.py --write README.md -- tests/integration -x

``--write FILE`` replaces the text between ``<!-- figures:KEY -->`` and
``<!-- /figures:KEY -->`` in FILE (KEY: the tier, or ``suite``) with one sentence of the
figures, and prints it either way, with the numbers as JSON."""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Figures:
    selection: str
    cold: bool
    passed: int
    failed: int
    skipped: int
    not_run: int          # the tool tiers missing on this machine (tests/tool_tiers.py)
    wall_s: float
    cpu_s: float
    cache_mb: float       # the tool cache after the run (all of it when cold)
    temp_mb: float        # pytest's temporary folder after the run
    cores: int
    date: str

    def sentence(self) -> str:
        temperature = "cold (empty HOME and tool cache)" if self.cold else "with warm caches"
        counts = f"{self.passed} passed, {self.failed} failed, {self.skipped} skipped"
        if self.not_run:
            counts += f", {self.not_run} not run (tool tiers missing)"
        disk = f"temporary files {_size(self.temp_mb)}"
        if self.cold:
            disk = f"a tool cache of {_size(self.cache_mb)}, {disk}"
        return (f"`{self.selection}` {temperature}: {counts} in {_duration(self.wall_s)} "
                f"({_duration(self.cpu_s)} of CPU) on {self.cores} cores; {disk} "
                f"(measured {self.date} by benchmarks/suite_figures.py)")


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} minutes"


def _size(megabytes: float) -> str:
    return f"{megabytes:.0f} MB" if megabytes < 1000 else f"{megabytes / 1000:.1f} GB"


def folder_mb(folder: Path) -> float:
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total / 1e6


def counts(report: Path) -> tuple[int, int, int]:
    suites = ElementTree.parse(report).getroot()
    suite = suites if suites.tag == "testsuite" else suites.find("testsuite")
    assert suite is not None
    tests, skipped = int(suite.get("tests", 0)), int(suite.get("skipped", 0))
    failed = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
    return tests - skipped - failed, failed, skipped


def slowest_files(report: Path, count: int = 15) -> list[tuple[str, float, int]]:
    """The test files that took longest in ``report`` (junit XML): (file, seconds, tests),
    where a suite's time goes (fixtures included: a session fixture's build is charged to
    the first test that asked for it)."""
    totals: dict[str, list[float]] = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        parts = case.get("classname", "").split(".")  # tests.tier.test_file[.Class]
        module = next((i for i, part in enumerate(parts) if i and part.startswith("test_")),
                      len(parts) - 1)
        name = "/".join(parts[:module + 1]) + ".py"
        entry = totals.setdefault(name, [0.0, 0])
        entry[0] += float(case.get("time", 0.0))
        entry[1] += 1
    ranked = sorted(totals.items(), key=lambda item: -item[1][0])[:count]
    return [(name, round(seconds, 1), int(tests)) for name, (seconds, tests) in ranked]


def measure(arguments: list[str], *, selection: str, cold: bool) -> Figures:
    with tempfile.TemporaryDirectory(prefix="suite-figures-") as scratch:
        work = Path(scratch)
        environment = dict(os.environ)
        cache = Path(environment.get("RELEASE_CACHE_DIR") or
                     Path.home() / ".cache" / "edgert-release")
        # pytest's own cache (which some tests keep incremental builds in) as the README's
        # command has it, but in the scratch folder when cold: nothing of an earlier run
        cache_option = []
        if cold:
            (work / "home").mkdir()
            cache = work / "home" / ".cache" / "edgert-release"
            environment.update(HOME=str(work / "home"), RELEASE_CACHE_DIR=str(cache),
                               PIP_NO_CACHE_DIR="1")
            # the interpreters pyenv installed are the machine's, not a cache: its shims
            # find them through PYENV_ROOT, which defaults to the (now empty) HOME's
            pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
            if pyenv.is_dir():
                environment["PYENV_ROOT"] = str(pyenv)
            cache_option = ["-o", f"cache_dir={work / 'pytest-cache'}"]
        report, temp = work / "report.xml", work / "pytest-temp"
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.monotonic()
        completed = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", *cache_option,
             f"--junitxml={report}", f"--basetemp={temp}", *arguments],
            cwd=ROOT, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, check=False)
        wall = time.monotonic() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        sys.stdout.write(completed.stdout[-4000:])
        print("slowest test files (seconds, tests):")
        for name, seconds, tests in slowest_files(report):
            print(f"  {seconds:8.1f} s {tests:5}  {name}")
        passed, failed, skipped = counts(report)
        not_run = sum(int(match) for match in
                      re.findall(r"^NOT RUN (\d+) tests? of tier", completed.stdout, re.M))
        return Figures(selection=selection, cold=cold, passed=passed, failed=failed,
                       skipped=skipped, not_run=not_run, wall_s=round(wall, 1),
                       cpu_s=round(after.ru_utime + after.ru_stime
                                   - before.ru_utime - before.ru_stime, 1),
                       cache_mb=round(folder_mb(cache), 1) if cache.exists() else 0.0,
                       temp_mb=round(folder_mb(temp), 1), cores=len(os.sched_getaffinity(0)),
                       date=time.strftime("%Y-%m-%d"))


def write(path: Path, key: str, sentence: str) -> None:
    text = path.read_text(encoding="utf-8")
    pattern = re.compile(rf"(<!-- figures:{key} -->).*?(<!-- /figures:{key} -->)", re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"{path} has no <!-- figures:{key} --> ... <!-- /figures:{key} -->")
    path.write_text(pattern.sub(lambda match: match.group(1) + sentence + match.group(2), text),
                    encoding="utf-8")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tier", help="one folder of tests/ (unit, native, ...)")
    parser.add_argument("--cold", action="store_true",
                        help="an empty HOME and tool cache, no pip cache: a fresh machine")
    parser.add_argument("--write", type=Path, metavar="FILE",
                        help="write the figures' sentence into FILE's figures block")
    parser.add_argument("pytest", nargs="*", help="more pytest arguments (after --)")
    options = parser.parse_args(argv)
    arguments = ([f"tests/{options.tier}"] if options.tier else []) + options.pytest
    selection = "python -m pytest " + " ".join(arguments) if arguments else "python -m pytest"
    figures = measure(arguments, selection=selection.strip(), cold=options.cold)
    print(json.dumps(asdict(figures)))
    print(figures.sentence())
    if options.write:
        write(options.write, options.tier or "suite", figures.sentence())
    return 1 if figures.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
