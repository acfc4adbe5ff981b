"""The acceptance report's bounds: the ceilings of the missed targets, from one run's figures."""

from __future__ import annotations

from typing import Any

from bench.report import acceptance, write_rows_table, write_shares


def _meta(**results: dict[str, Any]) -> dict[str, Any]:
    ok = {"check": {"correct": True}}
    return {
        "workload": {"base_rows": 1_000, "batches": 3, "batch_rows": 100, "seed": 1},
        "compaction": {"pyarrow_rows_per_s": 1_000.0},
        "results": [{"system": n, **ok, **r} for n, r in results.items()],
    }


def _row(lines: list[str], start: str) -> list[str]:
    (line,) = [x for x in lines if x.startswith("| " + start)]
    return [c.strip() for c in line.strip("|").split("|")]


def test_missed_targets_name_their_ceilings() -> None:
    meta = _meta(
        pyarrow={"upsert_s": [0.1, 0.1, 0.1], "read_s": 1.0},
        # batch 2 ran the compaction; the table then held 1,000 + 2 * (40 - 1) rows
        hudi_ds_mor_parquet={"upsert_s": [0.4, 2.0, 0.4], "read_s": 1.0},
        hudi_ds_cow={"upsert_s": [3.0, 3.0, 3.0]},
        delta_rs={"upsert_s": [2.0, 2.0, 2.0]},
        spark_parquet={
            "upsert_s": [1.0],
            "read_s": 1.0,
            "read_parquet_warm_s": 0.5,
            "read_pyds_s": 2.0,
        },
        hudi_ds_spark={"upsert_s": [1.0], "read_s": 6.0},
    )
    lines = acceptance(meta, None)
    mor = _row(lines, "MOR upsert batch")
    assert mor[3] == "no"
    # ceiling: (0.3 s of pyarrow batches + 1,078 rows / 1,000 rows/s) / 3 batches = 0.4593 s
    assert "~1,078 rows" in mor[4] and "1.08 s" in mor[4]
    assert "would be 4.59x time" in mor[4] and "without the compaction batch: 4.00x" in mor[4]
    vs_delta = _row(lines, "MOR upsert (hudi_ds_mor_parquet) vs delta-rs")
    assert "would be 4.35x throughput" in vs_delta[4]  # 2.0 / 0.4593
    cow = _row(lines, "COW upsert")
    # every batch rewrites the table: 1,000, 1,039, 1,078 rows at 1,000 rows/s = 1.039 s mean
    assert cow[3] == "no" and "1.04 s a batch = 1.92x delta-rs" in cow[4]
    assert "hudi_ds takes 2.89x that ceiling" in cow[4]
    spark = _row(lines, "Spark: hudi_py snapshot read")
    assert spark[3] == "no" and "takes 4.00x spark.read.parquet" in spark[4]


def test_met_targets_have_no_bound() -> None:
    meta = _meta(
        hudi_ds_cow={"upsert_s": [0.5] * 3},
        delta_rs={"upsert_s": [2.0, 2.0, 2.0]},
        hudi_ds_mor_parquet={"upsert_s": [0.1, 0.1, 0.1], "read_s": 1.0},
    )
    cow = _row(acceptance(meta, None), "COW upsert")
    assert cow[3] == "yes" and cow[4] == "-"


#: a SIMPLE-index MOR row's three batches: 200 / 1,100 (the compaction, 900 rows of it) / 200
#: base-file rows and 50 log rows each, 0.05 s of key reads and 0.4 s of lookup a batch
SIMPLE_BATCHES: dict[str, Any] = {
    "upsert_s": [1.0, 3.0, 1.0],
    "base_rows_written": [200, 1_100, 200],
    "log_rows_written": [50, 50, 50],
    "compacted_rows": [0, 900, 0],
    "key_read_s": [0.05, 0.05, 0.05],
    "index_lookup_s": [0.4, 0.4, 0.4],
}


