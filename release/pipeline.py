"""The pipeline loop, written once for every target and variant:

    configure -> build -> install -> lay out -> fix up -> repair -> verify

A platform module supplies the target-specific part of a stage; ``cuda/`` supplies the GPU
toolchain and runtime dependency of a CUDA variant. Nothing reaches the output folder until
every stage has passed: work happens in a private folder that is removed on failure."""

from __future__ import annotations

import enum
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from release import _cmd, tools, wheel
from release.errors import ConfigurationError, ReleaseError, VerificationFailed
from release.manifest import Component, Manifest, Target
from release.platform import Platform, RepairRequest, SearchPath, get_platform

log = logging.getLogger("release")

RECORD_FILE = "_release.json"
RECORD_SCHEMA = 1


class Stage(enum.IntEnum):
    CONFIGURE = 1
    BUILD = 2
    INSTALL = 3
    LAYOUT = 4
    FIXUP = 5
    REPAIR = 6
    VERIFY = 7

    @property
    def label(self) -> str:
        return self.name.lower().replace("fixup", "fix up").replace("layout", "lay out")


class VerifyMode(enum.StrEnum):
    FULL = "full"
    STATIC = "static"
    NONE = "none"


@dataclass(frozen=True, kw_only=True)
class BuildOptions:
    platform: str
    arch: str | None = None           # None: the host's architecture
    variant: str = "cpu"
    out_dir: Path = Path("dist")
    build_dir: Path | None = None     # None: <project>/build/<target>-<variant>
    last_stage: Stage = Stage.VERIFY
    verify: VerifyMode = VerifyMode.FULL
    jobs: int = 0                     # 0: one per core
    cmake_arguments: tuple[str, ...] = ()


@dataclass(kw_only=True)
class BuildResult:
    wheel: Path | None
    target: str
    variant: str
    build_dir: Path
    stages: dict[str, float] = field(default_factory=dict)
    verify: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"version": 1, "wheel": str(self.wheel) if self.wheel else None,
                "size": self.wheel.stat().st_size if self.wheel else None,
                "target": self.target, "variant": self.variant,
                "stages": {name: round(seconds, 3) for name, seconds in self.stages.items()},
                "verify": self.verify}


@dataclass(frozen=True, kw_only=True)
class Plan:
    """Everything a run needs, resolved up front so a mistake fails before any work."""

    manifest: Manifest
    target: Target
    platform: Platform
    variant: str
    distribution: str
    components: tuple[Component, ...]
    build_dir: Path
    options: BuildOptions
    environ: Mapping[str, str]
    cuda: Any = None                  # cuda.variant.CudaVariant for GPU variants
    cuda_toolchain: Any = None


def host_arch() -> str:
    import platform as host_platform
    machine = host_platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)


def make_plan(manifest: Manifest, options: BuildOptions, environ: Mapping[str, str]) -> Plan:
    arch = options.arch or _default_arch(manifest, options.platform)
    target = manifest.target(options.platform, arch)
    variant = manifest.variant(options.variant)
    platform = get_platform(target.platform)
    platform.check_host(target)
    cuda_variant = toolchain = None
    if variant.cuda is not None:
        from cuda import toolchain as cuda_toolchain
        from cuda import variant as cuda_variants
        cuda_variant = cuda_variants.load(variant.cuda)
        toolchain = cuda_toolchain.provision(cuda_variant, environ=environ)
    build_dir = options.build_dir or manifest.root / "build" / f"{target.name}-{variant.name}"
    return Plan(manifest=manifest, target=target, platform=platform, variant=variant.name,
                distribution=variant.distribution or manifest.distribution,
                components=manifest.components_for(variant.name), build_dir=build_dir.resolve(),
                options=options, environ=environ, cuda=cuda_variant, cuda_toolchain=toolchain)


def _default_arch(manifest: Manifest, platform: str) -> str:
    arches = [t.arch for t in manifest.targets if t.platform == platform]
    if not arches:
        manifest.target(platform, "")  # raises the unknown-platform error
    return host_arch() if host_arch() in arches else arches[0]


