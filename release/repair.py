"""``python -m release repair WHEEL``: repair a wheel this pipeline built, on its own.

Reads the wheel's build record to learn which libraries are ours (never renamed or copied)
and which come from declared dependencies (excluded from grafting), runs the platform's
repair tool, and rewrites the result in the reproducible form. Repairing a repaired wheel
gives the same bytes."""

from __future__ import annotations

import os
import tempfile
import zipfile
from pathlib import Path

from release import wheel
from release.buildrecord import RECORD_FILE, BuildRecord
from release.errors import WheelError
from release.pipeline import repair_request
from release.platform import get_platform
from release.verify.checks import identity
from release.verify.options import VerifyOptions
from release.verify.wheel import open_wheel

_RECORD_LIMIT = 16 << 20   # a build record is a few KiB


def read_record(path: Path) -> BuildRecord:
    """The wheel's build record, the only entry read into memory (the rest are streamed)."""
    try:
        with zipfile.ZipFile(path) as archive:
            records = [info for info in archive.infolist()
                       if info.filename.count("/") == 1
                       and info.filename.endswith("/" + RECORD_FILE)]
            if len(records) != 1:
                raise WheelError(f"the wheel has no {RECORD_FILE} build record",
                                 fix="repair only wheels built by `python -m release build`; "
                                     "use auditwheel directly for others")
            name = records[0].filename
            with archive.open(records[0]) as stream:
                data = stream.read(_RECORD_LIMIT + 1)
    except (zipfile.BadZipFile, OSError) as error:
        raise WheelError(f"cannot read wheel {path}: {error}",
                         fix="rebuild it; the file is damaged or not a wheel") from None
    if len(data) > _RECORD_LIMIT:
        raise WheelError(f"{name} is larger than {_RECORD_LIMIT >> 20} MiB",
                         fix="rebuild the wheel with `python -m release build`")
    record = BuildRecord.from_json(data, where=name)
    if not record.target or not record.components:
        raise WheelError(f"{name} names no target or no components",
                         fix="rebuild the wheel with `python -m release build`")
    return record


def check_input(path: Path) -> None:
    """Reads the wheel through verify's safe reader (names confined, no duplicates, no
    symbolic links, bounded expansion, every file matching RECORD, file-name tags matching
    WHEEL's) before anything is rewritten: repair must never turn a wheel verify refuses
    into one it accepts."""
    with tempfile.TemporaryDirectory(prefix="release-repair-check-") as scratch:
        model = open_wheel(path, Path(scratch), extract_all=False, prefixes=(),
                           options=VerifyOptions(), readers=())
    broken = [f for f in (*model.findings, *identity.identity_findings(model))
              if f.check in ("record", identity.NAME) and f.severity == "error"]
    if broken:
        raise WheelError(f"{path.name}: {broken[0].file}: {broken[0].what}"
                         + (f" (and {len(broken) - 1} more)" if len(broken) > 1 else ""),
                         fix="rebuild the wheel; repair does not re-sign changed files")


def repair_wheel(path: Path, out_dir: Path, *, environ: dict[str, str]) -> Path:
    if not path.is_file():
        raise WheelError(f"{path} is not a file", fix="pass the path of a .whl file")
    check_input(path)
    record = read_record(path)
    platform = get_platform(record.platform)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".release-", dir=out_dir) as scratch:
        repaired = platform.repair(repair_request(record, path.resolve(), Path(scratch)))
        wheel.normalize(repaired, epoch=wheel.source_date_epoch(environ))
        final = out_dir / repaired.name
        os.replace(repaired, final)
    return final
