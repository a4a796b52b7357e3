"""Prepared kernel state is shared between programs holding the same constants and attributes
(one packed copy of a weight for a model loaded twice), and made again when the constants or
attributes differ or no program holds it any more. Observed from a C++ program registering
an operator whose prepare function counts its calls (programs/prepared_sharing.cpp)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np

from tests.native.support import ROOT, NativeInstall, run_checked


def scale_program(path: Path, weight: float, gain: float) -> Path:
    import sys
    sys.path.insert(0, str(ROOT / "native" / "python"))
    from edgert.export import ProgramBuilder
    builder = ProgramBuilder()
    x = builder.input(np.float32, [2])
    weights = builder.constant(np.full(4, weight, np.float32))
    builder.output(builder.op("test::scale", [x, weights], {"gain": gain}))
    builder.save(path)
    return path


def test_programs_with_the_same_constants_share_prepared_state(native_install: NativeInstall,
                                                                tmp_path: Path) -> None:
    program = tmp_path / "prepared_sharing"
    lib = native_install.lib_dir
    run_checked(["c++", "-std=c++17", "-O1", "-o", str(program),
                 str(ROOT / "tests" / "native" / "programs" / "prepared_sharing.cpp"),
                 f"-I{ROOT / 'native' / 'include'}", f"-L{lib}", "-ledgert",
                 f"-Wl,-rpath,{lib}"])
    same = scale_program(tmp_path / "same.edgert", 1.0, 2.0)
    copy = tmp_path / "copy.edgert"
    copy.write_bytes(same.read_bytes())          # another file: other memory, same bytes
    weight = scale_program(tmp_path / "weight.edgert", 3.0, 2.0)
    gain = scale_program(tmp_path / "gain.edgert", 1.0, 5.0)
    completed = subprocess.run([str(program), str(same), str(copy), str(weight), str(gain), "-",
                                str(same)], capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stderr
    lines = [line.split(" ", 1)[1] for line in completed.stdout.splitlines()]
    assert lines == ["8 prepared=1",    # 1·4 (the weights' sum) · gain 2
                     "8 prepared=1",    # the copy shares the first program's state
                     "24 prepared=2",   # another constant
                     "20 prepared=3",   # another attribute
                     "8 prepared=4"]    # every holder released: made again
