"""verify on other people's wheels: real wheels from the package index, from different
ecosystems (scientific: numpy, scipy, h5py; data: pyarrow, psycopg2-binary, lxml; ML:
onnxruntime, torch, torchvision, bitsandbytes; image processing: pillow, opencv-python-headless;
geospatial: rasterio; GPU: cupy-cuda12x, onnxruntime-gpu, jax-cuda12-plugin; Rust-built:
cryptography; musl: numpy and scipy for musllinux_1_2; aarch64: numpy and pillow; numba's
optional threading layers), each with an expected-findings file in
tests/fixtures/corpus/ whose every warning and error was reviewed by hand (the 'review' says
why it is real) and, for the wheels that exercise a class the loader model once got wrong,
the notes that show it modelled ('exercises' names the class). The suite fails on a new
warning or error (a false positive until reviewed), on a lost expected one and on a missing
note. Each file is pinned by URL and sha256 and downloaded once into the tool cache
(tests/verify/corpus.py), never resolved from a requirement."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from release.toolchain import tools
from release.verify import verify_wheel
from tests.conftest import ROOT
from tests.verify import corpus

pytestmark = pytest.mark.index

CORPUS = "corpus"


def _wheel(case: str) -> Path:
    return corpus.wheel(CORPUS, case)


@pytest.mark.parametrize("case", corpus.cases(CORPUS))
def test_findings_match_the_reviewed_expectations(case: str) -> None:
    corpus.assert_matches(verify_wheel(_wheel(case), static=True), corpus.expected(CORPUS, case))


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
