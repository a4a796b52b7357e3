"""The Python API of the installed CPU wheel, as a caller meets it: errors of the built-in
kinds a caller expects (FileNotFoundError, TypeError, ValueError; the edgert ones among them
stay edgert errors), a warning attributed to the caller's own line, backends that say why
they are missing and how to get them, a docstring on every public name, and the installation
check that refuses two edgert distributions in one environment."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from release.distribution import wheel as wheel_module
from tests.conftest import ROOT, BuiltWheel, Venv, make_venv

pytestmark = pytest.mark.integration

RUN_MLP = ("import edgert, edgert.models, numpy as np;"
           "p = edgert.load(edgert.models.path('mlp'));"
           "print(float(p.run([np.ones((1, 16), np.float32)])[0].sum()))")


def _python(environment: Venv, code: str) -> dict[str, object]:
    """Runs ``code`` in the environment; its last stdout line is a JSON report."""
    completed = environment.run("-c", textwrap.dedent(code), cwd="/")
    assert completed.returncode == 0, completed.stderr
    report: dict[str, object] = json.loads(completed.stdout.strip().splitlines()[-1])
    return report


def test_missing_file_is_a_file_not_found_error(installed_cpu_wheel: Venv) -> None:
    report = _python(installed_cpu_wheel, """
        import json, edgert
        try:
            edgert.load("/nonexistent/model.edgert")
        except FileNotFoundError as error:
            print(json.dumps({"type": type(error).__name__, "errno": error.errno,
                              "filename": error.filename, "text": str(error),
                              "edgert": isinstance(error, edgert.NotFoundError)}))
    """)
    assert report == {"type": "ProgramFileNotFoundError", "errno": 2,
                      "filename": "/nonexistent/model.edgert",
                      "text": "cannot read program file /nonexistent/model.edgert: "
                              "No such file or directory", "edgert": True}


def test_wrong_arguments_are_type_and_value_errors(installed_cpu_wheel: Venv) -> None:
    report = _python(installed_cpu_wheel, """
        import json, edgert, edgert.models, numpy as np
        program = edgert.load(edgert.models.path("mlp"))
        seen = {}
        for label, inputs in (("str", "abc"), ("array", np.ones((1, 16), np.float32))):
            try:
                program.run(inputs)
            except TypeError as error:
                seen[label] = str(error)
        try:
            edgert.Program(None)
        except TypeError as error:
            seen["Program(None)"] = str(error)
        before = edgert.threadpool_size()
        try:
            edgert.set_threadpool_size(10**12)
        except ValueError as error:
            seen["threads"] = [type(error).__name__, str(error)]
        seen["unchanged"] = edgert.threadpool_size() == before
        print(json.dumps(seen))
    """)
    assert report["str"] == ("run takes a sequence of arrays, one per input (for example [x]), "
                             "not str")
    assert str(report["array"]).endswith("not ndarray")
    assert "edgert.load" in str(report["Program(None)"])
    assert "NoneType" in str(report["Program(None)"])
    assert "PyCapsule" not in str(report["Program(None)"])
    assert report["threads"] == ["InvalidArgumentError",
                                 "thread count 1000000000000 is outside 0..1024"]
    assert report["unchanged"] is True


def test_backends_of_the_cpu_build(installed_cpu_wheel: Venv) -> None:
    report = _python(installed_cpu_wheel, """
        import json, edgert, edgert.models
        program = edgert.load(edgert.models.path("mlp"))
        seen = {"available": edgert.available_backends(),
                "installed": edgert.installed_backends()}
        for name in ("cuda", "gpu9"):
            try:
                program.set_backends([name])
            except edgert.EdgertError as error:
                seen[name] = [type(error).__name__, str(error)]
        print(json.dumps(seen))
    """)
    assert report["available"] == ["cpu"] and report["installed"] == ["cpu"]
    kind, message = report["cuda"]  # type: ignore[misc]
    assert kind == "NotFoundError"
    assert message.startswith("the CUDA backend is not available in this installation: "
                               "edgert is the CPU build")
    assert "fix: pip uninstall -y edgert && pip install edgert-cu12" in message
    assert report["gpu9"] == ["NotFoundError", "unknown backend 'gpu9'; the backends of this "
                                               "installation: cpu"]


DOCSTRINGS = """
import inspect, json
import edgert, edgert._C, edgert.export, edgert.models, edgert.program_format
import edgert.quantization

missing = []

def check(where, obj):
    if not (getattr(obj, "__doc__", None) or "").strip():
        missing.append(where)

