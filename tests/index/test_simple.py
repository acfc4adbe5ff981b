"""SIMPLE / GLOBAL_SIMPLE lookups (hudi_ds.index.simple) on tables hudi_ds writes and on the
Java-written fixtures, against locations computed independently from the files.

The helpers here (slices of a table, the expected locations, a counting storage) are shared
with tests/index/test_bloom.py.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hudi_ds
from hudi_ds.errors import ConfigError, CorruptFileError, MissingFileError, SchemaError
from hudi_ds.index import KeyLocations, LookupSpec, lookup_of
from hudi_ds.index.bloom import bloom_lookup
from hudi_ds.index.lookup import reads_logs
from hudi_ds.index.simple import KeyCache, simple_lookup
from hudi_ds.layout.file_group import BaseFile, FileSlice, LogFile
from hudi_ds.layout.naming import parse_base_file_name, parse_log_file_name
from hudi_ds.log.block import BlockType
from hudi_ds.log.reader import decode_data_block, scan_log_bytes
from hudi_ds.storage import Storage
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.timeline.view import TableState
from tests.builders import copy_table, rows
from tests.conftest import table_options
from tests.fixtures import (
    GOLDEN_DIR,
    fixture_names,
    fixture_table,
    has_lance_base_files,
    require_base_file_reader,
)

NEW = (None, None, None)

# --------------------------------------------------------------------------------------------
# shared helpers
# --------------------------------------------------------------------------------------------


class CountingStorage(Storage):
    """A Storage that records every data file it opens (``open_input_file``/``read_bytes``)."""

    def __init__(self, base_uri: str) -> None:
        super().__init__(base_uri)
        self.opened: list[str] = []

    def open_input_file(self, rel: str, size: int | None = None) -> pa.NativeFile:
        self.opened.append(rel)
        return super().open_input_file(rel, size)

    def read_bytes(self, rel: str) -> bytes:
        self.opened.append(rel)
        return super().read_bytes(rel)


def table_slices(path: str | Path) -> tuple[CountingStorage, list[FileSlice], LookupSpec]:
    """The latest visible slice of every file group of the table, and the table's LookupSpec."""
    state = TableState.open(str(path))
    vis = state.visibility()
    view = FileSystemView(state.storage, state.config)
    slices = [s for p in view.partitions() for s in view.latest_file_slices(p, vis)]
    c = state.config
    spec = LookupSpec(
        tuple(c.record_key_fields), c.complex_record_key, c.populate_meta_fields, c.is_mor
    )
    return CountingStorage(str(path)), slices, spec


def _java_str(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dt.date):
        return v.isoformat()
    return str(v)


def _row_keys(rows: list[dict[str, Any]], spec: LookupSpec) -> list[str]:
    """Record keys of rows, written out by hand (the key generators' grammar)."""
    out = []
    for r in rows:
        if spec.meta_fields and r.get("_hoodie_record_key") is not None:
            out.append(r["_hoodie_record_key"])
        elif spec.complex_key:
            parts = []
            for f in spec.record_key_fields:
                v = r[f]
                s = "__null__" if v is None else ("__empty__" if v == "" else _java_str(v))
                parts.append(f"{f}:{s}")
            out.append(",".join(parts))
        else:
            out.append(_java_str(r[spec.record_key_fields[0]]))
    return out


def read_any_base_file(path: Path) -> pa.Table:
    """A base file's rows, read with pyarrow (Parquet) or pylance (Lance)."""
    if path.suffix == ".lance":
        from lance.file import LanceFileReader

        return LanceFileReader(str(path)).read_all().to_table()
    return pq.read_table(path)


def file_keys(root: Path, s: FileSlice, spec: LookupSpec, logs: bool) -> list[str]:
    """Every record key of a slice's files: the base file read whole with pyarrow, then the
    data blocks of its logs that no later rollback command block targets."""
    keys: list[str] = []
    if s.base_file is not None:
        keys += _row_keys(read_any_base_file(root / s.base_file.path).to_pylist(), spec)
    if logs:
        blocks = []
        for lf in s.log_files:
            blocks += scan_log_bytes((root / lf.path).read_bytes()).blocks
        for i, b in enumerate(blocks):
            if b.block_type not in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA):
                continue
            if any(
                later.is_rollback_command and later.target_instant_time == b.instant_time
                for later in blocks[i + 1 :]
            ):
                continue
            keys += _row_keys(decode_data_block(b).to_pylist(), spec)
    return keys


