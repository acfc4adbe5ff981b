"""docs/concurrency.md's ``<!-- doc-test -->`` Python blocks run as written (in a fresh
interpreter, the table under this test's tmp dir), and print what the document says."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import hudi_ds

REPO = Path(hudi_ds.__file__).resolve().parents[1]
DOC = REPO / "docs" / "concurrency.md"
DOC_PATH = "/tmp/hudi_ds_docs"


def test_concurrency_doc_snippets(tmp_path: Path) -> None:
    blocks = re.findall(r"<!-- doc-test -->\n```python\n(.*?)```", DOC.read_text(), re.S)
    assert blocks, "docs/concurrency.md has no <!-- doc-test --> python block"
    body = "\n".join(blocks).replace(DOC_PATH, str(tmp_path))
    script = tmp_path / "snippet.py"
    script.write_text(f"import sys\nsys.path.insert(0, {str(REPO)!r})\n" + body)
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    # every printed line is followed in the document by the comment it must equal
    printed = proc.stdout.strip().splitlines()
    promised = [
        line[2:]
        for b in blocks
        for line in b.splitlines()
        if line.startswith("# [") or line.startswith("# {")
    ]
    assert printed == promised, (printed, promised)