@contextmanager
def _stage(stage: Stage, timings: dict[str, float]) -> Iterator[None]:
    log.info("[%d/7] %s ...", stage.value, stage.label)
    start = time.monotonic()
    yield
    timings[stage.name.lower()] = elapsed = time.monotonic() - start
    log.info("[%d/7] %s done in %.1f s", stage.value, stage.label, elapsed)


def run(manifest: Manifest, options: BuildOptions,
        environ: Mapping[str, str] | None = None) -> BuildResult:
    """Runs the stages up to ``options.last_stage``; returns where the wheel went."""
    plan = make_plan(manifest, options, os.environ if environ is None else environ)
    result = BuildResult(wheel=None, target=plan.target.name, variant=plan.variant,
                         build_dir=plan.build_dir)
    steps: list[tuple[Stage, Callable[[Plan, _State], None]]] = [
        (Stage.CONFIGURE, _configure), (Stage.BUILD, _build), (Stage.INSTALL, _install),
        (Stage.LAYOUT, _lay_out), (Stage.FIXUP, _fix_up), (Stage.REPAIR, _repair),
        (Stage.VERIFY, _verify)]
    options.out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".release-", dir=options.out_dir) as scratch:
        state = _State(scratch=Path(scratch))
        for stage, step in steps:
            if stage > options.last_stage:
                break
            with _stage(stage, result.stages):
                step(plan, state)
        result.verify = state.verify_report
        if state.wheel is not None:
            final = options.out_dir / state.wheel.name
            os.replace(state.wheel, final)
            result.wheel = final.resolve()
    return result


@dataclass
class _State:
    scratch: Path
    wheel: Path | None = None
    verify_report: dict[str, Any] | None = None

    @property
    def staging(self) -> Path:
        return self.scratch / "root"


def _configure_arguments(plan: Plan) -> list[str]:
    opt_in = [c.cmake_component or c.name for c in plan.manifest.components if c.opt_in]
    registering = [c.cmake_component for c in plan.manifest.components
                   if c.registers and c.cmake_component]
    arguments = [
        "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={tools.ninja()}",
        "-DCMAKE_BUILD_TYPE=Release",
        f"-DCMAKE_INSTALL_PREFIX={plan.build_dir / 'install'}",
        f"-DEDGERT_PACKAGE_DIR={plan.manifest.package}",
        f"-DEDGERT_OPT_IN_COMPONENTS={';'.join(opt_in)}",
        f"-DEDGERT_REGISTRATION_ONLY_COMPONENTS={';'.join(registering)}",
        f"-DPython_EXECUTABLE={sys.executable}",
        *plan.platform.cmake_arguments(plan.target, plan.environ),
    ]
    if plan.cuda_toolchain is not None:
        arguments += plan.cuda_toolchain.cmake_arguments(plan.cuda)
    return [*arguments, *plan.options.cmake_arguments]


def _configure(plan: Plan, state: _State) -> None:
    arguments = _configure_arguments(plan)
    stamp = plan.build_dir / "release-configure.json"
    cache = plan.build_dir / "CMakeCache.txt"
    if cache.exists() and stamp.exists() and json.loads(stamp.read_text()) == arguments:
        log.info("configuration unchanged; CMake re-runs itself if its inputs changed")
        return
    plan.build_dir.mkdir(parents=True, exist_ok=True)
    stamp.unlink(missing_ok=True)
    _cmd.run([tools.cmake(), "-S", plan.manifest.native_source, "-B", plan.build_dir,
              *arguments], what="CMake configure",
             fix=f"read the CMake error above; delete {plan.build_dir} to start clean")
    stamp.write_text(json.dumps(arguments))


def _build(plan: Plan, state: _State) -> None:
    jobs = plan.options.jobs or os.cpu_count() or 1
    _cmd.run([tools.cmake(), "--build", plan.build_dir, "--parallel", str(jobs)],
             what="native build", fix="fix the compiler error shown above")


