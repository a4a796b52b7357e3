"""Building under reprotest-style variations of the build environment, and comparing.

A ``Variation`` is one build environment: the checkout's path (a fresh copy of the tracked
files, made a git checkout so the sdist can be built from it), the user (a user namespace
mapping this user to another uid) with its USER, LOGNAME and HOME, the host name (a UTS
namespace), the time zone, the locale, the umask, the clock (``faketime``: a start in 2031),
the order a directory listing returns (``disorderfs --reverse-dirents`` where FUSE works,
otherwise ``reverse_readdir.c`` preloaded) and the CPUs (``taskset`` and ``--jobs``).
``CONTROL`` is a plain environment, ``VARIED`` changes every one of them. ``build`` runs
``python -m release build`` (or the sdist) in a variation; ``compare`` says whether two
files have the same sha256 and, when not, what diffoscope sees.

Caches that are safe to share stay shared between variations: the tool cache (pinned,
checked), ccache (content-addressed; the pipeline makes its paths relative to the checkout)
and zig's cache. Nothing the builds produce is shared: each has its own checkout, build
folder and output folder."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SHIM_SOURCE = HERE / "reverse_readdir.c"
_KEPT = ("PATH", "RELEASE_CACHE_DIR", "PIP_", "CUDA_HOME", "VIRTUAL_ENV")


@dataclass(frozen=True)
class Variation:
    name: str
    checkout: str            # where the copy lives, relative to the run's folder
    user: str
    uid: int | None          # None: this user; else a user namespace maps us to this uid
    hostname: str | None     # None: this host's name; else a UTS namespace with this one
    timezone: str
    locale: str
    umask: int
    clock: str | None        # faketime's start time, None for the real clock
    reverse_order: bool      # directory listings in reverse order
    cpus: int | None         # None: every CPU, --jobs 2; else taskset to this many, --jobs too


CONTROL = Variation(name="control", checkout="a/edgert", user="builder", uid=None,
                    hostname=None, timezone="UTC", locale="C.UTF-8", umask=0o022, clock=None,
                    reverse_order=False, cpus=None)
VARIED = Variation(name="varied", checkout="second/clone/in/a/deeper/path/edgert",
                   user="someone-else", uid=1234, hostname="another-host.example",
                   timezone="Pacific/Kiritimati", locale="C", umask=0o077,
                   clock="2031-03-04 05:06:07", reverse_order=True, cpus=1)


@dataclass(frozen=True)
class Built:
    variation: Variation
    path: Path
    seconds: float
    order: str               # how the directory order was reversed ("disorderfs", "shim", "")
    stages: dict[str, float] | None = None   # the pipeline's seconds per stage


def tracked_files(source: Path) -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=source, capture_output=True,
                            check=True).stdout.decode().split("\0")
    return [name for name in listed if name and (source / name).is_file()]


def copy_checkout(source: Path, destination: Path) -> None:
    """The tracked files as they are in the work tree, in a fresh git checkout."""
    for name in tracked_files(source):
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / name, target)
    for command in (["git", "init", "-q"], ["git", "add", "-A"]):
        subprocess.run(command, cwd=destination, check=True, capture_output=True)


def fuse_works(folder: Path) -> bool:
    """Whether disorderfs can mount here (FUSE present and allowed)."""
    if shutil.which("disorderfs") is None or not Path("/dev/fuse").exists():
        return False
    store, mount = folder / "fuse-probe-store", folder / "fuse-probe"
    store.mkdir(parents=True, exist_ok=True)
    mount.mkdir(exist_ok=True)
    mounted = subprocess.run(["disorderfs", "--quiet", str(store), str(mount)],
                             capture_output=True, check=False).returncode == 0
    if mounted:
        subprocess.run(["fusermount", "-u", str(mount)], check=False)
    return mounted


def reversed_order_shim(folder: Path) -> Path:
    """The LD_PRELOAD library that makes readdir return every folder's entries reversed."""
    library = folder / "libreverse_readdir.so"
    if not library.exists():
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(library), str(SHIM_SOURCE),
                        "-ldl"], check=True, capture_output=True)
    return library


@contextlib.contextmanager
def checkout_for(variation: Variation, base: Path, *, force_shim: bool = False
                 ) -> Iterator[tuple[Path, str, dict[str, str]]]:
    """(the checkout, how its order is reversed, environment to add) for ``variation``."""
    checkout = base / variation.checkout
    if not variation.reverse_order:
        copy_checkout(ROOT, checkout)
        yield checkout, "", {}
        return
    if force_shim or not fuse_works(base):
        copy_checkout(ROOT, checkout)
        yield checkout, "shim", {"LD_PRELOAD": str(reversed_order_shim(base))}
        return
    store = base / "store" / variation.name
    copy_checkout(ROOT, store)
    checkout.mkdir(parents=True)
    subprocess.run(["disorderfs", "--quiet", "--reverse-dirents=yes", "--multi-user=yes",
                    "-o", "allow_other", str(store), str(checkout)], check=True)
    try:
        with _build_folder_at_disk_speed(checkout, base / "store" / f"{variation.name}-build"):
            yield checkout, "disorderfs", {}
    finally:
        subprocess.run(["fusermount", "-u", str(checkout)], check=False)


