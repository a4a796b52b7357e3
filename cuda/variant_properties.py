"""The verify check CUDA contributes for variant wheels (PEP 825): what the wheel's
``variant.json`` claims in the NVIDIA provider's namespace is what the wheel is.

- ``nvidia :: sm_arch``: ``XY_real`` values are exactly the build record's claimed compute
  capabilities and ``XY_virtual`` its PTX, and every one is really shipped: SASS for sm_XY,
  PTX for compute_XY, in the libraries' fatbinaries;
- ``nvidia :: cuda_version_lower_bound`` / ``upper_bound`` (the driver's CUDA version, lower
  inclusive, upper exclusive) fit the declared runtime dependency: the lower bound has the
  runtime's major and is no newer than its minimum (minor-version compatibility lets a 12.0
  driver run a 12.8 runtime), the upper bound is the requirement's exclusive upper bound;
- a wheel without device code claims nothing in that namespace.

A wheel without variant.json is not judged here (release/verify/checks/variant.py judges the
file itself)."""

from __future__ import annotations

from collections.abc import Iterable

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from cuda import device_code
from cuda.fatbin import EntryKind
from cuda.record import DeviceCodeRecord, device_code_record
from release.distribution.wheel_variant import DIST_INFO_FILE, WheelVariant, read_dist_info
from release.errors import WheelError
from release.findings import Finding, Severity
from release.verify.checks._common import finding
from release.verify.context import VerifyContext
from release.verify.wheel_model import WheelModel

NAME = "variant-properties"
RUNS_PROGRAMS = False
NAMESPACE = "nvidia"
LOWER, UPPER, SM_ARCH = "cuda_version_lower_bound", "cuda_version_upper_bound", "sm_arch"
_FIX = ("correct `properties` in [tool.release.variants.<name>] (or the variant's claims) "
        "and rebuild")


def _sm(capability: str) -> str:
    """"8.6" -> "86" (the number of sm_86 and of the provider's 86_real)."""
    major, _, minor = capability.partition(".")
    return f"{major}{minor}"


def _bounds(requirement: str) -> tuple[Version | None, Version | None]:
    """The minimum (>=) and the exclusive maximum (<) of a requirement's specifier."""
    low = high = None
    for spec in Requirement(requirement).specifier:
        if spec.operator == ">=":
            low = Version(spec.version)
        elif spec.operator == "<":
            high = Version(spec.version)
    return low, high


def judge(variant: WheelVariant, device: DeviceCodeRecord | None, *,
          sass: Iterable[str] | None, ptx: Iterable[str] | None) -> list[str]:
    """What ``variant`` claims in the nvidia namespace that the build record ``device``
    (None: no device code) and the shipped fatbinaries (SM numbers of their SASS and PTX;
    None: not read) contradict; one sentence each."""
    arch = variant.values(NAMESPACE, SM_ARCH)
    lower, upper = variant.values(NAMESPACE, LOWER), variant.values(NAMESPACE, UPPER)
    if device is None:
        return [f"claims {NAMESPACE} :: {feature} but the build record has no CUDA device code"
                for feature, values in ((SM_ARCH, arch), (LOWER, lower), (UPPER, upper))
                if values]
    problems = []
    real = {value[:-len("_real")] for value in arch if value.endswith("_real")}
    virtual = {value[:-len("_virtual")] for value in arch if value.endswith("_virtual")}
    problems += [f"{SM_ARCH} value '{value}' is neither XY_real nor XY_virtual"
                 for value in arch if not value.endswith(("_real", "_virtual"))]
    for kind, claimed, recorded in (("real", real, {_sm(c) for c in device.claims}),
                                    ("virtual", virtual, {_sm(c) for c in device.ptx})):
        if claimed != recorded:
            what = "compute capabilities" if kind == "real" else "PTX"
            problems.append(f"{SM_ARCH} claims {kind} {_listed(claimed)} but the build record's "
                            f"{what} are {_listed(recorded)}")
    if sass is not None:
        problems += [f"{SM_ARCH} :: {sm}_real but no library ships SASS for sm_{sm}"
                     for sm in sorted(real - set(sass))]
    if ptx is not None:
        problems += [f"{SM_ARCH} :: {sm}_virtual but no library ships PTX for compute_{sm}"
                     for sm in sorted(virtual - set(ptx))]
    return problems + _bound_problems(lower, upper, device.runtime.requirement)


def _bound_problems(lower: tuple[str, ...], upper: tuple[str, ...],
                    requirement: str) -> list[str]:
    if len(lower) != 1 or len(upper) != 1:
        return [f"claims {len(lower)} {LOWER} and {len(upper)} {UPPER} values; a CUDA wheel "
                "claims one of each (its driver range)"]
    try:
        low, high = Version(lower[0]), Version(upper[0])
        minimum, maximum = _bounds(requirement)
    except (InvalidVersion, InvalidRequirement) as error:
        return [f"cannot compare the CUDA bounds with '{requirement}': {error}"]
    problems = []
    if minimum is None or low.major != minimum.major or low > minimum:
        problems.append(f"{LOWER} {lower[0]} does not fit the runtime dependency "
                        f"'{requirement}' (wanted: the runtime's major, no newer than its "
                        "minimum)")
    if maximum is None or high != maximum:
        problems.append(f"{UPPER} {upper[0]} is not the runtime dependency's upper bound "
                        f"('{requirement}')")
    return problems


def _listed(values: set[str]) -> str:
    return ", ".join(sorted(values, key=int)) or "none"


def check(wheel: WheelModel, context: VerifyContext) -> list[Finding]:
    if wheel.variant_json is None:
        return []
    try:
        variant = read_dist_info(wheel.variant_json, label=None, where=DIST_INFO_FILE)
    except WheelError:
        return []          # the variant check reports an invalid file
    record = wheel.build_record
    device = device_code_record(record)
    # read once per run, shared with the coverage check (which reports unreadable ones)
    shipped = context.analysis(device_code.of_wheel)
    problems = judge(variant, device, sass=shipped.sm_numbers(EntryKind.CUBIN),
                     ptx=shipped.sm_numbers(EntryKind.PTX))
    if device is not None and not wheel.metadata.requires_distribution(
            device.runtime.distribution):
        problems.append(f"the bounds are judged against '{device.runtime.requirement}', which "
                        "Requires-Dist does not declare")
    return [finding(NAME, Severity.ERROR, DIST_INFO_FILE, problem,
                    why="a variant-aware installer picks the wheel by these properties", fix=_FIX)
            for problem in problems]
