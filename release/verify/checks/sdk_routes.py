"""C++ SDK routes: the wheel's CMake package gives the same link line on the oldest CMake it
is tested with (3.24) and a current one (a package may define different things by CMake
version), keeps opt-in components out of the default set, and every declared component can be
requested. For our wheel the shipped example consumer is built with both CMakes and its
output compared byte for byte with the Python run. A wheel for another machine is built with
the runner's toolchain and run under its emulator, against that machine's Python."""

from __future__ import annotations

import stat

from release.errors import (
    CommandError,
    DeadlineReached,
    EnvironmentFailure,
    ReleaseError,
    ToolError,
)
from release.findings import Finding, Severity
from release.host import Runner
from release.toolchain import tools
from release.verify.checks._cmake_probe import (
    Answer,
    ReplyError,
    Request,
    configure,
    read_answers,
    write_probe,
)
from release.verify.checks._common import finding, not_run
from release.verify.context import VerifyContext
from release.verify.sandbox import list_back
from release.verify.wheel_model import WheelModel

NAME = "sdk-routes"
RUNS_PROGRAMS = True
_SUFFIXES = ("Config.cmake", "-config.cmake")


def find_package_dir(wheel: WheelModel) -> tuple[str, str] | None:
    """(folder in site-packages, package name) of the wheel's CMake package: the one the build
    record names, else the one named like the distribution or its import package, else the
    shallowest (a wheel may ship several, e.g. its dependencies' find modules)."""
    record = wheel.build_record
    packages = []
    for path in sorted(p for p in wheel.files if p.endswith(_SUFFIXES)):
        folder, _, file_name = path.rpartition("/")
        suffix = next(s for s in _SUFFIXES if file_name.endswith(s))
        packages.append((folder, file_name[: -len(suffix)]))
    if record is not None and record.cmake_package:
        packages = [p for p in packages if p[0] == record.cmake_package] or packages
    names = {_normal(wheel.metadata.name or "")} | {
        _normal(path.split("/", 1)[0]) for path in wheel.files if "/" in path
        and not path.split("/", 1)[0].endswith((".dist-info", ".data"))}
    return min(packages, key=lambda p: (_normal(p[1]) not in names, p[0].count("/"), p),
               default=None)


def _normal(name: str) -> str:
    return name.lower().replace("-", "_").replace(".", "_")


def _requests(wheel: WheelModel) -> list[Request]:
    requests = [Request("default", "")]
    if wheel.build_record is not None:
        requests += [Request(c.cmake_component, c.cmake_component, c.cmake_variable or "")
                     for c in wheel.build_record.components if c.cmake_component]
    return requests


def _route_answers(wheel: WheelModel, context: VerifyContext, route: tools.CMakeRoute,
                   package: tuple[str, str], requests: list[Request],
                   runner: Runner) -> dict[str, Answer]:
    probe = context.workdir / "cmake-probe"
    write_probe(probe, package=package[1], package_dir=wheel.root / package[0],
                requests=requests)
    build = context.workdir / f"cmake-probe-{route.name}"
    configure(tools.cmake(route), probe, build, timeout=context.options.cmake_timeout,
              arguments=runner.cmake_arguments or (),
              run=lambda argv, **options: context.run(argv, runner=runner, **options))
    try:
        return read_answers(build, requests)
    except ReplyError as error:
        raise CommandError(f"the CMake probe's answer cannot be read: {error}",
                           command=[str(tools.cmake(route))], returncode=0, output="",
                           fix="the package's CMake code must not write into the consumer's "
                               "build folder") from None


def _compare(wheel: WheelModel, package: str, answers: dict[str, dict[str, Answer]],
             requests: list[Request]) -> list[Finding]:
    findings = []
    record = wheel.build_record
    opt_in = ({c.file.rsplit("/", 1)[-1]: c.name for c in record.components if c.opt_in}
        if record else {})
    files = ({c.cmake_component: c.file.rsplit("/", 1)[-1] for c in record.components}
        if record else {})
    old, new = answers["old"], answers["new"]
    for request in requests:
        label = request.label
        if old[label] != new[label]:
            findings.append(finding(
                NAME, Severity.ERROR, "", f"find_package({package}"
                + (f" COMPONENTS {label}" if request.component else "") + ") differs between "
                f"CMake 3.24 and >= 3.28: {list(old[label].libraries)} vs "
                f"{list(new[label].libraries)}", why="users get different link lines by CMake "
                "version", fix="make the package define the same libraries on every CMake version "
                "it accepts", request=label, old=list(old[label].libraries),
                new=list(new[label].libraries)))
        for route, answer in (("3.24", old[label]), (">=3.28", new[label])):
            if request.component and not answer.found:
                findings.append(finding(NAME, Severity.ERROR, "", f"component '{label}' cannot "
                                        f"be requested with CMake {route}",
                                        fix="add it to the package's component list"))
            elif request.component and files.get(label) not in answer.libraries:
                findings.append(finding(NAME, Severity.ERROR, "", f"requesting component "
                                        f"'{label}' with CMake {route} does not link "
                                        f"{files.get(label)}", request=label,
                                        libraries=list(answer.libraries)))
        if not request.component:
            for library in sorted(set(old[label].libraries) | set(new[label].libraries)):
                if library in opt_in:
                    findings.append(finding(
                        NAME, Severity.ERROR, "", f"opt-in component '{opt_in[library]}' "
                        f"({library}) is in the default {package.upper()}_LIBRARIES",
                        why="everyone linking the default set loads it",
                        fix="offer it only on request (COMPONENTS or its own variable)"))
    return findings


