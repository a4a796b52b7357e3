"""The pipeline loop, written once for every target and variant:

    configure -> build -> install -> lay out -> fix up -> pack -> repair -> verify

A platform module supplies the target-specific part of a stage; a variant (release/variants.py,
found through the manifest) supplies its toolchain, configure arguments and run-time
dependency. The plan decides everything up front and does no work; provisioning happens in
the configure stage. Nothing reaches the output folder until every stage has passed: work
happens in a private folder that is removed on failure."""

from __future__ import annotations

import json
import logging
import os
import platform as platform_module
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from release import progress
from release.build_options import BuildOptions, Form, Stage, VerifyMode, default_cache_dir
from release.building import buildfolder, distinfo, patcher
from release.building.repair import repair_request
from release.building.resolved import ResolvedRelease, resolve
from release.distribution import sbom, wheel, wheel_variant
from release.distribution.buildrecord import RECORD_FILE
from release.errors import (
    CommandError,
    ConfigurationError,
    EnvironmentCommandError,
    EnvironmentFailure,
    ToolError,
    VerificationFailed,
)
from release.host import Host, Runner
from release.manifest import Manifest, Target
from release.tool import Tool
from release.toolchain import commands, pins, tools
from release.verify.api import verify_wheel
from release.verify.options import VerifyOptions
from release.verify.report import Report

log = logging.getLogger("release")


@dataclass
class BuildResult:
    wheel: Path | None
    target: str
    variant: str
    build_dir: Path
    stages: dict[str, float] = field(default_factory=dict)
    verify: dict[str, Any] | None = None
    variants_json: Path | None = None     # --form variant: the index beside the wheel

    def to_json(self) -> dict[str, Any]:
        return {"version": 1, "wheel": str(self.wheel) if self.wheel else None,
                "variants_json": str(self.variants_json) if self.variants_json else None,
                "size": self.wheel.stat().st_size if self.wheel else None,
                "target": self.target, "variant": self.variant,
                "stages": {name: round(seconds, 3) for name, seconds in self.stages.items()},
                "verify": self.verify}


@dataclass(frozen=True)
class Plan:
    """Everything a run needs, resolved up front so a mistake fails before any work (and
    without doing any: no tool is installed and nothing is compiled here). The facts about
    the release itself (variant, distribution, search paths, build record, route, metadata)
    are the one ``ResolvedRelease``; the plan adds where and how this run does the work."""

    release: ResolvedRelease
    build_dir: Path
    options: BuildOptions
    environ: Mapping[str, str]
    cache: Path


def make_plan(manifest: Manifest, options: BuildOptions, environ: Mapping[str, str],
              host: Host, *, resolved: ResolvedRelease | None = None) -> Plan:
    """The plan of one build on ``host`` (the edge's, release/__main__.py or the backend).
    ``resolved`` is the release already resolved for these options (``plan --build`` hands
    on its matrix entry's), used when it is the one the options ask for. Looks up no native
    compiler: the configure stage finds cc and c++ (the unit tier plans with none on PATH);
    a cross build's route still depends on finding its cross compilers."""
    selection = manifest.select(options.platform, options.arch, options.variant,
                                own_arch=host.arch(options.platform))
    asked = (manifest, host, selection.target, selection.variant, options.form)
    release = (resolved if resolved is not None and asked == (
        resolved.manifest, resolved.host, resolved.target, resolved.declared, resolved.form)
        else resolve(manifest, selection, host=host, form=options.form))
    route = release.route
    if not route.reachable:
        raise ToolError(route.detail, fix=route.fix)
    wheel.source_date_epoch(environ)   # a bad SOURCE_DATE_EPOCH is refused before any work
    build_dir = options.build_dir or manifest.root / "build" / release.name
    return Plan(release=release, build_dir=build_dir.resolve(), options=options,
                environ=environ, cache=(options.cache_dir or default_cache_dir()).resolve())


