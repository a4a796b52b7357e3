"""The cu12 and cu13 wheels: declared CUDA runtime, relative search path into the runtime
wheel, no bundled libcudart, and a delegate that loads (without a GPU) from a clean venv."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from packaging.requirements import Requirement

from release import manifest
from release.building.pipeline import BuildOptions, VerifyMode, run
from release.distribution.wheel import WheelName, parse_metadata
from release.errors import EnvironmentFailure
from release.host import Host
from tests.conftest import ROOT, Venv, make_venv

pytestmark = [pytest.mark.integration, pytest.mark.index]

RUNTIME = {
    "cu12": ("nvidia-cuda-runtime-cu12", "libcudart.so.12", "nvidia/cuda_runtime/lib"),
    "cu13": ("nvidia-cuda-runtime", "libcudart.so.13", "nvidia/cu13/lib"),
}


@pytest.fixture(scope="module", params=["cu12", "cu13"])
def cuda_wheel(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    variant = request.param
    result = run(manifest.load(ROOT), BuildOptions(
        platform="linux", variant=variant, out_dir=tmp_path_factory.mktemp(f"dist-{variant}"),
        verify=VerifyMode.FULL), host=Host.current())
    assert result.wheel is not None
    return variant, result


def _dynamic(data: bytes) -> dict[str, list[str]]:
    tags: dict[str, list[str]] = {}
    for section in ELFFile(io.BytesIO(data)).iter_sections():
        if isinstance(section, DynamicSection):
            for tag in section.iter_tags():
                name = tag.entry.d_tag
                if name in ("DT_NEEDED", "DT_RPATH", "DT_RUNPATH"):
                    tags.setdefault(name, []).append(str(getattr(tag, name[3:].lower())))
    return tags


def test_name_requirement_and_runpath(cuda_wheel) -> None:
    variant, result = cuda_wheel
    distribution, soname, folder = RUNTIME[variant]
    name = WheelName.parse(result.wheel.name)
    assert name.distribution == f"edgert_{variant}"
    with zipfile.ZipFile(result.wheel) as archive:
        entries = {n: archive.read(n) for n in archive.namelist()}
    metadata = parse_metadata(entries[f"{name.dist_info}/METADATA"].decode())
    requirements = [r for r in metadata.get_all("Requires-Dist") if r.startswith(distribution)]
    assert len(requirements) == 1
    assert str(Requirement(requirements[0]).marker) == 'sys_platform == "linux"'

    major = variant[2:]
    assert f"<{int(major) + 1}" in requirements[0], "the runtime range stays within its major"
    assert not any("libcudart" in n for n in entries), "libcudart must never be bundled"
    cuda_library = entries["edgert/lib/libedgert_backend_cuda.so"]
    tags = _dynamic(cuda_library)
    assert soname in tags["DT_NEEDED"]
    assert tags["DT_RUNPATH"] == [f"$ORIGIN:$ORIGIN/../../{folder}"]
    for entry, data in entries.items():
        if data[:4] == b"\x7fELF" and entry != "edgert/lib/libedgert_backend_cuda.so":
            assert "nvidia" not in ":".join(_dynamic(data).get("DT_RUNPATH", [])), entry
    record = json.loads(entries["edgert/_release.json"])
    assert record["variant"] == variant and record["cuda"]["runtime_library"] == soname


def test_coverage_table_in_verify_report(cuda_wheel) -> None:
    _, result = cuda_wheel
    findings = result.verify["findings"]
    coverage = [f for f in findings if f["check"] == "coverage"]
    assert coverage, "verify must judge device code coverage of a CUDA wheel"
    assert not [f for f in coverage if f["severity"] == "error"], coverage


@pytest.fixture(scope="module")
def cuda_venv(cuda_wheel, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Venv]:
    """The wheel installed without its dependencies, then what it declares: the CUDA runtime
    as the variant's pinned file (release/toolchain/pinned-tools.toml, in hash-checking mode) rather
    than whatever the index serves for the declared range today, and this environment's
    numpy."""
    import numpy

    from cuda import gpu_variant
    from release.toolchain import pins
    variant, result = cuda_wheel
    folder = tmp_path_factory.mktemp(f"venv-{variant}")
    environment = make_venv(folder / "env")
    runtime = pins.load().python_pin(
        gpu_variant.load(gpu_variant.variants_dir() / f"{variant}.toml").runtime.pin)
    requirements = folder / "runtime.txt"
    requirements.write_text(runtime.requirements_text())
    for arguments in (["--no-deps", str(result.wheel)],
                      ["--require-hashes", "--no-deps", "--only-binary=:all:", "-r",
                       str(requirements)],
                      [f"numpy=={numpy.__version__}"]):
        completed = environment.run("-m", "pip", "install", "--quiet", *arguments)
        assert completed.returncode == 0, completed.stdout + completed.stderr
    return variant, environment


PROBE = """
import json, edgert, edgert.models, numpy as np
program = edgert.load(edgert.models.path("mlp"))
x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(1, 16)
cpu = program.run([x])[0]
maps = open("/proc/self/maps").read().split("\\n")
cudart = sorted({line.split()[-1] for line in maps if "libcudart" in line})
backends = {b.name: b.owner for b in edgert.backends()}
try:
    program.set_backends(["cuda"])
    program.run([x])
    gpu = "ran"
