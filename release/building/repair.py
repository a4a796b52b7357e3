"""``python -m release repair WHEEL``: repair a wheel this pipeline built, on its own.

Nothing the wheel says about itself decides what runs. The wheel is read through verify's
safe reader first (names, sizes, CRC-32, RECORD, identity), then the platform whose loader
model claims the wheel's own file-name tags is chosen, and the binaries the wheel ships must
all be that platform's format (verify's readers say which): a Linux wheel is repaired with
auditwheel whatever its build record's ``target`` says, a wheel whose tags and binaries
disagree is refused. The build record only names which libraries are ours (never renamed or
copied) and which come from declared dependencies (excluded from grafting). The result is
rewritten in the reproducible form; repairing a repaired wheel gives the same bytes."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from release.binary import READERS
from release.distribution import wheel
from release.distribution.archive import Limits, list_members, read_member
from release.distribution.buildrecord import RECORD_FILE, BuildRecord
from release.errors import WheelError
from release.platform import Platform, RepairRequest, all_platforms
from release.verify.argument import classify
from release.verify.checks import identity
from release.verify.options import VerifyOptions
from release.verify.wheel_model import WheelModel, open_wheel

_RECORD_LIMIT = 16 << 20   # a build record is a few KiB
_REFUSED = ("record", "archive", "binary", identity.NAME)   # the checks whose errors refuse


def repair_request(record: BuildRecord, wheel_path: Path, out_dir: Path,
                   model: WheelModel | None = None) -> RepairRequest:
    """What the repair tool must leave alone, from a wheel's build record: our own libraries
    (never renamed, copied or patched) and declared run-time dependencies (never grafted);
    with the wheel's binaries when ``model`` has read them already."""
    keep = tuple(sorted({Path(c.file).name for c in record.components}))
    exclude = tuple(runtime.library for runtime in record.runtime_dependencies)
    binaries = {binary.path: binary.info for binary in model.binaries} if model else {}
    return RepairRequest(wheel=wheel_path, out_dir=out_dir, keep=keep, exclude=exclude,
                         binaries=binaries)


def read_record(path: Path) -> BuildRecord:
    """The wheel's build record, read through verify's reader (the one entry read into
    memory; the rest are streamed)."""
    limits = Limits()
    members = list_members(path, limits)
    records = [member for member in members if member.name.count("/") == 1
               and member.name.endswith("/" + RECORD_FILE)
               and not member.name.split("/")[0].endswith(".dist-info")]
    if len(records) != 1:
        raise WheelError(f"the wheel has no {RECORD_FILE} build record",
                         fix="repair only wheels built by `python -m release build`; "
                             "use auditwheel directly for others")
    name = records[0].name
    if records[0].declared_size > _RECORD_LIMIT:
        raise WheelError(f"{name} is larger than {_RECORD_LIMIT >> 20} MiB",
                         fix="rebuild the wheel with `python -m release build`")
    record = BuildRecord.from_json(read_member(path, records[0], limits), where=name)
    if not record.target or not record.components:
        raise WheelError(f"{name} names no target or no components",
                         fix="rebuild the wheel with `python -m release build`")
    return record


def check_input(path: Path) -> WheelModel:
    """Reads the wheel through verify's safe reader (names confined, no duplicates, no
    symbolic links, bounded expansion, CRC-32, every file matching RECORD, file-name tags
    matching WHEEL's) and its binaries, before anything is rewritten: repair must never turn
    a wheel verify refuses into one it accepts. The model's binaries are parsed (their
    formats are known); their extracted copies are gone when it returns."""
    with tempfile.TemporaryDirectory(prefix="release-repair-check-") as scratch:
        model = open_wheel(classify(path), Path(scratch), extract_all=False, prefixes=(),
                           options=VerifyOptions(), readers=READERS)
    broken = [f for f in (*model.findings, *identity.identity_findings(model))
              if f.check in _REFUSED and f.severity == "error"]
    if broken:
        raise WheelError(f"{path.name}: {broken[0].file}: {broken[0].what}"
                         + (f" (and {len(broken) - 1} more)" if len(broken) > 1 else ""),
                         fix="rebuild the wheel; repair does not re-sign changed files")
    return model


def platform_of(model: WheelModel, platforms: tuple[Platform, ...]) -> Platform | None:
    """The platform whose loader model claims every platform tag of the wheel's file name,
    when its binaries are all that platform's format; None for a wheel without platform tags
    or binaries (nothing to repair). A WheelError otherwise."""
    tags = sorted({tag.platform for tag in model.tags} - {"any"})
    formats = sorted({binary.info.format for binary in model.binaries})
    if not tags:
        if formats:
            raise WheelError(f"{model.filename}: ships {', '.join(formats)} binaries but has "
                             "no platform tag", fix="rebuild the wheel with its platform's tag")
        return None
    claiming = [platform for platform in platforms if platform.loader is not None
                and all(platform.loader.claims_tag(tag) for tag in tags)]
    if len(claiming) != 1:
        raise WheelError(f"{model.filename}: no single platform claims its tags "
                         f"{', '.join(tags)}", fix="repair wheels tagged for linux, macos or "
                                                   "windows, one platform per wheel")
    platform = claiming[0]
    native = platform.reader.name if platform.reader is not None else ""
    foreign = [name for name in formats if name != native]
    if foreign:
        raise WheelError(f"{model.filename}: tagged {', '.join(tags)} ({platform.name}) but "
                         f"ships {', '.join(foreign)} binaries",
                         fix="rebuild the wheel; its tags and its binaries must agree")
    return platform


def repair_wheel(path: Path, out_dir: Path, *, environ: dict[str, str]) -> Path:
    if not path.is_file():
        raise WheelError(f"{path} is not a file", fix="pass the path of a .whl file")
    epoch = wheel.source_date_epoch(environ)
    model = check_input(path)
    platform = platform_of(model, all_platforms())
    record = read_record(path)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".release-", dir=out_dir) as scratch:
        if platform is None:   # a pure wheel: only rewritten in the reproducible form
            repaired = Path(scratch) / path.name
            shutil.copyfile(path, repaired)
        else:
            repaired = platform.repair(repair_request(record, path.resolve(), Path(scratch),
                                                          model))
        wheel.normalize(repaired, epoch=epoch)
        final = out_dir / repaired.name
        os.replace(repaired, final)
    return final
