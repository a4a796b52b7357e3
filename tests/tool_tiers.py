"""The tool tiers of tests/tools.toml: tests that need a tool beyond Python, gcc and the
package index, grouped by that tool.

As a pytest plugin (tests/conftest.py loads it): each tier's tests carry its marker
(``-m "not wine"`` leaves them out); a tier missing on this machine is deselected and
reported, with the line that installs it, in a "NOT RUN" section of the summary and in the
header, never as skips among the passes. ``EDGERT_REQUIRE_TOOLS=1`` (CI, which installs them)
runs the tiers that have Debian packages anyway, each test failing with what is missing; a
comma-separated list of tier names requires those.

As a program (README command 2 runs it before pytest, and so does CI through it)::

    python -m tests.tool_tiers install   # apt-get installs the missing tiers' packages when it can
    python -m tests.tool_tiers           # which tiers this machine has

It installs only when something is missing and it can: apt-get, and root or a sudo that asks
no password. Otherwise it says which tiers will not run and the line that installs them, and
exits 0: the suite runs what it can and says the rest."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ROOT / "tests" / "tools.toml"
REQUIRE = "EDGERT_REQUIRE_TOOLS"

Which = Callable[[str], "str | None"]
Probe = Callable[[Sequence[str]], "tuple[int, str]"]


@dataclass(frozen=True)
class Tier:
    name: str
    what: str
    commands: tuple[tuple[str, ...], ...]   # each entry: alternatives, one must be on PATH
    tests: tuple[str, ...]                   # node id prefixes
    debian: tuple[str, ...] = ()
    recommends: bool = True
    probe: tuple[str, ...] = ()
    probe_says: str = ""
    install: str = ""

    def missing(self, which: Which = shutil.which, probe: Probe | None = None) -> list[str]:
        """What this machine lacks of the tier (empty: the tier runs)."""
        lacking = [" or ".join(names) for names in self.commands
                   if not any(which(name) for name in names)]
        if not lacking and self.probe:
            code, output = (probe or run_probe)(self.probe)
            if code != 0 or self.probe_says not in output:
                lacking.append(f"a working `{' '.join(self.probe)}`")
        return lacking

    def install_line(self) -> str:
        if self.debian:
            return "apt-get install " + " ".join(
                ([] if self.recommends else ["--no-install-recommends"]) + list(self.debian))
        return self.install

    def selects(self, nodeid: str) -> bool:
        return any(_matches(prefix, nodeid) for prefix in self.tests)


def _matches(prefix: str, nodeid: str) -> bool:
    if "::" not in prefix:
        return nodeid.startswith(prefix)
    return nodeid == prefix or nodeid.startswith((prefix + "[", prefix + "::"))


def run_probe(command: Sequence[str]) -> tuple[int, str]:
    try:
        completed = subprocess.run(list(command), capture_output=True, text=True, timeout=60,
                                   check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return 1, str(error)
    return completed.returncode, completed.stdout


@dataclass(frozen=True)
class Tiers:
    tiers: tuple[Tier, ...]
    speedups: tuple[str, ...] = field(default=())


def load(path: Path = TOOLS) -> Tiers:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    if data.pop("schema", None) != 1:
        raise ValueError(f"{path}: schema = 1 expected")
    speedups = tuple(data.pop("speedups", ()))
    tiers = []
    for name, table in data.items():
        known = {"what", "commands", "tests", "debian", "recommends", "probe", "probe-says",
                 "install"}
        if not isinstance(table, dict) or not {"what", "commands", "tests"} <= set(table) \
                or set(table) - known:
            raise ValueError(f"{path}: [{name}] needs what, commands and tests, and only "
                             f"{sorted(known)}")
        if not table.get("debian") and not table.get("install"):
            raise ValueError(f"{path}: [{name}] says neither its Debian packages nor how to "
                             "install it")
        tiers.append(Tier(
            name=name, what=table["what"],
            commands=tuple(tuple(entry.split("|")) for entry in table["commands"]),
            tests=tuple(table["tests"]), debian=tuple(table.get("debian", ())),
            recommends=table.get("recommends", True), probe=tuple(table.get("probe", ())),
            probe_says=table.get("probe-says", ""), install=table.get("install", "")))
    return Tiers(tiers=tuple(tiers), speedups=speedups)


# ------------------------------------------------------------------ installing (the program)

def _privilege(which: Which) -> list[str] | None:
    """The prefix that runs apt-get as root here, or None when nothing can."""
    if os.geteuid() == 0:
        return []
    sudo = which("sudo")
    if sudo and subprocess.run([sudo, "-n", "true"], capture_output=True,
                               check=False).returncode == 0:
        return [sudo, "-n"]
    return None


def install(loaded: Tiers, *, which: Which = shutil.which,
            run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run,
            out: Callable[[str], None] = print) -> list[Tier]:
    """Installs the Debian packages of the tiers missing here (and the speedups) when it can;
    returns the tiers still missing."""
    missing = [tier for tier in loaded.tiers if tier.missing(which)]
    speedups = [name for name in loaded.speedups if not which(name)]
    installable = [tier for tier in missing if tier.debian]
    prefix = _privilege(which) if (installable or speedups) and which("apt-get") else None
    if prefix is not None and (installable or speedups):
        environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        apt = [*prefix, "apt-get"]
        groups = [[*speedups, *(p for t in installable if t.recommends for p in t.debian)],
                  [p for t in installable if not t.recommends for p in t.debian]]
        out(f"test tools: installing {' '.join(p for group in groups for p in group)} "
            "(apt-get)")
        updated = run([*apt, "update", "-qq"], env=environment, capture_output=True, text=True,
                      check=False)
        for group, extra in zip(groups, ([], ["--no-install-recommends"]), strict=True):
            if group and updated.returncode == 0:
                done = run([*apt, "install", "-y", "-qq", *extra, *group], env=environment,
                           capture_output=True, text=True, check=False)
                if done.returncode != 0:
                    out(f"test tools: apt-get install {' '.join(group)} failed:\n"
                        f"{(done.stdout + done.stderr)[-2000:]}")
        if updated.returncode != 0:
            out(f"test tools: apt-get update failed:\n{updated.stderr[-2000:]}")
        missing = [tier for tier in loaded.tiers if tier.missing(which)]
    elif installable:
        why = "no apt-get" if not which("apt-get") else "not root and no sudo without a password"
        out(f"test tools: cannot install here ({why})")
    for tier in missing:
        out(f"test tools: NOT RUN tier '{tier.name}' (needs {', '.join(tier.missing(which))}): "
            f"{tier.install_line()}")
    if not missing:
        out(f"test tools: every tier is here ({', '.join(t.name for t in loaded.tiers)})")
    return missing


def main(arguments: list[str]) -> int:
    loaded = load()
    if arguments == ["install"]:
        install(loaded)
        return 0
    if arguments:
        print(__doc__, file=sys.stderr)
        return 2
    for tier in loaded.tiers:
        lacking = tier.missing()
        state = "here" if not lacking else f"NOT HERE (needs {', '.join(lacking)}: " \
                                           f"{tier.install_line()})"
        print(f"{tier.name}: {state}")
    return 0


# ------------------------------------------------------------------ the pytest plugin

_MISSING = pytest.StashKey[dict[str, list[str]]]()
_NOT_RUN = pytest.StashKey[dict[str, int]]()
_TIERS = pytest.StashKey[Tiers]()


def pytest_configure(config: pytest.Config) -> None:
    loaded = load()
    config.stash[_TIERS] = loaded
    config.stash[_MISSING] = {tier.name: tier.missing() for tier in loaded.tiers}
    config.stash[_NOT_RUN] = {}
    for tier in loaded.tiers:
        if tier.name != "gpu":   # pyproject declares the folder marker gpu
            config.addinivalue_line("markers", f"{tier.name}: tool tier: {tier.what} "
                                                f"(tests/tools.toml)")


def pytest_report_header(config: pytest.Config) -> list[str]:
    missing = {name: lacking for name, lacking in config.stash[_MISSING].items() if lacking}
    if not missing:
        return ["tool tiers: all here"]
    tiers = {tier.name: tier for tier in config.stash[_TIERS].tiers}
    return [f"tool tiers missing here: {name} ("
            f"{'required: its tests fail' if required(tiers[name]) else 'NOT RUN'})"
            for name in sorted(missing)]


def required(tier: Tier, setting: str | None = None) -> bool:
    """Whether EDGERT_REQUIRE_TOOLS makes ``tier`` run (and fail) where it is missing."""
    value = os.environ.get(REQUIRE, "") if setting is None else setting
    if value == "1":
        return bool(tier.debian)
    return tier.name in {name.strip() for name in value.split(",")}


def mark(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Puts each tier's marker on its tests: called by tests/conftest.py's
    collection hook, before ``-m`` selects (so ``-m "not wine"`` works)."""
    for item in items:
        for tier in config.stash[_TIERS].tiers:
            if tier.selects(item.nodeid):
                item.add_marker(getattr(pytest.mark, tier.name))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """After ``-m`` and ``-k`` have selected: deselects the tests of the tiers missing here
    (unless EDGERT_REQUIRE_TOOLS=1), counted for the summary."""
    missing, not_run = config.stash[_MISSING], config.stash[_NOT_RUN]
    kept, dropped = [], []
    for item in items:
        absent = [tier.name for tier in config.stash[_TIERS].tiers
                  if missing[tier.name] and not required(tier)
                  and item.get_closest_marker(tier.name) is not None
                  and tier.selects(item.nodeid)]
        if absent:
            dropped.append(item)
            not_run[absent[0]] = not_run.get(absent[0], 0) + 1
        else:
            kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_runtest_setup(item: pytest.Item) -> None:
    config = item.config
    for tier in config.stash[_TIERS].tiers:
        lacking = config.stash[_MISSING][tier.name]
        if lacking and item.get_closest_marker(tier.name) is not None and tier.selects(
                item.nodeid):   # only a required tier's tests get here
            pytest.fail(f"tool tier '{tier.name}' is missing here ({', '.join(lacking)}; "
                        f"{REQUIRE} requires it): {tier.install_line()}", pytrace=False)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    config = terminalreporter.config
    not_run = config.stash[_NOT_RUN]
    if not not_run:
        return
    tiers = {tier.name: tier for tier in config.stash[_TIERS].tiers}
    terminalreporter.section("NOT RUN: tool tiers missing on this machine", sep="!", red=True,
                             bold=True)
    for name, count in sorted(not_run.items()):
        tier = tiers[name]
        terminalreporter.line(
            f"NOT RUN {count} test{'s' if count > 1 else ''} of tier '{name}' ({tier.what}); "
            f"missing: {', '.join(config.stash[_MISSING][name])}; install: "
            f"{tier.install_line()}", red=True)
    terminalreporter.line("(python -m tests.tool_tiers install does it where apt-get and root "
                          "are at hand; EDGERT_REQUIRE_TOOLS=1 makes them fail instead)")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
