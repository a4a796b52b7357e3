"""The properties the fuzz targets check, shared by the bounded hypothesis tests
(tests/verify/test_fuzz_readers.py) and the long run (benchmarks/fuzz_readers.py):
any input ends in a result or in the reader's own one-line error, never anything else, and
nothing is ever written outside the scratch folder."""

from __future__ import annotations

import io
import tempfile
import warnings
import zipfile
from pathlib import Path

from release.building.repair import check_input
from release.errors import BinaryFormatError, WheelError
from release.verify import verify_wheel
from release.verify.checks import identity
from release.verify.dist_info_files import parse_metadata, parse_record, parse_wheel_tags
from tests.verify.crafted import dense_dynsym_elf
from tests.verify.test_wheel_safety import make_wheel

DIST = "demo-1.0.dist-info"


def record_property(text: str) -> None:
    entries, findings = parse_record(text, where="RECORD")
    assert all(entry.path == path for path, entry in entries.items())
    assert all(f.check == "record" and f.what for f in findings)


def metadata_property(text: str) -> None:
    metadata, findings = parse_metadata(text, where="METADATA")
    assert isinstance(metadata.name, str) and all(f.what for f in findings)
    parse_wheel_tags(text)


def wheel_property(data: bytes, folder: Path) -> None:
    path = folder / "fuzz-1.0-py3-none-any.whl"
    path.write_bytes(data)
    try:
        report = verify_wheel(path, static=True)
    except (WheelError, BinaryFormatError) as error:
        assert error.what and error.fix, "a refusal says what and how to fix it"
        assert "\n" not in error.message, error.message
    else:
        assert all(finding.check and finding.what for finding in report.findings)
        assert "\n" not in "".join(f.file + f.what + f.why + f.fix for f in report.findings)


def repair_seed() -> bytes:
    """A wheel with a correct RECORD and a .data entry: repair's gate accepts it as it is."""
    files = {"demo/__init__.py": b"x = 1\n", "demo/lib.so": dense_dynsym_elf(3),
             "demo-1.0.data/platlib/demo_data.py": b"y = 2\n"}
    with tempfile.TemporaryDirectory() as folder:
        return make_wheel(Path(folder) / "demo-1.0-py3-none-any.whl", files).read_bytes()


def repair_gate_property(data: bytes, folder: Path) -> None:
    """repair's input gate and verify agree: a wheel the gate lets through is one verify reads
    without refusing it and without a RECORD or identity error, so repair can never turn a
    wheel verify refuses into one with a fresh, matching RECORD."""
    path = folder / "demo-1.0-py3-none-any.whl"
    path.write_bytes(data)
    try:
        check_input(path)
    except (WheelError, BinaryFormatError) as error:
        assert error.what and error.fix and "\n" not in error.what
        return
    report = verify_wheel(path, static=True)
    broken = [f for f in report.findings
              if f.check in ("record", identity.NAME) and f.severity == "error"]
    assert not broken, broken


def names_wheel(names: list[str]) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buffer, "w") as archive:
        warnings.simplefilter("ignore", UserWarning)  # duplicate names are part of the input
        archive.writestr(f"{DIST}/METADATA", "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n")
        archive.writestr(f"{DIST}/WHEEL", "Wheel-Version: 1.0\nTag: py3-none-any\n")
        for name in names:
            archive.writestr(zipfile.ZipInfo(name), b"\x7fELF member " + name.encode())
    return buffer.getvalue()


def names_property(names: list[str], folder: Path) -> None:
    """Crafted member names: refused or verified, and the canary folder beside the scratch
    folder stays empty whatever the names say."""
    canary = folder / "canary"
    canary.mkdir(exist_ok=True)
    path = folder / "demo-1.0-py3-none-any.whl"
    path.write_bytes(names_wheel(names))
    try:
        report = verify_wheel(path, static=False)
    except WheelError as error:
        assert error.what and error.fix and "\n" not in error.message, error.message
    else:
        assert "\n" not in "".join(f.file + f.what + f.why + f.fix for f in report.findings)
    assert not any(canary.iterdir()), list(canary.iterdir())


def build_record_seed() -> str:
    """A build record as the pipeline writes it (docs/build-record.md)."""
    from release.distribution.buildrecord import (
        BuildRecord,
        ComponentRecord,
        ExampleRecord,
        ExtensionRecord,
    )
    return BuildRecord(
        package="demo", distribution="demo", version="1.0", target="linux-x86_64",
        variant="cpu", extension=ExtensionRecord("demo._C", "demo/_C.abi3.so", ("core",)),
        components=(ComponentRecord("core", "library", "demo/lib/libdemo.so", "core", None,
                                    False, (), ("operators",), ("demo_core_component",)),),
        cmake_package="demo/lib/cmake/demo",
        example=ExampleRecord("demo/examples/consumer", "demo/models/mlp.edgert",
                              "demo.run_program")).to_text()


def build_record_property(text: str) -> None:
    """Any bytes a wheel's build record holds: a record, or one WheelError line."""
    from release.distribution.buildrecord import BuildRecord
    try:
        record = BuildRecord.from_json(text, where="demo/_release.json")
    except WheelError as error:
        assert error.what.startswith("demo/_release.json") and error.fix, error.message
        assert "\n" not in error.message, error.message
    else:
        assert isinstance(record.package, str) and all(isinstance(c.name, str)
                                                        for c in record.components)


MANIFEST_SEED = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()


def manifest_property(text: str) -> None:
    """Any pyproject.toml: a manifest, or one ConfigurationError line with a fix."""
    from release import manifest
    from release.errors import ConfigurationError
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "pyproject.toml").write_text(text, encoding="utf-8", errors="replace")
        try:
            manifest.load(Path(folder))
        except ConfigurationError as error:
            assert error.what and error.fix and "\n" not in error.message, error.message
