"""The manylinux and musllinux policies, from the project's own pinned copy of auditwheel's
policy files (``manylinux-policy.json``, ``musllinux-policy.json`` and ``policy-source.json``
beside this module, refreshed by ``update_policies.py``), as frozen values: which system
libraries a tag lets a wheel need, and the newest symbol versions per architecture (a policy
applies only to the architectures it lists: the aarch64 limits start at glibc 2.17, the first
aarch64 glibc). Never whichever auditwheel is importable: the same wheel gets the same
findings whatever the verifier has installed."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from release.errors import ConfigurationError
from release.verify.data import load_data_file

HERE = Path(__file__).parent
FAMILIES = {"manylinux": HERE / "manylinux-policy.json",
            "musllinux": HERE / "musllinux-policy.json"}
SOURCE = HERE / "policy-source.json"

# auditwheel lists musl's C library as "libc.so"; each architecture's file is named for it
# (auditwheel's own _fixup_musl_libc_soname).
MUSL_LIBC = {"x86_64": "libc.musl-x86_64.so.1", "i686": "libc.musl-x86.so.1",
             "aarch64": "libc.musl-aarch64.so.1", "s390x": "libc.musl-s390x.so.1",
             "ppc64le": "libc.musl-ppc64le.so.1", "armv7l": "libc.musl-armv7.so.1",
             "riscv64": "libc.musl-riscv64.so.1",
             "loongarch64": "libc.musl-loongarch64.so.1"}


@dataclass(frozen=True)
class Policy:
    name: str                                  # "manylinux_2_28", "musllinux_1_2"
    aliases: tuple[str, ...]
    priority: int                              # higher: older, stricter
    libraries: frozenset[str]                  # system libraries a wheel may need
    symbol_versions: dict[str, dict[str, frozenset[str]]]  # arch -> prefix -> versions
    family: str = "manylinux"                  # "manylinux" (glibc) or "musllinux" (musl)

    @property
    def glibc(self) -> tuple[int, int] | None:
        parts = self.name.split("_")
        if self.family != "manylinux" or len(parts) != 3:
            return None
        return int(parts[1]), int(parts[2])

    def libraries_for(self, arch: str) -> frozenset[str]:
        """The allowed libraries on ``arch``, with musl's C library under its real name."""
        if self.family != "musllinux" or "libc.so" not in self.libraries:
            return self.libraries
        named = MUSL_LIBC.get(arch)
        return (self.libraries - {"libc.so"}) | ({named} if named else set())


@dataclass(frozen=True)
class PolicySet:
    source: str                                # "auditwheel <version> (pinned copy)"
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


def _policy(item: dict[str, Any], family: str) -> Policy:
    versions = item["symbol_versions"]
    if not isinstance(versions, dict):
        raise TypeError("symbol_versions is not an object")
    return Policy(
        name=str(item["name"]), aliases=tuple(item.get("aliases", ())),
        priority=int(item["priority"]), libraries=frozenset(item["lib_whitelist"]),
        symbol_versions={arch: {prefix: frozenset(names) for prefix, names in table.items()}
                         for arch, table in versions.items()},
        family=family)


@cache
def load_policies() -> PolicySet:
    """Every policy of both families (the catch-all "linux" policy once)."""
    policies: list[Policy] = []
    for family, path in FAMILIES.items():
        try:
            items = load_data_file(path)
            for item in items:
                if item["name"] == "linux" and any(p.name == "linux" for p in policies):
                    continue
                policies.append(_policy(item, family))
        except (KeyError, TypeError, ValueError) as error:
            raise ConfigurationError(f"malformed policy file {path}: {error!r}",
                                     fix="run python -m platforms.linux.update_policies") from None
    source = load_data_file(SOURCE)
    version = source.get("auditwheel", "unknown") if isinstance(source, dict) else "unknown"
    return PolicySet(f"auditwheel {version} (pinned copy in platforms/linux)", tuple(policies))
