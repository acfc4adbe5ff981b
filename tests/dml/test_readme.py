"""The README's MERGE/UPDATE/DELETE ``<!-- doc-test -->`` block runs as written (the table
under this test's tmp dir) and prints what the README says after each ``print``."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import hudi_ds

README = Path(hudi_ds.__file__).resolve().parents[1] / "README.md"
DOC_PATH = "/tmp/hudi_ds_dml"


def test_readme_dml_snippet(tmp_path: Path) -> None:
    text = README.read_text()
    section = text[text.index("## MERGE, UPDATE, DELETE") :]
    section = section[: section.index("\n## ", 1)]
    blocks = re.findall(r"<!-- doc-test -->\n```python\n(.*?)```", section, re.S)
    assert blocks, "the README's MERGE section has no <!-- doc-test --> python block"
    body = "\n".join(blocks).replace(DOC_PATH, str(tmp_path))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(body, "README.md", "exec"), {"__name__": "readme"})
    promised = [line[2:] for b in blocks for line in b.splitlines() if line.startswith("# ")]
    assert out.getvalue().strip().splitlines() == promised
