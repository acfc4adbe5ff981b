"""The record-index files a process keeps decoded (hudi_ds.metadata.record_index_cache): lookups
through it equal a whole read of the HFile, another writer's commit is seen, the budget holds."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

from hudi_ds.errors import ConfigError, CorruptFileError
from hudi_ds.layout.hfile import read_hfile, write_hfile
from hudi_ds.metadata import record_index_cache
from hudi_ds.metadata.record_index_cache import Query, RecordIndexCache, _HFileEntry
from hudi_ds.storage import Storage

# rows of every shape a padded array must keep apart: prefixes of one another, a NUL inside,
# multi-byte UTF-8, the empty row, lengths from 0 to 40
_ROWS = sorted(
    {f"k{i}".encode() for i in range(0, 3000, 7)}
    | {b"", b"k", b"k1\x00x", "clé-é".encode(), "日本".encode(), b"z" * 40, b"k10", b"k100"}
)


def _hfile(rows: list[bytes], block_size: int = 512) -> bytes:
    values = [b"v%d" % (len(r) % 5) for r in rows]  # few distinct values, as a record index
    return write_hfile(
        pa.array(rows, pa.binary()), pa.array(values, pa.binary()), block_size=block_size
    )


def _codes(entry: _HFileEntry, q: Query) -> dict[bytes, bytes]:
    codes = entry.find(q)
    return {k: entry.values[c] for k, c in zip(q.raw, codes.tolist(), strict=True) if c >= 0}


@pytest.mark.parametrize("nul_row", [False, True])
def test_lookups_equal_the_whole_file(nul_row: bool) -> None:
    """Every row is found with its value, absent keys (a row plus a NUL, a prefix, one past
    the last) are not -- over many blocks, decoded by a first lookup then searched as one
    array; a file holding a row that ends in NUL is searched block by block instead."""
    rows = sorted({*_ROWS, b"k7\x00"}) if nul_row else _ROWS
    data = _hfile(rows)
    whole = read_hfile(data)
    want = dict(zip(whole.keys, whole.values, strict=True))
    entry = _HFileEntry(data, "t.hfile", "", keep=True)
    assert len(entry.blocks) > 10
    absent = [r + b"\x00" for r in rows[::5] if not r.endswith(b"\x00")] + [b"k2", b"zz", b"j"]
    keys = [k.decode("utf-8") for k in rows + absent]
    few = Query(keys[:5])
    assert _codes(entry, few) == {k: want[k] for k in few.raw if k in want}
    q = Query(keys)
    assert _codes(entry, q) == want  # every block decoded now
    assert (entry.merged is not None) == (not nul_row) and entry.searchable == (not nul_row)
    assert _codes(entry, q) == want  # the merged array (or the blocks again)


def test_a_first_lookup_decodes_a_file_of_few_cells_for_its_keys() -> None:
    """A first lookup of many keys in a small file decodes it (one search from then on); of
    few keys in a large file it searches the blocks they fall in and decodes nothing."""
    data = _hfile(_ROWS)
    whole = read_hfile(data)
    want = dict(zip(whole.keys, whole.values, strict=True))
    keys = [k.decode("utf-8") for k in _ROWS if not k.endswith(b"\x00")]
    many, few = Query(keys[::3]), Query(keys[:: len(keys) // 4])
    for q, decoded in ((many, True), (few, False)):
        entry = _HFileEntry(data, "t.hfile", "", keep=True)
        assert _codes(entry, q) == {k: want[k] for k in q.raw}
        assert (entry.merged is not None) == decoded and (entry._first is None) == decoded


def test_a_damaged_block_is_an_error() -> None:
    data = bytearray(_hfile(_ROWS, block_size=4096))
    entry = _HFileEntry(bytes(data), "t.hfile", "", keep=True)
    offset = entry.opened.entries[1][0] if entry.opened is not None else 0
    data[offset + 40 : offset + 48] = b"\xff" * 8  # inside the gzip payload of block 1
    entry = _HFileEntry(bytes(data), "t.hfile", "", keep=True)
    with pytest.raises(CorruptFileError, match="t.hfile"):
        entry.find(Query([k.decode() for k in _ROWS]))


def test_entries_are_keyed_by_name_size_and_time(tmp_path: Path) -> None:
    """A file rewritten under its name (a new modification time) is read again; the budget
    evicts the least recently used file and 0 keeps nothing."""
    storage = Storage(str(tmp_path))
    one, two = _hfile([b"a", b"b"]), _hfile([b"a", b"c"])
    assert len(one) == len(two)
    (tmp_path / "f.hfile").write_bytes(one)
    cache = RecordIndexCache()

    def look(key: str) -> bool:
        info = {f.path: (f.size, f.mtime_ms) for f in storage.list_files("")}
        entry = cache.base(storage, "f.hfile", len(one), info)
        return bool((entry.find(Query([key])) >= 0).all())

    assert look("b") and not look("c") and len(cache) == 1
    (tmp_path / "f.hfile").write_bytes(two)
    st = os.stat(tmp_path / "f.hfile")
    os.utime(tmp_path / "f.hfile", ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    assert look("c") and not look("b") and len(cache) == 2
    cache.set_budget(cache.held - 1)
    assert len(cache) == 1 and look("c")
    cache.set_budget(0)
    assert len(cache) == 0 and look("c") and len(cache) == 0


def test_another_writers_commit_is_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys deleted, updated and inserted by a writer in another process (its own cache) are
    where that commit put them when this process, its cache warm, looks them up next -- and
    this process's next upsert tags them so (no key twice, hudi-rs reads the same rows)."""
    import hudi_ds
    from hudi_ds.api import HudiTable
    from hudi_ds.index.record_level import record_index_locations
    from tests.conftest import assert_rows, hudi_rs_table, table_options
    from tests.metadata.rli_support import key_rows as _rows
    from tests.metadata.test_record_index import assert_index_true

    root = str(tmp_path / "t")
    opts = {
        **table_options("rli", partition="p", table_type="MERGE_ON_READ", buckets=None),
        "hoodie.metadata.enable": "true",
        "hoodie.metadata.record.index.enable": "true",
        "hoodie.index.type": "RECORD_INDEX",
        "hoodie.metadata.record.index.cache.max.bytes": "64m",
        "hoodie.clean.automatic": "false",
    }
    hudi_ds.write(root, _rows(list(range(30)), ["p0", "p1", "p2"] * 10, 1), opts)
    mine = record_index_cache.cache()
    keys = [f"k{i}" for i in range(40)]
    before = record_index_locations(Storage(root), keys)
    assert before is not None and len(before) == 30 and len(mine) > 0
    with monkeypatch.context() as m:  # the other process
        m.setattr(record_index_cache, "_CACHE", RecordIndexCache())
        HudiTable(root, opts).delete(_rows([4, 5], ["p1", "p2"], 2))
        # a global index keeps k6 in p0 (its partition path is not updated)
        hudi_ds.write(root, _rows([6, 31], ["p2", "p0"], 3), opts)
    after = record_index_locations(Storage(root), keys)
    assert after == assert_index_true(Path(root))
    assert "k4" not in after and "k5" not in after and after["k6"] == before["k6"]
    assert after["k31"].partition == "p0" and "k31" not in before
    hudi_ds.write(root, _rows([6, 7, 32], ["p2", "p1", "p1"], 4), opts)
    stored = assert_index_true(Path(root))
    expected = [(k, loc.partition) for k, loc in stored.items()]
    assert len(expected) == 30 - 2 + 2
    # (an update names the key's new partition in its p column; a global index keeps it where
    # it was: its partition path)
    cols = ["id", "_hoodie_partition_path"]
    assert_rows(hudi_ds.read(root, columns=cols), expected, cols)
    assert_rows(hudi_rs_table(root, {"hoodie.metadata.enable": "true"}), expected, cols)