def expected_locations(
    root: str | Path,
    slices: Sequence[FileSlice],
    keys: Sequence[str],
    partitions: Sequence[str] | None,
    spec: LookupSpec,
) -> list[tuple[str | None, str | None, str | None]]:
    """Per key, (file id, partition, base instant) of the slice holding it (greatest base
    instant, then smallest file id), or ``NEW``; computed row by row in Python."""
    return [
        min(loc for loc in locs if loc[2] == max(x[2] for x in locs)) if locs else NEW
        for locs in _all_locations(root, slices, keys, partitions, spec)
    ]


def expected_other_locations(
    root: str | Path,
    slices: Sequence[FileSlice],
    keys: Sequence[str],
    partitions: Sequence[str] | None,
    spec: LookupSpec,
) -> list[tuple[int, str, str, str]]:
    """``(row, file id, partition, base instant)`` of every slice holding a key besides the
    one :func:`expected_locations` picks, sorted."""
    best = expected_locations(root, slices, keys, partitions, spec)
    return sorted(
        (i, *loc)
        for i, locs in enumerate(_all_locations(root, slices, keys, partitions, spec))
        for loc in set(locs)
        if loc != best[i]
    )


def _all_locations(
    root: str | Path,
    slices: Sequence[FileSlice],
    keys: Sequence[str],
    partitions: Sequence[str] | None,
    spec: LookupSpec,
) -> list[list[tuple[str, str, str]]]:
    """Per key, every slice holding it (the key alone, or in its partition)."""
    where: dict[tuple[str, str | None], list[tuple[str, str, str]]] = {}
    for s in slices:
        for k in set(file_keys(Path(root), s, spec, reads_logs(spec, s))):
            loc = (s.file_id, s.partition_path, s.base_instant_time)
            where.setdefault((k, s.partition_path), []).append(loc)
            where.setdefault((k, None), []).append(loc)
    return [
        where.get((k, None if partitions is None else partitions[i]), [])
        for i, k in enumerate(keys)
    ]


def other_locations(r: KeyLocations) -> list[tuple[int, str, str, str]]:
    """The other locations of a lookup's keys held twice (as :func:`expected_other_locations`)."""
    g = pa.array(r.more_groups, pa.int64())
    return sorted(
        zip(
            r.more_rows.tolist(),
            r.group_file_ids.take(g).to_pylist(),
            r.group_partitions.take(g).to_pylist(),
            r.group_instants.take(g).to_pylist(),
            strict=True,
        )
    )


def as_tuples(r: KeyLocations) -> list[tuple[str | None, str | None, str | None]]:
    """The locations of a lookup as (file id, partition, instant) tuples."""
    return list(
        zip(r.file_id.to_pylist(), r.partition.to_pylist(), r.instant.to_pylist(), strict=True)
    )


def check_lookup(
    lookup: Any,
    root: str | Path,
    storage: Storage,
    slices: Sequence[FileSlice],
    keys: Sequence[str],
    partitions: Sequence[str] | None,
    spec: LookupSpec,
) -> KeyLocations:
    """Run ``lookup`` and compare every location with :func:`expected_locations`."""
    r = lookup(
        storage,
        slices,
        pa.array(keys, pa.string()),
        None if partitions is None else pa.array(partitions, pa.string()),
        spec,
    )
    expected = expected_locations(root, slices, keys, partitions, spec)
    assert as_tuples(r) == expected
    assert r.found.to_pylist() == [e != NEW for e in expected]
    assert other_locations(r) == expected_other_locations(root, slices, keys, partitions, spec)
    return r