@contextmanager
def _stage(stage: Stage, timings: dict[str, float]) -> Iterator[None]:
    log.info("[%d/%d] %s ...", stage.value, len(Stage), stage.label)
    start = time.monotonic()
    yield
    timings[stage.option] = elapsed = time.monotonic() - start
    log.info("[%d/%d] %s done in %.1f s", stage.value, len(Stage), stage.label, elapsed)


def run(manifest: Manifest, options: BuildOptions,
        environ: Mapping[str, str] | None = None, *, host: Host,
        resolved: ResolvedRelease | None = None) -> BuildResult:
    """Runs the stages up to ``options.last_stage`` on ``host``; returns where the wheel
    went."""
    plan = make_plan(manifest, options, os.environ if environ is None else environ, host,
                     resolved=resolved)
    release = plan.release
    result = BuildResult(wheel=None, target=release.target.name, variant=release.variant.name,
                         build_dir=plan.build_dir)
    buildfolder.check_writable(options.out_dir)   # before any work, not after the build
    with buildfolder.locked(plan.build_dir), buildfolder.scratch(plan.build_dir) as scratch, \
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="runner") as beside:
        state = _State(scratch=scratch, beside=beside)
        # a run that stops before pack writes no wheel: --until pack leaves the unrepaired one
        try:
            for stage, stage_steps in STEPS:
                if stage > options.last_stage:
                    break
                with _stage(stage, result.stages):
                    for step in stage_steps:
                        step(plan, state)
        except BaseException:
            if state.runner is not None and not state.runner.done():
                log.info("waiting for the runner's provisioning, started beside the build, "
                         "to finish (it is kept in the tool cache)")
            raise
        result.verify = state.verify_report
        if state.wheel is not None:
            # the index is merged before the wheel is published: a bad index stops both
            index = None if state.variant_json is None else wheel_variant.merged_index(
                options.out_dir, plan.release.distribution, manifest.version, state.variant_json)
            result.wheel = buildfolder.publish(state.wheel, options.out_dir, index).resolve()
            result.variants_json = None if index is None else index[0]
    return result


@dataclass
class _State:
    scratch: Path
    wheel: Path | None = None
    verify_report: dict[str, Any] | None = None
    toolchain: tuple[Tool, ...] = ()    # what the variant's provisioning brought
    variant_json: str | None = None          # --form variant: the wheel's variant.json
    beside: ThreadPoolExecutor | None = None   # work that overlaps the build (one thread)
    runner: Future[Runner | None] | None = None   # full verify's runner, provisioned beside

    @property
    def staging(self) -> Path:
        return self.scratch / "root"


def _search_path_arguments(plan: Plan) -> list[str]:
    """The decided search paths, handed to CMake (EDGERT_SEARCH_PATH_<component>)."""
    names = {plan.release.extension_file: "EXTENSION",
             **{plan.release.component_file(c): c.name for c in plan.release.components}}
    return [f"-DEDGERT_SEARCH_PATH_{names[entry.binary]}={';'.join(entry.entries)}"
            for entry in plan.release.search_paths]


@dataclass(frozen=True)
class _Part:
    """One CMake build of the run: the target itself, or one thin part of a fat target
    (built in a folder of the target's build folder, named after its architecture)."""

    target: Target
    build_dir: Path


def _parts(plan: Plan) -> list[_Part]:
    parts = plan.release.platform.parts(plan.release.target)
    if parts == (plan.release.target,):
        return [_Part(plan.release.target, plan.build_dir)]
    return [_Part(part, plan.build_dir / part.arch) for part in parts]