@pytest.mark.parametrize("value", ["-1", "lots"])
def test_the_budget_option_is_checked(value: str, tmp_path: Path) -> None:
    import hudi_ds
    from tests.conftest import table_options

    opts = {**table_options("t"), "hoodie.metadata.record.index.cache.max.bytes": value}
    with pytest.raises(ConfigError, match="hoodie.metadata.record.index.cache.max.bytes"):
        hudi_ds.write(str(tmp_path / "t"), pa.table({"id": ["a"], "ts": [1]}), opts)
    assert not (tmp_path / "t").exists()


def test_a_writes_index_upkeep_searches_nothing_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An upsert tags its keys with one search of the record index; the index's upkeep at its
    commit takes the keys its log blocks update in place from that search, the keys of its
    log files from the append handles and those of its new base files from the merge handles
    (no data file read, no second search), and the index is as a rebuild from the table's
    files. A lookup after the commit, or after the
    cache is cleared, searches again."""
    import hudi_ds
    from hudi_ds.api import HudiTable
    from hudi_ds.index.record_level import record_index_locations
    from hudi_ds.metadata import record_index
    from hudi_ds.metadata.record_index_writer import RecordIndexWriter
    from tests.conftest import table_options
    from tests.metadata.rli_support import key_rows as _rows
    from tests.metadata.test_record_index import assert_index_true

    root = str(tmp_path / "t")
    opts = {
        **table_options("rli", partition="p", table_type="MERGE_ON_READ", buckets=None),
        "hoodie.metadata.enable": "true",
        "hoodie.metadata.record.index.enable": "true",
        "hoodie.index.type": "RECORD_INDEX",
        "hoodie.clean.automatic": "false",
        # no small file: updates go to log files, inserts to new file groups
        "hoodie.parquet.small.file.limit": "0",
    }
    hudi_ds.write(root, _rows(list(range(30)), ["p0", "p1", "p2"] * 10, 1), opts)
    searched: list[int] = []
    read: list[str] = []
    groups, base_changes = record_index._read_groups, RecordIndexWriter._base_changes
    log_keys = RecordIndexWriter._log_keys
    monkeypatch.setattr(
        RecordIndexWriter,
        "_log_keys",
        lambda self, path, *a: read.append(path) or log_keys(self, path, *a),
    )
    monkeypatch.setattr(
        record_index,
        "_read_groups",
        lambda s, keep, keys, *a: searched.append(len(keys)) or groups(s, keep, keys, *a),
    )
    monkeypatch.setattr(
        RecordIndexWriter,
        "_base_changes",
        lambda self, out, p, st, loc: read.append(st.path) or base_changes(self, out, p, st, loc),
    )
    hudi_ds.write(root, _rows([1, 2, 3, 40, 41], ["p1", "p2", "p0", "p1", "p2"], 2), opts)
    assert searched == [5] and read == []
    stored = assert_index_true(Path(root))
    assert len(stored) == 32 and stored["k40"].partition == "p1"
    # the keys updated in place stay in their file groups, the new ones are in new ones
    assert stored["k1"].file_id != stored["k40"].file_id
    keys = ["k1", "k40"]
    assert record_index_locations(Storage(root), keys) == {k: stored[k] for k in keys}
    assert searched == [5, 2]
    record_index_cache.cache().clear()
    assert record_index_locations(Storage(root), keys) == {k: stored[k] for k in keys}
    assert searched == [5, 2, 2]
    # deletes: log files of delete blocks, the keys gone from the index
    HudiTable(root, opts).delete(_rows([2, 40], ["p2", "p1"], 3))
    assert read == []
    stored = assert_index_true(Path(root))
    assert len(stored) == 30 and "k2" not in stored and "k40" not in stored
