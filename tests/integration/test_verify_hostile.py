"""Full verify against a wheel that attacks it (release/verify/sandbox.py): our CPU wheel with
code planted where verify runs it (the shipped CMake config, the package's ``__init__.py``, a
library constructor) that plants links and pipes in verify's scratch folder, looks for the
caller's secrets, floods, sleeps, hangs and prints terminal escapes. Nothing written lands
outside the scratch, nothing secret comes back, verify ends by its deadline, and the wheel
(not the machine) is blamed."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from release.distribution import wheel as wheel_module
from release.toolchain import tools
from tests.conftest import PRINT_OWN_PEAK, ROOT, BuiltWheel

pytestmark = pytest.mark.integration

CONFIG = "edgert/lib/cmake/edgert/edgertConfig.cmake"
INIT = "edgert/__init__.py"
LIBRARY = "edgert/lib/libhostile.so"
SECRET = "s3cr3t-token-4711"


def _crafted(source: Path, folder: Path, *, config: str = "", init: str = "",
             constructor: str = "") -> Path:
    """Our wheel with ``config`` appended to the CMake config, ``init`` run first by the
    package's ``__init__.py`` and ``constructor`` (C statements) run when a library loads."""
    folder.mkdir(parents=True)
    entries = wheel_module.read_entries(source)
    dist_info = wheel_module.dist_info_of(entries)
    if config:
        data, mode = entries[CONFIG]
        entries[CONFIG] = (data + b"\n" + config.encode() + b"\n", mode)
    if init:
        data, mode = entries[INIT]
        future = b"from __future__ import annotations\n"
        at = data.index(future) + len(future)
        entries[INIT] = (data[:at] + init.encode() + b"\n" + data[at:], mode)
    if constructor:
        c_source = folder / "hostile.c"
        c_source.write_text("#include <stdio.h>\n#include <stdlib.h>\n#include <unistd.h>\n"
                            "__attribute__((constructor)) static void hostile(void) {\n"
                            f"{constructor}\n}}\nint edgert_hostile(void) {{ return 0; }}\n")
        library = folder / "libhostile.so"
        subprocess.run([shutil.which("gcc") or "gcc", "-shared", "-fPIC", "-O1", "-o",
                        library, c_source], check=True)
        entries[LIBRARY] = (library.read_bytes(), 0o755)
    target = folder / "out" / source.name
    target.parent.mkdir()
    wheel_module.write_wheel(target, entries, dist_info=dist_info, epoch=315532800)
    return target


def _verify(path: Path, *extra: str, env: dict[str, str] | None = None,
            timeout: float = 600) -> tuple[int, dict, str, int]:
    """Exit status, JSON report, stderr and verify's own peak resident size in KiB."""
    code = ("import sys\nfrom release.__main__ import main\ntry:\n    status = main()\n"
            "finally:\n" + "".join("    " + line + "\n" for line in
                                   PRINT_OWN_PEAK.strip().splitlines()) + "sys.exit(status)\n")
    completed = subprocess.run(
        [sys.executable, "-c", code, "verify", "--json", str(path), *extra], cwd=ROOT,
        env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=timeout,
        check=False)
    assert "Traceback" not in completed.stderr, completed.stderr
    peak = int(completed.stderr.strip().splitlines()[-1])
    return completed.returncode, json.loads(completed.stdout), completed.stderr, peak


def _tree(folder: Path) -> dict[str, str]:
    return {str(path.relative_to(folder)): path.read_text() if path.is_file() else "<dir>"
            for path in sorted(folder.rglob("*"))}


def test_links_planted_in_the_scratch_lead_nowhere(cpu_wheel: BuiltWheel,
                                                   tmp_path: Path) -> None:
    """The CMake 3.24 probe swaps the probe's sources and the next probe's build folder for
    links to files outside, and (deferred, after the probe wrote its answer) its answer for
    a link to /dev/zero and a pipe: verify writes through none of them, reads none of them
    unbounded, and does not hang."""
    outside = tmp_path / "outside"
    (outside / "folder").mkdir(parents=True)
    (outside / "victim.c").write_text("int main(void) { return 0; } /* the victim */\n")
    before = _tree(outside)
    config = f"""
cmake_language(DEFER CALL file REMOVE "${{CMAKE_BINARY_DIR}}/found-default.txt")
if(CMAKE_VERSION VERSION_LESS 3.28)
  get_filename_component(_work "${{CMAKE_BINARY_DIR}}" DIRECTORY)
  file(REMOVE "${{CMAKE_SOURCE_DIR}}/main.c")
  file(CREATE_LINK "{outside}/victim.c" "${{CMAKE_SOURCE_DIR}}/main.c" SYMBOLIC)
  file(REMOVE_RECURSE "${{CMAKE_SOURCE_DIR}}/request_default")
  file(CREATE_LINK "{outside}/folder" "${{CMAKE_SOURCE_DIR}}/request_default" SYMBOLIC)
  file(CREATE_LINK "{outside}/folder" "${{_work}}/cmake-probe-new" SYMBOLIC)
  file(CREATE_LINK "{outside}/folder" "${{_work}}/consumer-old" SYMBOLIC)
  cmake_language(DEFER CALL file CREATE_LINK /dev/zero
                 "${{CMAKE_BINARY_DIR}}/found-default.txt" SYMBOLIC)
else()
  cmake_language(DEFER CALL execute_process COMMAND mkfifo
                 "${{CMAKE_BINARY_DIR}}/found-default.txt")
endif()
"""
    planted = _crafted(cpu_wheel.path, tmp_path / "links", config=config)
    code, report, _, peak = _verify(planted, timeout=900)
    assert _tree(outside) == before
    assert code == 7, report
    assert any(f["check"] == "sdk-routes" and f["severity"] == "error"
               for f in report["findings"]), report
    assert peak < 400_000, peak


