"""One runner per system. Each runs the whole workload and returns its measurements.

A runner gets the workload, an empty directory and the path of the reference final table (plain
Parquet, written once by the parent before any system runs) and returns a dict with
``insert_s``, ``upsert_s`` (one per batch), ``read_s``, ``read_rows``, ``read_sum``,
``lookup_s``, the memory high-water marks ``write_hwm_mb`` / ``read_hwm_mb`` (VmHWM of this
process -- and of Spark's JVM for the Spark systems -- reset at the start of each phase through
``/proc/self/clear_refs``) and ``final_table`` (the whole final table, read after the timings,
for the correctness check; None for systems that do not upsert).

The timed snapshot read of every system reads the same three columns (``READ_COLUMNS``).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from bench.workload import Workload, insert_batch, upsert_batches

Result = dict[str, Any]
#: timed reads of every system: each is run this many times and the fastest counts (the same
#: for every system; a single read on a shared machine moved a ratio by 15%)
READ_REPEATS = 3
Runner = Callable[[Workload, Path, str], Result]
LOOKUP = 100
READ_COLUMNS = ["id", "ts", "d1"]
#: the ``hudi_py`` table of the Spark rows: MOR (the default), bucket index
SPARK_OPTS = {
    "hoodie.table.name": "bench",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "dt",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.bucket.index.num.buckets": "4",
}
#: seconds of upserts after which pyiceberg stops taking batches (see :func:`run_iceberg`)
ICEBERG_BUDGET_S = float(os.environ.get("BENCH_ICEBERG_BUDGET_S", "60"))


def clear_peak(pids: tuple[int | str, ...] = ("self",)) -> None:
    """Start a memory phase: reset the peak RSS (VmHWM) of ``pids`` to their current RSS."""
    for pid in pids:
        with contextlib.suppress(OSError):
            Path(f"/proc/{pid}/clear_refs").write_text("5")


def peak_mb(pids: tuple[int | str, ...] = ("self",)) -> float:
    """The summed VmHWM of ``pids`` (MB) since their last :func:`clear_peak`."""
    total = 0.0
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                total += int(line.split()[1]) / 1024
    return total


def _lookup_keys(w: Workload) -> list[str]:
    return [f"id-{i}" for i in range(0, w.base_rows, max(1, w.base_rows // LOOKUP))][:LOOKUP]


def parquet_options(table: pa.Table) -> dict[str, Any]:
    """The Parquet options hudi_ds writes ``table`` with (base files and Parquet log blocks:
    snappy, its dictionary-encoded columns, pyarrow's row group size)."""
    from hudi_ds.layout.parquet import dictionary_columns_of

    return {"compression": "snappy", "use_dictionary": dictionary_columns_of(table)}


def best_of(fn: Callable[[], Any], keep: Callable[[Any], Any]) -> tuple[float, Any]:
    """The fastest of :data:`READ_REPEATS` runs of ``fn``: its seconds and ``keep`` of its
    result (each result is dropped before the next run, so a read's peak memory holds one)."""
    best_s, best = float("inf"), None
    for _ in range(READ_REPEATS):
        t0 = time.perf_counter()
        got = fn()
        s = time.perf_counter() - t0
        if s < best_s:
            best_s, best = s, keep(got)
        del got
    return best_s, best


def _count_and_sum(t: pa.Table) -> tuple[int, Any]:
    """A read's row count and the sum of ``d1``: the figures checked against the reference."""
    return t.num_rows, pc.sum(t["d1"]).as_py()


def _timed_write(table: pa.Table, path: Path, **opts: Any) -> float:
    t0 = time.perf_counter()
    if "use_dictionary" in opts:  # hudi_ds chooses its dictionary columns per file, timed too
        opts = parquet_options(table)
    pq.write_table(table, path, **opts)
    return time.perf_counter() - t0


def _log_floor_write(batch: pa.Table, out: Path, i: int) -> float:
    """The Parquet work Hudi's protocol asks of a MERGE_ON_READ bucket-index batch, by plain
    pyarrow/numpy: each row's bucket (Java's hash of the record key, hudi_ds's vectorised
    hashing), the five meta columns (commit time, sequence numbers, key, partition path, file
    name), the rows grouped by file group (partition x bucket) and each group written as one
    Parquet file, as a log block is, on as many threads as hudi_ds's writer pool (the cores, at
    most 8). Seconds taken."""
    from hudi_ds.index.bucket import bucket_ids

    t0 = time.perf_counter()
    n = batch.num_rows
    buckets = int(SPARK_OPTS["hoodie.bucket.index.num.buckets"])  # the same for every row
    bucket = bucket_ids([batch.column("id")], buckets)
    parts = pc.dictionary_encode(batch.column("dt")).combine_chunks()
    group = np.asarray(parts.indices, dtype=np.int64) * buckets + bucket
    seqno = pc.binary_join_element_wise(
        "20261203000000000_0_", pa.array(np.arange(n, dtype=np.int64)).cast(pa.string()), ""
    )
    meta = {
        "_hoodie_commit_time": pa.repeat(pa.scalar("20261203000000000"), n),
        "_hoodie_commit_seqno": seqno,
        "_hoodie_record_key": batch.column("id"),
        "_hoodie_partition_path": batch.column("dt"),
        "_hoodie_file_name": pa.repeat(pa.scalar(""), n),
    }
    full = pa.Table.from_pydict({**meta, **{c: batch.column(c) for c in batch.column_names}})
    order = np.argsort(group, kind="stable")
    full, group = full.take(pa.array(order)), group[order]
    bounds = np.flatnonzero(np.diff(group)) + 1
    opts = parquet_options(full)  # chosen once for the batch: the least work

    def write(j: int, a: int, b: int) -> None:
        pq.write_table(full.slice(a, b - a), out / f"log-{i}-{j}.parquet", **opts)

    spans = list(zip([0, *bounds], [*bounds, n], strict=True))
    with ThreadPoolExecutor(max(1, min(len(spans), os.cpu_count() or 1, 8))) as pool:
        list(pool.map(lambda js: write(js[0], *js[1]), enumerate(spans)))
    return time.perf_counter() - t0


def run_pyarrow(w: Workload, root: Path, ref: str) -> Result:
    """The physical ceiling: plain Parquet, no keys, no merging.

    Writes: every batch written twice, with hudi_ds's own Parquet options (snappy, dictionary
    encoding only for the columns hudi_ds picks) and with ``pq.write_table``'s defaults; the
    faster setting (lower mean batch time) is the ceiling, named in ``write_options``. Read and
    lookup: the reference final table (the same final rows every upserting system holds) as
    plain Parquet, written once outside the timing in both settings; the timed read reads
    ``READ_COLUMNS``, the faster file is kept (``read_options``).
    """
    parquet_options(insert_batch(Workload(base_rows=10)))  # imports hudi_ds before the timings

    out: Result = {"final_table": None}
    times: dict[str, dict[str, Any]] = {"hudi_ds": {"upsert_s": []}, "default": {"upsert_s": []}}
    clear_peak()
    base = insert_batch(w)
    times["hudi_ds"]["insert_s"] = _timed_write(base, root / "h-base.parquet", use_dictionary=1)
    times["default"]["insert_s"] = _timed_write(base, root / "d-base.parquet")
    del base
    for i, step in enumerate(upsert_batches(w)):
        t = _timed_write(step.upserts, root / f"h-{i}.parquet", use_dictionary=1)
        times["hudi_ds"]["upsert_s"].append(t)
        times["default"]["upsert_s"].append(_timed_write(step.upserts, root / f"d-{i}.parquet"))
        out.setdefault("log_floor_s", []).append(_log_floor_write(step.upserts, root, i))
    out["write_hwm_mb"] = peak_mb()
    best = min(times, key=lambda k: sum(times[k]["upsert_s"]))
    out.update(times[best])
    out["write_options"] = "hudi_ds's options" if best == "hudi_ds" else "pyarrow defaults"
    out["write_variants"] = times
    # the same final rows as plain Parquet, in both settings (not timed)
    final = pq.read_table(ref)
    pq.write_table(final, root / "final-hudi_ds.parquet", **parquet_options(final))
    pq.write_table(final, root / "final-default.parquet")
    del final
    clear_peak()
    reads = {}
    for name in ("hudi_ds", "default"):
        f = root / f"final-{name}.parquet"
        secs, (rows, total) = best_of(
            partial(pq.read_table, f, columns=READ_COLUMNS), _count_and_sum
        )
        reads[name] = (secs, rows, total)
    best_read = min(reads, key=lambda k: reads[k][0])
    out["read_s"], out["read_rows"], out["read_sum"] = reads[best_read]
    out["read_options"] = "hudi_ds's options" if best_read == "hudi_ds" else "pyarrow defaults"
    t0 = time.perf_counter()
    ds.dataset(root / f"final-{best_read}.parquet").to_table(
        filter=pc.field("id").isin(_lookup_keys(w))
    )
    out["lookup_s"] = time.perf_counter() - t0
    out["read_hwm_mb"] = peak_mb()
    return out


def _written_since(path: str, seen: set[str]) -> tuple[int, int, int]:
    """Rows written to base files and to log files by the commits completed since the instants
    in ``seen`` (which this adds to), from their commit metadata (``numWrites`` of each write
    stat): the Parquet work the protocol did in a batch -- a compaction's new base files
    included; the third figure is the compaction's share (a ``commit`` on a MERGE_ON_READ
    table)."""
    from hudi_ds.layout.naming import file_name_of, parse_log_file_name
    from hudi_ds.storage import Storage
    from hudi_ds.table.table import ReadableTable

    table = ReadableTable(Storage(path))
    mor = table.config.table_type == "MERGE_ON_READ"
    tl = table.timeline.commits()
    base = log = compacted = 0
    for inst in tl:
        if inst.requested_time in seen:
            continue
        seen.add(inst.requested_time)
        for s in tl.read_commit_metadata(inst).write_stats():
            if s.path and parse_log_file_name(file_name_of(s.path)) is not None:
                log += s.num_writes
            else:
                base += s.num_writes
                if mor and inst.action == "commit":
                    compacted += s.num_writes
    return base, log, compacted


def _key_read_s(path: str) -> float:
    """Seconds plain pyarrow takes to read the record key column of every latest base file
    (the workload's batches touch every partition): the least a SIMPLE lookup reads."""
    from concurrent.futures import ThreadPoolExecutor

    from hudi_ds.index.simple import READ_THREADS
    from hudi_ds.storage import Storage
    from hudi_ds.table.table import ReadableTable

    files = [
        os.path.join(path, s.base_file.path)
        for s in ReadableTable(Storage(path)).file_slices()
        if s.base_file is not None
    ]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(READ_THREADS) as pool:
        list(pool.map(lambda f: pq.read_table(f, columns=["_hoodie_record_key"]), files))
    return time.perf_counter() - t0


@contextlib.contextmanager
def _timed_simple_lookups(total: list[float]) -> Any:
    """Adds to ``total[0]`` the seconds spent in SIMPLE lookups (``simple_lookup`` as
    :mod:`hudi_ds.index.core` calls it: every SIMPLE writer task's lookup through its key
    cache) while active."""
    import hudi_ds.index.core as index

    plain = index.simple_lookup

    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return plain(*args, **kwargs)
        finally:
            total[0] += time.perf_counter() - t0

    index.simple_lookup = timed  # type: ignore[assignment]
    try:
        yield
    finally:
        index.simple_lookup = plain  # type: ignore[assignment]


def _hudi_ds(
    table_type: str,
    block: str,
    index: str = "BUCKET",
    state: bool = False,
    compaction: bool = True,
    metadata: str | None = None,
) -> Runner:
    """hudi_ds' embedded writes with ``index`` (``hoodie.index.type``); ``state``: the upserts
    go through one long-lived ``HudiTable(state_index=True)`` (the state index).

    MOR tables run at hudi_ds's defaults, as Hudi's writers: a compaction is scheduled every
    ``hoodie.compact.inline.max.delta.commits`` (5) delta commits and, the embedded API having
    no background service, executed right after that commit -- its time is in that upsert's
    time, and the read sees the table a user has (base files plus the later log blocks).
    ``compaction=False`` (``hoodie.datasource.compaction.async.enable=false``): every version
    stays in log blocks and the read merges them all (the Avro-block decode figure).
    ``metadata``: ``"files"`` writes a version 9 table with the metadata table (its files
    partition), ``"stats"`` with its ``column_stats`` and ``partition_stats`` partitions too
    (the cost of keeping them is the difference of the two)."""

    def run(w: Workload, root: Path, ref: str) -> Result:
        import hudi_ds

        path = str(root / "table")
        opts = {
            "hoodie.table.name": "bench",
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "dt",
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.table.type": table_type,
            "hoodie.logfile.data.block.format": block,
            "hoodie.index.type": index,
            "write.task.max.size": "256",
        }
        if not compaction:
            opts["hoodie.datasource.compaction.async.enable"] = "false"
        if metadata is not None:
            # hudi_ds keeps column stats on table versions 8 and 9 (as Hudi 1.x)
            opts["hoodie.write.table.version"] = "9"
            opts["hoodie.metadata.enable"] = "true"
            stats = "true" if metadata == "stats" else "false"
            opts["hoodie.metadata.index.column.stats.enable"] = stats
            opts["hoodie.metadata.index.partition.stats.enable"] = stats
        if index == "BUCKET":
            opts["hoodie.bucket.index.num.buckets"] = "4"
        out: Result = {"upsert_s": []}
        clear_peak()
        base = with_is_deleted(insert_batch(w))
        t0 = time.perf_counter()
        hudi_ds.write(
            path,
            pa.RecordBatchReader.from_batches(base.schema, base.to_batches(100_000)),
            {**opts, "hoodie.datasource.write.operation": "insert"},
        )
        out["insert_s"] = time.perf_counter() - t0
        del base
        table = hudi_ds.HudiTable(path, state_index=True) if state else None
        # outside the timings: what each batch wrote (rows in base files / log files), and for
        # the index rows the least reading a SIMPLE lookup needs and SIMPLE's own lookup time
        # (the index rows' ceilings, bench/report.py)
        seen: set[str] = set()
        _written_since(path, seen)
        indexed = index != "BUCKET"
        written = ("base_rows_written", "log_rows_written", "compacted_rows")
        for key in (*written, "key_read_s", "index_lookup_s"):
            out[key] = []
        for step in upsert_batches(w):
            if indexed:
                out["key_read_s"].append(_key_read_s(path))
            looked = [0.0]
            with _timed_simple_lookups(looked):
                t0 = time.perf_counter()  # one commit per batch, deletes as _hoodie_is_deleted rows
                if table is not None:
                    table.upsert(hudi_source(step), opts)
                else:
                    hudi_ds.write(path, hudi_source(step), opts)
                out["upsert_s"].append(time.perf_counter() - t0)
            out["index_lookup_s"].append(looked[0])
            for key, rows in zip(written, _written_since(path, seen), strict=True):
                out[key].append(rows)
        if table is not None and table.state_index is not None:
            out["state_mb"] = table.state_index.nbytes / 1e6
        out["write_hwm_mb"] = peak_mb()
        del table
        clear_peak()
        out["read_s"], (out["read_rows"], out["read_sum"]) = best_of(
            lambda: hudi_ds.read(path, columns=READ_COLUMNS), _count_and_sum
        )
        t0 = time.perf_counter()
        hudi_ds.read(path, filters=[("id", "in", _lookup_keys(w))])
        out["lookup_s"] = time.perf_counter() - t0
        out["read_hwm_mb"] = peak_mb()
        out["final_table"] = hudi_ds.read(path)
        return out

    return run


def _hudi_rs_read(w: Workload, root: Path, ref: str) -> Result:
    """hudi-rs (the ``hudi`` package) reading the MOR table hudi_ds wrote (parquet log blocks).

    Only hudi-rs's figures are reported: the table is written by hudi_ds untimed, the timed read
    projects ``READ_COLUMNS``, the lookup filters on the keys after a full read.
    """
    import hudi

    path = str(root / "table")
    _hudi_ds("MERGE_ON_READ", "parquet")(w, root, ref)

    def read(columns: list[str] | None = None) -> pa.Table:
        opts = hudi.HudiReadOptions()
        if columns:
            opts = opts.with_projection(columns)
        batches = hudi.HudiTableBuilder.from_base_uri(path).build().read(opts)
        return pa.Table.from_batches(batches)

    out: Result = {"read_only": True}
    clear_peak()
    out["read_s"], (out["read_rows"], out["read_sum"]) = best_of(
        lambda: read(READ_COLUMNS), _count_and_sum
    )
    t0 = time.perf_counter()
    read().filter(pc.field("id").isin(_lookup_keys(w)))
    out["lookup_s"] = time.perf_counter() - t0
    out["read_hwm_mb"] = peak_mb()
    out["final_table"] = read()
    return out


SYSTEMS: dict[str, Runner] = {
    "pyarrow": run_pyarrow,
    "hudi_ds_mor_parquet": _hudi_ds("MERGE_ON_READ", "parquet"),
    "hudi_ds_mor_avro": _hudi_ds("MERGE_ON_READ", "avro"),
    # compaction off: the whole table in log blocks (every read merges all versions)
    "hudi_ds_mor_parquet_logs": _hudi_ds("MERGE_ON_READ", "parquet", compaction=False),
    "hudi_ds_mor_avro_logs": _hudi_ds("MERGE_ON_READ", "avro", compaction=False),
    "hudi_ds_cow": _hudi_ds("COPY_ON_WRITE", "parquet"),
    "hudi_ds_mor_mdt": _hudi_ds("MERGE_ON_READ", "parquet", metadata="files"),
    "hudi_ds_mor_mdt_stats": _hudi_ds("MERGE_ON_READ", "parquet", metadata="stats"),
    # the non-bucket indexes: keys located by reading the files (SIMPLE), pruned by
    # footer bloom filters and key ranges first (BLOOM), or held by the writer (state index)
    "hudi_ds_mor_simple": _hudi_ds("MERGE_ON_READ", "parquet", "SIMPLE"),
    "hudi_ds_mor_bloom": _hudi_ds("MERGE_ON_READ", "parquet", "BLOOM"),
    "hudi_ds_mor_state": _hudi_ds("MERGE_ON_READ", "parquet", "SIMPLE", state=True),
    "hudi_ds_cow_simple": _hudi_ds("COPY_ON_WRITE", "parquet", "SIMPLE"),
    "hudi_ds_cow_bloom": _hudi_ds("COPY_ON_WRITE", "parquet", "BLOOM"),
    "hudi_ds_cow_state": _hudi_ds("COPY_ON_WRITE", "parquet", "SIMPLE", state=True),
}


DELETE_FLAG = "_delete"
IS_DELETED = "_hoodie_is_deleted"


def hudi_source(step: Any) -> pa.Table:
    """One upsert for a batch, Hudi's way of carrying deletes in a write (as a CDC stream
    does): the upserts, and a row per deleted key with ``_hoodie_is_deleted`` true and the
    batch's event time as its ``ts`` (other columns null); an upserted key that the batch also
    deletes keeps only its delete (the batch's deletes follow its upserts). Under Hudi's
    event-time ordering a delete row wins over every older version of its key."""
    dels, ups = step.deletes, step.upserts
    ups = ups.filter(pc.invert(pc.is_in(ups["id"], dels["id"])))
    ts = pc.max(step.upserts["ts"])
    dels = dels.append_column("ts", pa.repeat(ts, dels.num_rows))
    ups = ups.append_column(IS_DELETED, pa.repeat(pa.scalar(False), ups.num_rows))
    dels = dels.append_column(IS_DELETED, pa.repeat(pa.scalar(True), dels.num_rows))
    out = pa.concat_tables(
        [ups, dels.cast(pa.schema([ups.schema.field(n) for n in dels.column_names]))],
        promote_options="default",
    )
    return out.select(ups.column_names)


def with_is_deleted(t: pa.Table) -> pa.Table:
    """The insert with Hudi's ``_hoodie_is_deleted`` column (all false), so the upserts that
    carry deletes do not evolve the table's schema."""
    return t.append_column(IS_DELETED, pa.repeat(pa.scalar(False), t.num_rows))


def delta_source(step: Any) -> pa.Table:
    """One merge source for a batch: the upserts (flag false) and the deletes (flag true, other
    columns null); an upserted key that the batch also deletes keeps only its delete (the
    batch's deletes follow its upserts)."""
    dels = step.deletes
    ups = step.upserts.filter(pc.invert(pc.is_in(step.upserts["id"], dels["id"])))
    ups = ups.append_column(DELETE_FLAG, pa.repeat(pa.scalar(False), ups.num_rows))
    dels = dels.append_column(DELETE_FLAG, pa.repeat(pa.scalar(True), dels.num_rows))
    return pa.concat_tables([ups, dels], promote_options="default")


def delta_merge(path: str, source: pa.Table, streamed: bool) -> None:
    """One ``merge`` per batch: the partition column in the predicate, deletes by the flag,
    updates only when the incoming ``ts`` is not older, inserts of the rest."""
    from deltalake import DeltaTable

    (
        DeltaTable(path)
        .merge(
            source=source,
            predicate="t.id = s.id AND t.dt = s.dt",
            source_alias="s",
            target_alias="t",
            streamed_exec=streamed,
        )
        .when_matched_delete(predicate=f"s.{DELETE_FLAG}")
        .when_matched_update_all(
            predicate=f"NOT s.{DELETE_FLAG} AND s.ts >= t.ts", except_cols=[DELETE_FLAG]
        )
        .when_not_matched_insert_all(predicate=f"NOT s.{DELETE_FLAG}", except_cols=[DELETE_FLAG])
        .execute()
    )


def _delta(streamed: bool) -> Runner:
    """delta-rs: ``write_deltalake`` (partitioned by ``dt``), then one :func:`delta_merge` per
    batch with ``streamed_exec=streamed`` (both settings are systems; the faster is the peer)."""

    def run(w: Workload, root: Path, ref: str) -> Result:
        from deltalake import DeltaTable, write_deltalake

        path = str(root / "delta")
        out: Result = {"upsert_s": [], "streamed_exec": streamed}
        clear_peak()
        base = insert_batch(w)
        t0 = time.perf_counter()
        write_deltalake(path, base, partition_by=["dt"])
        out["insert_s"] = time.perf_counter() - t0
        del base
        for step in upsert_batches(w):
            t0 = time.perf_counter()
            delta_merge(path, delta_source(step), streamed)
            out["upsert_s"].append(time.perf_counter() - t0)
        out["write_hwm_mb"] = peak_mb()
        clear_peak()
        out["read_s"], (out["read_rows"], out["read_sum"]) = best_of(
            lambda: DeltaTable(path).to_pyarrow_dataset().to_table(columns=READ_COLUMNS),
            _count_and_sum,
        )
        t0 = time.perf_counter()
        DeltaTable(path).to_pyarrow_dataset().to_table(filter=pc.field("id").isin(_lookup_keys(w)))
        out["lookup_s"] = time.perf_counter() - t0
        out["read_hwm_mb"] = peak_mb()
        out["final_table"] = DeltaTable(path).to_pyarrow_dataset().to_table()
        return out

    return run


def run_iceberg(w: Workload, root: Path, ref: str) -> Result:
    """pyiceberg: ``append``, then ``upsert`` with its join column ``id`` (the key) and a
    ``delete`` per batch; the table is partitioned by ``dt`` (identity) like the others.

    ``join_cols=["id"]`` is pyiceberg at its best: with one join column it matches through one
    ``In`` filter, with ``["id", "dt"]`` it builds an ``Or`` of ``And``s, one per source row
    (minutes for a batch of a few thousand rows). Even so, partitioned, pyiceberg binds that
    filter against every data file in Python (17 s for one 20,000-row batch at scale 0.1), so
    it runs batches only until ``ICEBERG_BUDGET_S`` seconds of upserts are spent (at least one
    batch); ``batches_done`` says how many, and its final table is checked against the
    reference of those batches.

    Semantics differ: pyiceberg's upsert has no ordering condition, so late rows (older ``ts``)
    overwrite newer ones -- its final table is expected NOT to match the reference, and then no
    ratio is shown for it.
    """
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.expressions import In

    catalog = SqlCatalog(
        "bench", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/warehouse"
    )
    catalog.create_namespace("b")
    out: Result = {"upsert_s": []}
    clear_peak()
    base = insert_batch(w)
    table = catalog.create_table("b.t", schema=base.schema)
    with table.update_spec() as spec:
        spec.add_identity("dt")
    table = catalog.load_table("b.t")
    t0 = time.perf_counter()
    table.append(base)
    out["insert_s"] = time.perf_counter() - t0
    del base
    for step in upsert_batches(w):
        if sum(out["upsert_s"]) >= ICEBERG_BUDGET_S:
            break
        t0 = time.perf_counter()
        table = catalog.load_table("b.t")
        table.upsert(step.upserts, join_cols=["id"])
        table = catalog.load_table("b.t")
        # pyiceberg's In takes (term, literals) at run time; its pydantic model confuses mypy
        table.delete(delete_filter=In("id", step.deletes["id"].to_pylist()))  # type: ignore[call-arg,arg-type]
        out["upsert_s"].append(time.perf_counter() - t0)
    out["write_hwm_mb"] = peak_mb()
    clear_peak()
    out["read_s"], (out["read_rows"], out["read_sum"]) = best_of(
        lambda: catalog.load_table("b.t").scan(selected_fields=tuple(READ_COLUMNS)).to_arrow(),
        _count_and_sum,
    )
    t0 = time.perf_counter()
    lookup = In("id", _lookup_keys(w))  # type: ignore[call-arg,arg-type]
    catalog.load_table("b.t").scan(row_filter=lookup).to_arrow()
    out["lookup_s"] = time.perf_counter() - t0
    out["read_hwm_mb"] = peak_mb()
    out["final_table"] = catalog.load_table("b.t").scan().to_arrow()
    out["batches_done"] = len(out["upsert_s"])
    if out["batches_done"] < w.batches:
        out["reference"] = Workload(w.base_rows, out["batches_done"], w.batch_rows, w.seed)
    return out


SYSTEMS["delta_rs"] = _delta(streamed=False)
SYSTEMS["delta_rs_streamed"] = _delta(streamed=True)
SYSTEMS["pyiceberg"] = run_iceberg
SYSTEMS["hudi_rs_read"] = _hudi_rs_read


def _spark():  # type: ignore[no-untyped-def]
    from hudi_ds.spark.session import local_session

    return local_session(
        "hudi_ds-bench",
        **{
            "spark.sql.python.filterPushdown.enabled": "true",
            "spark.driver.memory": "4g",
        },
    )


def _cached(spark, table: pa.Table, parts: int = 2):  # type: ignore[no-untyped-def]
    df = spark.createDataFrame(table).repartition(parts).cache()
    df.count()
    return df


def _spark_runner(fmt: str) -> Runner:
    """Spark on ``local[2]``: ``hudi_py`` upserts, or Spark's own parquet appends (ceiling).

    The timed read is the same query for both, on the same final rows: ``hudi_py`` reads its
    table, the parquet ceiling reads the reference final table as plain Parquet (the files it
    appended hold every version, not the final rows). Memory: this process plus Spark's JVM.

    ``hudi_py`` runs at its defaults: MOR, and -- as Hudi's Spark data source -- batch writes
    neither schedule nor execute compactions (no ``hoodie.compact.inline``), so the five upsert
    batches write log blocks only and the read merges them onto the inserted base files.
    """

    def run(w: Workload, root: Path, ref: str) -> Result:
        from pyspark.sql import functions as F

        spark = _spark()
        pids: tuple[int | str, ...] = ("self",)
        with contextlib.suppress(Exception):  # no JVM pid: this process only
            pids = ("self", int(spark._jvm.java.lang.ProcessHandle.current().pid()))
        path = str(root / "t")
        opts = SPARK_OPTS
        out: Result = {"upsert_s": [], "memory": "python + JVM" if len(pids) > 1 else "python"}
        clear_peak(pids)
        base = _cached(
            spark, insert_batch(w) if fmt == "parquet" else with_is_deleted(insert_batch(w))
        )
        t0 = time.perf_counter()
        if fmt == "parquet":
            base.write.mode("append").parquet(path)
        else:
            base.write.format("hudi_py").mode("append").options(
                **{**opts, "hoodie.datasource.write.operation": "insert"}
            ).save(path)
        out["insert_s"] = time.perf_counter() - t0
        base.unpersist()
        for step in upsert_batches(w):
            # parquet writes the batch's upserts; hudi_py one upsert with the deletes as
            # _hoodie_is_deleted rows (hudi_source)
            ups = _cached(spark, step.upserts if fmt == "parquet" else hudi_source(step))
            t0 = time.perf_counter()
            if fmt == "parquet":
                ups.write.mode("append").parquet(path)
            else:
                ups.write.format("hudi_py").mode("append").options(**opts).save(path)
            out["upsert_s"].append(time.perf_counter() - t0)
            ups.unpersist()
        out["write_hwm_mb"] = peak_mb(pids)
        clear_peak(pids)

        def load():  # type: ignore[no-untyped-def]
            if fmt == "parquet":
                return spark.read.parquet(ref)
            return spark.read.format("hudi_py").load(path)

        def query():  # type: ignore[no-untyped-def]
            # a new DataFrame each run: collecting one again reuses its shuffle output
            return (
                load()
                .select(*READ_COLUMNS)
                .agg(F.count("id").alias("n"), F.sum("d1").alias("s"), F.max("ts").alias("m"))
            )

        out["read_s"], (out["read_rows"], out["read_sum"]) = best_of(
            lambda: query().collect()[0], lambda row: (row["n"], row["s"])
        )
        reader = load()
        t0 = time.perf_counter()
        reader.filter(F.col("id").isin(_lookup_keys(w))).collect()
        out["lookup_s"] = time.perf_counter() - t0
        out["read_hwm_mb"] = peak_mb(pids)
        if fmt == "parquet":
            out.update(_python_source_floor(spark, ref, query_of=lambda r: r.select(*READ_COLUMNS)))
        out["final_table"] = reader.toArrow() if fmt != "parquet" else None
        spark.stop()
        return out

    return run


def _python_source_floor(spark, ref: str, query_of: Callable[[Any], Any]) -> Result:  # type: ignore[no-untyped-def]
    """The floor of any Python data source's read: a source that does nothing but yield the
    reference file's Arrow batches (``pq.ParquetFile.iter_batches``, its row groups over two
    input partitions), timed on the same query as ``spark.read.parquet``.

    pyspark's Python data source API gets no column pruning (``DataSourceReader.read`` is not
    told the query's columns; ``../shared/reference/spark-python-datasource.md`` 9.3): every
    column crosses from the Python worker to the JVM as Arrow, so this is what the ``hudi_py``
    read costs before any Hudi work (listing, merging log blocks) -- the bound of the Spark read
    target. Both it and ``spark.read.parquet`` are timed here warm, on a second run of the same
    query (``read_parquet_warm_s``, ``read_pyds_s``)."""
    from pyspark.sql import functions as F
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    schema = spark.read.parquet(ref).schema

    class _Reader(DataSourceReader):  # pickled by value (defined in a function)
        def __init__(self, path: str) -> None:
            self.path = path

        def partitions(self) -> list[InputPartition]:
            n = pq.ParquetFile(self.path).metadata.num_row_groups
            return [InputPartition(list(range(i, n, 2))) for i in range(min(2, n))]

        def read(self, partition: InputPartition):  # type: ignore[no-untyped-def]
            yield from pq.ParquetFile(self.path).iter_batches(
                batch_size=65_536, row_groups=partition.value
            )

    class _Source(DataSource):
        @classmethod
        def name(cls) -> str:
            return "bench_plain_arrow"

        def schema(self):  # type: ignore[no-untyped-def]
            return schema

        def reader(self, schema):  # type: ignore[no-untyped-def]
            return _Reader(self.options["path"])

    spark.dataSource.register(_Source)
    out: Result = {}
    for key, load in (
        ("read_parquet_warm", lambda: spark.read.parquet(ref)),
        ("read_pyds", lambda: spark.read.format("bench_plain_arrow").load(ref)),
    ):

        def query(load: Callable[[], Any] = load) -> Any:
            return query_of(load()).agg(
                F.count("id").alias("n"), F.sum("d1").alias("s"), F.max("ts").alias("m")
            )

        # both warm, timed alike: a first Python data source query starts the Python workers.
        # Each timed query is a new DataFrame: collecting the same one again reuses the
        # shuffle output of its first run (only the final aggregate would be timed).
        query().collect()
        out[f"{key}_s"], (out[f"{key}_rows"], out[f"{key}_sum"]) = best_of(
            lambda: query().collect()[0], lambda row: (row["n"], row["s"])
        )
    return out


SYSTEMS["spark_parquet"] = _spark_runner("parquet")
SYSTEMS["hudi_ds_spark"] = _spark_runner("hudi_py")
