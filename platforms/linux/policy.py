"""The manylinux policies (auditwheel's own policy file when auditwheel is importable, else
the copy beside this module), as frozen values: which system libraries a manylinux tag lets a
wheel need, and the newest symbol versions per architecture (a policy applies only to the
architectures it lists: the aarch64 limits start at glibc 2.17, the first aarch64 glibc)."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from release.errors import ConfigurationError
from release.verify.data import load_data_file

_COPY = Path(__file__).with_name("manylinux-policy.json")


@dataclass(frozen=True)
class Policy:
    name: str                                  # "manylinux_2_28"
    aliases: tuple[str, ...]
    priority: int                              # higher: older, stricter
    libraries: frozenset[str]                  # system libraries a wheel may need
    symbol_versions: dict[str, dict[str, frozenset[str]]]  # arch -> prefix -> versions

    @property
    def glibc(self) -> tuple[int, int] | None:
        parts = self.name.split("_")
        return (int(parts[1]), int(parts[2])) if len(parts) == 3 else None


@dataclass(frozen=True)
class PolicySet:
    source: str                                # "auditwheel" or the data file path
    policies: tuple[Policy, ...]

    def for_tag(self, platform: str) -> Policy | None:
        """The policy a platform tag such as ``manylinux_2_28_x86_64`` promises; None when
        no policy of that name covers the tag's architecture (manylinux1 has no aarch64)."""
        for policy in self.policies:
            for name in (policy.name, *policy.aliases):
                if platform.startswith(name + "_"):
                    arch = platform[len(name) + 1:]
                    covered = not policy.symbol_versions or arch in policy.symbol_versions
                    return policy if covered else None
        return None


def _policy_file() -> tuple[str, Path]:
    try:
        spec = importlib.util.find_spec("auditwheel.policy")
    except ModuleNotFoundError:   # no auditwheel at all (a clean test environment)
        spec = None
    if spec is not None and spec.submodule_search_locations:
        candidate = Path(next(iter(spec.submodule_search_locations))) / "manylinux-policy.json"
        if candidate.is_file():
            return "auditwheel", candidate
    return "platforms/linux", _COPY


@cache
def load_policies() -> PolicySet:
    source, path = _policy_file()
    try:
        policies = tuple(Policy(
            name=item["name"], aliases=tuple(item.get("aliases", ())),
            priority=int(item["priority"]), libraries=frozenset(item["lib_whitelist"]),
            symbol_versions={arch: {prefix: frozenset(versions)
                                    for prefix, versions in table.items()}
                             for arch, table in item["symbol_versions"].items()})
            for item in load_data_file(path))
    except (KeyError, TypeError, ValueError) as error:
        raise ConfigurationError(f"malformed policy file {path}: {error!r}",
                                 fix="reinstall auditwheel or the release tooling") from None
    return PolicySet(source, policies)