def test_index_goals_name_their_ceilings() -> None:
    # pyarrow writes a 100-row batch in 0.1 s (1,000 rows/s); the read+rewrite rate is 1,000
    # rows/s. SIMPLE's batches: 200 / 1,100 (the compaction) / 200 base-file rows and 50 log
    # rows each -> Parquet work 0.25 / 1.15 / 0.25 s, plus 0.05 s of key reading a batch
    simple = SIMPLE_BATCHES
    meta = _meta(
        pyarrow={"upsert_s": [0.1, 0.1, 0.1], "read_s": 1.0},
        delta_rs={"upsert_s": [3.0, 3.0, 3.0]},
        hudi_ds_mor_simple=simple,
        hudi_ds_mor_state={**simple, "upsert_s": [0.7, 2.7, 0.7]},
    )
    lines = acceptance(meta, None)
    row = _row(lines, "SIMPLE-index MOR upsert")
    # 3.0 / (5 / 3) = 1.80x measured; ceiling (0.3 + 1.2 + 0.3) / 3 = 0.60 s = 5.00x
    assert row[2].startswith("1.80x") and row[3] == "no"
    assert "compaction (every 5 delta commits) runs inside batch 2" in row[4]
    assert "1,500 base-file rows" in row[4] and "150 log rows" in row[4]
    assert "takes 0.60 s a batch = 5.00x delta-rs" in row[4]
    assert "without the compaction batch: 3.00x" in row[4]
    state = _row(lines, "state index vs SIMPLE, MOR")
    # 5/3 over 4.1/3 = 1.22x; ceiling: Parquet work 0.55 s a batch, lookup 0.4 s: 1.73x
    assert state[2] == "1.22x" and state[3] == "no"
    assert "plain pyarrow 0.55 s a batch, SIMPLE's lookup 0.40 s" in state[4]
    assert "gains at most 1.73x from a free lookup" in state[4]
    cow = _row(lines, "state index vs SIMPLE, COW")
    assert cow[2].startswith("not measured")


def test_write_rows_against_their_ceilings_and_floors() -> None:
    # pyarrow: 1,000 rows/s for a batch, and a read+rewrite; the floor (key-order merge + bloom
    # filter) 500 rows/s. SIMPLE's Parquet work 0.25 / 1.15 / 0.25 s (ceiling 0.55 s a batch);
    # its floor adds 900 compacted rows at 500 instead of 1,000 rows/s (0.9 s) and 0.05 s of
    # key reads a batch: (0.3 + 2.1 + 0.3) / 3 = 0.9 s
    simple = SIMPLE_BATCHES
    cow = {
        **simple,
        "upsert_s": [0.125, 0.125, 0.125],
        "base_rows_written": [100, 100, 100],
        "log_rows_written": [0, 0, 0],
        "compacted_rows": [0, 0, 0],
    }
    meta = _meta(
        pyarrow={"upsert_s": [0.1, 0.1, 0.1], "read_s": 1.0},
        hudi_ds_mor_simple=simple,
        hudi_ds_cow=cow,
        spark_parquet={"upsert_s": [1.0]},
        hudi_ds_spark={"upsert_s": [1.25]},
    )
    meta["compaction"]["floor_rows_per_s"] = 500.0
    shares = dict((n, (v, f)) for n, v, f in write_shares(meta, {"stream_ratio": 2.0}))
    v, f = shares["hudi_ds_mor_simple"]
    assert round(v, 3) == 0.33 and f is not None and round(f, 3) == round(0.55 / 0.9, 3)
    # no compaction, no key reads: the floor is the ceiling
    assert [round(x, 6) for x in shares["hudi_ds_cow"]] == [0.8, 1.0]  # type: ignore[arg-type]
    assert shares["hudi_ds_spark"] == (0.8, None)
    assert shares["streaming sink (bench_streaming)"] == (0.5, None)
    table = write_rows_table(list(write_shares(meta, None)))
    assert "| hudi_ds_mor_simple | 33% | 61% |" in table and "| hudi_ds_cow | 80% | 100% |" in table
    stream = {
        "stream_ratio": 2.0,
        "stream_hudi_s": 2.0,
        "stream_parquet_s": 1.0,
        "stream_files": 8,
        "stream_rows_per_file": 100,
    }
    row = _row(acceptance(meta, stream), "every write row")
    assert row[2] == "lowest 33% (hudi_ds_mor_simple); 2 of 4 rows at the goal" and row[3] == "no"
    assert row[4].endswith("allows at most: hudi_ds_mor_simple 61%")
    # log rows grouped by file group with their meta columns: 500 rows/s -> SIMPLE's floor
    # adds 0.05 s a batch (0.95 s): 58%
    meta["results"][0]["log_floor_s"] = [0.2, 0.2, 0.2]
    assert "| hudi_ds_mor_simple | 33% | 58% |" in write_rows_table(write_shares(meta, None))
    del meta["compaction"]["floor_rows_per_s"]  # an older run: no floor, no bound
    row = _row(acceptance(meta, None), "every write row")
    assert row[3] == "no" and row[4] == "-"


