"""Full verify runs the wheel's code in a sandbox (release/verify/sandbox.py): our CPU wheel
with writes outside the scratch folder planted in every place verify runs code from, a line
in the package's ``__init__.py``, a library constructor, a line in the shipped module the
checks run (the Python twin of the example) and a ``file(WRITE ...)`` in the shipped CMake
config, plus a connection to a port of this machine. None lands; the same wheel with
``--trust-wheel`` shows that every plant did run; the findings are the same either way."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from release.distribution import wheel as wheel_module
from tests.conftest import BuiltWheel, run_release

pytestmark = pytest.mark.integration

CONFIG = "edgert/lib/cmake/edgert/edgertConfig.cmake"
MODULE = "edgert/run_program.py"
LIBRARY = "edgert/lib/libcanary.so"

_PYTHON_PLANT = """
def _plant(name):
    import socket
    try:
        with open({canary!r} + "/" + name, "w") as planted:
            planted.write("written by the wheel\\n")
    except OSError:
        pass
    try:
        socket.create_connection(("127.0.0.1", {port}), timeout=5).close()
    except OSError:
        pass
_plant({name!r})
"""

_CONSTRUCTOR = """
#include <stdio.h>
__attribute__((constructor)) static void plant(void) {
    FILE *planted = fopen("%s/constructor", "w");
    if (planted) { fputs("written by the wheel\\n", planted); fclose(planted); }
}
int edgert_canary(void) { return 0; }
"""


def _plant_python(source: bytes, after: str, code: str) -> bytes:
    text = source.decode()
    at = text.index(after) + len(after)
    return (text[:at] + code + text[at:]).encode()


def _crafted(source: Path, folder: Path, canary: Path, port: int, *, cmake: bool) -> Path:
    """Our wheel with the Python and library plants, or (``cmake``) the CMake one alone:
    a failing file(WRITE) stops the CMake probe before the example runs."""
    folder.mkdir()
    entries = wheel_module.read_entries(source)
    dist_info = wheel_module.dist_info_of(entries)
    if cmake:
        config, mode = entries[CONFIG]
        entries[CONFIG] = (config + f'\nfile(WRITE "{canary}/cmake" "written by the wheel")\n'
                           .encode(), mode)
    else:
        for name, after in (("edgert/__init__.py", "from __future__ import annotations\n"),
                            (MODULE, "import sys\n")):
            data, mode = entries[name]
            code = _PYTHON_PLANT.format(canary=str(canary), port=port,
                                        name=Path(name).stem.strip("_"))
            entries[name] = (_plant_python(data, after, code), mode)
        c_source = folder / "canary.c"
        c_source.write_text(_CONSTRUCTOR % canary)
        library = folder / "libcanary.so"
        # an absolute search path: a finding of the wheel's own that verify must still report
        subprocess.run([shutil.which("gcc") or "gcc", "-shared", "-fPIC", "-O1", "-o", library,
                        c_source, "-Wl,-rpath,/home/runner/work/canary/lib"], check=True)
        entries[LIBRARY] = (library.read_bytes(), 0o755)
    target = folder / "out" / source.name
    target.parent.mkdir()
    wheel_module.write_wheel(target, entries, dist_info=dist_info, epoch=315532800)
    return target


def _verify(path: Path, *extra: str) -> tuple[int, dict]:
    completed = run_release("verify", "--json", str(path), *extra)
    assert "Traceback" not in completed.stderr, completed.stderr
    return completed.returncode, json.loads(completed.stdout)


def _findings(report: dict) -> set[tuple[str, str, str, str]]:
    return {(f["check"], f["severity"], f["file"], f["what"]) for f in report["findings"]}


def _connected(listener: socket.socket) -> bool:
    try:
        connection, _ = listener.accept()
    except BlockingIOError:
        return False
    connection.close()
    return True


def test_no_planted_write_or_connection_leaves_the_sandbox(
        cpu_wheel: BuiltWheel, tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    canary.mkdir()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        listener.setblocking(False)
        port = listener.getsockname()[1]
        planted = _crafted(cpu_wheel.path, tmp_path / "python", canary, port, cmake=False)

        code, sandboxed = _verify(planted)
        assert sorted(canary.iterdir()) == []
        assert not _connected(listener)   # the attempts ran and found no network
        assert code == 7, sandboxed
        assert sandboxed["checks"]["load-matrix"] == "ran"
        assert sandboxed["checks"]["sdk-routes"] == "ran"
        assert any(f["check"] == "search-path" and f["severity"] == "error"
                   and f["file"] == LIBRARY for f in sandboxed["findings"]), sandboxed

        code, trusted = _verify(planted, "--trust-wheel")
        assert code == 7
        # every plant ran: the package's import, the library's constructor (load matrix),
        # the example's Python module (sdk-routes), each also connecting
        assert sorted(path.name for path in canary.iterdir()) == [
            "constructor", "init", "run_program"]
        assert _connected(listener)
        assert _findings(trusted) == _findings(sandboxed)

    # the CMake plant writes into the caller's temporary folder: inside the sandbox that is
    # the sandbox's own /tmp, so the write succeeds there and is dropped with it
    cmake_canary = tmp_path / "cmake-canary"
    cmake_canary.mkdir()
    planted = _crafted(cpu_wheel.path, tmp_path / "cmake", cmake_canary, 0, cmake=True)
    code, sandboxed = _verify(planted)
    assert sorted(cmake_canary.iterdir()) == []
    assert code == 0, sandboxed
    assert sandboxed["checks"]["sdk-routes"] == "ran"
    code, trusted = _verify(planted, "--trust-wheel")
    assert code == 0, trusted
    assert sorted(path.name for path in cmake_canary.iterdir()) == ["cmake"]   # it ran
    assert _findings(trusted) == _findings(sandboxed)
