"""``python -m release check-set DIR``: the release as a whole, before anything is published.

Each wheel was verified where it was built; this checks what no single build can see, and
collects every finding before deciding (docs/release.md). The set is read once
(``model.read_release_set``: every wheel's name, METADATA, build record, SBOM and its
``verify --static`` report), then each check of ``checks.CHECKS`` judges it, and the report
is rendered by verify's renderer (release/verify/report.py).
"""

from release.release_set.check_set import SetReport, check_release_set

__all__ = ["SetReport", "check_release_set"]