def test_record_index_rows() -> None:
    """RECORD_INDEX against GLOBAL_SIMPLE on the largest table and its growth with the table
    (bench/record_index.py); a missed target names the lookup's share and the write's
    ceiling; an incorrect final table gives no ratio."""

    def run(index: str, rows: int, secs: float, **more: Any) -> dict[str, Any]:
        return {"index": index, "rows": rows, "upsert_s": secs, "cpu_s": secs, **more} | {
            "check": {"correct": True}
        }

    ri = {
        "updates": 100,
        "runs": [
            run("RECORD_INDEX", 1_000, 1.0, lookup_s=0.2, index_mb=1.0),
            run("GLOBAL_SIMPLE", 1_000, 1.5),
            run("RECORD_INDEX", 16_000, 2.0, lookup_s=1.0, index_mb=16.0, cold_s=5.0),
            run("GLOBAL_SIMPLE", 16_000, 4.0, cold_s=6.0),
            run("GLOBAL_SIMPLE_WITHOUT_RLI", 16_000, 3.0),
            # the small batch: not the goal's figures
            run("RECORD_INDEX", 16_000, 0.5, updates=10, lookup_s=0.1, index_mb=16.0),
            run("GLOBAL_SIMPLE_WITHOUT_RLI", 16_000, 2.5, updates=10),
        ],
    }
    lines = acceptance({**_meta(), "record_index": ri}, None)
    vs = _row(lines, "global upsert, RECORD_INDEX vs GLOBAL_SIMPLE")
    assert vs[1:4] == [">= 3x faster", vs[2], "no"] and vs[2].startswith("2.00x (2.00 s vs 4.00 s")
    assert "record index turned off 3.00 s" in vs[2]
    assert "takes 1.00 s at 16,000 rows" in vs[4] and "would be 4.00x GLOBAL_SIMPLE" in vs[4]
    assert "a batch of 10 keys, whose blocks are few: RECORD_INDEX 0.50 s" in vs[4]
    assert "the first batch, cold: 1.20x, 5.00 s vs 6.00 s" in vs[0]
    grow = _row(lines, "global upsert with RECORD_INDEX, batch time")
    assert grow[2:4] == ["2.00x", "no"]
    ri["runs"][3]["check"] = {"correct": False}
    vs = _row(acceptance({**_meta(), "record_index": ri}, None), "global upsert, RECORD_INDEX vs")
    assert vs[2:4] == ["no ratio: final table incorrect (GLOBAL_SIMPLE at 16,000)", "no"]