def _install(plan: Plan, state: _State) -> None:
    prefix = plan.build_dir / "install"
    shutil.rmtree(prefix, ignore_errors=True)
    _cmd.run([tools.cmake(), "--install", plan.build_dir, "--prefix", prefix],
             what="CMake install", fix="check the install() rules in native/")


def component_file(plan: Plan, component: Component) -> str:
    return f"{plan.manifest.package}/lib/{plan.platform.library_file(component.library)}"


def extension_file(plan: Plan) -> str:
    package, _, module = plan.manifest.extension.rpartition(".")
    return f"{package.replace('.', '/')}/{plan.platform.extension_file(module)}"


def build_record(plan: Plan) -> dict[str, Any]:
    """The facts verify reads from the wheel (docs/build-record.md)."""
    package = plan.manifest.package
    components = [{
        "name": c.name, "kind": c.kind, "file": component_file(plan, c),
        "cmake_component": c.cmake_component, "cmake_variable": c.cmake_variable,
        "opt_in": c.opt_in, "depends": list(c.depends), "registers": list(c.registers),
        "markers": list(c.markers)} for c in plan.components]
    return {
        "schema": RECORD_SCHEMA, "package": package, "distribution": plan.distribution,
        "version": plan.manifest.version, "target": plan.target.name, "variant": plan.variant,
        "extension": {"module": plan.manifest.extension, "file": extension_file(plan),
                      "depends": list(plan.manifest.extension_depends)},
        "components": components,
        "cmake_package": f"{package}/lib/cmake/{package}",
        "example": {"consumer": f"{package}/examples/consumer",
                    "program": f"{package}/models/mlp.edgert",
                    "python": f"{package}.run_program"},
        "cuda": plan.cuda.to_record() if plan.cuda is not None else None,
    }


def _lay_out(plan: Plan, state: _State) -> None:
    package = plan.manifest.package
    installed = plan.build_dir / "install" / package
    shutil.copytree(installed, state.staging / package, symlinks=True)
    missing = [f"{c.name} ({component_file(plan, c)})" for c in plan.components
               if not (state.staging / component_file(plan, c)).is_file()]
    if not (state.staging / extension_file(plan)).is_file():
        missing.append(f"extension ({extension_file(plan)})")
    if missing:
        raise ConfigurationError(f"the build did not install: {', '.join(missing)}",
                                 fix="every manifest component needs its edgert_add_component() "
                                     "in native/ and an install rule")
    record = json.dumps(build_record(plan), indent=2, sort_keys=True) + "\n"
    (state.staging / package / RECORD_FILE).write_text(record)


def _search_paths(plan: Plan, root: Path) -> list[SearchPath]:
    package = plan.manifest.package
    lib = f"{package}/lib"
    runtime: tuple[str, ...] = ()
    if plan.cuda is not None:
        runtime = (plan.cuda.runtime.dir,)
    binaries = [extension_file(plan), *(component_file(plan, c) for c in plan.components)]
    paths = []
    for binary in binaries:
        extra = runtime if runtime and _needs(root / binary, plan.cuda.runtime.library) else ()
        paths.append(SearchPath(binary=binary, folders=(lib, *extra)))
    return paths


def _needs(path: Path, library: str) -> bool:
    from release.binary import read_binary
    return library in read_binary(path).needed


def _fix_up(plan: Plan, state: _State) -> None:
    changed = plan.platform.fix_up(state.staging, _search_paths(plan, state.staging))
    log.info("search paths rewritten in %d files", len(changed))
    _write_dist_info(plan, state.staging, plan.platform.wheel_platform_tag(plan.target))
    python, abi = plan.platform.python_tag().split("-")
    name = wheel.WheelName(wheel.normalize_distribution(plan.distribution), plan.manifest.version,
                           python, abi, plan.platform.wheel_platform_tag(plan.target))
    state.wheel = state.scratch / name.filename
    files = wheel.collect_tree(state.staging)
    wheel.write_wheel(state.wheel, files, dist_info=name.dist_info,
                      epoch=wheel.source_date_epoch(plan.environ))


