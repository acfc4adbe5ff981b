"""The benchmark's acceptance ratios, each with its target, the measured value and whether it is met.

``python -m bench.report [--started EPOCH]`` reads ``bench/results/latest.json`` (``python -m
bench``), ``bench/results/streaming.json`` (``python -m bench.bench_streaming``) and
``bench/results/filtered_read.json`` (``python -m bench.filtered_read``),
``bench/results/clustering.json`` (``python -m bench.clustering``),
``bench/results/merge.json`` (``python -m bench.merge``),
``bench/results/consistent_hashing.json`` (``python -m bench.consistent_hashing``),
``bench/results/table_scale.json`` (``python -m bench.table_scale``),
``bench/results/timeline_scale.json`` (``python -m bench.timeline_scale``) and
``bench/results/read_table.json`` (``python -m bench.bench_read --read-table``), prints the
table, writes it to ``bench/results/acceptance.md`` and, given the epoch second ``make bench``
started at, its duration. ``python -m bench`` prints the same table without the streaming row.
"""

from __future__ import annotations

import argparse
import json
import operator
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def best_delta(ok: dict[str, dict]) -> dict | None:
    """delta-rs at its best: the faster (mean upsert batch) of its correct settings."""
    cands = [ok[n] for n in ("delta_rs", "delta_rs_streamed") if n in ok and correct(ok[n]) is True]
    return min(cands, key=lambda r: _mean(r["upsert_s"])) if cands else None


def correct(r: dict) -> bool | None:
    """True / False from the final-table check; None for systems that do not upsert."""
    c = r.get("check")
    return None if not c else bool(c["correct"])


