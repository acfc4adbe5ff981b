"""The row order a clustering writes: the sort columns ordered linearly, along a Z-order curve
or along a Hilbert curve (``hoodie.layout.optimize.strategy``; Java
``HoodieClusteringConfig.LayoutOptimizationStrategy``, ``RDDSpatialCurveSortPartitioner``).

The curves work on ranks: each column's values are replaced by their dense rank (nulls first),
scaled to the bits each dimension gets, so numbers, strings and dates mix alike (Java's
``sample`` curve build method ranks too, by sampled boundaries).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.config import LayoutOptimizeStrategy
from hudi_ds.errors import ConfigError


def _ranks(rows: pa.Table, columns: Sequence[str], bits: int) -> list[np.ndarray]:
    out = []
    for c in columns:
        col = rows.column(c)
        r = pc.rank(col, sort_keys="ascending", tiebreaker="dense")  # 1-based, nulls last
        a = np.asarray(r.to_numpy(zero_copy_only=False), dtype=np.uint64)
        nulls = np.asarray(col.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        # the dense rank from 0, null being the smallest value when there are nulls
        a = np.where(nulls, np.uint64(0), a) if nulls.any() else a - np.uint64(1)
        top = int(a.max()) if len(a) else 0
        if top >= (1 << bits):  # more distinct values than the dimension holds: scale down
            a = (a.astype(np.float64) * ((1 << bits) - 1) / top).astype(np.uint64)
        out.append(a)
    return out


def z_values(rows: pa.Table, columns: Sequence[str]) -> np.ndarray:
    """Each row's position on the Z-order curve of ``columns`` (bit interleaving of ranks)."""
    bits = max(1, 64 // len(columns))
    ranks = _ranks(rows, columns, bits)
    z = np.zeros(rows.num_rows, dtype=np.uint64)
    d = len(columns)
    for b in range(bits - 1, -1, -1):
        for k, r in enumerate(ranks):
            bit = (r >> np.uint64(b)) & np.uint64(1)
            z |= bit << np.uint64(b * d + (d - 1 - k))
    return z


def hilbert_values(rows: pa.Table, columns: Sequence[str]) -> np.ndarray:
    """Each row's position on the Hilbert curve of ``columns`` (Skilling's transform of the
    ranks to the transposed Hilbert index, then bit interleaving)."""
    d = len(columns)
    bits = max(1, 64 // d)
    x = _ranks(rows, columns, bits)
    one = np.uint64(1)
    m = one << np.uint64(bits - 1)
    # inverse undo excess work
    q = m
    while q > one:
        p = q - one
        for i in range(d):
            hit = (x[i] & q) != 0
            x[0] = np.where(hit, x[0] ^ p, x[0])
            t = (x[0] ^ x[i]) & p
            t = np.where(hit, np.uint64(0), t)
            x[0] ^= t
            x[i] ^= t
        q >>= one
    # Gray encode
    for i in range(1, d):
        x[i] ^= x[i - 1]
    t = np.zeros_like(x[0])
    q = m
    while q > one:
        t = np.where((x[d - 1] & q) != 0, t ^ (q - one), t)
        q >>= one
    for i in range(d):
        x[i] ^= t
    h = np.zeros(rows.num_rows, dtype=np.uint64)
    for b in range(bits - 1, -1, -1):
        for k in range(d):
            bit = (x[k] >> np.uint64(b)) & one
            h |= bit << np.uint64(b * d + (d - 1 - k))
    return h


def sort_rows(rows: pa.Table, columns: Sequence[str], strategy: str) -> pa.Table:
    """``rows`` in the order the layout strategy gives ``columns`` (unchanged without columns).

    Raises:
        ConfigError: a sort column the table does not have.
    """
    if not columns or rows.num_rows == 0:
        return rows
    missing = [c for c in columns if c not in rows.column_names]
    if missing:
        raise ConfigError(
            f"option 'hoodie.clustering.plan.strategy.sort.columns' names {missing[0]!r}, "
            f"which is not a column of the table ({', '.join(rows.column_names)})"
        )
    kind = LayoutOptimizeStrategy(strategy)
    if kind is LayoutOptimizeStrategy.LINEAR or len(columns) == 1:
        try:
            order = pc.sort_indices(rows, sort_keys=[(c, "ascending", "at_start") for c in columns])
        except (TypeError, ValueError):  # pyarrow before per-key null placement
            order = pc.sort_indices(
                rows, sort_keys=[(c, "ascending") for c in columns], null_placement="at_start"
            )
        return rows.take(order)
    curve = z_values if kind is LayoutOptimizeStrategy.ZORDER else hilbert_values
    order = np.argsort(curve(rows, columns), kind="stable")
    return rows.take(pa.array(order))