except edgert.EdgertError as error:
    gpu = f"{type(error).__name__}: {error}"
print(json.dumps({"cudart": cudart, "backends": backends, "gpu": gpu, "sum": float(cpu.sum())}))
"""


def test_delegate_loads_and_finds_runtime_from_the_wheel(cuda_venv) -> None:
    variant, environment = cuda_venv
    _, soname, folder = RUNTIME[variant]
    completed = environment.run("-c", PROBE, cwd="/")
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout.strip().splitlines()[-1])
    site = str(environment.site_packages)
    assert report["cudart"] == [f"{site}/{folder}/{soname}"], report["cudart"]
    assert report["backends"]["cuda"].startswith(f"{site}/edgert/lib/")
    assert abs(report["sum"] - 1.0) < 1e-4, "without a GPU the CPU kernels run the model"
    if not Path("/dev/nvidiactl").exists():
        assert report["gpu"].startswith("UnavailableError"), report["gpu"]


def _system_cuda13() -> Path | None:
    for candidate in (Path("/usr/local/cuda-13.0"), Path("/usr/local/cuda")):
        if (candidate / "bin" / "nvcc").exists() and list(candidate.glob("**/libcudart.so.13")):
            return candidate
    return None


def test_cu13_from_a_system_toolkit(tmp_path: Path) -> None:
    """CUDA_HOME is used when given: the same wheel layout, no toolkit path inside."""
    import os
    home = _system_cuda13()
    if home is None:   # the cuda_toolkit tool tier (tests/tools.toml): its nvcc is there
        pytest.fail("/usr/local holds an nvcc but no CUDA 13 libcudart.so.13 beside it")
    result = run(manifest.load(ROOT), BuildOptions(
        platform="linux", variant="cu13", out_dir=tmp_path / "dist",
        build_dir=tmp_path / "build", verify=VerifyMode.STATIC),
        environ={**os.environ, "CUDA_HOME": str(home)}, host=Host.current())
    assert result.wheel is not None and result.verify["ok"], result.verify
    with zipfile.ZipFile(result.wheel) as archive:
        library = archive.read("edgert/lib/libedgert_backend_cuda.so")
    assert _dynamic(library)["DT_RUNPATH"] == ["$ORIGIN:$ORIGIN/../../nvidia/cu13/lib"]
    assert str(home).encode() not in library


def test_standalone_verify_provisions_the_declared_runtime(cuda_wheel, tmp_path: Path) -> None:
    """`python -m release verify WHEEL` exactly as the README shows it: the CUDA runtime the
    wheel declares is provisioned from the index for the load checks; --offline makes those
    checks 'not run (environment)' (exit 8), never a finding against the wheel."""
    from tests.conftest import run_release
    _, result = cuda_wheel
    completed = run_release("verify", str(result.wheel), "--json")
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-2000:]
    report = json.loads(completed.stdout)
    assert report["ok"] and report["checks"]["load-matrix"] == "ran", report["checks"]
    offline = run_release("verify", str(result.wheel), "--json", "--offline")
    assert offline.returncode == EnvironmentFailure.exit_code, offline.stderr[-2000:]
    report = json.loads(offline.stdout)
    assert report["checks"]["load-matrix"] == "not run (environment)"
    assert not [f for f in report["findings"] if f["severity"] == "error"], report["findings"]


def test_the_variant_form_is_the_same_build_as_a_variant_wheel_of_edgert(
        cuda_wheel, tmp_path: Path) -> None:
    """build --form variant (PEP 825) from the same build folder: the one distribution's
    wheel with the label and variant.json, the properties verify proves against the fatbin
    and the runtime, the index beside it, and the same shipped files as the separate wheel."""
    from release.build_options import Form
    from release.distribution.wheel_variant import read_dist_info, read_index
    variant, separate = cuda_wheel
    loaded = manifest.load(ROOT)
    result = run(loaded, BuildOptions(platform="linux", variant=variant, out_dir=tmp_path,
                                      verify=VerifyMode.STATIC, form=Form.VARIANT),
                 host=Host.current())
    assert result.wheel is not None and result.variants_json is not None
    name = WheelName.parse(result.wheel.name)
    assert (name.distribution, name.variant) == ("edgert", variant)
    with zipfile.ZipFile(result.wheel) as archive:
        variant_entries = {n: archive.read(n) for n in archive.namelist()}
    with zipfile.ZipFile(separate.wheel) as archive:
        separate_entries = {n: archive.read(n) for n in archive.namelist()}
    claimed = read_dist_info(variant_entries["edgert-0.1.0.dist-info/variant.json"],
                             label=variant, where="variant.json")
    assert claimed.properties == loaded.variant(variant).properties
    assert read_index(result.variants_json.read_bytes(), where="index") == \
        {variant: claimed.properties}
    assert result.verify is not None and result.verify["checks"]["variant-properties"] == "ran"
    assert not [f for f in result.verify["findings"] if f["severity"] == "error"]
    shipped = {n for n in separate_entries if ".dist-info/" not in n} - {"edgert/_release.json"}
    assert shipped and all(variant_entries[n] == separate_entries[n] for n in shipped)
