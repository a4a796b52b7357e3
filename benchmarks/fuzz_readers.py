"""Long fuzzing runs of verify's readers, beyond the bounded runs in the test suite.

    python benchmarks/fuzz_readers.py --target record --minutes 10 [--seed N]

Targets: record (RECORD parser), metadata (METADATA/WHEEL parsers), wheel (mutated wheel
archives through the whole static verify), names (crafted member names through a full
verify, with a canary folder that must stay empty), elf (mutated ELF files), macho (mutated
fat and thin Mach-O files from tests/verify/macho_writer.py). Each input is
random mutation of a valid seed; the properties are those of tests/verify/fuzz_properties.py.
Prints executions, executions per second and every failing input (saved under --out)."""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from release.binary import read_binary_data  # noqa: E402
from release.errors import BinaryFormatError  # noqa: E402
from tests.verify import fuzz_properties, macho_writer  # noqa: E402

_RECORD = "demo/a.py,sha256=AAAA,12\ndemo-1.0.dist-info/RECORD,,\n"
_METADATA = "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nRequires-Dist: numpy>=1\n"
_PIECES = ["/", "//", ".", "..", "\\", "\0", "demo-1.0.data", "purelib", "platlib", "x.so",
           "C:", "canary", "demo"]


def _mutate(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        choice = rng.random()
        if choice < 0.5 and out:
            out[rng.randrange(len(out))] = rng.randrange(256)
        elif choice < 0.75:
            out[rng.randrange(len(out) + 1):0] = bytes(rng.randrange(256)
                                                       for _ in range(rng.randint(1, 8)))
        elif out:
            start = rng.randrange(len(out))
            del out[start:start + rng.randint(1, 16)]
    return bytes(out)


def _text_target(seed: str, check: Callable[[str], None]) -> Callable[[random.Random, Path], bytes]:
    def one(rng: random.Random, work: Path) -> bytes:
        data = _mutate(seed.encode(), rng)
        check(data.decode("utf-8", "replace"))
        return data
    return one


def _wheel(rng: random.Random, work: Path) -> bytes:
    data = _mutate(fuzz_properties.names_wheel(["demo/x.so"]), rng)
    fuzz_properties.wheel_property(data, work)
    return data


def _names(rng: random.Random, work: Path) -> bytes:
    names = ["".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 6)))
             for _ in range(rng.randint(1, 4))]
    names = [name.replace("canary", str(work / "canary").lstrip("/")) for name in names]
    fuzz_properties.names_property(names, work)
    return "\n".join(names).encode()


def _elf(rng: random.Random, work: Path) -> bytes:
    seed = Path(sys.executable).resolve().read_bytes()[:65536]
    data = _mutate(seed, rng)
    try:
        read_binary_data(data, where="fuzz")
    except BinaryFormatError as error:
        assert error.what.startswith("fuzz")
    return data


def _macho(rng: random.Random, work: Path) -> bytes:
    library = macho_writer.macho(install_name="@rpath/liba.dylib", rpaths=["@loader_path"],
                                 loads=["@rpath/libb.dylib", "/usr/lib/libSystem.B.dylib"],
                                 exports=["a", "PyInit_a"], imports=["malloc"])
    seed = rng.choice([library, macho_writer.fat([("x86_64", macho_writer.macho(
        arch="x86_64", minos=(10, 9))), ("arm64", library)])])
    data = _mutate(seed, rng)
    try:
        read_binary_data(data, where="fuzz")
    except BinaryFormatError as error:
        assert error.what.startswith("fuzz") and "\n" not in error.what
    return data


TARGETS: dict[str, Callable[[random.Random, Path], bytes]] = {
    "record": _text_target(_RECORD, fuzz_properties.record_property),
    "metadata": _text_target(_METADATA, fuzz_properties.metadata_property),
    "wheel": _wheel, "names": _names, "elf": _elf, "macho": _macho}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", choices=sorted(TARGETS), required=True)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("fuzz-findings"))
    arguments = parser.parse_args()
    rng, target = random.Random(arguments.seed), TARGETS[arguments.target]
    deadline = time.monotonic() + arguments.minutes * 60
    runs = failures = 0
    start = time.monotonic()
    while time.monotonic() < deadline:
        state = rng.getstate()
        with tempfile.TemporaryDirectory(prefix="fuzz-") as work:
            try:
                target(rng, Path(work))
            except Exception:  # a finding: keep the input's seed state and the traceback
                failures += 1
                arguments.out.mkdir(parents=True, exist_ok=True)
                rng.setstate(state)
                (arguments.out / f"{arguments.target}-{runs}.txt").write_text(
                    traceback.format_exc())
                rng.random()
        runs += 1
    elapsed = time.monotonic() - start
    print(f"{arguments.target}: {runs} executions in {elapsed:.0f} s "
          f"({runs / elapsed:.0f}/s), {failures} failing inputs")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
