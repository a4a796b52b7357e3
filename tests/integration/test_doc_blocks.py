"""The README's and docs/' Python and shell blocks run as written (tests/doc_blocks.py lists
them; a block not meant to run says so in the markdown, and tests/unit/test_docs.py holds it
to that): Python blocks in a folder of their own, shell blocks in the checkout, with this
machine's CPU wheel on the path as a user who installed it has it, and this environment's
torch for the export examples."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests import doc_blocks
from tests.conftest import ROOT, BuiltWheel

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def wheel_site(cpu_wheel: BuiltWheel, tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("doc-blocks-site")
    with zipfile.ZipFile(cpu_wheel.path) as archive:
        archive.extractall(site)
    return site


@pytest.mark.parametrize("block", doc_blocks.runnable(), ids=lambda block: block.name)
def test_the_block_runs_as_written(block: doc_blocks.Block, wheel_site: Path,
                                   tmp_path: Path) -> None:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(wheel_site), str(ROOT)]),
                   "PATH": os.pathsep.join([str(Path(sys.executable).parent),
                                            os.environ.get("PATH", "")])}
    if block.kind == "python":   # a user's code: anywhere
        command, folder = [sys.executable, "-c", block.code], tmp_path
    else:                        # a contributor's commands: in the checkout
        command, folder = ["bash", "-euo", "pipefail", "-c", block.code], ROOT
    completed = subprocess.run(command, cwd=folder,
                               env=environment, capture_output=True, text=True, check=False,
                               timeout=600)
    assert completed.returncode == 0, (
        f"{block.name} failed:\n{block.code}\n{completed.stdout[-3000:]}\n"
        f"{completed.stderr[-3000:]}")
