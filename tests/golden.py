"""Normalising rows to the golden files' JSON conventions (hudi-rs 0.5.0 output).

Golden conventions (fixtures README): timestamps are ISO strings in UTC, bytes are ``b64:`` +
base64, decimals are strings, maps are lists of ``[key, value]`` pairs.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
from pathlib import Path
from typing import Any

import pyarrow as pa


def norm(v: Any) -> Any:
    """A JSON-comparable canonical form of a value from either side."""
    if v is None or isinstance(v, (bool, str)):
        if isinstance(v, str) and v.startswith("b64:"):
            return v
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return float(f"{v:.6g}")
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, (bytes, bytearray)):
        return "b64:" + base64.b64encode(bytes(v)).decode()
    if isinstance(v, dt.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=dt.timezone.utc)
        return v.astimezone(dt.timezone.utc).isoformat()
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [norm(x) for x in v]
    raise TypeError(f"cannot normalise {type(v)}: {v!r}")


def norm_golden(v: Any) -> Any:
    if isinstance(v, float):
        return float(f"{v:.6g}")
    if isinstance(v, dict):
        return {k: norm_golden(x) for k, x in v.items()}
    if isinstance(v, list):
        return [norm_golden(x) for x in v]
    return v


def row_set(table: pa.Table) -> list[str]:
    """Rows of an Arrow table as sorted canonical JSON strings (a multiset)."""
    rows = table.to_pylist(maps_as_pydicts=None)
    return sorted(json.dumps(norm(r), sort_keys=True) for r in rows)


def golden_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def golden_set(path: Path) -> list[str]:
    return sorted(json.dumps(norm_golden(r), sort_keys=True) for r in golden_rows(path))
