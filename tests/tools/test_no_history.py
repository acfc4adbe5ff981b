"""Prose says what the code does and why, never which issue or commit it came from.

Checked: README.md and docs/**/*.md outside fenced code blocks, the comments and docstrings of
the Python files under hudi_ds/, tests/, bench/, tools/ and examples/, and the Makefile's help
lines. Refused there: our issue numbers (the word issue followed by a number, or a number after
a bare hash sign) and words that look like commit hashes (7 to 40 hex characters holding both a digit and a letter). Apache
Hudi's own references (HUDI-1234, apache/hudi#123) are fine. bench/results/ keeps the commit
of each run: those are results files, not prose.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CODE_DIRS = ("hudi_ds", "tests", "bench", "tools", "examples")

ISSUE = re.compile(
    r"\b[Ii]ssues?\s+#?\d+(?:\s*(?:,|and|&)\s*#?\d+)*"
    # a bare hash sign and number; not after a repository name (apache/hudi's own numbers)
    r"|(?<![\w/#&])#\d+\b"
)
HEXWORD = re.compile(r"(?<![\w./:-])[0-9a-fA-F]{7,40}(?![\w-])")
# hex-looking words of prose that are not commits, lower case, each with what it is
ALLOWED: frozenset[str] = frozenset()


def _hashes(text: str) -> list[str]:
    out = []
    for m in HEXWORD.finditer(text):
        word = m.group(0)
        if word.lower() in ALLOWED:
            continue
        if re.search(r"\d", word) and re.search(r"[a-fA-F]", word):
            out.append(word)
    return out


def findings(text: str) -> list[str]:
    """The issue numbers and commit-hash-looking words of one piece of prose."""
    return [m.group(0) for m in ISSUE.finditer(text)] + _hashes(text)


def markdown_prose(text: str) -> list[tuple[int, str]]:
    """(line number, line) of a Markdown text outside fenced code blocks."""
    out, fenced = [], False
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            out.append((n, line))
    return out


def python_prose(source: str) -> list[tuple[int, str]]:
    """(line number, text) of a Python source's comments and docstrings."""
    out: list[tuple[int, str]] = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            out.append((tok.start[0], tok.string))
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                doc = body[0].value.value
                if isinstance(doc, str):
                    for k, line in enumerate(doc.splitlines()):
                        out.append((body[0].lineno + k, line))
    return out


def makefile_help(text: str) -> list[tuple[int, str]]:
    """(line number, help text) of the Makefile's ``target: ## help`` lines."""
    return [
        (n, line.split("## ", 1)[1])
        for n, line in enumerate(text.splitlines(), 1)
        if re.match(r"^[A-Za-z0-9_.-]+:.*## ", line)
    ]


def _sources() -> list[tuple[Path, list[tuple[int, str]]]]:
    out: list[tuple[Path, list[tuple[int, str]]]] = []
    for md in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:
        out.append((md, markdown_prose(md.read_text(encoding="utf-8"))))
    for d in CODE_DIRS:
        for py in sorted((REPO / d).rglob("*.py")):
            source = py.read_text(encoding="utf-8")
            # prose is part of the source: a file without a hit anywhere needs no parsing
            if findings(source):
                out.append((py, python_prose(source)))
    makefile = REPO / "Makefile"
    out.append((makefile, makefile_help(makefile.read_text(encoding="utf-8"))))
    return out


def test_no_issue_numbers_or_commit_hashes_in_prose() -> None:
    bad = [
        f"{path.relative_to(REPO)}:{n}: {hit!r} in {line.strip()[:100]!r}"
        for path, lines in _sources()
        for n, line in lines
        for hit in findings(line)
    ]
    assert not bad, "history in prose (say what and why instead):\n" + "\n".join(bad)


@pytest.mark.parametrize(
    ("text", "hits"),
    [
        ("as issue 35 asked", ["issue 35"]),
        ("issues 12 and 13", ["issues 12 and 13"]),
        ("fixed in #38.", ["#38"]),
        ("measured at commit bf3d627 on a busy machine", ["bf3d627"]),
        ("see HUDI-1234 and apache/hudi#123", []),
        ("instant 20250331030642808, 0x1f2e3d4c, deadbeefcafe", []),
        ("file id 8c2f1e0a-1b2c-4d5e-9f00-a1b2c3d4e5f6-0_0-1-2", []),
        ("`# 1 1 1` and Step #1", ["#1"]),
    ],
)
def test_the_rule(text: str, hits: list[str]) -> None:
    assert findings(text) == hits


def test_prose_extraction() -> None:
    src = '"""Module doc, issue 7."""\nx = "issue 8"  # issue 9\n\n\ndef f():\n    """bf3d627"""\n'
    texts = [t for _, t in python_prose(src)]
    assert any("issue 7" in t for t in texts) and any("issue 9" in t for t in texts)
    assert not any("issue 8" in t for t in texts)  # a string that is no docstring
    assert "bf3d627" in texts
    md = "prose #12\n```python\nx = 1  # #13\n```\n"
    assert [t for _, t in markdown_prose(md)] == ["prose #12"]
    assert makefile_help("demo: x  ## run, as issue 3 said\nall: demo\n") == [
        (1, "run, as issue 3 said")
    ]