class _Ceilings:
    """What bounds a missed target, from ceilings measured in the same run.

    The physical ceiling of a Hudi write is the Parquet work its protocol requires, done by
    plain pyarrow at the rates the ``compaction`` measurement takes in this run (``pyarrow
    read+rewrite``: read a file group's rows and write them again with hudi_ds's Parquet options,
    as many threads as the compaction): a COPY_ON_WRITE upsert must rewrite every file group it
    touches -- the workload's updates are spread uniformly over all keys, so every batch touches
    every file group --, and a MERGE_ON_READ table at Hudi's defaults compacts every 5 delta
    commits, rewriting the whole table inside the measured batches."""

    def __init__(self, meta: dict[str, Any], res: dict[str, dict[str, Any]]) -> None:
        self.meta, self.res = meta, res
        w = meta["workload"]
        self.base_rows, self.batch_rows = int(w["base_rows"]), int(w["batch_rows"])
        # bench/workload.py: 40% of a batch are new keys, 1% of batch_rows keys are deleted
        self.growth = (self.batch_rows - int(self.batch_rows * 0.6)) - self.batch_rows // 100

    def _rewrite_rate(self) -> float:
        return float(self.meta["compaction"]["pyarrow_rows_per_s"])

    def _rows_before(self, batch: int) -> int:
        return self.base_rows + batch * self.growth

    def mor_vs(self, peer_batch_s: float, unit: str, lower_is_better: bool) -> str:
        """The MOR row against a peer's mean batch time: the ceiling with the inline compaction
        (``pyarrow`` batch writes + the compaction's rows rewritten by pyarrow), and hudi_ds's own
        figure without the compaction batch."""
        ups = self.res["hudi_ds_mor_parquet"]["upsert_s"]
        pa_ups = self.res["pyarrow"]["upsert_s"]
        k = max(range(len(ups)), key=lambda i: ups[i])  # the batch that ran the compaction
        rows = self._rows_before(k + 1)
        comp_s = rows / self._rewrite_rate()
        ceiling_s = (sum(pa_ups) + comp_s) / len(ups)
        rest = [u for i, u in enumerate(ups) if i != k]
        if lower_is_better:
            c, o = ceiling_s / peer_batch_s, _mean(rest) / peer_batch_s
        else:
            c, o = peer_batch_s / ceiling_s, peer_batch_s / _mean(rest)
        return (
            f"the compaction (every 5 delta commits, Hudi's default) runs inside batch {k + 1}: "
            f"rewriting its ~{rows:,} rows takes plain pyarrow {comp_s:.2f} s "
            f"({self._rewrite_rate():,.0f} rows/s), so even pyarrow's batch writes plus that "
            f"rewrite would be {c:.2f}{unit}; hudi_ds without the compaction batch: {o:.2f}{unit}"
        )

    def cow_vs(self, peer_batch_s: float) -> str:
        """The COW row against delta-rs: every batch rewrites the whole table at best at
        pyarrow's read+rewrite rate."""
        n = len(self.res["hudi_ds_cow"]["upsert_s"])
        ceiling_s = _mean([self._rows_before(i) / self._rewrite_rate() for i in range(n)])
        cow = _mean(self.res["hudi_ds_cow"]["upsert_s"])
        return (
            f"each batch touches every file group, so it must rewrite the table "
            f"({self._rows_before(0):,} -> {self._rows_before(n - 1):,} rows): at plain pyarrow's "
            f"read+rewrite rate ({self._rewrite_rate():,.0f} rows/s) that alone is "
            f"{ceiling_s:.2f} s a batch = {peer_batch_s / ceiling_s:.2f}x delta-rs; hudi_ds "
            f"takes {cow / ceiling_s:.2f}x that ceiling"
        )

    def _protocol_s(self, name: str) -> list[float]:
        """Per batch of system ``name``: plain pyarrow doing only the Parquet work its commits
        did -- the rows of the base files they wrote read and rewritten at the read+rewrite rate
        (a small file taking inserts, a COW merge, a compaction's new base files), the rows of
        their log blocks written at pyarrow's rate for the batch's own write."""
        r = self.res[name]
        write_rate = self.batch_rows / _mean(self.res["pyarrow"]["upsert_s"])
        return [
            b / self._rewrite_rate() + g / write_rate
            for b, g in zip(r["base_rows_written"], r["log_rows_written"], strict=True)
        ]

    def simple_vs(self, peer_batch_s: float) -> str:
        """The SIMPLE MOR row against delta-rs: the Parquet work Hudi's rules require of it
        plus the least reading its lookup needs (the record keys of the latest base files)."""
        name = "hudi_ds_mor_simple"
        r = self.res[name]
        work = self._protocol_s(name)
        ceiling_s = _mean([p + k for p, k in zip(work, r["key_read_s"], strict=True)])
        ups = r["upsert_s"]
        compacting = [i for i, c in enumerate(r["compacted_rows"]) if c]
        rest = [u for i, u in enumerate(ups) if i not in compacting]
        where = (
            f"the compaction (every 5 delta commits) runs inside batch "
            f"{', '.join(str(i + 1) for i in compacting)}"
            if compacting
            else "no compaction ran"
        )
        return (
            "by Hudi's MERGE_ON_READ rules for an index that cannot index log files, each "
            "batch's inserts rewrite a small base-only file slice per partition, and "
            f"{where}: {sum(r['base_rows_written']):,} base-file rows written over the batches and "
            f"{sum(r['log_rows_written']):,} log rows. Plain pyarrow doing only that Parquet "
            f"work, plus reading the record keys a SIMPLE lookup joins "
            f"({_mean(r['key_read_s']):.2f} s a batch), takes {ceiling_s:.2f} s a batch = "
            f"{peer_batch_s / ceiling_s:.2f}x delta-rs"
            + (
                f"; hudi_ds without the compaction batch: {peer_batch_s / _mean(rest):.2f}x"
                if compacting and rest
                else ""
            )
        )

    def state_vs(self, simple: str) -> str:
        """The state index against SIMPLE: it answers the lookup from memory but writes the
        same files, so even a writer at the Parquet ceiling gains at most SIMPLE's lookup."""
        work = _mean(self._protocol_s(simple))
        lookup = _mean(self.res[simple]["index_lookup_s"])
        return (
            "the state index answers the lookup from memory and writes the same files as SIMPLE "
            f"(Hudi's layout rules): that Parquet work alone takes plain pyarrow {work:.2f} s a "
            f"batch, SIMPLE's lookup {lookup:.2f} s a batch (measured inside its batches), so "
            f"even a writer at that ceiling gains at most {(work + lookup) / work:.2f}x from a free "
            "lookup"
        )

    def _floor_s(self, name: str) -> list[float] | None:
        """Per batch of system ``name``: :meth:`_protocol_s` plus the least of what else Hudi's
        protocol has its commits do -- a compaction's rows merged in record-key order with the
        bloom filter of every key in each new base file (Hudi's defaults), at the ``floor`` rate
        the compaction measurement takes; log rows with their meta columns, grouped by file
        group and written one file each, at the rate of the ``pyarrow`` row's ``log_floor_s``
        (:func:`bench.systems._log_floor_write`); a SIMPLE or BLOOM lookup's reading of the
        record keys (measured inside its batches). The other base files written carry their old file's bloom
        filter (only new keys hashed), which this floor leaves out: it is a lower bound. None
        when this run has no floor rate."""
        floor_rate = self.meta["compaction"].get("floor_rows_per_s")
        if not floor_rate:
            return None
        r, pa_row = self.res[name], self.res["pyarrow"]
        write_rate = self.batch_rows / _mean(pa_row.get("log_floor_s") or pa_row["upsert_s"])
        lookup = r["key_read_s"] if ("simple" in name or "bloom" in name) else []
        out = []
        for i, (b, g, c) in enumerate(
            zip(r["base_rows_written"], r["log_rows_written"], r["compacted_rows"], strict=True)
        ):
            s = (b - c) / self._rewrite_rate() + c / floor_rate + g / write_rate
            out.append(s + (lookup[i] if i < len(lookup) else 0.0))
        return out

    def write_rows(self, streaming: dict[str, Any] | None) -> list[tuple[str, float, float | None]]:
        """Every write row's throughput as a share of its ceiling's, with the share its floor
        allows (None: no floor measured): hudi_ds's own writers against plain pyarrow doing
        the Parquet work of their commits (:meth:`_protocol_s`), the Spark upsert against
        ``df.write.parquet`` of the same batches, the streaming sink against Spark's parquet
        sink on the same stream."""
        out: list[tuple[str, float, float | None]] = []
        for name, r in self.res.items():
            if "base_rows_written" not in r or not r.get("upsert_s"):
                continue
            ceiling = _mean(self._protocol_s(name))
            floor = self._floor_s(name)
            out.append(
                (
                    name,
                    ceiling / _mean(r["upsert_s"]),
                    None if floor is None else ceiling / _mean(floor),
                )
            )
        sp, hs = self.res.get("spark_parquet"), self.res.get("hudi_ds_spark")
        if sp and hs and sp.get("upsert_s") and hs.get("upsert_s"):
            out.append(("hudi_ds_spark", _mean(sp["upsert_s"]) / _mean(hs["upsert_s"]), None))
        if streaming and streaming.get("stream_ratio"):
            out.append(("streaming sink (bench_streaming)", 1 / streaming["stream_ratio"], None))
        return out

    def spark_read(self) -> str:
        """The Spark read against the floor of any Python data source (bench/systems.py)."""
        sp = self.res["spark_parquet"]
        floor = sp["read_pyds_s"] / sp["read_parquet_warm_s"]
        return (
            f"pyspark's Python data source gets no column pruning: a source that does nothing but "
            f"yield the same rows' Arrow batches takes {floor:.2f}x spark.read.parquet on this "
            f"query (both warm, {sp['read_pyds_s']:.2f} s vs {sp['read_parquet_warm_s']:.2f} s): "
            f"the API alone spends that much of the budget"
        )