for module in (edgert, edgert.export, edgert.models, edgert.program_format,
               edgert.quantization):
    check(module.__name__, module)
    for name in module.__all__:
        value = getattr(module, name)
        if not callable(value):
            continue                       # __version__, DTYPE_CODES, ...
        check(f"{module.__name__}.{name}", value)
        if not inspect.isclass(value):
            continue
        for attribute, member in vars(value).items():
            if attribute.startswith("_"):
                continue
            if inspect.isfunction(member) or isinstance(member, (property, staticmethod,
                                                                 classmethod)):
                check(f"{module.__name__}.{name}.{attribute}", member)
for name, function in vars(edgert._C).items():
    if callable(function) and not name.startswith("_"):
        check(f"edgert._C.{name}", function)
check("edgert._C", edgert._C)
print(json.dumps(missing))
"""


def test_every_public_name_has_a_docstring(installed_cpu_wheel: Venv) -> None:
    completed = installed_cpu_wheel.run("-c", DOCSTRINGS, cwd="/")
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout) == []


# ------------------------------------------------- a CUDA build whose delegate cannot load

CUDA_RECORD = {"major": 12, "claims": ["7.5"], "ptx": ["9.0"],
               "runtime_requirement": "nvidia-cuda-runtime-cu12>=12.8,<13; "
                                      "sys_platform == 'linux'",
               "runtime_distribution": "nvidia-cuda-runtime-cu12",
               "runtime_library": "libcudart.so.12", "runtime_dir": "nvidia/cuda_runtime/lib"}

APPLICATION = """\
import json, warnings
import edgert, edgert.models
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    program = edgert.load(edgert.models.path("mlp"))   # line 5: the first use of edgert
report = {"warnings": [[w.filename, w.lineno, w.category.__name__, str(w.message)]
                       for w in caught],
          "available": edgert.available_backends(), "installed": edgert.installed_backends()}
try:
    program.set_backends(["cuda"])
except edgert.EdgertError as error:
    report["cuda"] = [type(error).__name__, str(error)]
