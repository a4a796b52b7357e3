"""The one TOML reader (release/_toml.py): each way a data file fails is one
ConfigurationError line naming the file, with the line and column of a syntax error, and the
fix its caller gives; and every data file of the project is read through it, each keeping its
own words."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuda import coverage_model
from cuda import gpu_variant as variant
from platforms.linux import cross
from release import manifest
from release._toml import read_toml
from release.errors import ConfigurationError
from release.release_set import set_model as release_set_model
from release.toolchain import pins

BAD = 'schema = 1\nname = "x"\n[table\n'   # an unclosed table header on line 3


def _error(call: object) -> ConfigurationError:
    assert callable(call)
    with pytest.raises(ConfigurationError) as caught:
        call()
    assert "\n" not in caught.value.message
    return caught.value


def test_the_table_is_returned(tmp_path: Path) -> None:
    path = tmp_path / "data.toml"
    path.write_text('schema = 1\n[targets.a]\nname = "x"\n')
    assert read_toml(path, fix="f") == {"schema": 1, "targets": {"a": {"name": "x"}}}


def test_a_syntax_error_names_the_file_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "data.toml"
    path.write_text(BAD)
    error = _error(lambda: read_toml(path, what="the demo table", fix="correct it"))
    assert error.what.startswith(f"the demo table {path} is not valid TOML: ")
    assert "(at line 3, column 7)" in error.what and error.fix == "correct it"


def test_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.toml"
    plain = _error(lambda: read_toml(path, fix="f", unreadable_fix="restore it"))
    assert plain.what == f"cannot read {path}: No such file or directory"
    assert plain.fix == "restore it"
    told = _error(lambda: read_toml(path, fix="f", missing_fix="pass --project"))
    assert (told.what, told.fix) == (f"{path} does not exist", "pass --project")


def test_a_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "data.toml"
    path.write_bytes(b"name = '\xff'\n")
    error = _error(lambda: read_toml(path, fix="f"))
    assert error.what == f"{path} is not UTF-8 (invalid start byte at byte 8)"
    assert error.fix == "save the file as UTF-8"


def test_a_folder_is_unreadable(tmp_path: Path) -> None:
    error = _error(lambda: read_toml(tmp_path, fix="f", unreadable_fix="pass a file"))
    assert error.what == f"cannot read {tmp_path}: Is a directory" and error.fix == "pass a file"


def test_each_data_file_is_read_through_it_with_its_own_words(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text(BAD)
    cases = [
        (lambda: manifest.load(tmp_path), f"{path} is not valid TOML",
         "correct the syntax at the position shown"),
        (lambda: pins.load(path), f"{path} is not valid TOML", pins._FIX),
        (lambda: cross.cross_targets(path), f"{path} is not valid TOML",
         "restore platforms/linux/cross.toml"),
        (lambda: coverage_model.ptx_driver_table(path),
         f"the PTX driver table {path} is not valid TOML", "restore cuda/ptx_drivers.toml"),
        (lambda: variant.load(path), f"CUDA variant file {path} is not valid TOML",
         "correct the file's syntax"),
        (lambda: release_set_model.manylinux_images(path), f"{path} is not valid TOML",
         "correct the syntax at the position shown"),
    ]
    for call, what, fix in cases:
        error = _error(call)
        assert error.what.startswith(what + ": ") and "(at line 3, column 7)" in error.what
        assert error.fix == fix
    absent = tmp_path / "absent"
    absent.mkdir()
    assert _error(lambda: manifest.load(absent)).what == \
        f"{absent / 'pyproject.toml'} does not exist"
    assert _error(lambda: variant.load(absent / "cu12.toml")).what == \
        f"cannot read CUDA variant file {absent / 'cu12.toml'}: No such file or directory"