def acceptance(
    meta: dict[str, Any],
    streaming: dict[str, Any] | None,
    filtered: dict[str, Any] | None = None,
    merge: dict[str, Any] | None = None,
    consistent_hashing: dict[str, Any] | None = None,
    clustered: dict[str, Any] | None = None,
    read_table: dict[str, Any] | None = None,
    table_scale: dict[str, Any] | None = None,
    timeline_scale: dict[str, Any] | None = None,
) -> list[str]:
    """Markdown lines: one row per acceptance target, the index goals included (the ratios
    measured in ``meta``'s run; the filtered-read goals from ``filtered``, a
    ``python -m bench.filtered_read --json`` result; the clustering goal from ``clustered``,
    ``python -m bench.clustering --json``)."""

    res = {r["system"]: r for r in meta.get("results", []) if "error" not in r}
    delta = best_delta(res)
    rows: list[tuple[str, ...]] = []
    ceil = _Ceilings(meta, res)

    def add(
        what: str,
        target: str,
        fn: Callable[[], tuple[float, str]],
        ok: Callable[[float], bool],
        needs: tuple[str, ...] = (),
        bound: Callable[[], str] | None = None,
    ) -> None:
        missing = [n for n in needs if n not in res]
        wrong = [
            n for n in needs if n in res and (res[n].get("check") or {}).get("correct") is False
        ]
        if missing:
            rows.append((what, target, f"not measured ({', '.join(missing)} did not run)", "-"))
            return
        if wrong:
            rows.append(
                (what, target, f"no ratio: final table incorrect ({', '.join(wrong)})", "no")
            )
            return
        try:
            value, shown = fn()
        except (KeyError, TypeError, ZeroDivisionError) as e:
            rows.append((what, target, f"not measured ({type(e).__name__}: {e})", "-"))
            return
        met = ok(value)
        why = "-"
        if not met and bound is not None:
            try:
                why = bound()
            except (KeyError, TypeError, ZeroDivisionError, ValueError) as e:
                why = f"not measured ({type(e).__name__}: {e})"
        rows.append((what, target, shown, "yes" if met else "no", why))

    def up(n: str) -> float:
        return _mean(res[n]["upsert_s"])

    def vs_delta(name: str, setting: str) -> tuple[float, str]:
        v = _mean(delta["upsert_s"]) / up(name)  # type: ignore[index]
        return v, f"{v:.2f}x ({setting})"

    def speedup(fast: str, slow: str) -> tuple[float, str]:
        v = up(slow) / up(fast)
        return v, f"{v:.2f}x"

    add(
        "MOR upsert batch (hudi_ds_mor_parquet) vs the best pyarrow write of the batch",
        "<= 3x time",
        lambda: (
            v := up("hudi_ds_mor_parquet") / up("pyarrow"),
            f"{v:.2f}x (pyarrow with {res['pyarrow'].get('write_options')})",
        ),
        lambda v: v <= 3,
        ("hudi_ds_mor_parquet", "pyarrow"),
        lambda: ceil.mor_vs(up("pyarrow"), "x time", lower_is_better=True),
    )
    if delta is None:
        rows.append(
            (
                "MOR / COW / SIMPLE-index MOR upserts vs delta-rs merge",
                ">= 10x / >= 2x / >= 5x",
                "not measured (no correct delta-rs run)",
                "-",
            )
        )
    else:
        setting = f"streamed_exec={delta.get('streamed_exec')}"
        peer_s = _mean(delta["upsert_s"])
        # the MOR and COW goals, and the SIMPLE index goal on the same workload
        for what, name, goal, bound in (
            (
                "MOR upsert (hudi_ds_mor_parquet) vs delta-rs merge at its best",
                "hudi_ds_mor_parquet",
                10,
                lambda: ceil.mor_vs(peer_s, "x throughput", lower_is_better=False),
            ),
            (
                "COW upsert (hudi_ds_cow) vs delta-rs merge at its best",
                "hudi_ds_cow",
                2,
                lambda: ceil.cow_vs(peer_s),
            ),
            (
                "SIMPLE-index MOR upsert (hudi_ds_mor_simple) vs delta-rs merge at its best",
                "hudi_ds_mor_simple",
                5,
                lambda: ceil.simple_vs(peer_s),
            ),
        ):
            add(
                what,
                f">= {goal}x throughput",
                partial(vs_delta, name, setting),
                partial(operator.le, goal),
                (name,),
                bound,
            )
    # the state index goal (MOR and COW)
    for kind, state, simple in (
        ("MOR", "hudi_ds_mor_state", "hudi_ds_mor_simple"),
        ("COW", "hudi_ds_cow_state", "hudi_ds_cow_simple"),
    ):
        add(
            f"state index vs SIMPLE, {kind} upserts ({state} vs {simple})",
            ">= 2x throughput",
            partial(speedup, state, simple),
            lambda v: v >= 2,
            (state, simple, "pyarrow"),
            partial(ceil.state_vs, simple),
        )
    try:
        rows.append(_write_rows_row(ceil.write_rows(streaming)))
    except (KeyError, TypeError, ZeroDivisionError) as e:
        rows.append(("every write row vs its ceiling", ">= 80%", f"not measured ({e})", "-"))
    add(
        "snapshot read of the MOR table (defaults: compaction every 5) vs pyarrow, same columns, "
        "same final rows",
        "<= 1.5x time",
        lambda: (v := res["hudi_ds_mor_parquet"]["read_s"] / res["pyarrow"]["read_s"], f"{v:.2f}x"),
        lambda v: v <= 1.5,
        ("hudi_ds_mor_parquet", "pyarrow"),
    )
    # the Avro goals on the tables without compaction: every row of the read comes from log
    # blocks (with compaction on, the read is mostly the base files' Parquet)
    add(
        "Cost of keeping column and partition stats: MOR upsert batch with them vs the metadata "
        "table without them",
        "<= 1.1x time",
        lambda: (v := up("hudi_ds_mor_mdt_stats") / up("hudi_ds_mor_mdt"), f"{v:.2f}x"),
        lambda v: v <= 1.1,
        ("hudi_ds_mor_mdt_stats", "hudi_ds_mor_mdt"),
    )
    add(
        "MOR with Avro log blocks, compaction off (all rows in log blocks): snapshot read rows/s",
        ">= 1,000,000 rows/s",
        lambda: (
            v := res["hudi_ds_mor_avro_logs"]["read_rows"] / res["hudi_ds_mor_avro_logs"]["read_s"],
            f"{v:,.0f}",
        ),
        lambda v: v >= 1_000_000,
        ("hudi_ds_mor_avro_logs",),
    )
    add(
        "MOR with Avro log blocks vs parquet log blocks, compaction off: snapshot read",
        "<= 3x time",
        lambda: (
            v := res["hudi_ds_mor_avro_logs"]["read_s"] / res["hudi_ds_mor_parquet_logs"]["read_s"],
            f"{v:.2f}x",
        ),
        lambda v: v <= 3,
        ("hudi_ds_mor_avro_logs", "hudi_ds_mor_parquet_logs"),
    )
    add(
        "MOR with Avro log blocks at defaults (compaction every 5): snapshot read rows/s",
        ">= 1,000,000 rows/s",
        lambda: (
            v := res["hudi_ds_mor_avro"]["read_rows"] / res["hudi_ds_mor_avro"]["read_s"],
            f"{v:,.0f}",
        ),
        lambda v: v >= 1_000_000,
        ("hudi_ds_mor_avro",),
    )
    add(
        "Spark: hudi_py upsert batch vs df.write.parquet of the batch",
        "<= 1.5x time",
        lambda: (v := up("hudi_ds_spark") / up("spark_parquet"), f"{v:.2f}x"),
        lambda v: v <= 1.5,
        ("hudi_ds_spark", "spark_parquet"),
    )
    add(
        "Spark: hudi_py snapshot read vs spark.read.parquet of the same rows",
        "<= 3x time",
        lambda: (v := res["hudi_ds_spark"]["read_s"] / res["spark_parquet"]["read_s"], f"{v:.2f}x"),
        lambda v: v <= 3,
        ("hudi_ds_spark", "spark_parquet"),
        lambda: ceil.spark_read(),
    )
    if streaming and "stream_ratio" in streaming:
        s = streaming
        table_ok = s.get("check", {}).get("correct")
        shown = (
            f"{s['stream_ratio']:.2f}x ({s['stream_hudi_s']:.1f} s vs {s['stream_parquet_s']:.1f} s, "
            f"{s['stream_files']} x {s['stream_rows_per_file']:,} events)"
        )
        if table_ok is False:
            rows.append(
                (
                    "Structured Streaming: hudi_py upsert sink vs Spark's parquet sink",
                    "<= 1.5x time",
                    f"no ratio: final table incorrect ({shown})",
                    "no",
                )
            )
        else:
            rows.append(
                (
                    "Structured Streaming: hudi_py upsert sink vs Spark's parquet sink",
                    "<= 1.5x time",
                    shown,
                    "yes" if s["stream_ratio"] <= 1.5 else "no",
                )
            )
    else:
        rows.append(
            (
                "Structured Streaming: hudi_py upsert sink vs Spark's parquet sink",
                "<= 1.5x time",
                "not measured here (python -m bench.bench_streaming)",
                "-",
            )
        )
    scaling = {
        r.get("rows"): r
        for r in meta.get("scaling", [])
        if r.get("system") == "hudi_ds_mor_parquet" and "upsert_s" in r
    }
    if len(scaling) >= 2:
        lo, hi = min(scaling), max(scaling)
        v = scaling[hi]["upsert_s"] / scaling[lo]["upsert_s"]
        rows.append(
            (
                f"upsert batch time, {hi:,}-row table vs {lo:,}-row table",
                "<= 1.3x",
                f"{v:.2f}x",
                "yes" if v <= 1.3 else "no",
            )
        )
    else:
        rows.append(("upsert batch time flat in table size", "<= 1.3x", "not measured", "-"))
    rows += _record_index_rows(meta.get("record_index") or {})
    mem = [m for m in meta.get("memory", []) if "peak_mb" in m]
    if len(mem) >= 2:
        # the two largest inputs: both past the writer task's buffer budget (write.task.max.size),
        # below which a write buffers its whole input by design (the smallest size is listed in
        # the memory table above)
        a, b = mem[-2], mem[-1]
        v = (b["peak_mb"] - b["rss_before_mb"]) / max(1.0, a["peak_mb"] - a["rss_before_mb"])
        budget = "" if len(mem) == 2 else ", both past the write.task.max.size buffer budget"
        rows.append(
            (
                f"peak memory of a streamed write, {b['rows']:,} vs {a['rows']:,} input rows "
                f"(growth over the RSS before the write, per fresh process{budget})",
                "independent of input size (<= 1.1x)",
                f"{v:.2f}x ({a['peak_mb']:,.0f} MB vs {b['peak_mb']:,.0f} MB peak)",
                "yes" if v <= 1.1 else "no",
            )
        )
    else:
        rows.append(
            ("peak memory of a streamed write vs input size", "<= 1.1x", "not measured", "-")
        )
    from bench.filtered_read import acceptance_rows

    rows += acceptance_rows(filtered)
    from bench.clustering import acceptance_rows as clustering_rows

    rows += clustering_rows(clustered)
    from bench.merge import acceptance_rows as merge_rows

    rows += merge_rows(merge)
    from bench.consistent_hashing import acceptance_rows as ch_rows

    rows += ch_rows(consistent_hashing)
    from bench.bench_read import acceptance_rows as read_table_rows

    rows += read_table_rows(read_table)
    from bench.table_scale import acceptance_rows as scale_rows

    rows += scale_rows(table_scale)
    from bench.timeline_scale import acceptance_rows as timeline_rows

    rows += timeline_rows(timeline_scale)
    out = [
        f"acceptance targets (run of {meta.get('date', '?')} at commit "
        f"{meta.get('commit', '?')}, "
        f"scale {meta.get('scale', '?')})",
        "",
        "| target | goal | measured | met | what bounds it (ceilings measured in this run) |",
        "|---|---|---|---|---|",
    ]
    out += ["| " + " | ".join((*r, "-")[:5]) + " |" for r in rows]
    return out