def lookup_inputs(
    root: Path, slices: Sequence[FileSlice], spec: LookupSpec
) -> tuple[list[str], list[str]]:
    """Keys to look up: every key of every slice in its partition, the same keys in another
    partition, keys of no file, and repeats."""
    keys: list[str] = []
    parts: list[str] = []
    moved: list[tuple[str, str]] = []
    all_parts = sorted({s.partition_path for s in slices}) or [""]
    for s in slices:
        ks = sorted(set(file_keys(root, s, spec, spec.read_logs)))
        keys += ks
        parts += [s.partition_path] * len(ks)
        other = [p for p in all_parts if p != s.partition_path]
        if other and ks:
            moved.append((ks[0], other[0]))
    keys += [k for k, _ in moved] + ["no-such-key", "zzz-new", keys[0] if keys else "k"]
    parts += [p for _, p in moved] + [all_parts[0], all_parts[-1], parts[0] if parts else ""]
    return keys, parts


# --------------------------------------------------------------------------------------------
# tables written by hudi_ds
# --------------------------------------------------------------------------------------------


_rows = partial(
    rows, key="k{:04d}", part_of=lambda i: "a" if i % 3 else "b", value=lambda i, ts: f"v{i}"
)


@pytest.fixture(scope="module")
def built_cow_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("simple") / "cow"
    opts = table_options("cow", partition="p", buckets=4, table_type="COPY_ON_WRITE")
    hudi_ds.write(str(path), _rows(range(0, 60), 1), opts)
    hudi_ds.write(str(path), _rows(range(40, 90), 2), opts)
    return path


@pytest.fixture(scope="module")
def built_mor_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """MOR: delta commit (logs only), compaction into base files, then more logs on top."""
    path = tmp_path_factory.mktemp("simple") / "mor"
    opts = {
        **table_options("mor", partition="p", buckets=3, table_type="MERGE_ON_READ"),
        "hoodie.compact.inline": "true",
        "hoodie.compact.inline.max.delta.commits": "2",
    }
    hudi_ds.write(str(path), _rows(range(0, 40), 1), opts)
    hudi_ds.write(str(path), _rows(range(30, 60), 2), opts)  # then compacted
    hudi_ds.write(str(path), _rows(range(55, 80), 3), opts)  # logs on the new base files
    return path


# the tables are written once per module; each test gets its own copy
@pytest.fixture
def cow_table(built_cow_table: Path, tmp_path: Path) -> Path:
    return copy_table(built_cow_table, tmp_path / "cow")


@pytest.fixture
def mor_table(built_mor_table: Path, tmp_path: Path) -> Path:
    return copy_table(built_mor_table, tmp_path / "mor")


@pytest.mark.parametrize("global_", [False, True])
def test_simple_on_cow_table(cow_table: Path, global_: bool) -> None:
    storage, slices, spec = table_slices(cow_table)
    assert len(slices) == 8 and all(s.base_file is not None and not s.log_files for s in slices)
    keys, parts = lookup_inputs(cow_table, slices, spec)
    r = check_lookup(
        simple_lookup, cow_table, storage, slices, keys, None if global_ else parts, spec
    )
    # every written key found, the new ones not; a key asked in the wrong partition is new
    # unless global
    n_written = 90
    found = r.found.to_pylist()
    assert sum(found[:n_written]) == n_written
    assert found[-3:] == [False, False, True]
    wrong_partition = found[n_written : len(found) - 3]
    assert wrong_partition and all(f == global_ for f in wrong_partition)
    # SIMPLE reads every base file of the wanted partitions, each once, keys only
    assert r.files_read == r.keys_read == 8
    assert sorted(storage.opened) == sorted(s.base_file.path for s in slices if s.base_file)


def test_simple_reads_only_the_wanted_partitions(cow_table: Path) -> None:
    storage, slices, spec = table_slices(cow_table)
    r = simple_lookup(storage, slices, pa.array(["k0001"]), pa.array(["a"]), spec)
    assert r.partition.to_pylist() == ["a"]
    assert r.files_read == 4
    assert {
        s.partition_path for s in slices if s.base_file and s.base_file.path in storage.opened
    } == {"a"}


