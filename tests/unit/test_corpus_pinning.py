"""Every corpus expectation pins exactly one file: its name, its sha256 and the index's URL of
that file, which the corpus tests download as it is (tests/verify/corpus.py), never a file
pip would choose for a requirement."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.verify import corpus

EXPECTATIONS = sorted((ROOT / "tests" / "fixtures").glob("corpus*/*.json"))


@pytest.mark.parametrize("path", EXPECTATIONS, ids=lambda path: f"{path.parent.name}/{path.stem}")
def test_each_expectation_pins_one_file_by_url_and_digest(path: Path) -> None:
    wanted = json.loads(path.read_text())
    assert re.fullmatch(r"[0-9a-f]{64}", wanted["sha256"])
    url = wanted["url"]
    assert url.startswith("https://") and url.rsplit("/", 1)[-1].replace("%2B", "+") == \
        wanted["wheel"]
    command = corpus.download_command(wanted, Path("/nowhere"))
    assert command[-1] == f"{url}#sha256={wanted['sha256']}"   # pip checks the digest
    assert "-r" not in command and wanted.get("requirement") not in command   # no resolving


def test_the_target_comes_from_the_file_name() -> None:
    windows = corpus.download_command(
        {"wheel": "pyzmq-27.3.0-cp311-cp311-win_amd64.whl", "url": "https://x/y.whl",
         "sha256": "0" * 64}, Path("/d"))
    assert windows[windows.index("--platform") + 1] == "win_amd64"
    assert windows[windows.index("--python-version") + 1] == "311"
    assert windows[windows.index("--abi") + 1] == "cp311"
    generic = corpus.download_command(
        {"wheel": "bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl",
         "url": "https://x/y.whl", "sha256": "0" * 64}, Path("/d"))
    # a generic py3 wheel installs on this interpreter's Python: no version is claimed
    assert "--python-version" not in generic and "--abi" not in generic
    assert generic[0] == sys.executable
