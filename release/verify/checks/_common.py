"""Small helpers the checks share: expanding search paths and making findings."""

from __future__ import annotations

import posixpath

from release.findings import Finding, Severity

_SITE = "/@site-packages"


def expand_origin(entry: str, folder: str) -> str | None:
    """A DT_RUNPATH/DT_RPATH entry as a path relative to site-packages.

    ``folder`` is the installed folder of the object carrying the entry. Returns None for an
    entry that does not start with $ORIGIN or that leaves site-packages."""
    for token in ("$ORIGIN", "${ORIGIN}"):
        if entry == token or entry.startswith(token + "/"):
            absolute = posixpath.normpath(posixpath.join(_SITE, folder) + entry[len(token):])
            if absolute == _SITE:
                return ""
            if absolute.startswith(_SITE + "/"):
                return absolute[len(_SITE) + 1:]
            return None
    return None


def leaves_site(entry: str, folder: str) -> bool:
    return entry.startswith(("$ORIGIN", "${ORIGIN}")) and expand_origin(entry, folder) is None


def finding(check: str, severity: Severity, file: str, what: str, *, why: str = "",
            fix: str = "", **details: object) -> Finding:
    return Finding(check=check, severity=severity, file=file, what=what, why=why, fix=fix,
                   details=dict(details))


def not_run(check: str, reason: str) -> Finding:
    return Finding(check=check, severity=Severity.INFO, file="", what=f"not run: {reason}",
                   details={"status": "not run"})
