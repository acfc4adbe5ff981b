"""The soak of ``make test-stress`` (not run by ``make test``): two writer processes and a process
running the CLI's table services (compaction schedule and run, clean, archive) on one MOR table
under optimistic concurrency control, while a chaos loop stops a random one of them (SIGSTOP)
for 1-15 s, again and again, for ``HUDI_DS_STRESS_SECONDS`` (300 by default), on local storage
and on a local S3 server. The file-system lock's lease is 5 s and heartbeats expire after 2 s,
so most stalls outlive the stalled process's lease and its instant's heartbeat: other processes
take the lock over and roll its instant back while it is stopped.

Checked at the end: every batch a writer acknowledged is in the table (full rows, the latest
acknowledged version of every key, by hudi_ds and by hudi-rs), every failed write raised a
hudi_ds error (no raw OSError or FileNotFoundError), and the table takes a last write and
compaction. The run's numbers are printed (``-s``) and recorded in docs/testing.md."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_ds
from tests.conftest import assert_rows, hudi_rs_table, spawn_python, table_options

pytestmark = pytest.mark.stress

SECONDS = float(os.environ.get("HUDI_DS_STRESS_SECONDS", "300"))

# upserts batches of 20 random keys of 200 until ``seconds`` passed; logs each acknowledged batch
# and counts every refusal by its error type (a non-hudi_ds error is counted apart)
WRITER = r"""
import json, random, sys, time
import hudi_ds
from hudi_ds.errors import HudiError
from tests.builders import random_upsert
path, opts, so, seconds, seed, log = (sys.argv[1], json.loads(sys.argv[2]),
    json.loads(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
rng = random.Random(seed)
end = time.time() + seconds
errors, unclear = {}, []
with open(log, "w") as out:
    while time.time() < end:
        keys, ts, t = random_upsert(rng, seed)
        try:
            hudi_ds.write(path, t, opts, storage_options=so or None)
        except HudiError as e:
            errors[type(e).__name__] = errors.get(type(e).__name__, 0) + 1
            continue
        except Exception as e:
            unclear.append(f"{type(e).__name__}: {e}")
            continue
        out.write(json.dumps({"keys": keys, "ts": ts}) + "\n")
        out.flush()
print(json.dumps({"errors": errors, "unclear": unclear}))
"""

# runs the CLI's services in turn until ``seconds`` passed; counts exit codes
SERVICES = r"""
import io, json, sys, time
from hudi_ds.cli import main
path, opts, so, seconds = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), float(sys.argv[4])
flags = [a for k, v in opts.items() for a in ("-o", f"{k}={v}")]
flags += [a for k, v in so.items() for a in ("--storage-option", f"{k}={v}")]
codes, unclear = {}, []
end = time.time() + seconds
while time.time() < end:
    for cmd in (["compact", "schedule"], ["compact", "run"], ["clean"], ["archive"]):
        err = io.StringIO()
        code = main([*cmd, path, *flags], out=io.StringIO(), err=err)
        codes[f"{' '.join(cmd)}:{code}"] = codes.get(f"{' '.join(cmd)}:{code}", 0) + 1
        if code not in (0, 5) and "Error" not in err.getvalue():
            unclear.append(err.getvalue()[-500:])
        time.sleep(0.5)
print(json.dumps({"codes": codes, "unclear": unclear}))
"""


def options() -> dict[str, str]:
    return {
        **table_options("soak", partition="p", table_type="MERGE_ON_READ"),
        "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
        "hoodie.write.lock.filesystem.expire": str(5 / 60),
        "hoodie.client.heartbeat.interval_in_ms": "1000",
        "hoodie.client.heartbeat.tolerable.misses": "1",
        "hoodie.cleaner.commits.retained": "3",
        "hoodie.keep.min.commits": "5",
        "hoodie.keep.max.commits": "8",
        "hoodie.compact.inline.max.delta.commits": "3",
    }


def soak(path: str, so: dict[str, str], tmp_path: Path) -> dict[str, Any]:
    opts = options()
    hudi_ds.write(
        path,
        pa.table({"id": ["seed"], "ts": [0], "p": ["p0"], "who": [0]}),
        opts,
        storage_options=so or None,
    )
    procs: list[subprocess.Popen[str]] = []
    logs = []
    for seed in (1, 2):
        log = tmp_path / f"w{seed}.jsonl"
        logs.append(log)
        args = (path, json.dumps(opts), json.dumps(so), str(SECONDS), str(seed), str(log))
        procs.append(spawn_python(WRITER, *args))
    service_opts = {k: v for k, v in opts.items() if not k.startswith("hoodie.datasource")}
    procs.append(
        spawn_python(SERVICES, path, json.dumps(service_opts), json.dumps(so), str(SECONDS))
    )
    rng = random.Random(int(os.environ.get("HUDI_DS_STRESS_SEED", "7")))
    stops = 0
    stopped_s = 0.0
    end = time.monotonic() + SECONDS
    try:
        while time.monotonic() < end:
            time.sleep(rng.uniform(0.5, 3.0))
            victim = rng.choice(procs)
            if victim.poll() is not None:
                continue
            pause = rng.uniform(1.0, 15.0)
            victim.send_signal(signal.SIGSTOP)
            time.sleep(pause)
            victim.send_signal(signal.SIGCONT)
            stops += 1
            stopped_s += pause
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
    results = []
    for p in procs:
        out, err = p.communicate(timeout=SECONDS + 600)
        assert p.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    for r in results:
        assert r["unclear"] == [], r["unclear"]
    state: dict[str, tuple] = {"seed": ("seed", 0, "p0", 0)}
    acknowledged = 0
    for who, log in enumerate(logs, start=1):
        for line in log.read_text().splitlines():
            b = json.loads(line)
            acknowledged += 1
            for k in b["keys"]:
                if f"k{k}" not in state or b["ts"] >= state[f"k{k}"][1]:
                    state[f"k{k}"] = (f"k{k}", b["ts"], f"p{k % 2}", who)
    expected = list(state.values())
    columns = ["id", "ts", "p", "who"]
    assert_rows(hudi_ds.read(path, storage_options=so or None), expected, columns)
    assert_rows(hudi_rs_table(path, storage_options=so or None), expected, columns)
    # the table takes a write and a compaction after the soak
    last = pa.table({"id": ["k0"], "ts": [time.time_ns()], "p": ["p0"], "who": [9]})
    hudi_ds.write(path, last, opts, storage_options=so or None)
    summary = {
        "seconds": SECONDS,
        "stops": stops,
        "stopped_s": round(stopped_s, 1),
        "acknowledged_batches": acknowledged,
        "rows": len(expected),
        "writers": [r["errors"] for r in results[:2]],
        "services": results[2]["codes"],
    }
    print(json.dumps(summary))
    return summary


def test_soak_local(tmp_path: Path) -> None:
    summary = soak(str(tmp_path / "t"), {}, tmp_path)
    assert summary["acknowledged_batches"] > 0


def test_soak_s3(moto_s3: Any, s3_uri: str, tmp_path: Path) -> None:
    so = {k: str(v) for k, v in moto_s3.storage_options().items()}
    summary = soak(s3_uri, so, tmp_path)
    assert summary["acknowledged_batches"] > 0