@contextlib.contextmanager
def _build_folder_at_disk_speed(checkout: Path, folder: Path) -> Iterator[None]:
    """The checkout's build/ folder bind-mounted from ``folder`` (where this user may mount),
    so the build writes at the disk's speed while the sources are read through disorderfs;
    it stays at its usual place, so ccache's relative paths are those of every checkout."""
    folder.mkdir(parents=True, exist_ok=True)
    (checkout / "build").mkdir(exist_ok=True)
    mounted = subprocess.run(["mount", "--bind", str(folder), str(checkout / "build")],
                             capture_output=True, check=False).returncode == 0
    try:
        yield
    finally:
        if mounted:
            subprocess.run(["umount", str(checkout / "build")], check=False)


def environment(variation: Variation, home: Path) -> dict[str, str]:
    kept = {key: value for key, value in os.environ.items() if key.startswith(_KEPT)}
    kept.setdefault("CCACHE_DIR", os.environ.get("CCACHE_DIR") or str(Path.home() / ".cache"
                                                                       / "ccache"))
    kept.setdefault("RELEASE_CACHE_DIR", str(Path.home() / ".cache" / "edgert-release"))
    return {**kept, "HOME": str(home), "USER": variation.user, "LOGNAME": variation.user,
            "TZ": variation.timezone, "LANG": variation.locale, "LC_ALL": variation.locale}


def prefix(variation: Variation) -> list[str]:
    """The programs that put a command into the variation's namespaces, CPUs, clock, umask."""
    words: list[str] = []
    if variation.hostname is not None:
        words += ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"',
                  variation.hostname]
    if variation.uid is not None:
        words += ["unshare", "--user", f"--map-user={variation.uid}",
                  f"--map-group={variation.uid}"]
    if variation.cpus is not None:
        words += ["taskset", "-c", ",".join(str(cpu) for cpu in
                                            sorted(os.sched_getaffinity(0))[:variation.cpus])]
    if variation.clock is not None:   # files keep their real times: NO_FAKE_STAT
        words += ["env", "NO_FAKE_STAT=1", "faketime", variation.clock]
    return [*words, "sh", "-c", f'umask {variation.umask:03o} && exec "$@"', "umask"]


def jobs(variation: Variation) -> str:
    return str(variation.cpus or 2)


def build(variation: Variation, base: Path, arguments: Sequence[str], *,
          force_shim: bool = False) -> Built:
    """``python -m release build ARGUMENTS --out ...`` in ``variation``; the wheel."""
    out = base / f"out-{variation.name}"
    home = base / f"home-{variation.name}"
    home.mkdir(parents=True, exist_ok=True)
    with checkout_for(variation, base, force_shim=force_shim) as (checkout, order, extra):
        command = [*prefix(variation), sys.executable, "-m", "release", "build", *arguments,
                   "--out", str(out), "--jobs", jobs(variation), "--json"]
        start = time.monotonic()
        completed = subprocess.run(command, cwd=checkout, capture_output=True, text=True,
                                   check=False, env={**environment(variation, home), **extra})
        seconds = time.monotonic() - start
        assert completed.returncode == 0, f"{variation.name}: {completed.stderr[-4000:]}"
        result = json.loads(completed.stdout)
    return Built(variation, Path(result["wheel"]), seconds, order, result["stages"])


def build_sdist(variation: Variation, base: Path) -> Built:
    """``python -m build --sdist`` (the backend's build_sdist) in ``variation``."""
    out = base / f"sdist-{variation.name}"
    home = base / f"home-{variation.name}"
    home.mkdir(parents=True, exist_ok=True)
    with checkout_for(variation, base) as (checkout, order, extra):
        code = ("import os, sys; from release import backend; os.makedirs(sys.argv[1]); "
                "print(backend.build_sdist(sys.argv[1]))")
        start = time.monotonic()
        completed = subprocess.run([*prefix(variation), sys.executable, "-c", code, str(out)],
                                   cwd=checkout, capture_output=True, text=True, check=False,
                                   env={**environment(variation, home), **extra,
                                        "PYTHONPATH": str(checkout)})
        seconds = time.monotonic() - start
        assert completed.returncode == 0, f"{variation.name}: {completed.stderr[-4000:]}"
    return Built(variation, out / completed.stdout.strip().splitlines()[-1], seconds, order)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def difference(first: Path, second: Path, *, limit: int = 20000) -> str | None:
    """None when the files have the same sha256; else diffoscope's report (text)."""
    if sha256(first) == sha256(second):
        return None
    report = subprocess.run(["diffoscope", "--text", "-", "--no-progress", str(first),
                             str(second)], capture_output=True, text=True, check=False)
    text = report.stdout or report.stderr
    return f"{first.name}: sha256 {sha256(first)} != {sha256(second)}\n{text[:limit]}"
