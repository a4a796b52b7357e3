"""Pins the corpus: writes each expectation's ``url``, the index's address of exactly the
reviewed file (``wheel``), after checking that the index lists that file with the reviewed
``sha256``. The corpus tests then download that one file (``tests/verify/corpus.py``),
never a file pip would choose for a requirement.

    python -m tests.verify.pin_corpus [tests/fixtures/corpus*/NAME.json ...]

Without arguments it pins the expectations that have no ``url`` yet. A file from another
index (torch's CPU build, from download.pytorch.org) is pinned by hand the same way.
Reads the index's JSON simple API (PEP 691), once per project. Rewrites only the ``url`` of
an expectation whose file the index lists with the reviewed digest; anything else is an
error naming the file."""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

from packaging.utils import canonicalize_name, parse_wheel_filename

from tests.conftest import ROOT

INDEX = "https://pypi.org/simple"


def listed_files(project: str) -> dict[str, dict[str, object]]:
    request = urllib.request.Request(
        f"{INDEX}/{canonicalize_name(project)}/",
        headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        files = json.load(response)["files"]
    return {str(row["filename"]): row for row in files}


def pin(path: Path, listing: dict[str, dict[str, object]]) -> str:
    wanted = json.loads(path.read_text())
    row = listing.get(wanted["wheel"])
    if row is None:
        return f"{path}: the index does not list {wanted['wheel']}"
    digest = row["hashes"]["sha256"]  # type: ignore[index]
    if digest != wanted["sha256"]:
        return (f"{path}: the index lists {wanted['wheel']} with sha256 {digest}, not the "
                "reviewed one")
    pinned = {}
    for key, value in wanted.items():
        if key not in ("url", "platform", "python_version"):  # the file name says both
            pinned[key] = value
        if key == "sha256":
            pinned["url"] = row["url"]
    path.write_text(json.dumps(pinned, indent=1, ensure_ascii=False) + "\n")
    return ""


def main(arguments: list[str]) -> int:
    paths = [Path(argument) for argument in arguments] or [
        path for path in sorted((ROOT / "tests" / "fixtures").glob("corpus*/*.json"))
        if "url" not in json.loads(path.read_text())]
    listings: dict[str, dict[str, dict[str, object]]] = {}
    problems = []
    for path in paths:
        project = str(parse_wheel_filename(json.loads(path.read_text())["wheel"])[0])
        if project not in listings:
            listings[project] = listed_files(project)
        problems.append(pin(path, listings[project]))
    for problem in filter(None, problems):
        print(problem, file=sys.stderr)
    return 1 if any(problems) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
