"""Run one system in this process and print its result as one JSON line (used by __main__)."""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
from pathlib import Path

import pyarrow as pa

from bench.systems import SYSTEMS
from bench.workload import Workload


def _disk(root: Path) -> tuple[int, int]:
    files = [p for p in root.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("system", choices=sorted(SYSTEMS))
    ap.add_argument("--scale", type=float, default=1.0)
    args = ap.parse_args()
    w = Workload.scaled(args.scale)
    with tempfile.TemporaryDirectory(prefix=f"bench-{args.system}-") as d:
        root = Path(d)
        res = SYSTEMS[args.system](w, root)
        res["files"], res["bytes"] = _disk(root)
    state = res.pop("state_table", None)
    if isinstance(state, pa.Table):
        res["state"] = dict(zip(state["id"].to_pylist(), state["ts"].to_pylist(), strict=True))
    res["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    res["system"] = args.system
    json.dump(res, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
