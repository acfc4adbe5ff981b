"""Run one system in this process and print its result as one JSON line (used by __main__).

``python -m bench.run SYSTEM --scale S --reference REF.parquet``: the system's final table is
compared with the reference (:func:`bench.check.compare`) after its timings.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from bench.check import compare, compare_file
from bench.systems import SYSTEMS
from bench.workload import Workload, reference


def _disk(root: Path) -> tuple[int, int]:
    files = [p for p in root.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("system", choices=sorted(SYSTEMS))
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--reference", required=True, help="the reference final table (Parquet)")
    args = ap.parse_args()
    w = Workload.scaled(args.scale)
    with tempfile.TemporaryDirectory(prefix=f"bench-{args.system}-") as d:
        root = Path(d)
        res = SYSTEMS[args.system](w, root, args.reference)
        final = res.pop("final_table", None)
        partial = res.pop("reference", None)  # a system that ran fewer batches
        if final is None:
            res["check"] = None
        elif partial is not None:
            res["check"] = compare(final, reference(partial))
        else:
            res["check"] = compare_file(final, args.reference)
        del final
        res["files"], res["bytes"] = _disk(root)
    res["system"] = args.system
    json.dump(res, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
