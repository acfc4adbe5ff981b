"""PNG charts of a ``python -m bench`` run (matplotlib, the ``bench`` extra).

:func:`write_all` draws, next to ``latest.md``: ``throughput.png`` (upsert and snapshot-read
rows/s per system), ``scaling.png`` (one upsert batch's time against the table size) and
``memory.png`` (peak memory per system in its own process, write and read phases, and the
streamed write at two input sizes). ``python -m bench.charts`` redraws them from
``bench/results/latest.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _title(meta: dict[str, Any], what: str) -> str:
    return f"{what}\n{meta.get('date', '')[:10]}, commit {meta.get('commit', '?')}, scale {meta.get('scale', '?')}"


def throughput(meta: dict[str, Any], out: Path) -> Path:
    plt = _plt()
    w = meta["workload"]
    res = [r for r in meta["results"] if "error" not in r]
    names = [r["system"] for r in res]
    ups = [
        0 if r.get("read_only") else w["batch_rows"] * len(r["upsert_s"]) / sum(r["upsert_s"])
        for r in res
    ]
    reads = [r["read_rows"] / r["read_s"] for r in res]
    wrong = [(r.get("check") or {}).get("correct") is False for r in res]
    fig, axes = plt.subplots(1, 2, figsize=(13, 0.42 * len(res) + 1.8), sharey=True)
    for ax, vals, label in (
        (axes[0], ups, "upsert batch rows/s (mean)"),
        (axes[1], reads, "snapshot read rows/s (id, ts, d1)"),
    ):
        colors = ["#c44" if bad else "#48a" for bad in wrong]
        ax.barh(names, vals, color=colors)
        ax.set_xscale("log")
        ax.set_xlabel(label + ", log scale")
        ax.grid(axis="x", alpha=0.3)
    axes[0].invert_yaxis()
    fig.suptitle(_title(meta, "throughput per system (red: final table incorrect)"))
    fig.tight_layout()
    path = out / "throughput.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def scaling(meta: dict[str, Any], out: Path) -> Path:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4))
    for system in sorted({r.get("system") for r in meta.get("scaling", []) if "upsert_s" in r}):
        pts = sorted(
            (r["rows"], r["upsert_s"])
            for r in meta["scaling"]
            if r.get("system") == system and "upsert_s" in r
        )
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=system)
    ax.set_xscale("log")
    ax.set_xlabel("table rows before the batch")
    ax.set_ylabel("one upsert batch, seconds")
    ax.grid(alpha=0.3)
    if ax.get_lines():
        ax.legend()
    ax.set_title(_title(meta, "upsert batch time vs table size"))
    fig.tight_layout()
    path = out / "scaling.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def memory(meta: dict[str, Any], out: Path) -> Path:
    plt = _plt()
    res = [r for r in meta["results"] if "error" not in r]
    names = [r["system"] for r in res]
    fig, axes = plt.subplots(
        1, 2, figsize=(13, 0.42 * len(res) + 1.8), gridspec_kw={"width_ratios": [3, 1]}
    )
    ax = axes[0]
    y = range(len(names))
    ax.barh(
        [i - 0.2 for i in y],
        [r.get("write_hwm_mb", 0) for r in res],
        height=0.4,
        label="write phase",
    )
    ax.barh(
        [i + 0.2 for i in y], [r.get("read_hwm_mb", 0) for r in res], height=0.4, label="read phase"
    )
    ax.set_yticks(list(y), names)
    ax.invert_yaxis()
    ax.set_xlabel("peak RSS (VmHWM) of the system's process, MB")
    ax.grid(axis="x", alpha=0.3)
    ax.legend()
    mem = [m for m in meta.get("memory", []) if "peak_mb" in m]
    ax2 = axes[1]
    ax2.bar([f"{m['rows']:,}" for m in mem], [m["peak_mb"] for m in mem], color="#6a6")
    ax2.bar(
        [f"{m['rows']:,}" for m in mem],
        [m["rss_before_mb"] for m in mem],
        color="#bbb",
        label="RSS before",
    )
    ax2.set_xlabel("streamed hudi_ds write, input rows")
    ax2.set_ylabel("peak MB")
    ax2.legend()
    fig.suptitle(_title(meta, "memory per system, each in a fresh process"))
    fig.tight_layout()
    path = out / "memory.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def write_all(meta: dict[str, Any], out: Path) -> list[Path]:
    """Draw every chart of ``meta`` (a ``latest.json``) into ``out``; returns their paths."""
    return [throughput(meta, out), scaling(meta, out), memory(meta, out)]


if __name__ == "__main__":
    print(*write_all(json.loads((RESULTS / "latest.json").read_text()), RESULTS), sep="\n")