def test_consistent_hashing_rows() -> None:
    from bench.consistent_hashing import acceptance_rows

    def system(small: float, big: float, groups: int, base_max: int) -> dict[str, Any]:
        layout = {"file_groups": groups, "base_max": base_max, "base_median": base_max / 2}
        return {
            "small_s": [small, small * 2],
            "small_cpu_s": [small],
            "big_s": [big],
            "big_cpu_s": [big],
            "small_layout": {**layout, "file_groups": 4},
            "big_layout": layout,
            "pyarrow_small_s": 0.1,
            "pyarrow_big_s": 0.4,
            "check": {"correct": True},
        }

    res = {
        "base_rows": 1_000,
        "grown_rows": 16_000,
        "batch_rows": 100,
        "target_file_bytes": 1_000,
        "results": {
            "consistent_hashing": system(1.0, 2.0, 50, 1_900),
            "simple_bucket_4": system(1.0, 1.1, 4, 9_000),
        },
    }
    growth, files = acceptance_rows(res)
    assert growth[1:4] == ("<= 1.3x", growth[2], "no") and growth[2].startswith("2.00x")
    assert "50 file groups at 16x against 4 at 1x" in growth[4] and "(4.00x)" in growth[4]
    assert files[2].startswith("largest 1.90x") and files[3] == "yes"
    res["results"]["consistent_hashing"]["check"] = {"correct": False}
    assert acceptance_rows(res)[0][2] == "no ratio: final table incorrect"
    assert acceptance_rows(None)[0][2].startswith("not measured")


def test_clustering_row() -> None:
    """The two-column filtered read after a z-order clustering (bench/clustering.py): met when
    it opens fewer files and takes less CPU time than before; wrong rows give no figures; not run
    says how to run it."""
    from bench.clustering import LAYOUTS

    def read(files: int, s: float, correct: bool = True) -> dict[str, Any]:
        return {"files_opened": files, "s": s, "cpu_s": s, "correct": correct}

    def res(z_box: dict[str, Any]) -> dict[str, Any]:
        q = {lay: read(16, 0.05) for lay in LAYOUTS}
        return {
            "files": 16,
            "queries": {
                "box": {"arrival": read(16, 0.10), "z-order": z_box, "linear": read(4, 0.03)},
                "x": {**q, "z-order": read(5, 0.02), "linear": read(1, 0.01)},
                "y": {**q, "z-order": read(5, 0.02)},
            },
        }

    lines = acceptance(_meta(), None, clustered=res(read(3, 0.02)))
    row = _row(lines, "filtered read on two columns")
    assert row[3] == "yes"
    assert row[2].startswith("box: 16 -> 3 of 16 files, 100 ms CPU (100 ms) -> 20 ms CPU (20 ms)")
    assert "5.0x less CPU; linear 4 files, 30 ms CPU (30 ms)" in row[2]
    assert "x: 16 -> 5 files (linear 1)" in row[2] and "y: 16 -> 5 files (linear 16)" in row[2]
    slower = _row(acceptance(_meta(), None, clustered=res(read(3, 0.2))), "filtered read on two")
    assert slower[3] == "no"
    wrong = _row(acceptance(_meta(), None, clustered=res(read(3, 0.02, False))), "filtered read on")
    assert wrong[3] == "no" and "wrong rows (box z-order)" in wrong[2]
    missing = _row(acceptance(_meta(), None), "filtered read on two columns")
    assert "python -m bench.clustering" in missing[2]


def test_read_table_rows() -> None:
    def r(ratio: float, correct: bool | None = True) -> dict[str, Any]:
        return {"ratio": ratio, "cpu_ratio": ratio, "load": 1.0, "rows": 9, "correct": correct}

    res = {"cow": r(1.1), "mor read_optimized": r(1.3, None), "mor snapshot": r(2.0, False)}
    lines = acceptance(_meta(), None, read_table=res)
    assert _row(lines, "Spark: read_table cow ")[2:] == ["1.10x (cpu 1.10x, load 1.0)", "yes", "-"]
    assert _row(lines, "Spark: read_table mor read_optimized")[3] == "no"
    assert _row(lines, "Spark: read_table mor snapshot")[2:4] == ["no ratio: 9 rows read", "no"]
    assert "not measured" in _row(lines, "Spark: read_table mor_logs snapshot")[2]
