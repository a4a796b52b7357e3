"""``python -m release repair WHEEL``: repair a wheel this pipeline built, on its own.

Reads the wheel's build record to learn which libraries are ours (never renamed or copied)
and which come from declared dependencies (excluded from grafting), runs the platform's
repair tool, and rewrites the result in the reproducible form. Repairing a repaired wheel
gives the same bytes."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from release import wheel
from release.errors import WheelError
from release.pipeline import RECORD_FILE, repair_request
from release.platform import get_platform


def read_record(entries: dict[str, tuple[bytes, int]]) -> dict[str, Any]:
    records = [name for name in entries if name.count("/") == 1 and name.endswith(RECORD_FILE)]
    if len(records) != 1:
        raise WheelError(f"the wheel has no {RECORD_FILE} build record",
                         fix="repair only wheels built by `python -m release build`; use "
                             "auditwheel directly for others")
    try:
        record: dict[str, Any] = json.loads(entries[records[0]][0])
    except ValueError as error:
        raise WheelError(f"{records[0]} is not valid JSON: {error}",
                         fix="rebuild the wheel") from None
    return record


def repair_wheel(path: Path, out_dir: Path, *, environ: dict[str, str]) -> Path:
    record = read_record(wheel.read_entries(path))
    platform = get_platform(str(record["target"]).split("-", 1)[0])
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".release-", dir=out_dir) as scratch:
        repaired = platform.repair(repair_request(record, path.resolve(), Path(scratch)))
        wheel.normalize(repaired, epoch=wheel.source_date_epoch(environ))
        final = out_dir / repaired.name
        os.replace(repaired, final)
    return final