def _requirements(manifest: Manifest, variant: str) -> list[str]:
    """Requires-Dist beyond [project].dependencies: a GPU variant's runtime wheel."""
    cuda_file = manifest.variant(variant).cuda
    if cuda_file is None:
        return []
    from cuda import variant as cuda_variants
    return [cuda_variants.load(cuda_file).runtime.requirement]


def dist_info_files(manifest: Manifest, variant: str) -> tuple[str, dict[str, str]]:
    """The .dist-info folder name and its METADATA and top_level.txt (not WHEEL/RECORD)."""
    distribution = manifest.variant(variant).distribution or manifest.distribution
    readme_path = manifest.root / "README.md"
    readme = readme_path.read_text(encoding="utf-8") if readme_path.exists() else None
    metadata = wheel.metadata_text(manifest.project, name=distribution,
                                   extra_requires=_requirements(manifest, variant),
                                   readme=readme)
    name = f"{wheel.normalize_distribution(distribution)}-{manifest.version}.dist-info"
    return name, {"METADATA": metadata, "top_level.txt": manifest.package + "\n"}


def _write_dist_info(plan: Plan, root: Path, platform_tag: str) -> None:
    name, files = dist_info_files(plan.manifest, plan.variant)
    files["WHEEL"] = wheel.wheel_text([f"{plan.platform.python_tag()}-{platform_tag}"])
    (root / name).mkdir(parents=True, exist_ok=True)
    for file_name, text in files.items():
        (root / name / file_name).write_text(text, encoding="utf-8")


def repair_request(record: dict[str, Any], wheel_path: Path, out_dir: Path) -> RepairRequest:
    """What the repair tool must leave alone, from a wheel's build record: our own libraries
    (never renamed, copied or patched) and the declared CUDA runtime (never grafted)."""
    keep = tuple(sorted({Path(c["file"]).name for c in record["components"]}))
    cuda = record.get("cuda") or {}
    exclude = (cuda["runtime_library"],) if cuda else ()
    return RepairRequest(wheel=wheel_path, out_dir=out_dir, keep=keep, exclude=exclude)


def _repair(plan: Plan, state: _State) -> None:
    assert state.wheel is not None
    out_dir = state.scratch / "repaired"
    out_dir.mkdir()
    repaired = plan.platform.repair(repair_request(build_record(plan), state.wheel, out_dir))
    wheel.normalize(repaired, epoch=wheel.source_date_epoch(plan.environ))
    state.wheel = repaired


def _verify(plan: Plan, state: _State) -> None:
    assert state.wheel is not None
    if plan.options.verify is VerifyMode.NONE:
        log.info("verify skipped (--verify none)")
        return
    from release.verify import VerifyOptions, verify_wheel
    static = plan.options.verify is VerifyMode.STATIC or not plan.platform.can_run(plan.target)
    options = VerifyOptions(sites=() if static else _dependency_sites(plan),
                            build_paths=(str(plan.build_dir), str(plan.manifest.root)))
    report = verify_wheel(state.wheel, static=static, options=options)
    state.verify_report = report.to_json()
    if not report.ok:
        log.error("%s", report.render_text())
        raise VerificationFailed(f"{state.wheel.name} failed verification "
                                 f"({sum(1 for f in report.findings if f.severity == 'error')} "
                                 "errors); no wheel was written",
                                 fix="fix the findings listed above")


def _dependency_sites(plan: Plan) -> tuple[Path, ...]:
    """Site folders holding the wheel's declared native dependencies (a GPU variant's CUDA
    runtime wheel, installed from its own requirement), so the load checks resolve them the
    way an installed wheel would."""
    if plan.cuda is None:
        return ()
    runtime = plan.cuda.runtime
    relative = f"{runtime.dir}/{runtime.library}"
    library = tools.pip_tool(runtime.requirement, relative)
    return (library.parents[len(Path(relative).parts) - 1],)


def describe_failure(error: ReleaseError) -> str:
    return error.message
