"""docs/partition_bucket_index.md's ``<!-- doc-test -->`` Python block runs as written (the table
under this test's tmp dir) and prints what the document says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import hudi_ds

DOC = Path(hudi_ds.__file__).resolve().parents[1] / "docs" / "partition_bucket_index.md"
DOC_PATH = "/tmp/hudi_ds_docs"


def test_partition_bucket_doc_snippet(tmp_path: Path) -> None:
    blocks = re.findall(r"<!-- doc-test -->\n```python\n(.*?)```", DOC.read_text(), re.S)
    assert blocks, "docs/partition_bucket_index.md has no <!-- doc-test --> python block"
    body = "\n".join(blocks).replace(DOC_PATH, str(tmp_path))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(body, str(DOC), "exec"), {"__name__": "doc"})
    promised = [ln[2:] for b in blocks for ln in b.splitlines() if ln.startswith(("# {", "# ("))]
    assert out.getvalue().strip().splitlines() == promised