def test_the_wheel_sees_a_fresh_machine(cpu_wheel: BuiltWheel, tmp_path: Path) -> None:
    """No variable of the caller's, nothing of the caller's home, no password file, no
    socket of the host: what the package's import finds is printed and then it fails, so
    everything it found comes back in the report."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text(f"PRIVATE KEY {SECRET}\n")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(tmp_path / "agent.sock"))
    listener.listen(4)
    listener.setblocking(False)
    init = f"""
import os as _os, socket as _socket, sys as _sys
_found = [k + "=" + v for k, v in _os.environ.items() if {SECRET!r} in v]
for _path in ({str(home / ".ssh" / "id_ed25519")!r}, "/etc/shadow", "/etc/gshadow",
              {str(home)!r}, {str(tmp_path)!r}, "/root", "/home"):
    try:
        _found.append(_path + ":" + (open(_path).read() if _os.path.isfile(_path)
                                      else ",".join(_os.listdir(_path))))
    except OSError as _error:
        _found.append(_path + ": no (" + type(_error).__name__ + ")")
try:
    _client = _socket.socket(_socket.AF_UNIX)
    _client.connect({str(tmp_path / "agent.sock")!r})
    _found.append("socket: connected")
except OSError as _error:
    _found.append("socket: no (" + type(_error).__name__ + ")")
raise ImportError("FOUND " + " | ".join(_found))
"""
    planted = _crafted(cpu_wheel.path, tmp_path / "secrets", init=init)
    code, report, _, _ = _verify(planted, env={"EDGERT_TEST_TOKEN": SECRET,
                                               "HOME": str(home),
                                               "RELEASE_CACHE_DIR": str(tools.cache_dir())})
    listener.close()
    text = json.dumps(report)
    assert code == 7, report
    assert "FOUND" in text, report     # the import ran and its output came back
    assert SECRET not in text
    assert "socket: no" in text and "socket: connected" not in text
    # the password files are hidden (an empty stand-in), nothing of theirs comes back
    assert "/etc/shadow: no" in text and "/etc/gshadow: no" in text
    assert not re.search(r"root:[^ |,]*:[0-9]+:", text), text
    assert f"{tmp_path}: no" in text


def test_a_wheel_that_sleeps_ends_by_the_deadline_and_is_blamed(
        cpu_wheel: BuiltWheel, tmp_path: Path) -> None:
    planted = _crafted(cpu_wheel.path, tmp_path / "sleeps", constructor="sleep(3600);")
    code, report, _, _ = _verify(planted, "--deadline", "40", timeout=300)
    assert code == 7, report
    (deadline,) = [f for f in report["findings"] if "deadline" in f["what"]
                   and f["severity"] == "error"]
    assert deadline["check"] == "load-matrix" and "40 s" in deadline["what"], deadline
    assert report["checks"]["load-matrix"] == "failed"
    assert report["checks"]["sdk-routes"] == "not run", report["checks"]


def test_a_flood_of_output_is_bounded_and_blamed_on_the_wheel(
        cpu_wheel: BuiltWheel, tmp_path: Path) -> None:
    flood = ("static char line[1 << 16]; for (unsigned i = 0; i < sizeof line; ++i) "
             "line[i] = 'x'; for (int i = 0; i < 4800; ++i) fwrite(line, 1, sizeof line, "
             "stderr);")
    planted = _crafted(cpu_wheel.path, tmp_path / "floods", constructor=flood)
    code, report, _, peak = _verify(planted)
    assert code == 7, report
    assert any("printed more than" in f["what"] for f in report["findings"]), report
    assert peak < 400_000, peak
    assert len(json.dumps(report)) < 4 << 20


def test_a_config_that_claims_a_full_disk_is_blamed_not_the_disk(
        cpu_wheel: BuiltWheel, tmp_path: Path) -> None:
    config = 'message(FATAL_ERROR "write failed: No space left on device")'
    planted = _crafted(cpu_wheel.path, tmp_path / "disk", config=config)
    code, report, _, _ = _verify(planted)
    assert code == 7, report
    assert report["ok"] is False
    (failed,) = [f for f in report["findings"] if f["check"] == "sdk-routes"
                 and f["severity"] == "error"]
    assert "disk is full" not in failed["fix"], failed


def test_a_hanging_config_is_the_wheel_s_fault(cpu_wheel: BuiltWheel, tmp_path: Path) -> None:
    config = 'execute_process(COMMAND sleep 3600)'
    planted = _crafted(cpu_wheel.path, tmp_path / "hangs", config=config)
    code, report, _, _ = _verify(planted, "--deadline", "40", timeout=300)
    assert code == 7, report
    assert any("deadline" in f["what"] and f["severity"] == "error"
               for f in report["findings"]), report


def test_terminal_escapes_from_the_wheel_never_reach_the_terminal(
        cpu_wheel: BuiltWheel, tmp_path: Path) -> None:
    escapes = r'\033]0;owned\007\033[2J\033[31mred\033[0m\302\233'
    planted = _crafted(cpu_wheel.path, tmp_path / "escapes",
                       constructor=f'fputs("{escapes}\\n", stderr); exit(3);')
    completed = subprocess.run([sys.executable, "-m", "release", "verify", str(planted)],
                               cwd=ROOT, capture_output=True, text=True, check=False)
    assert completed.returncode == 7, completed.stdout + completed.stderr
    assert "owned" in completed.stdout
    for text in (completed.stdout, completed.stderr):
        assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text
