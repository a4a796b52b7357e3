"""The installation check run first by ``import edgert``: the distributions ``edgert``,
``edgert-cu12`` and ``edgert-cu13`` all provide this package, so installing two of them into
one environment makes the one installed last overwrite the other's files, and uninstalling
either then removes files the remaining one needs. Exactly one may be installed.

Only this package's own folder is looked at: one directory listing and, only when it shows
two or more candidate metadata folders, a lookup of the three names through
importlib.metadata (no scan of every installed distribution). Nothing here imports numpy
or the native extension."""

from __future__ import annotations

import os

DISTRIBUTIONS = ("edgert", "edgert-cu12", "edgert-cu13")


def _candidates(folder: str) -> int:
    """How many metadata folders in ``folder`` may belong to an edgert distribution: one
    directory listing, so that the common case (one) does not pay for importing
    importlib.metadata (about a third of ``import edgert``)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    return sum(1 for name in names if name.lower().startswith("edgert")
               and name.lower().endswith((".dist-info", ".egg-info")))


def installed_distributions(folder: str) -> list[str]:
    """The distributions of this package whose metadata is installed in ``folder`` (the
    folder holding the ``edgert`` package, e.g. site-packages), in ``DISTRIBUTIONS`` order."""
    import importlib.metadata

    found = []
    for name in DISTRIBUTIONS:
        matches = importlib.metadata.distributions(name=name.replace("-", "_"), path=[folder])
        if next(iter(matches), None) is not None:
            found.append(name)
    return found


def fix_for(found: list[str]) -> str:
    """The one command line that restores a working installation: uninstall every one of
    them (each uninstall removes the files they share), then install the one wanted (in the
    message, the last found: a CUDA one whenever two are found)."""
    wanted = found[-1]
    return f"pip uninstall -y {' '.join(found)} && pip install {wanted}"


def check_single_distribution() -> None:
    """Raises ImportError when more than one edgert distribution is installed beside this
    package, naming them and the fix."""
    folder = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if _candidates(folder) < 2:
        return
    found = installed_distributions(folder)
    if len(found) > 1:
        names = " and ".join(", ".join(found).rsplit(", ", 1))
        both = "both" if len(found) == 2 else "all"
        raise ImportError(
            f"edgert: {names} are {both} installed in {folder}; they provide the same package, "
            f"so the one installed last has overwritten the other's files (and uninstalling "
            f"one of them removes files the other needs). Keep exactly one; fix: "
            f"{fix_for(found)}   (with whichever of them you want in place of {found[-1]})",
            name="edgert")