@pytest.mark.parametrize("kind", ["SIMPLE", "GLOBAL_SIMPLE"])
def test_key_cache_reads_each_base_file_once(cow_table: Path, kind: str) -> None:
    """A task's lookups with one KeyCache (its batches) read a base file's keys once; the
    answers are those of uncached lookups."""
    storage, slices, spec = table_slices(cow_table)
    k, p = lookup_inputs(cow_table, slices, spec)
    keys, parts = pa.array(k), pa.array(p)
    lookup = lookup_of(kind, KeyCache())
    plain = lookup_of(kind)
    # a batch touching every partition, then one touching some
    for i, half in enumerate([slice(0, len(keys)), slice(len(keys) // 2, len(keys))]):
        storage.opened.clear()
        r = lookup(storage, slices, keys[half], parts[half], spec)
        want = plain(Storage(str(cow_table)), slices, keys[half], parts[half], spec)
        assert as_tuples(r) == as_tuples(want)
        if i == 0:
            assert r.files_read == len(storage.opened) > 0
        else:  # every candidate base file was read by the first lookup
            assert r.files_read == 0 and storage.opened == []


def test_key_cache_budget_bounds_what_it_keeps(cow_table: Path) -> None:
    storage, slices, spec = table_slices(cow_table)
    keys, parts = lookup_inputs(cow_table, slices, spec)
    cache = KeyCache(budget_bytes=0)  # keeps nothing: every lookup reads again
    for _ in range(2):
        storage.opened.clear()
        r = simple_lookup(storage, slices, pa.array(keys), pa.array(parts), spec, cache)
        assert r.files_read == 8 and len(storage.opened) == 8
    assert as_tuples(r) == expected_locations(cow_table, slices, keys, parts, spec)


def test_simple_reads_only_the_key_column(cow_table: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    storage, slices, spec = table_slices(cow_table)
    asked: list[list[str] | None] = []
    real = pq.ParquetFile.read

    def read(self: pq.ParquetFile, columns: list[str] | None = None, **kw: Any) -> pa.Table:
        asked.append(columns)
        return real(self, columns=columns, **kw)

    monkeypatch.setattr(pq.ParquetFile, "read", read)
    simple_lookup(storage, slices, pa.array(["k0001"]), None, spec)
    assert asked == [["_hoodie_record_key"]] * 8


@pytest.mark.parametrize("global_", [False, True])
def test_simple_on_mor_table_reads_logs(mor_table: Path, global_: bool) -> None:
    storage, slices, spec = table_slices(mor_table)
    assert any(s.base_file is not None and s.log_files for s in slices)
    keys, parts = lookup_inputs(mor_table, slices, spec)
    r = check_lookup(
        simple_lookup, mor_table, storage, slices, keys, None if global_ else parts, spec
    )
    assert sum(r.found.to_pylist()[:80]) == 80
    n_logs = sum(len(s.log_files) for s in slices)
    assert r.files_read == r.keys_read == len(slices) + n_logs == len(storage.opened)
    # keys 60..79 only in logs: without reading logs they would be taken for new keys
    no_logs = LookupSpec(spec.record_key_fields, spec.complex_key, read_logs=False)
    r2 = simple_lookup(storage, slices, pa.array(keys), None, no_logs)
    only_in_logs = [k for k in keys if k >= "k0060" and k < "k0080"]
    assert only_in_logs
    assert not any(f for k, f in zip(keys, r2.found.to_pylist(), strict=True) if k in only_in_logs)


def test_deleted_keys_add_no_location(tmp_path: Path) -> None:
    path = tmp_path / "mor_del"
    opts = table_options("mor_del", partition="p", buckets=2, table_type="MERGE_ON_READ")
    hudi_ds.write(str(path), _rows(range(0, 10), 1), opts)
    ghost = pa.table({"id": ["ghost"], "p": ["a"], "ts": [5], "v": ["x"]})
    hudi_ds.write(str(path), ghost, {**opts, "hoodie.datasource.write.operation": "delete"})
    storage, slices, spec = table_slices(path)
    assert any(
        b.block_type == BlockType.DELETE
        for s in slices
        for lf in s.log_files
        for b in scan_log_bytes((path / lf.path).read_bytes()).blocks
    )
    r = check_lookup(simple_lookup, path, storage, slices, ["ghost", "k0001"], ["a", "a"], spec)
    assert r.found.to_pylist() == [False, True]


def test_key_in_two_file_groups_takes_the_latest_base_instant(tmp_path: Path) -> None:
    """Two file groups of one partition hold k1 (a Java insert can do that): the lookup names
    the slice with the greatest base instant, then the smallest file id, and the others."""
    storage = CountingStorage(str(tmp_path))
    (tmp_path / "p").mkdir()
    slices = []
    for fid, instant, keys in [
        ("bbbb-0", "20240101000000000", ["k1", "k2"]),
        ("aaaa-0", "20240102000000000", ["k1"]),
        ("cccc-0", "20240102000000000", ["k1", "k3"]),
        ("dddd-0", "20240101000000000", ["k2"]),
    ]:
        name = f"{fid}_0-1-1_{instant}.parquet"
        pq.write_table(pa.table({"_hoodie_record_key": keys}), tmp_path / "p" / name)
        base = BaseFile(f"p/{name}", parse_base_file_name(name))  # type: ignore[arg-type]
        slices.append(FileSlice("p", fid, instant, base))
    spec = LookupSpec(("id",), False)
    # a key asked twice gets its location twice; one asked in a partition without it is new
    keys = pa.array(["k1", "k2", "k3", "k4", "k1", "k2", "k1"])
    parts = pa.array(["p"] * 6 + ["q"])
    for lookup in (simple_lookup, bloom_lookup):
        r = lookup(storage, slices, keys, parts, spec)
        assert as_tuples(r) == [
            ("aaaa-0", "p", "20240102000000000"),
            ("bbbb-0", "p", "20240101000000000"),
            ("cccc-0", "p", "20240102000000000"),
            NEW,
            ("aaaa-0", "p", "20240102000000000"),
            ("bbbb-0", "p", "20240101000000000"),
            NEW,
        ]
        # every other group holding a key, per row that asks for it (Java's join tags the
        # record once per location)
        b, c, d = (
            ("bbbb-0", "p", "20240101000000000"),
            ("cccc-0", "p", "20240102000000000"),
            ("dddd-0", "p", "20240101000000000"),
        )
        assert other_locations(r) == [(0, *b), (0, *c), (1, *d), (4, *b), (4, *c), (5, *d)]
        assert other_locations(r) == expected_other_locations(
            tmp_path, slices, keys.to_pylist(), parts.to_pylist(), spec
        )


def test_rollback_command_block_drops_the_blocks_it_targets(tmp_path_factory: Any) -> None:
    """Java's log files: block 1 (key '1') is rolled back by the command block of log 2."""
    root = fixture_table("mor_parquet_v6_nonpartitioned_rollback", tmp_path_factory)
    logs = sorted(p.name for p in root.glob(".*.log.*"))
    assert len(logs) == 3
    storage = Storage(str(root))

    def slice_of(names: list[str]) -> FileSlice:
        lfs = [LogFile(n, parse_log_file_name(n)) for n in names]  # type: ignore[arg-type]
        return FileSlice("", lfs[0].file_id, lfs[0].instant_time, None, lfs)

    spec = LookupSpec(("id",), False)
    keys = pa.array(["1", "2"])
    assert simple_lookup(storage, [slice_of(logs[:1])], keys, None, spec).found.to_pylist() == [
        True,
        False,
    ]
    assert simple_lookup(storage, [slice_of(logs[:2])], keys, None, spec).found.to_pylist() == [
        False,
        False,
    ]
    r = simple_lookup(storage, [slice_of(logs)], keys, None, spec)
    assert r.found.to_pylist() == [False, True]
    assert r.files_read == 3


# --------------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("lookup", [simple_lookup, bloom_lookup])
def test_unreadable_base_file_is_an_error_naming_it(cow_table: Path, lookup: Any) -> None:
    storage, slices, spec = table_slices(cow_table)
    victim = next(s.base_file for s in slices if s.base_file and s.partition_path == "a")
    assert victim is not None
    (cow_table / victim.path).write_bytes(b"PAR1 not a parquet file")
    with pytest.raises(CorruptFileError, match=Path(victim.path).name):
        lookup(storage, slices, pa.array(["k0001"]), pa.array(["a"]), spec)
    (cow_table / victim.path).unlink()
    with pytest.raises(MissingFileError, match=Path(victim.path).name):
        lookup(storage, slices, pa.array(["k0001"]), None, spec)


@pytest.mark.parametrize("lookup", [simple_lookup, bloom_lookup])
def test_bad_input(cow_table: Path, lookup: Any) -> None:
    storage, slices, spec = table_slices(cow_table)
    with pytest.raises(SchemaError, match="null record key"):
        lookup(storage, slices, pa.array(["k1", None]), None, spec)
    with pytest.raises(SchemaError, match="2 record keys but 1 partition"):
        lookup(storage, slices, pa.array(["k1", "k2"]), pa.array(["a"]), spec)
    with pytest.raises(SchemaError, match="must be strings"):
        lookup(storage, slices, pa.array([1, 2]), None, spec)
    r = lookup(storage, slices, pa.array([], pa.string()), pa.array([], pa.string()), spec)
    assert len(r.file_id) == 0 and r.files_read == 0


@pytest.mark.parametrize("lookup", [simple_lookup, bloom_lookup])
def test_key_field_type_without_keys_names_the_file(tmp_path: Path, lookup: Any) -> None:
    """A table without meta fields whose key field is binary: no key can be built."""
    name = "f-0_0-1-1_20240101000000000.parquet"
    (tmp_path / "p").mkdir()
    pq.write_table(pa.table({"id": [b"\x01", b"\x02"]}), tmp_path / "p" / name)
    base = BaseFile(f"p/{name}", parse_base_file_name(name))  # type: ignore[arg-type]
    s = FileSlice("p", "f-0", "20240101000000000", base)
    spec = LookupSpec(("id",), False, meta_fields=False)
    with pytest.raises(SchemaError, match=f"{name}.*'id' has type binary"):
        lookup(Storage(str(tmp_path)), [s], pa.array(["1.5"]), None, spec)


def test_slices_without_files_are_skipped(tmp_path: Path) -> None:
    spec = LookupSpec(("id",), False)
    empty = FileSlice("p", "f-0", "20240101000000000")
    r = simple_lookup(Storage(str(tmp_path)), [empty], pa.array(["k"]), None, spec)
    assert as_tuples(r) == [NEW] and r.files_read == 0


def test_lookup_of() -> None:
    assert lookup_of("SIMPLE") is simple_lookup
    assert lookup_of("bloom") is bloom_lookup
    with pytest.raises(ConfigError, match="BUCKET"):
        lookup_of("BUCKET")
    with pytest.raises(ConfigError, match="HBASE"):
        lookup_of("HBASE")


def test_lookup_of_global_matches_keys_alone(cow_table: Path) -> None:
    storage, slices, spec = table_slices(cow_table)
    keys, parts = pa.array(["k0001", "k0003"]), pa.array(["b", "b"])  # k0001 lives in a
    for kind in ("GLOBAL_SIMPLE", "GLOBAL_BLOOM"):
        r = lookup_of(kind)(storage, slices, keys, parts, spec)
        assert r.partition.to_pylist() == ["a", "b"]
    for kind in ("SIMPLE", "BLOOM"):
        r = lookup_of(kind)(storage, slices, keys, parts, spec)
        assert r.partition.to_pylist() == [None, "b"]


# --------------------------------------------------------------------------------------------
# the Java-written fixtures
# --------------------------------------------------------------------------------------------

PARQUET_FIXTURES = [n for n in fixture_names() if not has_lance_base_files(n)]
#: Lance fixtures the lookups are checked on (COW partitioned, MOR with log files)
LANCE_FIXTURES = ["cow_v9_lance_txns_simple", "mor_avro_v9_trips_lance"]


def golden_keys(name: str, spec: LookupSpec) -> list[tuple[str, str | None, str | None]]:
    """(record key, partition path, file id) of every golden row (snapshot and read-optimized);
    partition and file id only where the rows carry meta fields."""
    out = []
    for query in ("snapshot", "read_optimized"):
        for line in (GOLDEN_DIR / f"{name}.{query}.jsonl").read_text().splitlines():
            row = json.loads(line)
            fname = row.get("_hoodie_file_name")
            fid = None
            if fname:
                parsed = parse_base_file_name(fname) or parse_log_file_name(fname)
                fid = parsed.file_id if parsed else fname
            out.append((_row_keys([row], spec)[0], row.get("_hoodie_partition_path"), fid))
    return out


def check_fixture(name: str, lookup: Any, tmp_path_factory: Any) -> None:
    """Both lookups, global and not, on a fixture: every location equals the expectation, every
    golden key is found at a file group that holds it, absent keys are new."""
    root = fixture_table(name, tmp_path_factory)
    storage, slices, spec = table_slices(root)
    keys, parts = lookup_inputs(root, slices, spec)
    check_lookup(lookup, root, storage, slices, keys, parts, spec)
    check_lookup(lookup, root, storage, slices, keys, None, spec)

    golden = golden_keys(name, spec)
    gkeys = [g[0] for g in golden] + ["no-such-key"]
    r = check_lookup(lookup, root, storage, slices, gkeys, None, spec)
    assert r.found.to_pylist() == [True] * len(golden) + [False]
    holders: dict[str, set[str]] = {}
    for s in slices:
        for k in file_keys(root, s, spec, spec.read_logs):
            holders.setdefault(k, set()).add(s.file_id)
    for (key, part, fid), got_fid, got_part in zip(
        golden, r.file_id.to_pylist(), r.partition.to_pylist(), strict=False
    ):
        assert got_fid in holders[key]
        if part is not None:
            assert got_part == part
        if fid is not None and len(holders[key]) == 1:
            assert got_fid == fid  # where Java wrote the row
    if spec.meta_fields and golden:
        r2 = check_lookup(
            lookup, root, storage, slices, [g[0] for g in golden], [g[1] for g in golden], spec
        )
        assert all(r2.found.to_pylist())


@pytest.mark.parametrize("name", PARQUET_FIXTURES)
def test_simple_on_fixture(name: str, tmp_path_factory: Any) -> None:
    check_fixture(name, simple_lookup, tmp_path_factory)


def test_fixture_no_metafields_keys_are_built_from_fields(
    tmp_path_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Java writes the meta columns of a table without meta fields all null: the keys come
    from the record key field, and only that column is read."""
    root = fixture_table("cow_v8_simplekeygen_hivestyle_no_metafields", tmp_path_factory)
    storage, slices, spec = table_slices(root)
    assert not spec.meta_fields and spec.record_key_fields == ("id",)
    for s in slices:
        assert s.base_file is not None
        meta_keys = pq.read_table(root / s.base_file.path).column("_hoodie_record_key")
        assert meta_keys.null_count == len(meta_keys) > 0
    asked: list[list[str] | None] = []
    real = pq.ParquetFile.read

    def read(self: pq.ParquetFile, columns: list[str] | None = None, **kw: Any) -> pa.Table:
        asked.append(columns)
        return real(self, columns=columns, **kw)

    monkeypatch.setattr(pq.ParquetFile, "read", read)
    r = simple_lookup(storage, slices, pa.array(["1", "2", "3", "4", "99"]), None, spec)
    assert r.found.to_pylist() == [True, True, True, True, False]
    assert asked == [["id"]] * len(slices)


@pytest.mark.parametrize("name", LANCE_FIXTURES)
def test_simple_on_lance_fixture(name: str, tmp_path_factory: Any) -> None:
    """Lance base files (Hudi 1.2): their keys are read as Parquet ones are."""
    require_base_file_reader(name)
    check_fixture(name, simple_lookup, tmp_path_factory)
