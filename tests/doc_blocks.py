"""The code blocks of README.md and docs/*.md that a reader would run (Python and shell):
each one runs as written in tests/integration/test_doc_blocks.py, unless an HTML comment on
the line before its fence says why not:

    <!-- doc-block: not run: REASON -->            e.g. it publishes, or takes an hour
    <!-- doc-block: covered by TESTFILE::TEST -->  what it does, a named test does

tests/unit/test_docs.py holds every block to one of the three."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN_LANGUAGES = {"python": "python", "bash": "shell", "sh": "shell", "shell": "shell"}
_FENCE = re.compile(r"^(?P<indent> *)```(?P<language>[\w+-]*)\n(?P<code>.*?)^(?P=indent)```",
                    re.DOTALL | re.MULTILINE)
_MARKER = re.compile(r"<!-- doc-block: (?P<kind>not run|covered by):? (?P<what>.+?) -->$")


@dataclass(frozen=True)
class Block:
    page: str          # relative to the checkout
    line: int          # of the opening fence
    kind: str          # "python" or "shell"
    code: str
    marker: str        # "", "not run", "covered by"
    reason: str        # the reason, or the test that covers it

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks() -> list[Block]:
    """Every Python or shell block of the README and docs/, in page order."""
    found = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        for match in _FENCE.finditer(text):
            kind = RUN_LANGUAGES.get(match.group("language"))
            if kind is None:
                continue
            before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
            marker = _MARKER.search(before)
            indent = len(match.group("indent"))
            code = "".join(line[indent:] + "\n" for line in match.group("code").splitlines())
            found.append(Block(page=page.relative_to(ROOT).as_posix(),
                               line=text.count("\n", 0, match.start()) + 1, kind=kind,
                               code=code, marker=marker.group("kind") if marker else "",
                               reason=marker.group("what").strip() if marker else ""))
    return found


def runnable() -> list[Block]:
    return [block for block in blocks() if not block.marker]