def check(wheel: WheelModel, context: VerifyContext) -> list[Finding]:
    package = find_package_dir(wheel)
    if package is None:
        return [finding(NAME, Severity.INFO, "", "no CMake package (*Config.cmake) in the wheel")]
    loader = context.loader
    runner = None if loader is None else loader.runner(wheel.platforms, context.host)
    if runner is None or runner.cmake_arguments is None:
        return [not_run(NAME, f"this host ({context.host.system}-{context.host.machine}) "
                        "cannot build and run programs for the wheel's machine")]
    requests = _requests(wheel)
    answers: dict[str, dict[str, Answer]] = {}
    for route in (tools.CMAKE_OLD, tools.CMAKE_NEW):
        try:
            answers[route.name] = _route_answers(wheel, context, route, package, requests,
                                                 runner)
        except (EnvironmentFailure, ToolError, DeadlineReached):
            raise  # this machine cannot provide CMake: "not run (environment)", not the wheel
        except ReleaseError as error:
            return [finding(NAME, Severity.ERROR, package[0], f"CMake {route.label} "
                            f"could not configure a consumer: {error.what}", fix=error.fix,
                            output=getattr(error, "output", ""))]
    return (_compare(wheel, package[1], answers, requests)
            + _example(wheel, context, package, runner))


def _example(wheel: WheelModel, context: VerifyContext, package: tuple[str, str],
             runner: Runner) -> list[Finding]:
    record = wheel.build_record
    if record is None or record.example is None:
        return []
    consumer = record.example.consumer
    if not any(path.startswith(consumer + "/") for path in wheel.files):
        return [finding(NAME, Severity.INFO, consumer, "the example consumer is not shipped: "
                        "the C++ vs Python comparison did not run",
                        fix="install the example consumer into the wheel")]
    outputs: dict[str, dict[str, bytes]] = {}
    for route in (tools.CMAKE_OLD, tools.CMAKE_NEW):
        try:
            outputs[route.name] = _run_consumer(wheel, context, route, package, runner)
        except (EnvironmentFailure, ToolError, DeadlineReached):
            raise
        except ReleaseError as error:
            return [finding(NAME, Severity.ERROR, consumer, f"the example consumer fails with "
                            f"CMake {route.label}: {error.what}",
                            output=getattr(error, "output", ""))]
    findings = []
    for program in sorted(set(outputs["old"]) | set(outputs["new"])):
        if outputs["old"].get(program) != outputs["new"].get(program):
            findings.append(finding(NAME, Severity.ERROR, consumer, f"the example program "
                                    f"'{program}' prints different output with CMake 3.24 and "
                                    ">= 3.28", program=program))
    if not record.example.python_module or not runner.python:
        reference = sorted(outputs["new"].items())
        for program, output in reference[1:]:
            if output != reference[0][1]:
                findings.append(finding(NAME, Severity.ERROR, consumer, f"the example programs "
                                        f"'{reference[0][0]}' and '{program}' print different "
                                        "bytes", why="users of the SDK's two languages must get "
                                        "identical results", program=program))
        why = ("no Python reference command in the build record ('example.python')"
               if runner.python else f"no Python interpreter for {runner.system or 'this'} "
               f"{runner.machine} programs here")
        findings.append(finding(NAME, Severity.INFO, consumer, f"{why}: the example programs' "
                                "output was not compared with Python's"))
        return findings
    program = str(wheel.root / record.example.program)
    python_output = context.run(runner.python_command("-m", record.example.python_module,
                                                      program), runner=runner,
                                env={"PYTHONPATH": str(wheel.root)},
                                what="Python reference run", stderr="separate",
                                timeout=context.options.load_timeout)
    for program, output in sorted(outputs["new"].items()):
        if python_output.encode() != output:
            findings.append(finding(NAME, Severity.ERROR, consumer, f"the example program "
                                    f"'{program}' prints other bytes than the Python run",
                                    why="C++ and Python users must get identical results",
                                    fix="compare the two outputs", program=program))
    return findings


def _run_consumer(wheel: WheelModel, context: VerifyContext, route: tools.CMakeRoute,
                  package: tuple[str, str], runner: Runner) -> dict[str, bytes]:
    """Configures, builds (for the wheel's machine) and runs (natively or emulated) every
    program of the consumer; program -> its output."""
    record = wheel.build_record
    assert record is not None and record.example is not None
    build = context.workdir / f"consumer-{route.name}"
    cmake = tools.cmake(route)
    source = wheel.root / record.example.consumer
    context.run([cmake, "-S", source, "-B", build, *(runner.cmake_arguments or ()),
                 f"-D{package[1]}_DIR={wheel.root / package[0]}"], runner=runner,
                what="configure the consumer", timeout=context.options.cmake_timeout,
                machine_faults=True, writable=(build,))
    context.run([cmake, "--build", build], runner=runner, what="build the consumer",
                timeout=context.options.cmake_timeout, machine_faults=True, writable=(build,))
    # the build folder is the package's to write: its entries are looked at, never followed
    programs = [build / name for name, mode in list_back(build)
                if stat.S_ISREG(mode) and mode & 0o111]
    if not programs:
        raise CommandError("the consumer built no program", command=[str(cmake)], returncode=0,
                           output="")
    return {program.name: context.run(runner.command(str(program),
                                                     str(wheel.root / record.example.program)),
                                      runner=runner, what=f"the example program {program.name}",
                                      timeout=context.options.load_timeout,
                                      stderr="separate").encode()
            for program in programs}
