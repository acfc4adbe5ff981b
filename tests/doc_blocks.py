"""The fenced code blocks of README.md and docs/**/*.md, with the doc-test marker each carries.

The convention (tests/test_doc_snippets.py checks and runs it): every block of language python,
bash, sh, shell, console or sql has, on the line right before its fence, one of

* ``<!-- doc-test -->`` (python): run by tests/test_doc_snippets.py, the page's blocks as one
  script;
* ``<!-- doc-test: shell -->`` (bash): run by the same test after the page's python blocks;
* ``<!-- doc-test: <label> -->``: run by the test file that :data:`LABELS` names for the label;
* ``<!-- doc-test: not run: <reason> -->``: shown only.

Output-only blocks are ``text`` and need no marker.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import hudi_ds

REPO = Path(hudi_ds.__file__).resolve().parents[1]
#: languages whose blocks must carry a marker
MARKED_LANGUAGES = frozenset({"python", "bash", "sh", "shell", "console", "sql"})
#: label -> the test file that runs the blocks of that label (it must name the label)
LABELS = {
    "spark": "tests/spark/test_docs.py",
    "wheel": "tests/test_install.py",
}
#: the marker values that are not labels
RUN, SHELL, NOT_RUN = "", "shell", "not run"

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+-]*)")
_MARKER = re.compile(r"^<!--\s*doc-test(?::\s*(?P<value>.*?))?\s*-->$")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: str  #: the page's path in the repository (``docs/spark.md``)
    line: int  #: the fence's line number (1-based)
    lang: str
    code: str  #: the block's text, the fence's indentation removed
    #: the marker's value: RUN (``<!-- doc-test -->``), SHELL, a label, NOT_RUN; None: unmarked
    marker: str | None
    reason: str = ""  #: a ``not run`` marker's reason

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[str]:
    """README.md and every page under docs/, as paths in the repository."""
    docs = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "docs").rglob("*.md"))
    return ["README.md", *docs]


def _marker(previous: str) -> tuple[str | None, str]:
    m = _MARKER.match(previous.strip())
    if m is None:
        return None, ""
    value = (m.group("value") or "").strip()
    if value.startswith(NOT_RUN):
        return NOT_RUN, value[len(NOT_RUN) :].lstrip(" :").strip()
    return value, ""


def blocks(page: str) -> list[Block]:
    """The fenced code blocks of ``page`` (a path in the repository), in order."""
    lines = (REPO / page).read_text(encoding="utf-8").splitlines()
    found = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        indent, fence = m.group("indent"), m.group("fence")
        end = i + 1
        while end < len(lines) and not (
            lines[end].strip().startswith(fence) and not lines[end].strip().strip(fence[0])
        ):
            end += 1
        body = [ln[len(indent) :] if ln.startswith(indent) else ln for ln in lines[i + 1 : end]]
        marker, reason = _marker(lines[i - 1]) if i > 0 else (None, "")
        found.append(
            Block(
                page=page,
                line=i + 1,
                lang=m.group("lang").lower(),
                code=textwrap.dedent("\n".join(body) + "\n"),
                marker=marker,
                reason=reason,
            )
        )
        i = end + 1
    return found


def labelled(page: str, label: str) -> list[Block]:
    """The blocks of ``page`` marked ``<!-- doc-test: <label> -->``, in order."""
    return [b for b in blocks(page) if b.marker == label]
