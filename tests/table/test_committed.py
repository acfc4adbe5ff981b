"""Committed files that are missing or damaged are errors naming the file, never silently wrong
rows.

Every test compares full rows (values, not only keys) with the expected table, and hudi-rs
where the table is left readable.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.errors import CorruptBlockError, CorruptFileError, HudiError, MissingFileError
from hudi_ds.services import ServiceContext, clean, compaction
from tests.builders import read_rows, sorted_rows
from tests.conftest import table_options

OPTS = table_options("facts", partition="p", buckets=1)
COW = {**OPTS, "hoodie.datasource.write.table.type": "COPY_ON_WRITE"}
COLS = ["id", "ts", "p", "v"]
FIRST = pa.table({"id": ["a", "b", "c"], "ts": [1, 1, 1], "p": ["x"] * 3, "v": ["a1", "b1", "c1"]})
SECOND = pa.table({"id": ["a", "d"], "ts": [2, 2], "p": ["x", "x"], "v": ["a2", "d2"]})
EXPECTED = [("a", 2, "x", "a2"), ("b", 1, "x", "b1"), ("c", 1, "x", "c1"), ("d", 2, "x", "d2")]


rows = partial(sorted_rows, columns=COLS)
hudi_rs = partial(read_rows, columns=COLS, reader="hudi-rs")


def two_commits(tmp_path: Path, opts: dict[str, str] = OPTS) -> str:
    path = str(tmp_path / "t")
    hudi_ds.write(path, FIRST, opts)
    hudi_ds.write(path, SECOND, opts)
    assert rows(hudi_ds.read(path)) == EXPECTED
    return path


def logs(path: str) -> list[Path]:
    return sorted((Path(path) / "x").glob(".*.log.*"))


def bases(path: str) -> list[Path]:
    return sorted((Path(path) / "x").glob("*.parquet"))


def instants(path: str) -> list[str]:
    return [i.requested_time for i in hudi_ds.HudiTable(path).timeline.commits()]


# -- missing or damaged committed files --------------------------------------------------------------


@pytest.mark.parametrize("damage", ["emptied", "truncated", "deleted"])
def test_damaged_committed_log_file_is_an_error_naming_it(tmp_path: Path, damage: str) -> None:
    path = two_commits(tmp_path)
    last = logs(path)[-1]
    second = instants(path)[-1]
    if damage == "deleted":
        last.unlink()
    else:
        data = last.read_bytes()
        last.write_bytes(b"" if damage == "emptied" else data[: len(data) // 2])
    error = MissingFileError if damage == "deleted" else CorruptFileError
    with pytest.raises(error, match=last.name) as e:
        hudi_ds.read(path)
    assert second in str(e.value)  # the instant that committed it
    # opting in skips it, warns and reports it; the rows are the older ones
    key = "ignoreMissingFiles" if damage == "deleted" else "spark.sql.files.ignoreCorruptFiles"
    table = hudi_ds.HudiTable(path)
    got = table.read({key: "true"})
    assert rows(got) == [("a", 1, "x", "a1"), ("b", 1, "x", "b1"), ("c", 1, "x", "c1")]
    skipped = table.last_read_stats.missing_files + table.last_read_stats.damaged_files
    assert skipped == [str(last.relative_to(path))]


def test_compaction_refuses_to_make_a_lost_log_permanent(tmp_path: Path) -> None:
    path = two_commits(tmp_path)
    last = logs(path)[-1]
    saved = last.read_bytes()
    last.write_bytes(b"")
    ctx = ServiceContext.open(path)
    with pytest.raises(CorruptFileError, match=last.name):
        compaction.schedule_compaction(ctx)
    last.unlink()
    with pytest.raises(MissingFileError, match=last.name):
        compaction.schedule_compaction(ctx)
    # nothing was scheduled: restoring the file restores the table
    assert not ServiceContext.open(path).timeline().pending_compactions()
    last.write_bytes(saved)
    assert rows(hudi_ds.read(path)) == EXPECTED == hudi_rs(path)


@pytest.mark.parametrize("opts", [OPTS, COW], ids=["mor", "cow"])
def test_deleted_committed_base_file_is_an_error_naming_it(tmp_path: Path, opts: Any) -> None:
    path = str(tmp_path / "t")
    hudi_ds.write(path, FIRST, opts)
    if opts is OPTS:  # MOR: compact so that the keys live in a base file, then update
        ctx = ServiceContext.open(path)
        assert compaction.schedule_compaction(ctx) is not None
        compaction.run_compaction(ctx)
    hudi_ds.write(path, SECOND, opts)
    assert rows(hudi_ds.read(path)) == EXPECTED
    latest = bases(path)[-1]
    latest.unlink()
    with pytest.raises(MissingFileError, match=latest.name) as e:
        hudi_ds.read(path)
    assert e.value.path == str(latest.relative_to(path))


def test_cow_write_refuses_to_merge_into_an_older_version(tmp_path: Path) -> None:
    path = two_commits(tmp_path, COW)
    latest = bases(path)[-1]
    saved = latest.read_bytes()
    latest.unlink()
    before = instants(path)
    with pytest.raises(MissingFileError, match=latest.name):
        hudi_ds.write(path, pa.table({"id": ["e"], "ts": [3], "p": ["x"], "v": ["e3"]}), COW)
    assert instants(path) == before  # nothing was written
    latest.write_bytes(saved)
    assert rows(hudi_ds.read(path)) == EXPECTED == hudi_rs(path)


def test_base_file_of_another_size_than_committed_is_an_error(tmp_path: Path) -> None:
    path = two_commits(tmp_path, COW)
    latest = bases(path)[-1]
    latest.write_bytes(latest.read_bytes() + b"\0")  # the footer still reads: only the size tells
    with pytest.raises(CorruptFileError, match=latest.name):
        hudi_ds.read(path)


def test_every_flipped_byte_of_a_log_block_raises_naming_the_file_or_reads_right(
    tmp_path: Path,
) -> None:
    path = two_commits(tmp_path)
    last = logs(path)[-1]
    data = last.read_bytes()
    outcomes = {"error": 0, "same": 0}
    for off in range(0, len(data), 23):
        flipped = bytearray(data)
        flipped[off] ^= 0xFF
        last.write_bytes(bytes(flipped))
        try:
            got = rows(hudi_ds.read(path))
        except CorruptBlockError as e:
            assert last.name in str(e), (off, str(e))
            outcomes["error"] += 1
        else:
            assert got == EXPECTED, off  # a flip in bytes nothing reads
            outcomes["same"] += 1
    assert outcomes["error"] > outcomes["same"] > 0


def test_torn_tail_past_the_committed_size_is_still_skipped(tmp_path: Path) -> None:
    path = two_commits(tmp_path)
    last = logs(path)[-1]
    data = last.read_bytes()
    last.write_bytes(data + data[: len(data) // 3])  # a failed later append, torn
    table = hudi_ds.HudiTable(path)
    assert rows(table.read()) == EXPECTED
    assert table.last_read_stats.corrupt_blocks == 1
    assert table.last_read_stats.missing_files == table.last_read_stats.damaged_files == []


# -- a read racing the cleaner re-plans ----------------------------------------------------------------

RETAIN_ONE = {"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
              "hoodie.cleaner.fileversions.retained": "1"}  # fmt: skip


def compact_and_clean(path: str) -> None:
    ctx = ServiceContext.open(path, RETAIN_ONE)
    assert compaction.schedule_compaction(ctx) is not None
    compaction.run_compaction(ctx)
    assert clean.clean(ctx).deleted


def racing_table(path: str, race: Callable[[], None]) -> Any:
    """A table whose first ``plan_read`` runs ``race`` right after planning (``.raced`` tells)."""

    class Racing(hudi_ds.HudiTable):
        raced = False

        def plan_read(self, *args: Any, **kwargs: Any) -> Any:
            planned = super().plan_read(*args, **kwargs)
            if not self.raced:
                self.raced = True
                race()
            return planned

    return Racing(path)


def test_read_planned_before_a_compaction_and_clean_replans(tmp_path: Path) -> None:
    path = two_commits(tmp_path)
    old_files = set(logs(path))
    table = hudi_ds.HudiTable(path)
    plan = table.plan_read()
    assert {Path(path) / lf.path for s in plan.slices for lf in s.log_files} == old_files

    racing = racing_table(path, lambda: compact_and_clean(path))
    got = racing.read()
    assert racing.raced and not any(f.exists() for f in old_files)  # the clean removed them
    assert rows(got) == EXPECTED == hudi_rs(path)
    assert racing.last_read_stats.replans == 1


def test_cow_read_racing_a_newer_version_and_its_clean_replans(tmp_path: Path) -> None:
    """On main this raised CorruptFileError for the base file the cleaner removed."""
    path = two_commits(tmp_path, COW)
    third = pa.table({"id": ["b"], "ts": [3], "p": ["x"], "v": ["b3"]})
    expected = sorted([*(r for r in EXPECTED if r[0] != "b"), ("b", 3, "x", "b3")])

    def race() -> None:
        """A new file version is committed and the old one cleaned right after planning."""
        hudi_ds.write(path, third, COW)
        assert clean.clean(ServiceContext.open(path, RETAIN_ONE)).deleted

    racing = racing_table(path, race)
    racing.read_threads = 1
    assert rows(racing.read()) == expected == hudi_rs(path)
    assert racing.last_read_stats.replans == 1


def test_long_lived_table_with_a_stale_timeline_replans(tmp_path: Path) -> None:
    path = two_commits(tmp_path)
    table = hudi_ds.HudiTable(path)
    assert rows(table.read()) == EXPECTED  # caches the timeline
    compact_and_clean(path)
    got = table.read()  # listing is fresh, the cached timeline is not
    assert rows(got) == EXPECTED == hudi_rs(path)
    assert table.last_read_stats.replans == 1


def test_a_file_no_clean_removed_is_still_missing(tmp_path: Path) -> None:
    path = two_commits(tmp_path)
    table = hudi_ds.HudiTable(path)
    plan = table.plan_read()
    gone = logs(path)[-1]
    gone.unlink()
    with pytest.raises(MissingFileError, match=gone.name):
        list(table.read_plan_slices(plan, plan.slices))
    with pytest.raises(MissingFileError, match=gone.name):
        table.read()


# -- hoodie.properties --------------------------------------------------------------------------------

PROPS = Path(".hoodie") / "hoodie.properties"


def keyed(n: int, ts: int) -> pa.Table:
    return pa.table(
        {
            "id": [f"k{i:03d}" for i in range(n)],
            "ts": [ts] * n,
            "p": ["x"] * n,
            "v": [f"v{i}-{ts}" for i in range(n)],
        }
    )


@pytest.mark.parametrize("meta", ["true", "false"])  # false: keys sampled from the key field
@pytest.mark.parametrize("stored", ["5", "3", "8"])
@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_changed_bucket_count_is_refused_before_writing(
    tmp_path: Path, stored: str, table_type: str, meta: str
) -> None:
    path = str(tmp_path / "t")
    opts = {
        **OPTS,
        "hoodie.bucket.index.num.buckets": "4",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.populate.meta.fields": meta,
    }
    hudi_ds.write(path, keyed(200, 1), opts)
    expected = rows(keyed(200, 1))
    props = Path(path) / PROPS
    text = props.read_text()
    assert "hoodie.bucket.index.num.buckets=4\n" in text
    props.write_text(text.replace("num.buckets=4\n", f"num.buckets={stored}\n"))
    before = instants(path)
    upsert = {k: v for k, v in opts.items() if k != "hoodie.bucket.index.num.buckets"}
    with pytest.raises(CorruptFileError, match="hoodie.properties") as e:
        hudi_ds.write(path, keyed(200, 2), upsert)
    assert f"hoodie.bucket.index.num.buckets={stored}" in str(e.value)
    assert instants(path) == before  # nothing was written
    assert rows(hudi_ds.read(path)) == expected == hudi_rs(path)


def test_more_buckets_in_a_partition_outside_the_sample_are_refused_where_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check before a write lists a sample of the partitions (its cost must not grow with
    the table); a partition outside it whose file groups hold more buckets than the count is
    refused when the write routes rows to it, before any of its files is written."""
    from hudi_ds.write import bucket_layout

    monkeypatch.setattr(bucket_layout, "MAX_CHECKED_PARTITIONS", 1)
    path = str(tmp_path / "t")
    opts = {**OPTS, "hoodie.bucket.index.num.buckets": "2"}
    data = pa.table(
        {
            "id": [f"k{i:02d}" for i in range(20)],
            "ts": [1] * 20,
            "p": ["a"] * 10 + ["b"] * 10,
            "v": [f"v{i}" for i in range(20)],
        }
    )
    hudi_ds.write(path, data, opts)
    expected = rows(data)
    # partition b gets a copy of its bucket-1 file group as bucket 3: written with more buckets
    copied = [f for f in (Path(path) / "b").iterdir() if f.name.lstrip(".").startswith("00000001")]
    assert copied
    for f in copied:
        shutil.copy(f, f.with_name(f.name.replace("00000001", "00000003", 1)))
    expected = rows(hudi_ds.read(path), unique=False)
    assert len(expected) > 20  # (the copy's rows are read twice)
    upd_a = data.filter(pa.compute.equal(data["p"], "a")).set_column(1, "ts", pa.array([2] * 10))
    upd_b = data.filter(pa.compute.equal(data["p"], "b")).set_column(1, "ts", pa.array([2] * 10))
    with pytest.raises(
        CorruptFileError, match=r"num.buckets=2 contradicts .* partition 'b' \(bucket 3\)"
    ):
        hudi_ds.write(path, upd_b, opts)
    assert rows(hudi_ds.read(path), unique=False) == expected == hudi_rs(path, unique=False)
    hudi_ds.write(path, upd_a, opts)  # partition a (the sample) is fine
    after = sorted((*r[:1], 2, *r[2:]) if r[2] == "a" else r for r in expected)
    assert rows(hudi_ds.read(path), unique=False) == after == hudi_rs(path, unique=False)