WRITE_SHARE_GOAL = 0.8


def _write_rows_row(shares: list[tuple[str, float, float | None]]) -> tuple[str, ...]:
    """The acceptance row of every write row's share of its ceiling throughput."""
    what = "every write row's throughput vs its ceiling's (table 'write rows vs their ceilings')"
    goal = f">= {WRITE_SHARE_GOAL:.0%} of ceiling"
    if not shares:
        return (what, goal, "not measured", "-")
    name, low, _ = min(shares, key=lambda x: x[1])
    met = [n for n, v, _ in shares if v >= WRITE_SHARE_GOAL]
    shown = f"lowest {low:.0%} ({name}); {len(met)} of {len(shares)} rows at the goal"
    if len(met) == len(shares):
        return (what, goal, shown, "yes", "-")
    bounded = [(n, f) for n, v, f in shares if v < WRITE_SHARE_GOAL and f is not None]
    below = [f"{n} {f:.0%}" for n, f in bounded if f < WRITE_SHARE_GOAL]
    why = (
        "at Hudi's defaults the floor (a compaction's rows merged in key order with the bloom "
        "filter of every key in each new base file; log rows with their meta columns, one file "
        "per file group; a SIMPLE or BLOOM lookup's key reads) "
        f"allows at most: {', '.join(below)}"
        if below
        else "-"
    )
    return (what, goal, shown, "no", why)


