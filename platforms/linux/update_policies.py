"""Refreshes the project's pinned copy of auditwheel's Linux policies.

    python -m platforms.linux.update_policies [AUDITWHEEL_POLICY_FOLDER]   (project root)

Copies ``manylinux-policy.json`` and ``musllinux-policy.json`` from the ``policy`` folder of
an auditwheel installation (by default the one this interpreter imports) beside this script
and writes ``policy-source.json``: the auditwheel version they came from and each file's
sha256. verify reads only this copy (platforms/linux/policy.py), never whichever auditwheel
happens to be importable, so its findings do not depend on the verifier's packages; updating
the policies is this explicit, reviewed step. auditwheel is MIT-licensed. A mistake is one
line and its exit code, written by the release command's edge (``report_error``)."""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import importlib.util
import json
import shutil
import sys
from pathlib import Path

from release.errors import ConfigurationError, ReleaseError, ToolError

HERE = Path(__file__).resolve().parent
FILES = ("manylinux-policy.json", "musllinux-policy.json")
SOURCE = HERE / "policy-source.json"


def installed_policy_folder() -> Path:
    """The policy folder of the auditwheel this interpreter imports."""
    spec = importlib.util.find_spec("auditwheel")
    if spec is None or not spec.submodule_search_locations:
        raise ToolError("auditwheel is not importable",
                        fix="pip install auditwheel, or pass its policy folder")
    return Path(next(iter(spec.submodule_search_locations))) / "policy"


def auditwheel_version(folder: Path) -> str:
    """The version of the auditwheel distribution that owns ``folder``."""
    for dist_info in folder.parents[1].glob("auditwheel-*.dist-info"):
        return dist_info.name[len("auditwheel-"):-len(".dist-info")]
    try:
        return importlib.metadata.version("auditwheel")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def update(folder: Path, destination: Path = HERE) -> dict[str, object]:
    """Copies the policy files from ``folder`` into ``destination``; returns the source
    record it wrote."""
    missing = [name for name in FILES if not (folder / name).is_file()]
    if missing:
        raise ConfigurationError(f"{folder} has no {', '.join(missing)}",
                                 fix="pass the 'policy' folder of an auditwheel installation")
    for name in FILES:   # refuse a broken file before copying any
        try:
            json.loads((folder / name).read_text(encoding="utf-8"))
        except ValueError as error:
            raise ConfigurationError(f"{folder / name} is not JSON: {error}",
                                     fix="pass the 'policy' folder of a working auditwheel "
                                         "installation") from None
    digests = {}
    for name in FILES:
        shutil.copyfile(folder / name, destination / name)
        digests[name] = hashlib.sha256((destination / name).read_bytes()).hexdigest()
    record: dict[str, object] = {
        "about": "Pinned copy of auditwheel's Linux policies (MIT), refreshed by "
                 "platforms/linux/update_policies.py; verify reads nothing else.",
        "auditwheel": auditwheel_version(folder), "files": digests}
    (destination / SOURCE.name).write_text(json.dumps(record, indent=2) + "\n",
                                           encoding="utf-8")
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path,
                        help="auditwheel's policy folder (default: the importable auditwheel)")
    arguments = parser.parse_args(argv)
    try:
        record = update(arguments.folder or installed_policy_folder())
    except ReleaseError as error:
        from release.__main__ import report_error
        return report_error(error, sys.stderr)
    sys.stdout.write(f"policies of auditwheel {record['auditwheel']} copied into {HERE}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
