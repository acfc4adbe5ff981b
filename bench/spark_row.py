"""The bench's Spark ``hudi_py`` row alone, at a small scale: insert, five upserts, the read.

    python -m bench.spark_row 0.25     # SCALE (1 = make bench's 2,000,000 + 5 x 200,000 rows)

Prints one JSON line: the insert and per-batch upsert seconds, the read, the rows read, and the
compactions on the table's timeline (completed, pending) -- at the defaults a Spark batch write
compacts nothing, as Hudi's data source.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq

from bench.systems import SYSTEMS
from bench.workload import Workload, reference
from hudi_ds.table.table import ReadableTable


def main(scale: float) -> dict:
    w = Workload.scaled(scale)
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        ref = str(root / "ref.parquet")
        pq.write_table(reference(w), ref)
        (root / "h").mkdir()
        out = SYSTEMS["hudi_ds_spark"](w, root / "h", ref)
        tl = ReadableTable(str(root / "h" / "t")).timeline
        done = [i for i in tl.commits() if tl.origin_action(i.requested_time) == "compaction"]
        return {
            "scale": scale,
            "insert_s": round(out["insert_s"], 2),
            "upsert_s": [round(x, 2) for x in out["upsert_s"]],
            "read_s": round(out["read_s"], 2),
            "rows": out["read_rows"],
            "compactions": len(done),
            "pending_compactions": len(tl.pending_compactions()),
        }


if __name__ == "__main__":
    print(json.dumps(main(float(sys.argv[1]) if len(sys.argv) > 1 else 0.25)))
