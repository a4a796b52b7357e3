"""Two build processes publishing the same wheel into one folder, 100 times over: each
renames a complete file of its own and no temporary file is left. (Moved from the unit tier,
tests/unit/test_build_safety.py, which keeps the same race between two threads: this one
forks 200 processes that each flush 200 kB to disk, seconds on a busy machine.)"""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

from release.building import buildfolder
from tests.unit.test_build_safety import WHEEL_NAME, is_complete_zip, two_wheels_and_out


def _publish_in_child(source: str, out: str) -> None:
    # the window in which a second build sharing the temporary name truncated the first
    # one's file: a pause between writing the temporary file and renaming it
    buildfolder._pause_before_rename = lambda: time.sleep(0.002)  # type: ignore[assignment]
    buildfolder.publish(Path(source), Path(out))


def test_two_processes_publishing_one_wheel_both_publish_complete_files(tmp_path: Path) -> None:
    sources, out = two_wheels_and_out(tmp_path)
    context = multiprocessing.get_context("fork")
    for _ in range(100):
        children = [context.Process(target=_publish_in_child, args=(str(s), str(out)))
                    for s in sources]
        for child in children:
            child.start()
        for child in children:
            child.join()
        assert [child.exitcode for child in children] == [0, 0]
        assert is_complete_zip(out / WHEEL_NAME)
        assert sorted(p.name for p in out.iterdir()) == [WHEEL_NAME]
