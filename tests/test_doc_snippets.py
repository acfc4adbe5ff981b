"""Every code block of README.md and docs/ runs in a test, or says why not (tests/doc_blocks.py
has the convention).

* ``test_every_block_is_marked[page]``: each python/bash/sh/shell/console/sql block carries a
  marker, of a kind that fits its language, with a known label or a ``not run`` reason; every
  fence names its language (``text`` for output and diagrams).
* ``test_label_table[label]``: each label's test file exists and names its label.
* ``test_page_snippets[page]``: a page's ``<!-- doc-test -->`` python blocks run in order as one
  script in a fresh interpreter (cwd a fresh temp dir, this checkout first on ``sys.path``),
  then its ``<!-- doc-test: shell -->`` blocks as one ``bash -euo pipefail`` script (this
  venv's bin first on ``PATH``, so ``hudi-py`` is there, and this checkout on ``PYTHONPATH``).
  ``/tmp/hudi_ds_docs`` in the blocks becomes a fresh temp dir; any other ``/tmp/`` path in
  them is refused, as a table that would outlive the test. Pages in :data:`S3_PAGES` write to
  a local S3 server at ``http://localhost:9000`` (MinIO's usual address, with its default
  credentials in the snippets): the runner starts the suite's moto server, creates the bucket
  and points that address at it. On pages in :data:`CHECKED_OUTPUT` what the script prints must
  equal the comment lines written right after its ``print(`` lines (``# {'2024-03-01': (2,
  4)}``), in order.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.doc_blocks import (
    LABELS,
    MARKED_LANGUAGES,
    NOT_RUN,
    REPO,
    RUN,
    SHELL,
    Block,
    blocks,
    pages,
)

DOCS_TMP = "/tmp/hudi_ds_docs"
_STRAY_TMP = re.compile(r"/tmp/(?!hudi_ds_docs(?![\w-]))")
#: page -> the bucket its snippets use on the S3 server they reach at LOCAL_S3
S3_PAGES = {"docs/object_stores.md": "hudi-docs"}
LOCAL_S3 = "http://localhost:9000"
#: pages whose printed output is checked against the comment lines after their print( lines
CHECKED_OUTPUT = {
    "README.md",
    "docs/quickstart.md",
    "docs/operations.md",
    "docs/concurrency.md",
    "docs/partition_bucket_index.md",
    "docs/object_stores.md",
}


def _problems(block: Block) -> str | None:
    if not block.lang:  # else a command could hide from the check in a bare fence
        return "a fence without a language: python, bash, ... or text for output and diagrams"
    if block.lang not in MARKED_LANGUAGES:
        return None if block.marker is None else f"a doc-test marker on a {block.lang} block"
    if block.marker is None:
        return (
            f"an unmarked {block.lang} block: put <!-- doc-test -->, <!-- doc-test: shell -->, "
            "<!-- doc-test: <label> --> or <!-- doc-test: not run: <reason> --> right before it"
        )
    if block.marker == RUN and block.lang != "python":
        return f"<!-- doc-test --> runs python blocks, this one is {block.lang}"
    if block.marker == SHELL and block.lang != "bash":
        return f"<!-- doc-test: shell --> runs bash blocks, this one is {block.lang}"
    if block.marker == NOT_RUN and not block.reason:
        return "<!-- doc-test: not run --> without a reason"
    if block.marker not in (RUN, SHELL, NOT_RUN) and block.marker not in LABELS:
        return f"unknown label {block.marker!r} (known: {sorted(LABELS)})"
    return None


@pytest.mark.parametrize("page", pages())
def test_every_block_is_marked(page: str) -> None:
    found = [(b.where, why) for b in blocks(page) if (why := _problems(b)) is not None]
    assert not found, "\n".join(f"{where}: {why}" for where, why in found)


@pytest.mark.parametrize("label", list(LABELS))
def test_label_table(label: str) -> None:
    test_file = REPO / LABELS[label]
    assert test_file.is_file(), f"label {label!r}: {LABELS[label]} does not exist"
    assert f"doc-test: {label}" in test_file.read_text(), (
        f"{LABELS[label]} does not name its label: no 'doc-test: {label}' in it"
    )


def _runnable_pages() -> list[str]:
    return [p for p in pages() if any(b.marker in (RUN, SHELL) for b in blocks(p))]


def promised_output(code: str) -> list[str]:
    """The comment lines right after ``print(`` lines (and after each other), without ``# ``."""
    out, after_print = [], False
    for line in code.splitlines():
        if after_print and line.startswith("# "):
            out.append(line[2:])
            continue
        after_print = line.startswith("print(")
    return out


def _script(run: list[Block], subs: dict[str, str], header: str) -> str:
    parts = [header]
    for b in run:
        code = b.code
        for old, new in subs.items():
            code = code.replace(old, new)
        parts.append(f"# --- {b.where}\n{code}")
    return "\n".join(parts)


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("page", _runnable_pages())
def test_page_snippets(page: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    run = [b for b in blocks(page) if b.marker in (RUN, SHELL)]
    stray = [b.where for b in run if _STRAY_TMP.search(b.code)]
    assert not stray, f"blocks that write outside {DOCS_TMP}: {stray}"
    work = tmp_path / "cwd"
    work.mkdir()
    subs = {DOCS_TMP: str(tmp_path / "docs")}
    if page in S3_PAGES:
        moto = request.getfixturevalue("moto_s3")
        moto.create_bucket(S3_PAGES[page])
        subs[LOCAL_S3] = moto.endpoint
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AWS_ENDPOINT_URL")}
    env["PYTHONPATH"] = str(REPO)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"

    python = [b for b in run if b.marker == RUN]
    if python:
        script = tmp_path / "snippets.py"
        script.write_text(_script(python, subs, f"import sys\nsys.path.insert(0, {str(REPO)!r})"))
        proc = _run([sys.executable, str(script)], work, env)
        assert proc.returncode == 0, f"{page}'s python blocks failed:\n{proc.stderr[-4000:]}"
        if page in CHECKED_OUTPUT:
            promised = [line for b in python for line in promised_output(b.code)]
            assert promised, f"{page}: no output written after a print( line"
            assert proc.stdout.strip().splitlines() == promised, (proc.stdout, promised)
    shell = [b for b in run if b.marker == SHELL]
    if shell:
        script = tmp_path / "snippets.sh"
        script.write_text(_script(shell, subs, ""))
        proc = _run(["bash", "-euo", "pipefail", str(script)], work, env)
        assert proc.returncode == 0, (
            f"{page}'s shell blocks failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
        )