def _configure_arguments(plan: Plan, part: _Part, toolchain_arguments: list[str]) -> list[str]:
    opt_in = [c.cmake_component or c.name for c in plan.release.manifest.components if c.opt_in]
    registering = [c.cmake_component for c in plan.release.manifest.components
                   if c.registers and c.cmake_component]
    arguments = [
        "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={tools.ninja(cache=plan.cache)}",
        "-DCMAKE_BUILD_TYPE=Release",
        f"-DCMAKE_INSTALL_PREFIX={part.build_dir / 'install'}",
        f"-DEDGERT_PACKAGE_DIR={plan.release.manifest.package}",
        f"-DEDGERT_OPT_IN_COMPONENTS={';'.join(opt_in)}",
        f"-DEDGERT_REGISTRATION_ONLY_COMPONENTS={';'.join(registering)}",
        f"-DPython_EXECUTABLE={sys.executable}",
        *plan.release.platform.cmake_arguments(part.target, host=plan.release.host,
                                        ccache=plan.options.ccache, cache=plan.cache,
                                        build_dir=part.build_dir),
        *_search_path_arguments(plan),
        *toolchain_arguments,
    ]
    return [*arguments, *plan.options.cmake_arguments]


STAMP_FILE = "release-configure.json"


def _read_stamp(stamp: Path) -> object:
    """The recorded configuration, or None when absent or unreadable (then discarded)."""
    if stamp.is_dir() and not stamp.is_symlink():
        log.warning("removing the folder %s that stands in place of the configure stamp; "
                    "configuring again", stamp)
        shutil.rmtree(stamp)
        return None
    try:
        return json.loads(stamp.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        log.warning("discarding the unreadable configure stamp %s; configuring again", stamp)
        stamp.unlink(missing_ok=True)
        return None


def _tree_intact(build_dir: Path, source: Path) -> bool:
    """Whether CMake's cache and the Ninja file are whole (a killed or disk-full configure can
    leave them truncated, which would fail every later build)."""
    try:
        cache = (build_dir / "CMakeCache.txt").read_text(encoding="utf-8", errors="replace")
        ninja = (build_dir / "build.ninja").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return (f"CMAKE_HOME_DIRECTORY:INTERNAL={source}\n" in cache
            and ninja.rstrip("\n").endswith("default all"))


def _configure(plan: Plan, state: _State) -> None:
    toolchain = plan.release.variant.provision(environ=plan.environ, cache=plan.cache)
    state.toolchain = toolchain.tools()
    for part in _parts(plan):
        _configure_part(plan, part, toolchain.cmake_arguments())


def _configure_part(plan: Plan, part: _Part, toolchain_arguments: list[str]) -> None:
    source = Path(plan.release.manifest.native_source).resolve()
    build_dir = part.build_dir
    build_dir.mkdir(parents=True, exist_ok=True)
    wanted = {"source": str(source), "arguments": _configure_arguments(
        plan, part, toolchain_arguments), "file-api": sbom.FILE_API_QUERY.as_posix()}
    sbom.write_file_api_query(build_dir)
    stamp = build_dir / STAMP_FILE
    recorded = _read_stamp(stamp)
    intact = _tree_intact(build_dir, source)
    if recorded == wanted and intact:
        log.info("configuration unchanged; CMake re-runs itself if its inputs changed")
        return
    stamp.unlink(missing_ok=True)  # (the build folder exists: run() holds its lock)
    if not intact and (build_dir / "CMakeCache.txt").exists():
        log.warning("CMake's cache or build.ninja in %s is incomplete; configuring afresh",
                    build_dir)
        (build_dir / "CMakeCache.txt").unlink()
    first = not (build_dir / "CMakeCache.txt").exists()
    waiting = ("CMake detects the compilers and the platform before it prints anything "
               f"({plan.release.platform.first_configure_note})")
    announced = (progress.long_step(f"first configure of {build_dir}", waiting_for=waiting)
                 if first else nullcontext())
    with announced:
        _native(commands.stream, [tools.cmake(cache=plan.cache), "-S", source, "-B", build_dir,
                                  *wanted["arguments"]], build_dir, what="CMake configure",
                fix=f"read the CMake error above; delete {build_dir} to start clean")
    wheel.write_atomically(stamp, json.dumps(wanted))


LOW_SPACE = 64 << 20   # less free than this on the build folder's disk after a failure: full


def _native(call: Callable[..., str], command: list[str | os.PathLike[str]], folder: Path,
            **arguments: Any) -> str:
    """A CMake configure, build or install in the build folder ``folder``, by ``call``
    (``commands.run`` or ``commands.stream``, with ``machine_faults``). CMake does not always
    say the disk filled up (a try_compile that cannot write its output is "Could NOT find
    Threads"), so a failure that leaves the build folder's disk nearly full is told as a full
    disk, an environment failure, whatever the tool printed."""
    try:
        return call(command, machine_faults=True, **arguments)
    except EnvironmentCommandError:
        raise
    except CommandError as error:
        try:
            free = shutil.disk_usage(folder).free
        except OSError:
            raise error from None
        if free >= LOW_SPACE:
            raise
        raise EnvironmentCommandError(
            error.what, command=error.command, returncode=error.returncode,
            output=error.output, fix=f"the disk holding {folder} is full ({free >> 10} KiB "
            "free): free space, or pass a --build-dir on another disk, and run again") from None


def default_jobs() -> int:
    """One compile job per CPU this process may run on (taskset, cgroups' cpusets)."""
    usable = getattr(os, "sched_getaffinity", None)
    return len(usable(0)) if usable is not None else os.cpu_count() or 1


def compiler_cache_environment(plan: Plan) -> dict[str, str]:
    """ccache's base folder: the paths it hashes, and hands the compiler, are relative to the
    checkout, so a clone in another folder reuses its results (the objects hold no path); and
    the locale, which changes only the language of the compiler's messages, not its output,
    is left out of its keys."""
    if not plan.options.ccache:
        return {}
    base = os.path.commonpath([plan.release.manifest.root.resolve(), plan.build_dir])
    settings = {"CCACHE_SLOPPINESS": "locale"}
    return settings if base == os.path.sep else {**settings, "CCACHE_BASEDIR": base}


def _runner(plan: Plan) -> Runner | None:
    return plan.release.platform.runner(plan.release.target, host=plan.release.host,
                                        cache=plan.cache)


def _provision_runner_beside(plan: Plan, state: _State) -> None:
    """Full verify's runner for the target (an emulator's prefix, helpers and compiler
    cache seed: minutes on a cold tool cache, most of it one compiler process) is provisioned
    on a thread while the native build runs, once configure has passed. A failure there is
    raised by the verify stage, where the runner is used."""
    if (state.beside is None or plan.options.verify is not VerifyMode.FULL
            or plan.options.last_stage < Stage.VERIFY):
        return
    state.runner = state.beside.submit(_runner, plan)


def _build(plan: Plan, state: _State) -> None:
    _provision_runner_beside(plan, state)
    jobs = plan.options.jobs or default_jobs()
    for part in _parts(plan):
        _native(commands.stream, [tools.cmake(cache=plan.cache), "--build", part.build_dir,
                                  "--parallel", str(jobs)], part.build_dir, what="native build",
                env=compiler_cache_environment(plan),
                fix="fix the error; the build's own output is above")


def _install(plan: Plan, state: _State) -> None:
    parts = _parts(plan)
    for part in parts:
        prefix = part.build_dir / "install"
        shutil.rmtree(prefix, ignore_errors=True)
        _native(commands.run, [tools.cmake(cache=plan.cache), "--install", part.build_dir,
                               "--prefix", prefix], part.build_dir, what="CMake install",
                fix="check the install() rules in native/")
    if len(parts) > 1:
        merged = plan.release.platform.merge([part.build_dir / "install" for part in parts],
                                     plan.build_dir / "install", host=plan.release.host)
        log.info("merged %d binaries of %s into %s", len(merged),
                 " + ".join(part.target.arch for part in parts), plan.release.target.arch)


def _lay_out(plan: Plan, state: _State) -> None:
    """The staging folder as the wheel holds it: the installed package, the build record and
    the .dist-info files that depend on the project alone (the SBOM is the pack stage's)."""
    package = plan.release.manifest.package
    installed = plan.build_dir / "install" / package
    shutil.copytree(installed, state.staging / package, symlinks=True)
    missing = [f"{c.name} ({c.file})" for c in plan.release.record.components
               if not (state.staging / c.file).is_file()]
    extension = plan.release.extension_file
    if not (state.staging / extension).is_file():
        missing.append(f"extension ({extension})")
    if missing:
        raise ConfigurationError(f"the build did not install: {', '.join(missing)}",
                                 fix="every manifest component needs its edgert_add_component() "
                                     "in native/ and an install rule")
    (state.staging / package / RECORD_FILE).write_text(plan.release.record.to_text())
    distinfo.write_files(state.staging / distinfo.folder_name(plan.release),
                         distinfo.layout_files(plan.release))


def _fix_up(plan: Plan, state: _State) -> None:
    """The shipped binaries' search paths, as the plan decided them (binaries only)."""
    release = plan.release
    changed = patcher.fix_up(release.platform, state.staging, release.search_paths,
                             host=release.host)
    log.info("search paths rewritten in %d files", len(changed))


def _pack(plan: Plan, state: _State) -> None:
    """The SBOM of the fixed-up files, then the reproducible wheel (RECORD added)."""
    epoch = wheel.source_date_epoch(plan.environ)
    name, data = distinfo.sbom_file(plan.release, state.staging,
                                    toolchain=_toolchain(plan, state), epoch=epoch)
    folder = distinfo.folder_name(plan.release)
    distinfo.write_files(state.staging / folder, {name: data})
    wheel_name = distinfo.wheel_name(plan.release)
    state.wheel = state.scratch / wheel_name.filename
    wheel.write_wheel(state.wheel, wheel.collect_tree(state.staging),
                      dist_info=wheel_name.dist_info, epoch=epoch)


def _toolchain(plan: Plan, state: _State) -> tuple[Tool, ...]:
    """What built the wheel: each part's compilers and CMake (CMake's File API), Ninja, the
    Python whose headers the extension used, and the variant's and platform's tools."""
    found = {tool for part in _parts(plan) for tool in sbom.toolchain_from_cmake(part.build_dir)}
    ninja = commands.run([tools.ninja(cache=plan.cache), "--version"], what="ninja --version")
    found.add(Tool("ninja", ninja.strip(), f"pkg:generic/ninja@{ninja.strip()}"))
    found.add(Tool(f"{sys.implementation.name} headers", platform_module.python_version()))
    platform_tools = plan.release.platform.toolchain_tools(plan.release.target, plan.release.host)
    return tuple(sorted({*found, *state.toolchain, *platform_tools}))


def _repair(plan: Plan, state: _State) -> None:
    assert state.wheel is not None
    out_dir = state.scratch / "repaired"
    out_dir.mkdir()
    repaired = plan.release.platform.repair(repair_request(plan.release.record, state.wheel,
                                                           out_dir))
    wheel.normalize(repaired, epoch=wheel.source_date_epoch(plan.environ))
    state.wheel = repaired


def _label(plan: Plan, state: _State) -> None:
    """The end of the repair stage in the variant form: the repaired wheel becomes the
    variant wheel, ``.dist-info/variant.json`` added, the label appended to its file name."""
    if plan.options.form is not Form.VARIANT:
        return
    assert state.wheel is not None
    declared = plan.release.declared
    out_dir = state.scratch / "variant"
    out_dir.mkdir()
    state.wheel, state.variant_json = wheel_variant.make_variant_wheel(
        state.wheel, out_dir, declared.wheel_variant, plan.release.manifest.variant_providers,
        epoch=wheel.source_date_epoch(plan.environ))
    log.info("variant wheel %s", state.wheel.name)


def _verify(plan: Plan, state: _State) -> None:
    assert state.wheel is not None
    if plan.options.verify is VerifyMode.NONE:
        log.info("verify skipped (--verify none)")
        return
    runner = (None if plan.options.verify is VerifyMode.STATIC else
              state.runner.result() if state.runner is not None else _runner(plan))
    static = runner is None
    if static and plan.options.verify is not VerifyMode.STATIC:
        log.info("verify reads files only: this host cannot run %s binaries",
                 plan.release.target.arch)
    options = VerifyOptions(sites=() if static else _dependency_sites(plan),
                            build_paths=(str(plan.build_dir), str(plan.release.manifest.root)),
                            sandbox="prefer")
    # the runner the platform just provisioned for the target (an emulator's root folder)
    emulated = (runner,) if runner is not None and runner.prefix else ()
    report = verify_wheel(state.wheel, static=static, options=options,
                          host=Host(plan.release.host.system, plan.release.host.machine, emulated),
                          cache=plan.cache)
    state.verify_report = report.to_json()
    if not report.ok:
        log.error("%s", report.render_text())
        raise VerificationFailed(f"{state.wheel.name} failed verification "
                                 f"({sum(1 for f in report.findings if f.severity == 'error')} "
                                 "errors); no wheel was written",
                                 fix="fix the findings listed above")
    _check_unchecked(plan, state.wheel.name, report)


def unchecked(report: Report) -> dict[str, str]:
    """The checks verify could not run on this machine (``CheckStatus.ENVIRONMENT``): check
    -> why (its finding's text)."""
    return report.unchecked()


def _check_unchecked(plan: Plan, wheel_name: str, report: Report) -> None:
    """A wheel a check could not be run on is not published unless the caller accepts that
    (--allow-unchecked): the same wheel makes ``verify`` exit 8."""
    missing = unchecked(report)
    if not missing:
        return
    for name, why in sorted(missing.items()):
        log.warning("verify could not run the %s check here: %s", name, why)
    names = ", ".join(sorted(missing))
    if plan.options.allow_unchecked:
        log.warning("publishing %s although verify could not run: %s (--allow-unchecked)",
                    wheel_name, names)
        return
    raise EnvironmentFailure(f"{wheel_name} was not published: verify could not run {names} "
                             "on this machine", fix="give the check what it needs (the line "
                             "above says what is missing), or pass --allow-unchecked to "
                             "publish it unchecked")


def _dependency_sites(plan: Plan) -> tuple[Path, ...]:
    """Site folders holding the wheel's declared native dependencies (a variant's runtime
    wheel, installed from its own requirement), so the load checks resolve them the way an
    installed wheel would."""
    runtime = plan.release.variant.runtime
    if runtime is None:
        return ()
    if runtime.pin:
        return (tools.pinned_folder(pins.load().python_pin(runtime.pin), plan.cache),)
    relative = f"{runtime.dir}/{runtime.library}"
    library = tools.pip_tool(runtime.requirement, relative, cache=plan.cache)
    return (library.parents[len(Path(relative).parts) - 1],)


STEPS: tuple[tuple[Stage, tuple[Callable[[Plan, _State], None], ...]], ...] = (
    (Stage.CONFIGURE, (_configure,)), (Stage.BUILD, (_build,)), (Stage.INSTALL, (_install,)),
    (Stage.LAYOUT, (_lay_out,)), (Stage.FIXUP, (_fix_up,)), (Stage.PACK, (_pack,)),
    (Stage.REPAIR, (_repair, _label)), (Stage.VERIFY, (_verify,)))
"""Each stage and the steps it runs, in order (every Stage once: a unit test holds it)."""


__all__ = ["BuildOptions", "BuildResult", "Plan", "Stage", "VerifyMode", "make_plan", "run"]
