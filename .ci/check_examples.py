"""The release workflow's example check, run by the interpreter that has the wheel installed:
builds the C and C++ examples the wheel ships (``edgert/examples/consumer``) against the
installed package, the way its readme tells users to (``python -m edgert
--cmake-prefix-path``), installs them with ``edgert_install``, moves the installed tree, and
runs the C++, C and installed programs on the shipped model: each must print exactly what
the Python front end (``python -m edgert.run_program``) prints.

    python .ci/check_examples.py [WORK_FOLDER]      (default: ./examples-check)

Needs CMake >= 3.24 and a C/C++ compiler on PATH; exits non-zero with the first difference."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path


def run(*command: str | Path) -> str:
    print("+", " ".join(str(part) for part in command), flush=True)
    completed = subprocess.run([str(part) for part in command], capture_output=True,
                               text=True, check=False)
    if completed.returncode != 0:
        sys.stderr.write(completed.stdout + completed.stderr)
        raise SystemExit(f"failed with exit code {completed.returncode}: {command[0]}")
    return completed.stdout


def program(folder: Path, name: str) -> Path:
    """A built program: in the folder itself, or in a multi-config generator's Release/."""
    suffix = ".exe" if os.name == "nt" else ""
    for candidate in (folder / f"{name}{suffix}", folder / "Release" / f"{name}{suffix}"):
        if candidate.is_file():
            return candidate
    raise SystemExit(f"{name}{suffix} was not built in {folder}")


def main() -> int:
    import edgert  # the installed wheel, never a source folder

    work = Path(sys.argv[1] if len(sys.argv) > 1 else "examples-check").resolve()
    shutil.rmtree(work, ignore_errors=True)
    package = Path(edgert.__file__).resolve().parent
    prefix = run(sys.executable, "-m", "edgert", "--cmake-prefix-path").strip()
    model = package / "models" / "mlp.edgert"
    build, installed = work / "build", work / "app"
    run("cmake", "-S", package / "examples" / "consumer", "-B", build,
        f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_BUILD_TYPE=Release")
    run("cmake", "--build", build, "--config", "Release")
    run("cmake", "--install", build, "--config", "Release", "--prefix", installed)
    moved = work / "moved-app"
    installed.rename(moved)   # the installed tree runs from wherever it is copied to
    expected = run(sys.executable, "-m", "edgert.run_program", model)
    programs = [program(build, "run_program"), program(build, "run_program_c"),
                program(moved / "bin", "run_program")]
    for binary in programs:
        output = run(binary, model)
        if output != expected:
            sys.stderr.write(f"{binary} printed:\n{output}\nthe Python front end printed:\n"
                             f"{expected}")
            raise SystemExit(f"{binary.name} differs from python -m edgert.run_program")
    print(f"{len(programs)} example programs match the Python front end "
          f"({len(expected.splitlines())} lines) for edgert {edgert.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
