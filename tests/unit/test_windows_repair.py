"""The Windows repair stage reads each DLL once: the binaries its caller already parsed
(``RepairRequest.binaries``, from ``repair WHEEL``'s safe read of the wheel) are not parsed
again, and those it was not handed it reads itself."""

from __future__ import annotations

from pathlib import Path

import pytest

import platforms.windows as windows
from platforms.windows import PLATFORM as WINDOWS
from release.binary import read_binary_data
from release.errors import ToolError
from release.platform import RepairRequest
from tests.verify.pe_images import pe_image
from tests.verify.test_wheel_safety import make_wheel

TAG = "cp39-abi3-win_amd64"


def _wheel(tmp_path: Path) -> Path:
    return make_wheel(tmp_path / f"demo-1.0-{TAG}.whl", {
        "demo/lib/a.dll": pe_image(imports=["KERNEL32.dll", "b.dll"], name="a.dll"),
        "demo/lib/b.dll": pe_image(imports=["KERNEL32.dll"], name="b.dll"),
    }, tag=TAG)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The DLLs the repair parses itself, in order."""
    seen: list[str] = []

    def counting(data: bytes, *, where: str, **options: object) -> object:
        seen.append(where)
        return read_binary_data(data, where=where, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(windows, "read_binary_data", counting)
    return seen


def _request(wheel: Path, out: Path, **binaries: object) -> RepairRequest:
    out.mkdir()
    return RepairRequest(wheel=wheel, out_dir=out, keep=(), exclude=(),
                         binaries=binaries)  # type: ignore[arg-type]


def test_without_models_each_dll_is_read_once(tmp_path: Path, reads: list[str]) -> None:
    wheel = _wheel(tmp_path)
    repaired = WINDOWS.repair(_request(wheel, tmp_path / "out"))
    assert reads == ["demo/lib/a.dll", "demo/lib/b.dll"]
    assert repaired.read_bytes() == wheel.read_bytes()


def test_the_models_handed_in_are_used_not_read_again(tmp_path: Path, reads: list[str]) -> None:
    wheel = _wheel(tmp_path)
    parsed = {name: read_binary_data(pe_image(imports=imports, name=name.rsplit("/")[-1]),
                                     where=name)
              for name, imports in (("demo/lib/a.dll", ["KERNEL32.dll", "b.dll"]),
                                    ("demo/lib/b.dll", ["KERNEL32.dll"]))}
    WINDOWS.repair(_request(wheel, tmp_path / "out", **parsed))
    assert reads == []


def test_a_handed_in_model_decides(tmp_path: Path, reads: list[str]) -> None:
    """The model it is handed is what the repair judges: one that needs a DLL from outside
    the wheel is refused, though the bytes in the wheel need none."""
    wheel = _wheel(tmp_path)
    outside = read_binary_data(pe_image(imports=["missing.dll"], name="b.dll"), where="b")
    with pytest.raises(ToolError, match="needs missing.dll"):
        WINDOWS.repair(_request(wheel, tmp_path / "out", **{"demo/lib/b.dll": outside}))
    assert reads == ["demo/lib/a.dll"]
