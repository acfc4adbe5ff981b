"""docs/options.md is generated from the option registry (tools/options_doc.py): it fails here
when an option was added, removed or re-documented without regenerating it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from hudi_ds.config import IGNORED_HUDI_KEYS, all_scopes, properties_of

REPO = Path(__file__).resolve().parents[2]


def _tool():
    spec = importlib.util.spec_from_file_location("options_doc", REPO / "tools" / "options_doc.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["options_doc"] = module
    spec.loader.exec_module(module)
    return module


def test_options_doc_is_current() -> None:
    pytest.importorskip("pyspark")  # the Spark data source's options are documented too
    tool = _tool()
    text = tool.render()
    assert (REPO / "docs" / "options.md").read_text() == text, (
        "docs/options.md is stale: run python tools/options_doc.py"
    )
    # every key of the registry is in it, and every ignored key with its reason
    for scope in all_scopes():
        for prop in properties_of(scope):
            assert f"`{prop.key}`" in text, prop.key
    for key in IGNORED_HUDI_KEYS:
        assert f"| `{key}` |" in text