print(json.dumps(report))
"""


def _cu12_like_package(installed: Venv, folder: Path, *, delegate: bool) -> Path:
    """A copy of the installed package made to look like edgert-cu12 (its build record lists
    the CUDA delegate): with ``delegate``, a stand-in delegate library that needs
    libcudart.so.12, which is not installed, as after the CUDA runtime wheel is removed."""
    site = folder / "site"
    shutil.copytree(installed.site_packages / "edgert", site / "edgert")
    record_path = site / "edgert" / "_release.json"
    record = json.loads(record_path.read_text())
    record.update(distribution="edgert-cu12", variant="cu12", providers=["cuda"],
                  cuda=CUDA_RECORD, runtime_dependencies=[{
                      "requirement": CUDA_RECORD["runtime_requirement"],
                      "distribution": CUDA_RECORD["runtime_distribution"],
                      "library": CUDA_RECORD["runtime_library"],
                      "dir": CUDA_RECORD["runtime_dir"]}])
    record["components"].append({
        "name": "backend_cuda", "kind": "library", "file": "edgert/lib/libedgert_backend_cuda.so",
        "cmake_component": "backend_cuda", "cmake_variable": "EDGERT_CUDA_BACKEND_LIBRARY",
        "opt_in": True, "depends": ["runtime", "threadpool"], "registers": ["backends"],
        "markers": ["edgert_backend_cuda_component"]})
    record_path.write_text(json.dumps(record))
    if delegate:
        stub = folder / "stub"
        stub.mkdir()
        (stub / "cudart.c").write_text("int cudaRuntimeGetVersion(int* v) { *v = 0; return 0; }\n")
        (stub / "backend.c").write_text(
            "int cudaRuntimeGetVersion(int*);\n"
            "int edgert_stand_in(void) { int v; return cudaRuntimeGetVersion(&v); }\n")
        subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-soname,libcudart.so.12", "-o",
                        str(stub / "libcudart.so.12"), str(stub / "cudart.c")], check=True)
        subprocess.run(["cc", "-shared", "-fPIC", "-o",
                        str(site / "edgert" / "lib" / "libedgert_backend_cuda.so"),
                        str(stub / "backend.c"), f"-L{stub}", "-l:libcudart.so.12"], check=True)
    return site


@pytest.mark.parametrize("delegate", [True, False], ids=["runtime-missing", "delegate-missing"])
def test_unloadable_cuda_delegate_warns_at_the_callers_line_and_says_why(
        installed_cpu_wheel: Venv, tmp_path: Path, delegate: bool) -> None:
    site = _cu12_like_package(installed_cpu_wheel, tmp_path, delegate=delegate)
    application = tmp_path / "application.py"
    application.write_text(APPLICATION)
    completed = installed_cpu_wheel.run(str(application), cwd="/",
                                        env={**os.environ, "PYTHONPATH": str(site)})
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout)
    [(filename, line, category, message)] = report["warnings"]
    assert (filename, line, category) == (str(application), 5, "RuntimeWarning")
    assert report["available"] == ["cpu"]
    # installed: the delegate whose library is there, although it cannot load
    assert report["installed"] == (["cpu", "cuda"] if delegate else ["cpu"])
    kind, error = report["cuda"]
    assert error == message, "the warning and the error give the same reason"
    assert error.startswith("the CUDA backend is not available in this installation: ")
    if delegate:
        assert kind == "UnavailableError"
        assert "cannot load the CUDA runtime libcudart.so.12, which the " \
               "nvidia-cuda-runtime-cu12 wheel provides" in error
        assert error.endswith("fix: pip install 'nvidia-cuda-runtime-cu12>=12.8,<13'")
    else:
        assert kind == "NotFoundError"
        assert "its delegate library edgert/lib/libedgert_backend_cuda.so is missing" in error
        assert error.endswith("fix: pip uninstall -y edgert-cu12 && pip install edgert-cu12")


# ------------------------------------------------------ two edgert distributions at once

def _as_cu12(cpu_wheel: Path, folder: Path) -> Path:
    """The CPU wheel renamed to the distribution edgert-cu12 (dist-info folder, METADATA
    Name, RECORD), plus one file of its own as the real cu12 wheel has (its delegate)."""
    entries = wheel_module.read_entries(cpu_wheel)
    old = wheel_module.dist_info_of(entries)
    name = wheel_module.WheelName.parse(cpu_wheel.name)
    cu12 = wheel_module.WheelName("edgert_cu12", name.version, name.python, name.abi,
                                  name.platform)
    files: dict[str, tuple[bytes, int]] = {}
    for path, (data, mode) in entries.items():
        if path.startswith(f"{old}/"):
            path = cu12.dist_info + path[len(old):]
            if path.endswith("/METADATA"):
                data = data.replace(b"\nName: edgert\n", b"\nName: edgert-cu12\n", 1)
        files[path] = (data, mode)
    files["edgert/lib/libedgert_backend_cuda.so"] = (b"stands for the CUDA delegate", 0o755)
    folder.mkdir()
    wheel_module.write_wheel(folder / cu12.filename, files, dist_info=cu12.dist_info,
                             epoch=315532800)
    assert b"Name: edgert-cu12" in wheel_module.read_entries(folder / cu12.filename)[
        f"{cu12.dist_info}/METADATA"][0]
    return folder / cu12.filename


def _pip(environment: Venv, *args: str) -> None:
    completed = environment.run("-m", "pip", "--disable-pip-version-check", "--quiet", *args)
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_two_edgert_distributions_in_one_environment_refuse_to_import(
        cpu_wheel: BuiltWheel, tmp_path: Path) -> None:
    """pip installs edgert-cu12 over edgert without complaint; ``import edgert`` then names
    both and the fix, and that fix (the README's, for the half-removed state too) restores a
    working installation."""
    cu12 = _as_cu12(cpu_wheel.path, tmp_path / "cu12")
    environment = make_venv(tmp_path / "env")
    _pip(environment, "install", str(cpu_wheel.path))
    _pip(environment, "install", "--no-deps", str(cu12))
    fix = "pip uninstall -y edgert edgert-cu12 && pip install edgert-cu12"
    assert fix in (ROOT / "README.md").read_text(encoding="utf-8")

    mixed = environment.run("-c", "import edgert", cwd="/")
    assert mixed.returncode == 1
    last = mixed.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: edgert: edgert and edgert-cu12 are both installed in "
                           f"{environment.site_packages};"), last
    assert fix in last

    def apply_fix() -> None:   # the fix, with the local file standing for the index's wheel
        _pip(environment, "uninstall", "-y", "edgert", "edgert-cu12")
        _pip(environment, "install", "--no-deps", str(cu12))
        fixed = environment.run("-c", RUN_MLP, cwd="/")
        assert fixed.returncode == 0, fixed.stderr
        assert abs(float(fixed.stdout) - 1.0) < 1e-4
        assert (environment.site_packages / "edgert/lib/libedgert_backend_cuda.so").is_file()

    apply_fix()

    # Installed both again, then removed only one: the shared files are gone, the cu12-only
    # file keeps the folder, and edgert is an empty namespace package (no check of ours is
    # left to run: the README documents this state and the same fix).
    _pip(environment, "install", "--no-deps", str(cpu_wheel.path))
    _pip(environment, "uninstall", "-y", "edgert")
    half = environment.run("-c", "import edgert; print(edgert.__file__); edgert.load", cwd="/")
    assert half.stdout.strip() == "None"
    assert "AttributeError: module 'edgert' has no attribute 'load'" in half.stderr
    apply_fix()
