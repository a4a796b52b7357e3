"""The declared dependencies a wheel's libraries load from (a CUDA runtime wheel, the package
whose import loads libtorch), made available to the checks that run programs: found in the
``--site`` folders, else provisioned from the package index into the tool cache (unless
``--offline``). A dependency that cannot be provided makes those checks "not run
(environment)", never a finding against the wheel."""

from __future__ import annotations

import fnmatch
from pathlib import Path

from packaging.utils import canonicalize_name

from release.errors import EnvironmentFailure
from release.host import Runner
from release.toolchain import tools
from release.verify import linkage_model
from release.verify.context import VerifyContext
from release.verify.dist_info_files import marker_environment
from release.verify.wheel_model import WheelModel


def dependency_sites(wheel: WheelModel, context: VerifyContext,
                     runner: Runner) -> tuple[Path, ...]:
    """The ``--site`` folders plus one provisioned folder per needed dependency they lack.
    Provisioning installs wheels for this machine, so it happens only for a native runner.
    The load-matrix check asks once and hands the folders to each load."""
    given = tuple(context.options.sites)
    needed = sorted({item.distribution for item in linkage_model.resolutions(context)
                     if item.kind in (linkage_model.EXTERNAL, linkage_model.IMPORTED)})
    environment = marker_environment(wheel.tags)
    provisioned = []
    for distribution in needed:
        if any(site_holds(site, distribution) for site in given):
            continue
        requirement = next((r for r in wheel.metadata.requires
                            if canonicalize_name(r.name) == canonicalize_name(distribution)
                            and (r.marker is None or environment is None
                                 or r.marker.evaluate({**environment, "extra": ""}))), None)
        if requirement is None:
            continue
        wanted = f"{requirement.name}{requirement.specifier}"
        if context.options.offline:
            raise EnvironmentFailure(
                f"the wheel's libraries load {distribution} ({wanted}, declared in "
                "Requires-Dist), which --offline keeps from being provisioned",
                fix="pass --site DIR holding it, or drop --offline")
        if runner.prefix:
            raise EnvironmentFailure(
                f"the wheel's libraries load {distribution} ({wanted}), which verify cannot "
                f"provision for an emulated {runner.machine} machine",
                fix=f"pass --site DIR holding the {runner.machine} wheel of {wanted}")
        provisioned.append(tools.pip_site(wanted))
    return given + tuple(provisioned)


def site_holds(site: Path, distribution: str) -> bool:
    """Whether ``site`` has ``distribution`` installed (its .dist-info folder); the name may
    be globs joined by ", " (the providers of a CUDA toolkit library)."""
    patterns = [canonicalize_name(part.strip()) if "*" not in part else part.strip().lower()
                for part in distribution.split(",") if part.strip()]
    if not patterns or not site.is_dir():
        return False
    installed = {canonicalize_name(entry.name.split("-", 1)[0])
                 for entry in site.glob("*.dist-info")}
    return any(fnmatch.fnmatchcase(name, pattern) for name in installed for pattern in patterns)
