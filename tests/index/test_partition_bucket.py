"""Hudi 1.1's partition-level bucket index (RFC-89): rules per partition, Java's hashing config
files, upserts routed by each partition's count, and the rescale of one partition.

Every table written here is compared with a model (every key once, full rows) as hudi_ds and
hudi-rs read it; bucket ids are checked against an independent Java ``List<String>.hashCode``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.cli import main as cli_main
from hudi_ds.errors import CommitConflictError, ConfigError, IgnoredOptionWarning
from hudi_ds.faults import EXIT_CODE, STALL_ENV
from hudi_ds.index.partition_bucket import CONFIGS_DIR, HashingConfig
from hudi_ds.storage import Storage
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.view import TableState
from tests.conftest import OCC_OPTIONS, assert_rows, hudi_rs_table, run_forked, table_options

COLS = ["id", "dt", "ts", "v"]
DAYS = ["2024-11-11", "2024-12-25", "2024-01-02"]
RULES = r"\d{4}-11-\d\d,5;2024-12-25,3"  # 2024-01-02: the default, 2
NS = uuid.UUID("0b8a1c55-6a43-4d1e-9a52-3f1f0e7a2b9c")


def _key(i: int) -> str:
    # long keys: their Java hash wraps, so buckets spread whatever the count
    return uuid.uuid5(NS, str(i)).hex[:16]


def java_bucket(key: str, n: int) -> int:
    """Java: ``(List.of(key).hashCode() & Integer.MAX_VALUE) % n`` (ASCII keys)."""
    h = 0
    for ch in key:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return ((31 + h) & 0xFFFFFFFF & 0x7FFFFFFF) % n


def _rows(ids: list[int], ts: int) -> pa.Table:
    return pa.table(
        {
            "id": [_key(i) for i in ids],
            "dt": [DAYS[i % 3] for i in ids],
            "ts": pa.array([ts] * len(ids), pa.int64()),
            "v": [f"v{i}-{ts}" for i in ids],
        }
    )


def _apply(model: dict[str, tuple], t: pa.Table) -> None:
    for r in t.to_pylist():
        model[r["id"]] = tuple(r[c] for c in COLS)


def _opts(table_type: str = "COPY_ON_WRITE", mdt: bool = False, **extra: str) -> dict[str, str]:
    return {
        **table_options("pb", partition="dt", table_type=table_type, buckets=2),
        "hoodie.index.type": "BUCKET",
        "hoodie.metadata.enable": str(mdt).lower(),
        **extra,
    }


def _check(path: str, model: dict[str, tuple], mdt: bool = False) -> None:
    want = list(model.values())
    assert_rows(hudi_ds.read(path, columns=COLS), want, COLS)
    rs_opts = {"hoodie.metadata.enable": "true"} if mdt else None
    assert_rows(hudi_rs_table(path, rs_opts).select(COLS), want, COLS)


def _live_buckets(path: str) -> dict[str, list[int]]:
    st = TableState.open(path)
    view, vis = FileSystemView(st.storage, st.config), st.visibility()
    return {
        p: sorted(int(s.file_id[:8]) for s in view.latest_file_slices(p, vis))
        for p in view.partitions()
    }


def _files(path: str, partition: str) -> dict[str, str]:
    return {
        f.name: hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted((Path(path) / partition).iterdir())
    }


def decode_hashing_config(data: bytes) -> dict[str, object]:
    """An independent reader of Java's file: Jackson's pretty printer, ``"key" : value``."""
    text = data.decode()
    assert text.startswith("{\n  ") and text.endswith("\n}")
    out: dict[str, object] = {}
    for line in text[2:-2].split(",\n"):
        m = re.fullmatch(r'  "(\w+)" : (.*)', line)
        assert m, line
        out[m.group(1)] = json.loads(m.group(2))
    return out


def test_hashing_config_is_javas_file_and_rules_pick_the_first_match() -> None:
    c = HashingConfig(r"\d{4}-(06-(01|17|18)|11-(01|10|11)),256;2025-.*,7", 10)
    raw = c.at("20250325091919474").to_json()
    assert decode_hashing_config(raw) == {
        "expressions": r"\d{4}-(06-(01|17|18)|11-(01|10|11)),256;2025-.*,7",
        "defaultBucketNumber": 10,
        "rule": "regex",
        "version": 1,
        "instant": "20250325091919474",
    }
    assert HashingConfig.from_json(raw) == c.at("20250325091919474")
    assert HashingConfig("a,3;b,4;", 2).num_buckets("xb") == 4  # (Java's split drops the tail)
    # Matcher.find: anywhere in the path; the first rule wins; else the default
    assert [c.num_buckets(p) for p in ("dt=2025-06-17", "2025-11-10", "2025-01-01", "x")] == [
        256,
        256,
        7,
        10,
    ]
    for bad, what in [
        ("a,b,3", "is not 'regex,bucketNumber'"),
        ("(,3", "does not compile"),
        ("a,x", "is not an integer"),
        ("a,0", "must be in"),
    ]:
        with pytest.raises(ConfigError, match=re.escape(what)):
            HashingConfig(bad, 4)


@pytest.mark.parametrize(("table_type", "mdt"), [("COPY_ON_WRITE", False), ("MERGE_ON_READ", True)])
def test_rules_apply_per_partition_on_create_and_upserts_route_by_them(
    tmp_path: Path, table_type: str, mdt: bool
) -> None:
    path = str(tmp_path / "t")
    opts = _opts(table_type, mdt, **{"hoodie.bucket.index.partition.expressions": RULES})
    model: dict[str, tuple] = {}
    first = _rows(list(range(90)), 1)
    hudi_ds.write(path, first, opts)
    _apply(model, first)
    cfg = Path(path) / CONFIGS_DIR / "00000000000000000.hashing_config"
    assert decode_hashing_config(cfg.read_bytes())["expressions"] == RULES
    counts = {"2024-11-11": 5, "2024-12-25": 3, "2024-01-02": 2}
    assert _live_buckets(path) == {p: list(range(n)) for p, n in counts.items()}
    # upserts (half the keys again, and new ones) with options naming no rules
    again = _rows(list(range(0, 120, 2)), 2)
    hudi_ds.write(path, again, table_options("pb"))
    _apply(model, again)
    assert _live_buckets(path) == {p: list(range(n)) for p, n in counts.items()}
    _check(path, model, mdt)
    if table_type == "COPY_ON_WRITE":  # every key in its Java bucket of its partition's count
        t = hudi_ds.read(path, columns=["id", "dt", "_hoodie_file_name"])
        for key, dt, name in zip(*(t.column(c).to_pylist() for c in t.column_names), strict=True):
            assert int(name[:8]) == java_bucket(key, counts[dt]), (key, dt, name)


def _rescaled_table(tmp_path: Path, mdt: bool) -> tuple[str, dict[str, tuple]]:
    path = str(tmp_path / "t")
    opts = _opts("MERGE_ON_READ", mdt, **{"hoodie.bucket.index.partition.expressions": RULES})
    model: dict[str, tuple] = {}
    for ids, ts in ((list(range(60)), 1), (list(range(0, 60, 3)), 2)):
        t = _rows(ids, ts)
        hudi_ds.write(path, t, opts if ts == 1 else table_options("pb"))
        _apply(model, t)
    return path, model


@pytest.mark.parametrize("mdt", [False, True])
def test_rescale_of_one_partition_leaves_the_others_untouched(tmp_path: Path, mdt: bool) -> None:
    path, model = _rescaled_table(tmp_path, mdt)
    untouched = {p: _files(path, p) for p in ("2024-11-11", "2024-01-02")}
    new_rules = r"\d{4}-11-\d\d,5;2024-12-25,4"
    dry = hudi_ds.rescale_buckets(path, new_rules, dry_run=True)
    assert dry.instant is None and dry.plan.changes == {"2024-12-25": (3, 4)}
    assert {p: _files(path, p) for p in untouched} == untouched
    done = hudi_ds.rescale_buckets(path, new_rules, options={"hoodie.metadata.enable": str(mdt)})
    assert done.plan.rewritten == ("2024-12-25",)
    assert {p: _files(path, p) for p in untouched} == untouched  # byte for byte
    assert _live_buckets(path)["2024-12-25"] == [0, 1, 2, 3]
    st = TableState.open(path)
    inst = st.timeline.get(done.instant)
    assert inst is not None and inst.action == "replacecommit" and inst.is_completed
    md = st.timeline.read_commit_metadata(inst)
    assert md.operation_type == "BUCKET_RESCALE"
    assert set(md.partition_to_replace_file_ids) == {"2024-12-25"}
    cfg = Path(path) / CONFIGS_DIR / f"{done.instant}.hashing_config"
    assert decode_hashing_config(cfg.read_bytes())["expressions"] == new_rules
    _check(path, model, mdt)
    # later writes use the new count: every key still once
    t = _rows(list(range(30, 75)), 3)
    hudi_ds.write(path, t, table_options("pb"))
    _apply(model, t)
    assert _live_buckets(path)["2024-12-25"] == [0, 1, 2, 3]
    _check(path, model, mdt)
    with pytest.raises(ConfigError, match="contradicts the rules of the table"):
        hudi_ds.write(path, t, {"hoodie.bucket.index.partition.expressions": RULES})


def test_crash_during_rescale_leaves_the_table_readable(tmp_path: Path) -> None:
    path, model = _rescaled_table(tmp_path, False)
    before = _live_buckets(path)
    new_rules = r"\d{4}-11-\d\d,2;2024-12-25,3"

    def rescale() -> None:
        hudi_ds.rescale_buckets(path, new_rules)

    assert run_forked(rescale, "after_files") == EXIT_CODE
    pending = [f.name for f in (Path(path) / CONFIGS_DIR).iterdir()]
    assert len(pending) == 2  # the rescale's config, its replacecommit still pending
    assert _live_buckets(path) == before
    _check(path, model)
    # a writer uses the committed rules; its eager rollback deletes the rescale's config
    t = _rows(list(range(0, 80, 4)), 4)
    hudi_ds.write(path, t, table_options("pb"))
    _apply(model, t)
    assert [f.name for f in (Path(path) / CONFIGS_DIR).iterdir()] == [
        "00000000000000000.hashing_config"
    ]
    assert _live_buckets(path) == before
    _check(path, model)
    done = hudi_ds.rescale_buckets(path, new_rules)
    assert _live_buckets(path)["2024-11-11"] == [0, 1]
    assert done.plan.rewritten == ("2024-11-11",)
    _check(path, model)


def test_upgrade_of_a_bucket_table_and_refusals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "t")
    model: dict[str, tuple] = {}
    t = _rows(list(range(45)), 1)
    with pytest.warns(IgnoredOptionWarning, match="rule.type"):  # (no expressions to read)
        hudi_ds.write(path, t, _opts(**{"hoodie.bucket.index.partition.rule.type": "regex"}))
    _apply(model, t)
    with pytest.raises(ConfigError, match="has no partition-level bucket rules"):
        hudi_ds.write(path, t, {"hoodie.bucket.index.partition.expressions": RULES})
    with pytest.raises(ConfigError, match="stays the default of its first rules"):
        hudi_ds.rescale_buckets(path, RULES, default_bucket_number=3)
    assert cli_main(["bucket-rescale", path, "--overwrite", "2024-12-25,3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["partitions"] == {"2024-12-25": {"from": 2, "to": 3}}
    configs = [f.name for f in (Path(path) / CONFIGS_DIR).iterdir()]
    assert configs == [f"{out['instant']}.hashing_config"]  # the first rules: the rescale's
    assert _live_buckets(path) == {
        "2024-01-02": [0, 1],
        "2024-11-11": [0, 1],
        "2024-12-25": [0, 1, 2],
    }
    _check(path, model)
    assert cli_main(["bucket-rescale", path, "--show-config", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)["configs"]
    assert [(c["state"], c["expressions"]) for c in shown] == [("committed", "2024-12-25,3")]
    with pytest.raises(ConfigError, match="hoodie.index.bucket.engine=SIMPLE"):
        hudi_ds.write(
            str(tmp_path / "ch"),
            t,
            _opts(
                "MERGE_ON_READ",
                **{
                    "hoodie.index.bucket.engine": "CONSISTENT_HASHING",
                    "hoodie.bucket.index.partition.expressions": RULES,
                },
            ),
        )
    assert not Storage(str(tmp_path / "ch")).exists("")  # refused before anything is written


def test_a_commit_into_a_rescaled_partition_meanwhile_fails_the_rescale(tmp_path: Path) -> None:
    """A rescale stopped (SIGSTOP) with its files written while an optimistic writer commits
    into the partition it rewrites: the rescale refuses to commit (it would drop that write),
    rolls back, its config deleted; every key of the writer's commit is there once."""
    path, model = _rescaled_table(tmp_path, False)
    occ = {**OCC_OPTIONS, "hoodie.write.lock.wait_time_ms": "50"}
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.environ[STALL_ENV] = "after_files"
            hudi_ds.rescale_buckets(path, r"\d{4}-11-\d\d,5;2024-12-25,6", options=occ)
            code = 0
        except CommitConflictError:
            code = 3
        finally:
            os._exit(code)
    deadline = time.monotonic() + 120
    while Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "T":
        assert time.monotonic() < deadline, "the rescale did not reach its stall point"
        time.sleep(0.01)
    t = _rows(list(range(1, 60, 3)), 5)  # (2024-12-25 among them)
    hudi_ds.write(path, t, {**table_options("pb"), **occ})
    _apply(model, t)
    os.kill(pid, signal.SIGCONT)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 3
    assert [f.name for f in (Path(path) / CONFIGS_DIR).iterdir()] == [
        "00000000000000000.hashing_config"
    ]
    assert _live_buckets(path)["2024-12-25"] == [0, 1, 2]
    _check(path, model)


def test_a_table_recording_no_index_is_written_by_its_hashing_config(tmp_path: Path) -> None:
    """Java's writers record neither ``hoodie.index.type`` nor the bucket settings in
    ``hoodie.properties``: the hashing config alone tells the index, the rules and the
    default count (no option needed)."""
    path = str(tmp_path / "t")
    opts = _opts(**{"hoodie.bucket.index.partition.expressions": RULES})
    model: dict[str, tuple] = {}
    t = _rows(list(range(45)), 1)
    hudi_ds.write(path, t, opts)
    _apply(model, t)
    st = TableState.open(path)
    props = {
        k: v
        for k, v in st.config.props.items()
        if k not in ("hoodie.index.type", "hoodie.bucket.index.num.buckets")
    }
    TableConfig(props).save(st.storage)
    t = _rows(list(range(0, 90, 2)), 2)
    hudi_ds.write(path, t, table_options("pb", buckets=None))
    _apply(model, t)
    assert _live_buckets(path) == {
        "2024-01-02": [0, 1],
        "2024-11-11": list(range(5)),
        "2024-12-25": [0, 1, 2],
    }
    _check(path, model)
