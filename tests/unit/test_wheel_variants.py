"""Wheel variants (PEP 825) as variantlib, the format's reference implementation, reads and
selects them: our variant wheels and index validate, and its resolver picks CPU, cu12 or cu13
for the properties a machine reports. No build: the wheels are small ones made here."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest
from packaging.version import Version
from variantlib.constants import VALIDATION_WHEEL_NAME_REGEX
from variantlib.errors import ValidationError
from variantlib.models.variant import VariantProperty
from variantlib.resolver.lib import sort_and_filter_supported_variants
from variantlib.variant_dist_info import VariantDistInfo
from variantlib.variants_json import VariantsJson

from cuda.record import DeviceCodeRecord
from cuda.variant_properties import judge
from release import manifest as manifest_module
from release.distribution import wheel
from release.distribution.buildrecord import RuntimeDependency
from release.distribution.wheel_variant import (
    WheelVariant,
    dist_info_of_wheel,
    index_name,
    make_variant_wheel,
    parse_properties,
    read_dist_info,
    read_index,
    update_index,
)
from release.errors import ConfigurationError, WheelError
from release.host import Host
from release.verify.argument import file_name_tags, variant_label
from tests.conftest import release_in_process

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def manifest() -> manifest_module.Manifest:
    return manifest_module.load(ROOT)


def _plain_wheel(folder: Path, name: str = "edgert") -> Path:
    dist_info = f"{name}-0.1.0.dist-info"
    files = {"edgert/__init__.py": (b"", 0o644),
             f"{dist_info}/METADATA": (f"Metadata-Version: 2.4\nName: {name}\n"
                                       "Version: 0.1.0\n".encode(), 0o644),
             f"{dist_info}/WHEEL": (wheel.wheel_text(["py3-none-any"]).encode(), 0o644)}
    path = folder / f"{name}-0.1.0-py3-none-any.whl"
    wheel.write_wheel(path, files, dist_info=dist_info, epoch=wheel.source_date_epoch({}))
    return path


def _variant_wheels(folder: Path, manifest: manifest_module.Manifest) -> dict[str, Path]:
    (folder / "plain").mkdir()
    source = _plain_wheel(folder / "plain")
    out = folder / "variants"
    out.mkdir()
    made = {}
    for variant in manifest.variants:
        path, text = make_variant_wheel(source, out, variant.wheel_variant,
                                        manifest.variant_providers, epoch=315532800)
        update_index(out, manifest.distribution, manifest.version, text)
        made[variant.name] = path
    return made


def test_the_declared_properties_are_the_nvidia_providers_and_cpu_is_the_null_variant(
        manifest: manifest_module.Manifest) -> None:
    cpu, cu12, cu13 = (manifest.variant(name) for name in ("cpu", "cu12", "cu13"))
    assert cpu.wheel_variant == WheelVariant("null", ())
    assert cu12.label == "cu12" and cu13.label == "cu13"
    assert cu12.wheel_variant.values("nvidia", "cuda_version_lower_bound") == ("12",)
    assert cu12.wheel_variant.values("nvidia", "cuda_version_upper_bound") == ("13",)
    assert cu13.wheel_variant.values("nvidia", "cuda_version_lower_bound") == ("13",)
    assert "120_virtual" in cu13.wheel_variant.values("nvidia", "sm_arch")
    assert [p.namespace for p in manifest.variant_providers] == ["nvidia"]


def test_a_variant_wheel_is_named_and_holds_variant_json_as_variantlib_reads_it(
        tmp_path: Path, manifest: manifest_module.Manifest) -> None:
    made = _variant_wheels(tmp_path, manifest)
    assert made["cu12"].name == "edgert-0.1.0-py3-none-any-cu12.whl"
    assert made["cpu"].name == "edgert-0.1.0-py3-none-any-null.whl"
    for name, path in made.items():
        match = VALIDATION_WHEEL_NAME_REGEX.fullmatch(path.name)
        assert match is not None and match.group("name") == "edgert"
        label = manifest.variant(name).label
        assert match.group("variant_label") == label
        text = dist_info_of_wheel(path)
        assert text is not None
        info = VariantDistInfo(text, expected_label=label)
        assert sorted(p.to_str() for p in info.variant_desc.properties) == \
            list(manifest.variant(name).properties)
        # RECORD lists variant.json with its real hash, like every other entry
        entries = wheel.read_entries(path)
        record = entries["edgert-0.1.0.dist-info/RECORD"][0].decode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        assert f"edgert-0.1.0.dist-info/variant.json,sha256={digest.decode()}," in record
    with pytest.raises(ValidationError):
        VariantDistInfo(dist_info_of_wheel(made["cu12"]) or "", expected_label="cu13")


def test_the_index_holds_every_label_and_replaces_a_rebuilt_one(
        tmp_path: Path, manifest: manifest_module.Manifest) -> None:
    made = _variant_wheels(tmp_path, manifest)
    index = tmp_path / "variants" / index_name("edgert", "0.1.0")
    assert index.name == "edgert-0.1.0-variants.json"
    parsed = VariantsJson(json.loads(index.read_text()))
    assert set(parsed.variants) == {"null", "cu12", "cu13"}
    assert parsed.namespace_priorities == ["nvidia"]
    assert parsed.providers["nvidia"].requires == ["nvidia-variant-provider>=0.0.1,<1.0.0"]
    before = index.read_text()
    update_index(index.parent, "edgert", "0.1.0", dist_info_of_wheel(made["cu12"]) or "")
    assert index.read_text() == before
    assert read_index(before, where="x")["cu12"] == manifest.variant("cu12").properties


# What the NVIDIA provider reports for a machine (its documented behaviour, the reference
# cases of wheelnext/nvidia-variant-provider): lower bounds up to the driver's CUDA version,
# upper bounds above it, SASS of the GPU's major up to its minor and the major's PTX.
_CATALOG = [f"{major}.{minor}" for major in range(11, 16) for minor in range(21)] + \
    [str(major) for major in range(11, 16)]


def _machine(driver: str | None, capability: tuple[int, int] | None) -> list[VariantProperty]:
    if driver is None:
        return []
    found = Version(driver)
    props = [VariantProperty("nvidia", "cuda_version_lower_bound", value)
             for value in _CATALOG if Version(value) <= found]
    props += [VariantProperty("nvidia", "cuda_version_upper_bound", value)
              for value in _CATALOG if Version(value) > found]
    if capability is not None:
        major, minor = capability
        props += [VariantProperty("nvidia", "sm_arch", f"{major}{m}_real")
                  for m in range(minor, -1, -1)]
        props.append(VariantProperty("nvidia", "sm_arch", f"{major}0_virtual"))
    return props


@pytest.mark.parametrize(("driver", "gpu", "chosen"), [
    (None, None, "null"),              # no NVIDIA driver: the CPU (null) variant
    ("12.4", (8, 6), "cu12"),
    ("12.9", (9, 0), "cu12"),
    ("13.0", (8, 9), "cu13"),
    ("13.1", (12, 0), "cu13"),
    ("12.9", (12, 0), "null"),         # a 12.x driver, a GPU cu12 has no code for
])
def test_variantlib_picks_cpu_cu12_or_cu13_for_the_machine(
        tmp_path: Path, manifest: manifest_module.Manifest, driver: str | None,
        gpu: tuple[int, int] | None, chosen: str) -> None:
    _variant_wheels(tmp_path, manifest)
    index = VariantsJson(json.loads(
        (tmp_path / "variants" / "edgert-0.1.0-variants.json").read_text()))
    ordered = sort_and_filter_supported_variants(
        list(index.variants.values()), _machine(driver, gpu),
        namespace_priorities=index.namespace_priorities, filter_values=True)
    assert ordered[0].label == chosen
    assert ordered[-1].label == "null"


def test_file_names_of_variant_wheels() -> None:
    name = wheel.WheelName.parse("edgert-0.1.0-cp39-abi3-manylinux_2_35_x86_64-cu12.whl")
    assert (name.distribution, name.platform, name.variant) == \
        ("edgert", "manylinux_2_35_x86_64", "cu12")
    assert wheel.WheelName.parse("edgert-0.1.0-cp39-abi3-linux_x86_64.whl").variant is None
    assert variant_label("a-1-2-py3-none-any.whl") is None      # a build tag, not a label
    assert variant_label("a-1-2-py3-none-any-cu12.whl") == "cu12"
    assert [str(t) for t in file_name_tags("edgert-0.1.0-py3-none-any-null.whl")] == \
        ["py3-none-any"]


def test_bad_properties_and_labels_are_refused(manifest: manifest_module.Manifest) -> None:
    with pytest.raises(ConfigurationError, match="not a variant property"):
        parse_properties(["nvidia :: CUDA :: 12"], where="x")
    with pytest.raises(ConfigurationError, match="twice"):
        parse_properties(["a :: b :: c", "a::b::c"], where="x")
    with pytest.raises(WheelError):
        read_dist_info('{"variants": {"cu12": {}}}', label="cu12", where="variant.json")


def test_properties_of_a_namespace_without_provider_are_refused() -> None:
    from release._compat import tomllib
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    del data["tool"]["release"]["variant-providers"]
    with pytest.raises(ConfigurationError, match="no provider judges"):
        manifest_module.parse(data, ROOT)


_RUNTIME = RuntimeDependency("nvidia-cuda-runtime-cu12>=12.8,<13; sys_platform == 'linux'",
                             "nvidia-cuda-runtime-cu12", "libcudart.so.12", "nvidia/x")
_DEVICE = DeviceCodeRecord(12, ("7.5", "8.0", "8.6", "8.9", "9.0"), ("9.0",), _RUNTIME)
_SASS, _PTX = {"75", "80", "86", "89", "90"}, {"90"}


def test_the_cu12_properties_agree_with_its_record_fatbin_and_runtime(
        manifest: manifest_module.Manifest) -> None:
    assert judge(manifest.variant("cu12").wheel_variant, _DEVICE, sass=_SASS, ptx=_PTX) == []


def _with(properties: list[str]) -> WheelVariant:
    return WheelVariant("cu12", parse_properties(properties, where="test"))


_GOOD = ["nvidia :: cuda_version_lower_bound :: 12", "nvidia :: cuda_version_upper_bound :: 13",
         *(f"nvidia :: sm_arch :: {sm}_real" for sm in _SASS), "nvidia :: sm_arch :: 90_virtual"]


@pytest.mark.parametrize(("change", "expected"), [
    (lambda p: [x for x in p if "75_real" not in x], "claims real 80, 86, 89, 90 but"),
    (lambda p: [*p, "nvidia :: sm_arch :: 100_real"], "claims real 75, 80, 86, 89, 90, 100"),
    (lambda p: [x.replace("lower_bound :: 12", "lower_bound :: 13") for x in p],
     "cuda_version_lower_bound 13 does not fit"),
    (lambda p: [x.replace("lower_bound :: 12", "lower_bound :: 12.9") for x in p],
     "cuda_version_lower_bound 12.9 does not fit"),
    (lambda p: [x.replace("upper_bound :: 13", "upper_bound :: 14") for x in p],
     "cuda_version_upper_bound 14 is not"),
    (lambda p: [x for x in p if "upper_bound" not in x], "0 cuda_version_upper_bound"),
])
def test_properties_that_contradict_the_wheel_are_findings(change: object,
                                                           expected: str) -> None:
    assert callable(change)
    problems = judge(_with(change(list(_GOOD))), _DEVICE, sass=_SASS, ptx=_PTX)
    assert any(expected in problem for problem in problems), problems


def test_a_claim_the_fatbin_does_not_ship_is_a_finding() -> None:
    problems = judge(_with(_GOOD), _DEVICE, sass=_SASS - {"86"}, ptx=set())
    assert problems == ["sm_arch :: 86_real but no library ships SASS for sm_86",
                        "sm_arch :: 90_virtual but no library ships PTX for compute_90"]


def test_a_wheel_without_device_code_claims_no_nvidia_property() -> None:
    problems = judge(_with(_GOOD), None, sass=set(), ptx=set())
    assert len(problems) == 3 and all("no CUDA device code" in p for p in problems)
    assert judge(WheelVariant("null", ()), None, sass=set(), ptx=set()) == []


def _variant_errors(path: Path) -> list[str]:
    from release.verify.api import verify_wheel
    report = verify_wheel(path, static=True)
    assert report.checks["variant"] == "ran"
    return [f.what for f in report.findings if f.check == "variant"]


def test_verify_reads_variant_wheels_and_refuses_a_label_without_its_file(
        tmp_path: Path, manifest: manifest_module.Manifest) -> None:
    made = _variant_wheels(tmp_path, manifest)
    assert _variant_errors(made["cu12"]) == []
    assert _variant_errors(made["cpu"]) == []
    plain = tmp_path / "plain" / "edgert-0.1.0-py3-none-any.whl"
    assert _variant_errors(plain) == []
    relabelled = tmp_path / "edgert-0.1.0-py3-none-any-cu13.whl"
    relabelled.write_bytes(made["cu12"].read_bytes())
    assert any("expected cu13" in what for what in _variant_errors(relabelled))
    unlabelled = tmp_path / "unlabelled" / "edgert-0.1.0-py3-none-any.whl"
    unlabelled.parent.mkdir()
    unlabelled.write_bytes(made["cu12"].read_bytes())
    assert _variant_errors(unlabelled) == [
        ".dist-info holds variant.json but the file name carries no variant label"]
    labelled = tmp_path / "edgert-0.1.0-py3-none-any-cu12.whl"
    labelled.write_bytes(plain.read_bytes())
    assert _variant_errors(labelled) == [
        "the file name carries variant label 'cu12' but .dist-info has no variant.json"]


@pytest.mark.parametrize("text", ["nvidia :: sm_arch :: 90_real", "a::b::c.d",
                                  " x_1 ::  y :: 12.9 ", "nvidia :: CUDA :: 12", "a :: b",
                                  "a :: b :: c-d", "a :: b :: c :: d"])
def test_our_property_grammar_is_variantlib_s(text: str) -> None:
    try:
        theirs: str | None = VariantProperty.from_str(text).to_str()
    except ValidationError:
        theirs = None
    try:
        ours: str | None = parse_properties([text], where="x")[0]
    except ConfigurationError:
        ours = None
    assert ours == theirs


def test_the_build_backend_and_verify_of_plain_wheels_need_no_variantlib(
        tmp_path: Path) -> None:
    """One fresh process that cannot import variantlib: the backend and verify load and pass
    a plain wheel, and making a variant wheel names what is missing. (A process of its own:
    this one has variantlib imported.)"""
    import subprocess
    import sys
    code = ("import sys; sys.modules['variantlib'] = None\n"
            "from pathlib import Path\n"
            "import release.backend, release.verify.api as api, release.manifest as m\n"
            "from release.errors import ToolError\n"
            "from release.distribution.wheel_variant import make_variant_wheel\n"
            "m.load(Path('.'))\n"
            "report = api.verify_wheel(Path(sys.argv[1]), static=True)\n"
            "print(report.checks['variant'])\n"
            "try:\n"
            "    make_variant_wheel(Path(sys.argv[1]), Path('.'), "
            "m.load(Path('.')).variant('cu12').wheel_variant, "
            "m.load(Path('.')).variant_providers, epoch=0)\n"
            "except ToolError as error:\n"
            "    print(error.message, file=sys.stderr)\n"
            "else:\n"
            "    sys.exit('a variant wheel was made without variantlib')\n")
    plain = _plain_wheel(tmp_path)
    done = subprocess.run([sys.executable, "-c", code, str(plain)], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ran"
    assert "variantlib (the reference implementation of wheel variants) is not installed" \
        in done.stderr
    done = release_in_process("verify", "--static", str(plain))
    assert done.returncode == 0, done.stdout + done.stderr


def test_form_is_an_option_and_the_variant_form_builds_the_one_distribution(
        manifest: manifest_module.Manifest) -> None:
    from release.build_options import BuildOptions, Form, resolve
    from release.building.pipeline import make_plan
    chosen = resolve(platform="linux", given={}, manifest_defaults={},
                     environ={"RELEASE_FORM": "variant"})
    assert chosen.form is Form.VARIANT
    assert resolve(platform="linux", given={}, manifest_defaults={}, environ={}).form \
        is Form.SEPARATE
    with pytest.raises(ConfigurationError, match="RELEASE_FORM"):
        resolve(platform="linux", given={}, manifest_defaults={}, environ={"RELEASE_FORM": "x"})
    host = Host.current()
    separate = make_plan(manifest, BuildOptions(platform="linux", variant="cu12"), environ={},
                         host=host)
    variant = make_plan(manifest, BuildOptions(platform="linux", variant="cu12",
                                               form=Form.VARIANT), environ={}, host=host)
    assert (separate.release.distribution, variant.release.distribution) == (
        "edgert-cu12", "edgert")
    assert variant.release.record.distribution == "edgert"
    assert separate.build_dir == variant.build_dir      # one build serves both forms


def test_a_damaged_index_is_refused_and_left_as_it_was(
        tmp_path: Path, manifest: manifest_module.Manifest) -> None:
    made = _variant_wheels(tmp_path, manifest)
    index = tmp_path / "variants" / "edgert-0.1.0-variants.json"
    index.write_text("{not json")
    with pytest.raises(WheelError, match="not a variants index"):
        update_index(index.parent, "edgert", "0.1.0", dist_info_of_wheel(made["cu12"]) or "")
    assert index.read_text() == "{not json"
    assert not list(index.parent.glob("*.partial"))


def test_the_build_backend_refuses_the_variant_form(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from release import backend
    monkeypatch.setenv("RELEASE_FORM", "variant")
    with pytest.raises(SystemExit) as stopped:
        backend.get_requires_for_build_wheel({})
    assert stopped.value.code == 2
    assert "the build backend writes plain wheels" in capsys.readouterr().err
    monkeypatch.setenv("RELEASE_FORM", "separate")
    assert isinstance(backend.get_requires_for_build_wheel({}), list)
