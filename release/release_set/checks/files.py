"""Every file is one of the release's wheels, its sdist or its variants index."""

from __future__ import annotations

from release.distribution.wheel import normalize_distribution
from release.distribution.wheel_variant import INDEX_SUFFIX, index_name
from release.findings import Finding
from release.release_set.set_model import ReleaseSet, error

NAME = "files"


def check(release: ReleaseSet) -> list[Finding]:
    folder, manifest = release.folder, release.manifest
    sdist = f"{normalize_distribution(manifest.distribution)}-"
    index = index_name(manifest.distribution, manifest.version)
    findings = [error(NAME, path.name, "is neither a wheel nor the sdist (nor the "
                      f"variants index {index})",
                      fix="remove it: the publish step uploads everything in the folder")
                for path in sorted(folder.iterdir())
                if path.suffix != ".whl" and not path.name.endswith(".tar.gz")
                and not (path.name.endswith(INDEX_SUFFIX) and path.name == index)]
    sdists = sorted(p.name for p in folder.glob("*.tar.gz"))
    findings += [error(NAME, name, f"is not the sdist of {manifest.distribution}",
                       fix="remove it")
                 for name in sdists if not name.startswith(sdist)]
    if len([name for name in sdists if name.startswith(sdist)]) != 1:
        findings.append(error(NAME, "", f"expected one sdist of {manifest.distribution}, "
                              f"found {len(sdists)}", fix="add the sdist job's artifact "
                              "(python -m build --sdist)"))
    if not release.wheels and not release.unread:
        findings.append(error(NAME, "", "the folder holds no wheel",
                              fix="download the build jobs' artifacts into it"))
    return [*findings, *release.unread]
