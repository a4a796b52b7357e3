"""What a verify run may do and how far it may go: one frozen value, built by the CLI."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from release.distribution.archive import Limits
from release.verify.sandbox import Mode, ResourceLimits


@dataclass(frozen=True)
class VerifyOptions:
    heuristic_ownership: bool = False   # infer ownership from strings even with a build record
    load_timeout: float = 60.0          # seconds per load-matrix subprocess
    max_pairs: int = 400                # cap on load-matrix pairs (each run in both orders)
    workers: int = 2                    # parallel readers / subprocesses
    sites: tuple[Path, ...] = ()        # extra site-packages folders holding dependencies
    offline: bool = False               # never provision declared dependencies from the index
    build_paths: tuple[str, ...] = ()   # build/source folders that must not leak (errors)
    known_build_prefixes: bool = True   # also look for CI/container folders (warnings)
    providers: tuple[str, ...] = ()     # variant providers whose checks also run (--provider)
    cmake_timeout: float = 300.0
    # where the wheel's code runs in a full verify (release/verify/sandbox.py): "require"
    # bubblewrap or refuse, "prefer" it and else run unsandboxed, "off" (--trust-wheel)
    sandbox: Mode = "require"
    limits: Limits = Limits()
    # what each program of the wheel's may use, and the deadline of all of them together
    resources: ResourceLimits = ResourceLimits()