def write_shares(
    meta: dict[str, Any], streaming: dict[str, Any] | None
) -> list[tuple[str, float, float | None]]:
    """:meth:`_Ceilings.write_rows` of ``meta``'s run."""
    res = {r["system"]: r for r in meta.get("results", []) if "error" not in r}
    try:
        return _Ceilings(meta, res).write_rows(streaming)
    except (KeyError, TypeError, ZeroDivisionError):
        return []


def write_rows_table(shares: list[tuple[str, float, float | None]]) -> list[str]:
    """Markdown lines: each write row's throughput as a share of its ceiling's, and the most
    its floor allows."""
    if not shares:
        return []
    out = [
        "| write row | throughput / ceiling's | most the floor allows |",
        "|---|---|---|",
    ]
    for name, share, floor in shares:
        out.append(f"| {name} | {share:.0%} | {'-' if floor is None else f'{floor:.0%}'} |")
    out += [
        "",
        "ceilings: plain pyarrow doing the Parquet work of the row's commits (base-file rows read "
        "and rewritten, log rows written as Parquet at pyarrow's batch-write rate, Avro blocks "
        "too); for the Spark upsert df.write.parquet of the same batches, for the streaming sink "
        "Spark's parquet sink on the same stream. Floor: the ceiling plus a compaction's key-order "
        "merge and bloom filter of every key (Hudi's defaults), log rows with their meta columns "
        "written one file per file group, and a SIMPLE or BLOOM lookup's key reads, all measured "
        "in this run.",
    ]
    return out


