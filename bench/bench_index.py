"""The index goals measured pairwise: the batches of each system run interleaved.

``python -m bench.bench_index --scale 1``: one table per system (SIMPLE MOR through
``hudi_ds.write``, the state index through one long-lived ``HudiTable(state_index=True)``,
delta-rs ``merge``), the standard workload's insert, then upsert batch ``b`` of every system
before batch ``b + 1`` of any -- on a shared machine the load then hits every system alike.
Prints each batch's seconds and CPU seconds (the process's, every thread) and the median
ratios of both; every final table is checked against the
reference (``bench.workload.reference``): row count, duplicated keys, every column
(:func:`bench.check.compare`). delta-rs runs one ``merge`` per batch (upserts and deletes
together, the partition column in the predicate) with ``streamed_exec`` True and False; the
ratios are taken against the faster.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

from bench import check
from bench.workload import Step, Workload, insert_batch, reference, upsert_batches

OPTS = {
    "hoodie.table.name": "bench",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "dt",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    "hoodie.logfile.data.block.format": "parquet",
    "hoodie.index.type": "SIMPLE",
    "write.task.max.size": "256",
    # compaction stated explicitly: off (MOR tables compact every 5 delta commits by default);
    # this benchmark measures writes, bench/compaction.py measures compaction
    "hoodie.datasource.compaction.async.enable": "false",
}


def _hudi(path: str, base: pa.Table, state: bool) -> Callable[[Step], None]:
    import hudi_ds
    from bench.systems import hudi_source, with_is_deleted

    base = with_is_deleted(base)
    hudi_ds.write(
        path,
        pa.RecordBatchReader.from_batches(base.schema, base.to_batches(100_000)),
        {**OPTS, "hoodie.datasource.write.operation": "insert"},
    )
    table = hudi_ds.HudiTable(path, state_index=True) if state else None

    def step(s: Step) -> None:  # one commit per batch, deletes as _hoodie_is_deleted rows
        if table is not None:
            table.upsert(hudi_source(s), OPTS)
        else:
            hudi_ds.write(path, hudi_source(s), OPTS)

    return step


def _delta(path: str, base: pa.Table, streamed: bool) -> Callable[[Step], None]:
    """delta-rs as in the main bench (:func:`bench.systems.delta_merge`): one ``merge`` per
    batch (upserts and deletes together, the partition column in the predicate) with
    ``streamed_exec`` as given (both settings run: the ratio is taken against the faster,
    delta-rs at its best)."""
    from deltalake import write_deltalake

    from bench.systems import delta_merge, delta_source

    write_deltalake(path, base, partition_by=["dt"])

    def step(s: Step) -> None:
        delta_merge(path, delta_source(s), streamed)

    return step


def _cpu() -> float:
    """CPU seconds of this process so far (user + system, every thread)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _final(name: str, path: str) -> pa.Table:
    if name.startswith("delta_rs"):
        from deltalake import DeltaTable

        return DeltaTable(path).to_pyarrow_dataset().to_table()
    import hudi_ds

    return hudi_ds.read(path)


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.bench_index")
    ap.add_argument("--scale", type=float, default=1.0)
    args = ap.parse_args()
    w = Workload.scaled(args.scale)
    with tempfile.TemporaryDirectory(prefix="bench-index-") as tmp:  # GBs at scale 1
        run(w, Path(tmp))


def run(w: Workload, root: Path) -> None:
    """The interleaved batches of every system under ``root``, then the report."""
    base = insert_batch(w)
    systems = {
        "hudi_ds_mor_simple": _hudi(str(root / "simple"), base, False),
        "hudi_ds_mor_state": _hudi(str(root / "state"), base, True),
        "delta_rs": _delta(str(root / "delta"), base, streamed=True),
        "delta_rs_unstreamed": _delta(str(root / "delta_unstreamed"), base, streamed=False),
    }
    paths = {
        "hudi_ds_mor_simple": "simple",
        "hudi_ds_mor_state": "state",
        "delta_rs": "delta",
        "delta_rs_unstreamed": "delta_unstreamed",
    }
    del base
    times: dict[str, list[float]] = {n: [] for n in systems}
    cpus: dict[str, list[float]] = {n: [] for n in systems}
    for s in upsert_batches(w):
        for name, step in systems.items():
            t0, c0 = time.perf_counter(), _cpu()
            step(s)
            times[name].append(time.perf_counter() - t0)
            cpus[name].append(_cpu() - c0)
    expected = reference(w)
    print(f"workload: {w.base_rows:,} rows, {w.batches} upsert batches of {w.batch_rows:,}")
    print(
        "| system | seconds per batch (upserts + deletes) | CPU seconds per batch "
        "| median rows/s | final table |"
    )
    print("|---|---|---|---|---|")
    correct: dict[str, bool] = {}
    for name, ts in times.items():
        c = check.compare(_final(name, str(root / paths[name])), expected)
        correct[name] = c["correct"]
        cells = " ".join(f"{x:.2f}" for x in ts)
        cpu_cells = " ".join(f"{x:.2f}" for x in cpus[name])
        print(
            f"| {name} | {cells} | {cpu_cells} | {w.batch_rows / statistics.median(ts):,.0f} | "
            f"{check.verdict(c)} |"
        )

    def ratio(fast: str, slow: str, skip_first: bool = False) -> str:
        """The median per-batch ratio of seconds, then of CPU seconds (on a loaded machine
        the steadier figure: delta-rs' CPU counts every thread it runs); none for an
        incorrect final table (as in the acceptance table)."""
        wrong = [n for n in (fast, slow) if not correct[n]]
        if wrong:
            return f"no ratio (final table incorrect: {', '.join(wrong)})"
        out = []
        for figures in (times, cpus):
            a, b = figures[fast][skip_first:], figures[slow][skip_first:]
            out.append(f"{statistics.median(y / x for x, y in zip(a, b, strict=True)):.2f}x")
        return f"{out[0]} (CPU {out[1]})"

    delta = min(("delta_rs", "delta_rs_unstreamed"), key=lambda n: statistics.median(times[n]))
    print(
        f"\nmedian per-batch ratios: SIMPLE MOR vs delta-rs merge ({delta}, the faster "
        f"streamed_exec setting) {ratio('hudi_ds_mor_simple', delta)} (goal >= 5x); "
        "state index vs SIMPLE "
        f"{ratio('hudi_ds_mor_state', 'hudi_ds_mor_simple')}, after its bootstrap batch "
        f"{ratio('hudi_ds_mor_state', 'hudi_ds_mor_simple', True)} (goal >= 2x)"
    )


if __name__ == "__main__":
    main()
