"""The error hierarchy's user-facing page: docs/troubleshooting.md has a row for every class."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from hudi_ds import errors

PAGE = Path(__file__).resolve().parents[1] / "docs" / "troubleshooting.md"


def test_every_error_and_warning_class_has_a_row_with_cause_and_fix() -> None:
    classes = {
        name
        for name, cls in inspect.getmembers(errors, inspect.isclass)
        if cls.__module__ == errors.__name__
    }
    rows = re.findall(r"^\| `(\w+)` \| (.+?) \| (.+?) \|$", PAGE.read_text(), re.MULTILINE)
    assert sorted(name for name, _, _ in rows) == sorted(classes)
    assert all(cause.strip() and fix.strip() for _, cause, fix in rows)
