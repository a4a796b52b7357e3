"""Long fuzzing runs of verify's readers, beyond the bounded runs in the test suite.

    python benchmarks/fuzz_readers.py --target record --minutes 10 [--seed N]

Targets: record (RECORD parser), metadata (METADATA/WHEEL parsers), wheel (mutated wheel
archives through the whole static verify), names (crafted member names through a full
verify, with a canary folder that must stay empty), elf (mutated ELF files), macho (mutated
fat and thin Mach-O files from tests/verify/macho_writer.py), pe (mutated DLLs and
executables from tests/verify/pe_images.py), repair (mutated wheels through repair's input
gate: what it accepts, verify must read without a RECORD or identity error), buildrecord
(the build record reader), manifest (pyproject.toml through the manifest's validation). Each
input is a random mutation of a valid seed; the properties are those of
tests/verify/fuzz_properties.py.
Prints executions, executions per second and the number of failing inputs; each is saved
under --out (the input bytes and the traceback)."""

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
from tests.verify.pe_images import EXECUTABLE, I386, pe_image  # noqa: E402

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


# A target makes one input from the random stream and returns it with the check to run on
# it, so a failing input is saved whole before its check runs.
Check = Callable[[Path], None]
Target = Callable[[random.Random, Path], tuple[bytes, Check]]


def _text_target(seed: str, check: Callable[[str], None]) -> Target:
    def one(rng: random.Random, work: Path) -> tuple[bytes, Check]:
        data = _mutate(seed.encode(), rng)
        return data, lambda _: check(data.decode("utf-8", "replace"))
    return one


def _wheel_target(seed: Callable[[], bytes], check: Callable[[bytes, Path], None]) -> Target:
    def one(rng: random.Random, work: Path) -> tuple[bytes, Check]:
        data = _mutate(seed(), rng)
        return data, lambda folder: check(data, folder)
    return one


def _names(rng: random.Random, work: Path) -> tuple[bytes, Check]:
    names = ["".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 6)))
             for _ in range(rng.randint(1, 4))]
    names = [name.replace("canary", str(work / "canary").lstrip("/")) for name in names]
    return "\n".join(names).encode(), lambda folder: fuzz_properties.names_property(names, folder)


def _read_or_refuse(data: bytes) -> None:
    try:
        read_binary_data(data, where="fuzz")
    except BinaryFormatError as error:
        assert error.what.startswith("fuzz") and "\n" not in error.what, error.what


def _binary_target(seeds: Callable[[random.Random], bytes]) -> Target:
    def one(rng: random.Random, work: Path) -> tuple[bytes, Check]:
        data = _mutate(seeds(rng), rng)
        return data, lambda _: _read_or_refuse(data)
    return one


def _elf_seed(rng: random.Random) -> bytes:
    return Path(sys.executable).resolve().read_bytes()[:65536]


def _macho_seed(rng: random.Random) -> bytes:
    library = macho_writer.macho(install_name="@rpath/liba.dylib", rpaths=["@loader_path"],
                                 loads=["@rpath/libb.dylib", "/usr/lib/libSystem.B.dylib"],
                                 exports=["a", "PyInit_a"], imports=["malloc"])
    return rng.choice([library, macho_writer.fat([("x86_64", macho_writer.macho(
        arch="x86_64", minos=(10, 9))), ("arm64", library)])])


def _pe_seed(rng: random.Random) -> bytes:
    return rng.choice([
        pe_image(imports=["KERNEL32.dll", "python3.dll"], delayed=["nvcuda.dll"],
                 exports=["PyInit_demo", "helper"], long_section="edgert_reg"),
        pe_image(machine=I386, bits=32, characteristics=EXECUTABLE, imports=["USER32.dll"])])


TARGETS: dict[str, Target] = {
    "record": _text_target(_RECORD, fuzz_properties.record_property),
    "buildrecord": _text_target(fuzz_properties.build_record_seed(),
                                fuzz_properties.build_record_property),
    "manifest": _text_target(fuzz_properties.MANIFEST_SEED, fuzz_properties.manifest_property),
    "metadata": _text_target(_METADATA, fuzz_properties.metadata_property),
    "wheel": _wheel_target(lambda: fuzz_properties.names_wheel(["demo/x.so"]),
                           fuzz_properties.wheel_property),
    "repair": _wheel_target(fuzz_properties.repair_seed, fuzz_properties.repair_gate_property),
    "names": _names, "elf": _binary_target(_elf_seed), "macho": _binary_target(_macho_seed),
    "pe": _binary_target(_pe_seed)}


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
        with tempfile.TemporaryDirectory(prefix="fuzz-") as work:
            data, check = target(rng, Path(work))
            try:
                check(Path(work))
            except Exception:  # a finding: keep the input and the traceback
                failures += 1
                arguments.out.mkdir(parents=True, exist_ok=True)
                (arguments.out / f"{arguments.target}-{runs}.input").write_bytes(data)
                (arguments.out / f"{arguments.target}-{runs}.txt").write_text(
                    traceback.format_exc())
        runs += 1
    elapsed = time.monotonic() - start
    print(f"{arguments.target}: {runs} executions in {elapsed:.0f} s "
          f"({runs / elapsed:.0f}/s), {failures} failing inputs")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