def _cold(rli: dict[str, Any], gs: dict[str, Any]) -> str:
    """The first batch of a process, where the run measured it."""
    if "cold_s" not in rli or "cold_s" not in gs:
        return ""
    ratio = gs["cold_s"] / rli["cold_s"]
    return f"; the first batch, cold: {ratio:.2f}x, {rli['cold_s']:.2f} s vs {gs['cold_s']:.2f} s"


def _record_index_rows(ri: dict[str, Any]) -> list[tuple[str, ...]]:
    """The record-level index goals (:mod:`bench.record_index`): RECORD_INDEX against
    GLOBAL_SIMPLE on the largest table, and its batch time from the smallest to the largest."""
    runs = [
        r
        for r in ri.get("runs", [])
        if "upsert_s" in r and r.get("updates", ri.get("updates")) == ri.get("updates")
    ]
    wrong = [f"{r['index']} at {r['rows']:,}" for r in runs if not r["check"]["correct"]]
    by = {(r["index"], r["rows"]): r for r in runs}
    sizes = sorted({r["rows"] for r in runs})
    vs = "global upsert, RECORD_INDEX vs GLOBAL_SIMPLE"
    grow = "global upsert with RECORD_INDEX, batch time"
    if len(sizes) < 2 or not all(
        (i, n) in by for i in ("RECORD_INDEX", "GLOBAL_SIMPLE") for n in sizes
    ):
        why = "not measured" + (f" ({ri['error']})" if "error" in ri else "")
        return [(vs, ">= 3x faster", why, "-"), (grow, "<= 1.3x", why, "-")]
    lo, hi = sizes[0], sizes[-1]
    if wrong:
        bad = f"no ratio: final table incorrect ({', '.join(wrong)})"
        return [(vs, ">= 3x faster", bad, "no"), (grow, "<= 1.3x", bad, "no")]
    rli, gs = by[("RECORD_INDEX", hi)], by[("GLOBAL_SIMPLE", hi)]
    speed = gs["upsert_s"] / rli["upsert_s"]
    growth = rli["upsert_s"] / by[("RECORD_INDEX", lo)]["upsert_s"]
    small = by[("RECORD_INDEX", lo)]
    lookup = (
        f"the record-index lookup alone (warm: the index files the process decoded, kept; "
        f"{rli['index_mb']:.0f} MB of index with the keys spread over all of it) takes "
        f"{rli['lookup_s']:.2f} s at {hi:,} rows, {small['lookup_s']:.2f} s at {lo:,}"
    )
    if "cold_lookup_s" in rli:
        lookup += (
            f"; cold (every block its keys fall in inflated and searched) "
            f"{rli['cold_lookup_s']:.2f} s at {hi:,} rows"
        )
    bare = by.get(("GLOBAL_SIMPLE_WITHOUT_RLI", hi))
    off = (
        f"; GLOBAL_SIMPLE on the table with its record index turned off {bare['upsert_s']:.2f} s"
        if bare is not None
        else ""
    )
    few = {
        r["index"]: r
        for r in ri.get("runs", [])
        if "upsert_s" in r
        and r["rows"] == hi
        and r.get("updates", ri.get("updates")) != ri.get("updates")
    }
    if {"RECORD_INDEX", "GLOBAL_SIMPLE_WITHOUT_RLI"} <= set(few):
        a, b = few["RECORD_INDEX"], few["GLOBAL_SIMPLE_WITHOUT_RLI"]
        lookup += (
            f"; a batch of {a['updates']:,} keys, whose blocks are few: RECORD_INDEX "
            f"{a['upsert_s']:.2f} s, GLOBAL_SIMPLE on the table without a record index "
            f"{b['upsert_s']:.2f} s"
        )
    rest = rli["upsert_s"] - rli["lookup_s"]
    ceiling = (
        f"{lookup}; the rest of the batch (writing its rows: log blocks, the inserts' base "
        f"files, the metadata table) takes {rest:.2f} s, so even a free lookup would be "
        f"{gs['upsert_s'] / rest:.2f}x GLOBAL_SIMPLE"
        if rest > 0
        else lookup
    )
    return [
        (
            f"{vs}, {ri['updates']:,} existing keys + 20% new, {hi:,}-row table (warm: the "
            "third batch on of a process doing many, as a streaming or upsert-heavy writer does"
            f"{_cold(rli, gs)})",
            ">= 3x faster",
            f"{speed:.2f}x ({rli['upsert_s']:.2f} s vs {gs['upsert_s']:.2f} s; CPU "
            f"{gs['cpu_s'] / rli['cpu_s']:.2f}x{off})",
            "yes" if speed >= 3 else "no",
            "-" if speed >= 3 else ceiling,
        ),
        (
            f"{grow}, {hi:,}-row table vs {lo:,}-row table (warm batches)",
            "<= 1.3x",
            f"{growth:.2f}x",
            "yes" if growth <= 1.3 else "no",
            "-" if growth <= 1.3 else lookup,
        ),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.report")
    ap.add_argument("--started", type=float, help="epoch second the whole run started at")
    args = ap.parse_args()
    meta = json.loads((RESULTS / "latest.json").read_text())
    sfile = RESULTS / "streaming.json"
    streaming = json.loads(sfile.read_text()) if sfile.exists() else None
    ffile = RESULTS / "filtered_read.json"
    filtered = json.loads(ffile.read_text()) if ffile.exists() else None
    mfile = RESULTS / "merge.json"
    merge = json.loads(mfile.read_text()) if mfile.exists() else None
    cfile = RESULTS / "consistent_hashing.json"
    ch = json.loads(cfile.read_text()) if cfile.exists() else None
    kfile = RESULTS / "clustering.json"
    clustered = json.loads(kfile.read_text()) if kfile.exists() else None
    rfile = RESULTS / "read_table.json"
    read_table = json.loads(rfile.read_text()) if rfile.exists() else None
    tfile = RESULTS / "table_scale.json"
    table_scale = json.loads(tfile.read_text()) if tfile.exists() else None
    lfile = RESULTS / "timeline_scale.json"
    timeline_scale = json.loads(lfile.read_text()) if lfile.exists() else None
    lines = acceptance(
        meta,
        streaming,
        filtered,
        merge,
        ch,
        clustered=clustered,
        read_table=read_table,
        table_scale=table_scale,
        timeline_scale=timeline_scale,
    )
    table = write_rows_table(write_shares(meta, streaming))
    if table:
        lines += ["", "write rows vs their ceilings", "", *table]
    if args.started:
        secs = time.time() - args.started
        lines += ["", f"make bench took {secs / 60:.1f} minutes ({secs:,.0f} s)"]
    (RESULTS / "acceptance.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