def test_flipped_byte_in_hoodie_properties_names_the_file(tmp_path: Path) -> None:
    path = two_commits(tmp_path)
    props = Path(path) / PROPS
    data = bytearray(props.read_bytes())
    data[len(data) // 2] = 0xC3  # not valid UTF-8 followed by ASCII
    props.write_bytes(bytes(data))
    with pytest.raises(CorruptFileError, match="hoodie.properties"):
        hudi_ds.read(path)


@pytest.mark.parametrize("damage", ["truncated", "emptied", "flipped", "checksum"])
def test_valid_backup_is_used_when_hoodie_properties_is_damaged(
    tmp_path: Path, damage: str
) -> None:
    path = two_commits(tmp_path)
    props = Path(path) / PROPS
    good = props.read_bytes()
    shutil.copy(props, props.with_name("hoodie.properties.backup"))
    if damage == "truncated":
        bad = good[: len(good) // 2]
    elif damage == "emptied":
        bad = b""
    elif damage == "flipped":
        bad = good[:40] + b"\xff" + good[41:]
    else:
        bad = good.replace(b"hoodie.table.checksum=", b"hoodie.table.checksum=1")
    props.write_bytes(bad)
    table = hudi_ds.HudiTable(path)
    assert table.config.props == hudi_ds.HudiTable(path).config.props
    assert table.config.is_mor and table.config.get("hoodie.bucket.index.num.buckets") == "1"
    assert rows(table.read()) == EXPECTED
    # without the backup the damage is an error naming the file (truncation keeps enough
    # keys for Java to take the file; so do we, when there is nothing better)
    props.with_name("hoodie.properties.backup").unlink()
    if damage != "truncated":
        with pytest.raises(HudiError, match="hoodie.properties"):
            hudi_ds.HudiTable(path)
