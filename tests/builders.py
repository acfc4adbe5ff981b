"""The suite's shared builders: the rows a test writes, its write options and the rows it reads
back (with hudi_ds and with hudi-rs). A test file that needs a variant binds it once
(``_rows = partial(rows, key="k{:04d}")``) instead of declaring its own copy of the table.

* :func:`trips` -- ``id, ts, city, fare`` (optionally ``_hoodie_is_deleted``), keys ``t<i>``;
* :func:`rows` -- ``id, ts, p, v``, keys ``k<iii>``, two partitions;
* :func:`batch` -- the ``k``-th of a series of overlapping upserts (``id, ts, p, v``);
* :func:`apply` -- a model (key -> row) after an upsert of a batch;
* :func:`who_rows` / :func:`random_upsert` -- the rows of the writer processes (``id, ts, p,
  who``): chosen keys, or a random batch of them (the scripts of the lock and soak tests import
  this module, which imports no more than pyarrow and hudi_ds);
* :func:`options` -- the write options of a test table keyed by ``id``;
* :func:`read_rows` / :func:`sorted_rows` -- a table's full rows, sorted, no key twice;
* :func:`copy_table` -- a test's own copy of a table a module-scoped fixture wrote once.
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

import hudi_ds

#: ``trips``' columns
TRIP_COLUMNS = ["id", "ts", "city", "fare"]
#: ``rows``' and ``batch``'s columns (``p`` renamed by ``rows(part=...)``)
ROW_COLUMNS = ["id", "ts", "p", "v"]


def _city(i: int) -> str:
    return "sf" if i % 2 else "nyc"


def trips(
    ids: Iterable[int],
    ts: int = 1,
    city: str | None = None,
    *,
    key: str = "t{}",
    fare: Callable[[int, int], float] | None = lambda i, ts: float(i * 100 + ts),
    deleted: bool | None = None,
) -> pa.Table:
    """Trips ``id`` (``key.format(i)``), ``ts`` (int64), ``city`` (``city``, or ``sf`` for odd
    ``i`` and ``nyc`` for even), ``fare`` (``fare(i, ts)``; left out when ``None``) and, when
    ``deleted`` is set, ``_hoodie_is_deleted``."""
    ids = list(ids)
    cols: dict[str, Any] = {
        "id": [key.format(i) for i in ids],
        "ts": pa.array([ts] * len(ids), pa.int64()),
        "city": [city or _city(i) for i in ids],
    }
    if fare is not None:
        cols["fare"] = [fare(i, ts) for i in ids]
    if deleted is not None:
        cols["_hoodie_is_deleted"] = [deleted] * len(ids)
    return pa.table(cols)


def rows(
    ids: Iterable[int],
    ts: int,
    *,
    key: str | None = "k{:03d}",
    part: str = "p",
    part_of: Callable[[int], str] = lambda i: f"p{i % 2}",
    value: Callable[[int, int], Any] = lambda i, ts: float(i * 10 + ts),
) -> pa.Table:
    """Rows ``id`` (``key.format(i)``; the integer ``i`` when ``key`` is ``None``), ``ts``
    (int64), the partition column ``part`` (``part_of(i)``: a key keeps its partition) and
    ``v`` (``value(i, ts)``)."""
    ids = list(ids)
    return pa.table(
        {
            "id": ids if key is None else [key.format(i) for i in ids],
            "ts": pa.array([ts] * len(ids), pa.int64()),
            part: [part_of(i) for i in ids],
            "v": [value(i, ts) for i in ids],
        }
    )


def batch(k: int, *, keys: int, n: int, partitions: int) -> pa.Table:
    """The ``k``-th upsert of a series: ``n`` keys ``k<i>`` out of ``keys`` (each batch moves
    on by 7, so consecutive batches overlap), ``ts = k``, partition ``p<i % partitions>``,
    ``v = k * 1000 + i``."""
    ids = sorted({(k * 7 + i) % keys for i in range(n)})
    return pa.table(
        {
            "id": [f"k{i}" for i in ids],
            "ts": pa.array([k] * len(ids), pa.int64()),
            "p": [f"p{i % partitions}" for i in ids],
            "v": [float(k * 1000 + i) for i in ids],
        }
    )


def who_rows(keys: Iterable[int], ts: int, who: int, part: str = "p0") -> list[dict[str, Any]]:
    """Rows of writer ``who``: keys ``k<k>``, all at ``ts``, in partition ``part``."""
    return [{"id": f"k{k}", "ts": ts, "p": part, "who": who} for k in keys]


def random_upsert(rng: Any, who: int, *, key_space: int = 200, n: int = 20) -> tuple:
    """``(keys, ts, table)``: ``n`` random keys of ``key_space`` (``rng``: a ``random.Random``),
    ``ts`` now (ns), partition ``p<k % 2>``, by writer ``who``."""
    import time

    keys = rng.sample(range(key_space), n)
    ts = time.time_ns()
    table = pa.table(
        {
            "id": [f"k{k}" for k in keys],
            "ts": [ts] * n,
            "p": [f"p{k % 2}" for k in keys],
            "who": [who] * n,
        }
    )
    return keys, ts, table


def apply(
    model: Mapping[Any, tuple], t: pa.Table, columns: Sequence[str] = ROW_COLUMNS
) -> dict[Any, tuple]:
    """``model`` (key -> row of ``columns``, the key first) after upserting every row of ``t``
    (the later row of a key wins)."""
    out = dict(model)
    for r in zip(*(t.column(c).to_pylist() for c in columns), strict=True):
        out[r[0]] = r
    return out


def options(
    name: str = "t",
    table_type: str | None = None,
    *,
    index: str | None = None,
    partition: str | None = None,
    precombine: str | None = "ts",
    buckets: int | None = None,
    **extra: str,
) -> dict[str, str]:
    """:func:`tests.conftest.table_options` with the index type and ``extra`` options (dotted
    keys go in as ``**{"hoodie.x": "y"}``); the bucket count only when ``buckets`` is given."""
    from tests.conftest import table_options

    opts = table_options(
        name, partition=partition, precombine=precombine, table_type=table_type, buckets=buckets
    )
    if index is not None:
        opts["hoodie.index.type"] = index
    opts.update(extra)
    return opts


def sorted_rows(t: pa.Table, columns: Sequence[str], *, unique: bool = True) -> list[tuple]:
    """The rows of ``t`` as tuples of ``columns``, sorted; with ``unique`` it first fails if a
    key (the first column) appears twice."""
    if t.num_rows == 0:
        return []
    out = list(zip(*(t.column(c).to_pylist() for c in columns), strict=True))
    if unique:
        twice = sorted((k for k, c in Counter(r[0] for r in out).items() if c > 1), key=repr)
        assert not twice, f"keys read twice: {twice[:10]} ({len(twice)} in all)"
    return sorted(out)


def read_rows(
    path: str,
    columns: Sequence[str],
    *,
    reader: str = "hudi_ds",
    options: Mapping[str, str] | None = None,
    storage_options: Mapping[str, str] | None = None,
    unique: bool = True,
) -> list[tuple]:
    """The table at ``path`` as ``reader`` (``"hudi_ds"`` or ``"hudi-rs"``) reads it: its rows
    as sorted tuples of ``columns``, no key twice (see :func:`sorted_rows`)."""
    if reader == "hudi_ds":
        t = hudi_ds.read(
            path,
            dict(options) if options else None,
            columns=list(columns),
            storage_options=dict(storage_options) if storage_options else None,
        )
    elif reader == "hudi-rs":
        from tests.conftest import hudi_rs_table

        t = hudi_rs_table(
            path,
            dict(options) if options else None,
            dict(storage_options) if storage_options else None,
        )
    else:
        raise ValueError(f"unknown reader {reader!r}")
    return sorted_rows(t, columns, unique=unique)


def copy_table(src: Path, dst: Path) -> Path:
    """A copy of the table folder ``src`` at ``dst`` (tables keep relative paths only): a test's
    own copy of a table written once for its module, which it may change."""
    shutil.copytree(src, dst)
    return dst
