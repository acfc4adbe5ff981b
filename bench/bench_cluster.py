"""Spark on a standalone cluster next to ``local[2]``.

The batch upsert example (``examples/spark_batch_upsert.py``: an insert of ``200,000 x scale``
trips through ``cluster_by_bucket``, an upsert of 40% as many rows, a full snapshot read through
``hudi_py``, every row checked against the model) submitted twice with ``spark-submit``:

* ``--master local[2]``: one JVM, two task threads;
* ``--master spark://127.0.0.1:PORT``: a standalone cluster started from pyspark's own launcher
  (``spark-class ...Master`` / ``...Worker``, 2 workers of 1 core and 1 GiB on loopback),
  executors in their own JVMs with their own Python workers.

Both get the same total task slots (2) on the same machine, so the difference is the cost of
the cluster's process boundaries (task scheduling over RPC, executor start-up, Python workers
per executor), not extra hardware. The times are the job's own (``insert_s``, ``upsert_s``,
``read_s``, after the session is up); ``job_s`` is the whole spark-submit including JVM and
executor start.

Run: ``.venv/bin/python -m bench.bench_cluster [--scale 1] [--json FILE]``; the last line of
stdout is the JSON result.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.spark.standalone import REPO, StandaloneCluster, finish, submit

EXAMPLE = REPO / "examples" / "spark_batch_upsert.py"
#: the executors import hudi_ds from this checkout (as from an installed environment)
#: the JVMs keep their default JIT and collector (the tests' C1-only flags suit tiny jobs, not a
#: throughput measurement)
CONF = {
    "spark.executorEnv.PYTHONPATH": str(REPO),
    "spark.executor.memory": "768m",
    "spark.driver.extraJavaOptions": "",
    "spark.executor.extraJavaOptions": "",
}


def run_job(master: StandaloneCluster | str, table: Path, rows: int) -> dict[str, Any]:
    """One spark-submit of the example; its summary plus the wall time of the whole job."""
    t0 = time.perf_counter()
    out = finish(submit(master, EXAMPLE, [str(table), "--rows", str(rows)], conf=CONF), 3600)
    out["job_s"] = round(time.perf_counter() - t0, 2)
    if not out["equal"]:
        raise AssertionError(f"{master}: the table does not equal the model: {out}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--json", type=Path, help="also write the JSON result here")
    a = ap.parse_args()
    rows = max(1000, int(200_000 * a.scale))
    results: dict[str, Any] = {"rows": rows, "upsert_rows": rows // 4 + rows // 20 + rows // 10}
    with tempfile.TemporaryDirectory(prefix="hudi-bench-cluster-") as tmp:
        root = Path(tmp)
        results["local[2]"] = run_job("local[2]", root / "local", rows)
        cluster = StandaloneCluster(root / "cluster").start()
        try:
            results["standalone 2x1 core"] = run_job(cluster, root / "standalone", rows)
        finally:
            cluster.stop()
    print(
        f"Spark batch upsert example, {rows:,} rows inserted, {results['upsert_rows']:,} upserted"
    )
    print(f"{'master':22} {'insert s':>9} {'upsert s':>9} {'read s':>8} {'job s':>8}")
    for name in ("local[2]", "standalone 2x1 core"):
        r = results[name]
        print(
            f"{name:22} {r['insert_s']:9.2f} {r['upsert_s']:9.2f} {r['read_s']:8.2f} "
            f"{r['job_s']:8.2f}"
        )
    line = json.dumps(results)
    if a.json:
        a.json.write_text(line + "\n")
    print(line)


if __name__ == "__main__":
    main()
