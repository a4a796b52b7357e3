"""A variant wheel (PEP 825) is one: the label its file name carries and the
``.dist-info/variant.json`` it holds agree, and that file is valid as variantlib (the
reference implementation) reads it. A wheel with neither is no variant wheel and passes. What
the properties claim is judged by the provider that defines them (cuda/variant_properties.py)."""

from __future__ import annotations

from release.distribution.wheel_variant import DIST_INFO_FILE, NULL_LABEL, read_dist_info
from release.errors import WheelError
from release.findings import Finding, Severity
from release.verify.argument import variant_label
from release.verify.checks._common import finding
from release.verify.context import VerifyContext
from release.verify.wheel_model import WheelModel

NAME = "variant"
RUNS_PROGRAMS = False
_FIX = "rebuild it with python -m release build --form variant; never rename a wheel by hand"


def check(wheel: WheelModel, context: VerifyContext) -> list[Finding]:
    label, text = variant_label(wheel.filename), wheel.variant_json
    if label is None and text is None:
        return []
    if text is None:
        return [finding(NAME, Severity.ERROR, "", f"the file name carries variant label "
                        f"'{label}' but .dist-info has no {DIST_INFO_FILE}",
                        why="a variant-aware installer cannot tell what the wheel needs",
                        fix=_FIX)]
    if label is None:
        return [finding(NAME, Severity.ERROR, "", f".dist-info holds {DIST_INFO_FILE} but the "
                        "file name carries no variant label",
                        why="installers without variant support take it for a plain wheel "
                            "and install it whatever the machine", fix=_FIX)]
    try:
        found = read_dist_info(text, label=label, where=DIST_INFO_FILE)
    except WheelError as error:
        return [finding(NAME, Severity.ERROR, "", error.what, fix=error.fix)]
    if (label == NULL_LABEL) != found.is_null:
        return [finding(NAME, Severity.ERROR, "", f"label '{label}' with "
                        f"{len(found.properties)} properties", fix=_FIX)]
    return []
