"""What reads of commit metadata need, without decoding all of it: the written files of a commit
(the scan of Jackson's pretty-printed JSON gives exactly what ``json.loads`` gives, any other
text is parsed) and its ``extraMetadata`` (only that member parsed)."""

from __future__ import annotations

import json
import random
import zipfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.errors import CorruptFileError
from hudi_ds.layout.naming import base_file_name, log_file_name
from hudi_ds.timeline import written
from hudi_ds.timeline.metadata import (
    CommitMetadata,
    WriteStat,
    extra_metadata_of,
    jackson_pretty,
)
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.timeline.written import WrittenFiles
from hudi_ds.write.client import WriteClient
from tests.conftest import table_options
from tests.fixtures import FIXTURES_DIR, MORE_FIXTURES_DIR, require_fixtures

BASE = "x/" + base_file_name("f0-0", "1-2-3", "001")
LOG = "x/" + log_file_name("f1-0", "001", 1, "1-2-3")


def _columns(wf: WrittenFiles) -> list[tuple[str, int, int]]:
    return list(zip(wf.paths, wf.sizes, wf.offsets, strict=True))


def _parsed(data: bytes) -> list[tuple[str, int, int]]:
    """What the written files are when the JSON is parsed."""
    return _columns(WrittenFiles.from_json(json.loads(data)))


def _stat(path: str | None, size: Any, **kw: Any) -> dict[str, Any]:
    """A write stat in Java's member order (HoodieWriteStat, then HoodieDeltaWriteStat's)."""
    out: dict[str, Any] = {"fileId": "f", "path": path, "cdcStats": None, "numWrites": 1}
    out["runtimeStats"] = {"totalScanTime": 0, "path": "not/a/file"}  # nested: not a member
    out["fileSizeInBytes"] = size
    out.update(kw)
    return out


def _commit(stats: dict[str, Any], **extra: Any) -> bytes:
    obj = {
        "partitionToWriteStats": stats,
        "compacted": False,
        "extraMetadata": {"schema": '{"type":"record","name":"r"}', "path": "x/extra"},
        "operationType": "UPSERT",
        **extra,
    }
    return jackson_pretty(obj).encode("utf-8")


def _scanned(data: bytes, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, int]]:
    """The written files read with json.loads unavailable: the scan must serve them."""
    with monkeypatch.context() as m:
        m.setattr(written.json, "loads", lambda *a, **k: pytest.fail("the JSON was parsed"))
        return _columns(WrittenFiles.from_bytes(data))


def test_the_scan_of_jackson_json_gives_what_parsing_gives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = _commit(
        {
            "x": [
                _stat(BASE, 4096),  # a base file: no logOffset member
                _stat(LOG, 900, logVersion=1, logOffset=100, logFiles=[LOG]),
                _stat(LOG, 1200, logVersion=1, logOffset=900, logFiles=[LOG]),  # appended again
                _stat("", 5, logOffset=7),  # an empty path: not a file
                _stat("x/" + log_file_name("f2-0", "001", 1, "1-2-3"), None, logOffset=None),
            ],
            "y": None,
            "z": [],
            "ü": [_stat("ü/" + base_file_name("f3-0", "1-2-3", "001"), -1)],
        }
    )
    want = [
        (BASE, 4096, 0),
        (LOG, 900, 100),
        (LOG, 1200, 900),
        ("x/" + log_file_name("f2-0", "001", 1, "1-2-3"), 0, 0),
        ("ü/" + base_file_name("f3-0", "1-2-3", "001"), -1, 0),
    ]
    assert _parsed(data) == want == _scanned(data, monkeypatch)
    # a replace commit's extra member after the stats; no stats at all ("{ }") is parsed
    replace = _commit({"x": [_stat(BASE, 1)]}, partitionToReplaceFileIds={"x": ["f9-0"]})
    assert _scanned(replace, monkeypatch) == [(BASE, 1, 0)]
    assert _columns(WrittenFiles.from_bytes(CommitMetadata().to_json_bytes())) == []
    # as hudi_ds writes commits: the full stats of CommitMetadata
    md = CommitMetadata(
        partition_to_write_stats={
            "x": [
                WriteStat(file_id="f1-0", path=LOG, file_size_in_bytes=10, log_offset=3),
                WriteStat(file_id="f0-0", path=BASE, file_size_in_bytes=20),
            ]
        }
    )
    assert _scanned(md.to_json_bytes(), monkeypatch) == _parsed(md.to_json_bytes())


def _other_shapes() -> dict[str, bytes]:
    good = _commit({"x": [_stat(BASE, 4096, logOffset=0), _stat(LOG, 9, logOffset=2)]})
    out = {
        "compact": json.dumps(json.loads(good)).encode(),
        "python indent": json.dumps(json.loads(good), indent=2).encode(),
        "an escaped path": good.replace(b'"path" : "x/', b'"path" : "x\\"q/', 1),
        "a float size": good.replace(b'"fileSizeInBytes" : 4096', b'"fileSizeInBytes" : 4096.0'),
        "a string size": good.replace(b'"fileSizeInBytes" : 4096', b'"fileSizeInBytes" : "4096"'),
        "a null path": good.replace(b'"path" : "x/', b'"path" : null, "p" : "x/', 1),
        "a path after the size": _commit({"x": [{"fileSizeInBytes": 5, "path": BASE}]}),
        "a repeated path": good.replace(
            b'"fileSizeInBytes" : 4096,', b'"fileSizeInBytes" : 4096,\n      "path" : "x/y",', 1
        ),
        "a repeated offset": good.replace(
            b'"logOffset" : 0', b'"logOffset" : 0,\n      "logOffset" : 5', 1
        ),
        "a stat without a size": _commit({"x": [{"path": BASE}, _stat(LOG, 1)]}),
        "two stats lists": good[:-2] + b',\n  "partitionToWriteStats" : { }\n}',
    }
    return out


@pytest.mark.parametrize("shape", sorted(_other_shapes()))
def test_json_of_another_shape_is_parsed(shape: str) -> None:
    data = _other_shapes()[shape]
    assert written._jackson_columns(data.strip()) is None
    assert _columns(WrittenFiles.from_bytes(data)) == _parsed(data)


def test_a_torn_or_undecodable_commit_is_refused() -> None:
    good = _commit({"x": [_stat(BASE, 4096)]})
    with pytest.raises(CorruptFileError, match="unreadable commit metadata JSON"):
        WrittenFiles.from_bytes(good[:-30])
    with pytest.raises(CorruptFileError, match="unreadable commit metadata JSON"):
        WrittenFiles.from_bytes(good.replace(b'"path" : "x/', b'"path" : "\xff/'))


def test_apache_hudi_commits_are_scanned_as_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every JSON commit of the fixture tables Apache Hudi wrote: the scan serves each one
    and agrees with parsing."""
    require_fixtures()
    zips = sorted(FIXTURES_DIR.glob("*.zip")) + sorted(MORE_FIXTURES_DIR.glob("*/*.zip"))
    seen = 0
    for z in zips:
        with zipfile.ZipFile(z) as zf:
            for name in zf.namelist():
                if "__MACOSX" in name or not name.endswith(
                    (".commit", ".deltacommit", ".replacecommit")
                ):
                    continue
                data = zf.read(name)
                if not data.strip().startswith(b"{"):
                    continue  # Avro (table version 8+)
                assert _scanned(data, monkeypatch) == _parsed(data), (z.name, name)
                seen += 1
    assert seen >= 20


def test_a_commit_of_many_files_is_scanned(monkeypatch: pytest.MonkeyPatch) -> None:
    stats = {
        f"p{p}": [
            _stat(f"p{p}/" + log_file_name(f"{b:08d}-0", "001", 1, "0-1-2"), 100 + b, logOffset=b)
            for b in range(50)
        ]
        for p in range(40)
    }
    data = _commit(stats)
    got = _scanned(data, monkeypatch)
    assert len(got) == 2000 and got == _parsed(data)


def _array_and_regex_scans(
    data: bytes, chunks: tuple[int, ...] = (1, 97, 1 << 22)
) -> tuple[Any, Any]:
    """What the whole-array scan and the regular expression each make of ``data`` (the
    array scan in chunks of a few lines, so that chunk edges fall everywhere)."""
    text = data.strip()
    start = text.find(written._STATS_START)
    end = text.find(written._STATS_END, start)
    # (what _jackson_columns refuses before it scans)
    scanned = (
        text.startswith(b'{\n  "')
        and text.endswith(b"\n}")
        and start >= 0
        and end >= 0
        and text.find(written._STATS_KEY, end) < 0
    )
    with pytest.MonkeyPatch.context() as m:
        m.setattr(written, "_VECTOR_MIN_BYTES", 1 << 62)
        try:
            by_regex: Any = written._jackson_columns(text)
        except (UnicodeDecodeError, OverflowError) as e:
            by_regex = type(e)
    out = []
    for chunk in chunks:
        with pytest.MonkeyPatch.context() as m:
            m.setattr(written, "_VECTOR_MIN_BYTES", 0)
            m.setattr(written, "_VECTOR_CHUNK_BYTES", chunk)
            try:
                by_arrays: Any = written._jackson_columns(text)
            except (UnicodeDecodeError, OverflowError) as e:
                by_arrays = type(e)
            # when the arrays decide, they decide as the regular expression does
            found = written._vector_columns(text, start, end) if scanned else None
            if found is not None:
                assert written._without_empty_paths(*found) == by_regex
        out.append(by_arrays)
    assert all(x == out[0] for x in out)
    return out[0], by_regex


def _odd_commits() -> dict[str, bytes]:
    """Commits in Jackson's shape and near it, for the two scans to agree on."""
    log2 = "x/" + log_file_name("f2-0", "001", 1, "1-2-3")
    mixed = _commit(
        {
            "x": [
                _stat(BASE, 4096),
                _stat(LOG, 900, logVersion=1, logOffset=100),
                _stat("", 5, logOffset=7),
                _stat(log2, None, logOffset=None),
                _stat(BASE, -1),
            ],
            "y": None,
            "z": [],
            "ü": [_stat("ü/" + base_file_name("f3-0", "1-2-3", "001"), 12)],
        }
    )
    logs = _commit({"x": [_stat(LOG, 9, logOffset=2), _stat(log2, 10, logOffset=0)]})
    bases = _commit({"x": [_stat(BASE, 9), _stat("x/" + BASE, 0)]})
    out = {"mixed": mixed, "logs": logs, "bases": bases, **_other_shapes()}
    out.update(
        {
            "a size past 64 bits": bases.replace(b'Bytes" : 9', b'Bytes" : 99999999999999999999'),
            "a path not UTF-8": bases.replace(b'"path" : "x/', b'"path" : "\xff/', 1),
            "a surrogate in a path": bases.replace(b'"path" : "x/', b'"path" : "\xed\xa0\x80/', 1),
            "a path as the first member": bases.replace(b'"fileId" : "f",\n      ', b"", 1),
            "a brace before a member": logs.replace(b'"numWrites" : 1,', b'"numWrites" : {,', 1),
            "text after a path": bases.replace(b'.parquet",', b'.parquet",x', 1),
            "a size then text": logs.replace(b'Bytes" : 9', b'Bytes" : 9x', 1),
            "a null size": bases.replace(b'Bytes" : 9', b'Bytes" : null'),
            "no stats": _commit({"x": []}),
            "stats of no path": _commit({"x": [_stat(None, 1)]}),
        }
    )
    # the last line of the stats a member (no closing lines): left to the regular expression
    last = logs.index(b"\n", logs.rindex(b'\n      "logOffset"') + 1)
    out["the stats end in a member"] = logs[:last] + b"\n  }\n}"
    return out


@pytest.mark.parametrize("shape", sorted(_odd_commits()))
def test_the_array_scan_decides_as_the_regular_expression(shape: str) -> None:
    data = _odd_commits()[shape]
    by_arrays, by_regex = _array_and_regex_scans(data)
    assert by_arrays == by_regex


def test_a_large_commit_is_scanned_by_arrays(monkeypatch: pytest.MonkeyPatch) -> None:
    """A commit past :data:`written._VECTOR_MIN_BYTES` takes the array scan: base and log
    stats mixed, empty paths, nulls; the answer is the parsed one."""
    rng = random.Random(7)
    stats: dict[str, Any] = {}
    for p in range(30):
        part = []
        for b in range(rng.randrange(0, 120)):
            fid = f"{b:08d}-{p}"
            kind = rng.random()
            if kind < 0.4:
                part.append(
                    _stat(f"p{p}/" + base_file_name(fid, "0-1-2", "001"), rng.randrange(9**9))
                )
            elif kind < 0.95:
                size = None if kind > 0.9 else rng.randrange(9**9)
                off = None if kind > 0.93 else rng.randrange(99)
                name = log_file_name(fid, "001", rng.randrange(1, 9), "0-1-2")
                part.append(_stat(f"p{p}/" + name, size, logVersion=1, logOffset=off))
            else:
                part.append(_stat("", 3, logOffset=1))
        stats[f"p{p}"] = part
    stats["pad"] = [_stat("pad/" + BASE, 1)] * (written._VECTOR_MIN_BYTES // 300)
    data = _commit(stats)
    assert len(data) > written._VECTOR_MIN_BYTES
    regex = written._STAT_MEMBER
    monkeypatch.setattr(written, "_STAT_MEMBER", None)  # the regular expression is not used
    assert _scanned(data, monkeypatch) == _parsed(data)
    monkeypatch.setattr(written, "_STAT_MEMBER", regex)
    by_arrays, by_regex = _array_and_regex_scans(data, (4096, 1 << 22))
    assert by_arrays == by_regex


def test_scan_of_a_file_on_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Trailing whitespace (a file as an editor saves it) still takes the scan."""
    f = tmp_path / "c.commit"
    f.write_bytes(_commit({"x": [_stat(BASE, 1)]}) + b"\n")
    assert _scanned(f.read_bytes(), monkeypatch) == [(BASE, 1, 0)]


# -- extraMetadata without the write stats ----------------------------------------------------


def _extra_shapes() -> dict[str, bytes]:
    good = _commit({"x": [_stat(BASE, 4096, logOffset=0)]})
    md = CommitMetadata(extra_metadata={"schema": '{"a":"b\\n"}', "k": "ü"})
    return {
        "jackson": good,
        "empty": _commit({"x": [_stat(BASE, 1)]}).replace(
            b'"extraMetadata" : {\n    "schema"', b'"extraMetadata" : { },\n  "x" : {\n    "s"'
        ),
        "replace": _commit({"x": []}, partitionToReplaceFileIds={"x": ["f9-0"]}),
        "escapes": md.to_json_bytes(),
        "repeated": good[:-2] + b',\n  "extraMetadata" : {\n    "k" : "last"\n  }\n}',
        "compact": json.dumps(json.loads(good)).encode(),
        "null": good.replace(b'"extraMetadata" : {', b'"extraMetadata" : null, "y" : {'),
        "avro": md.to_avro_bytes(),
    }


@pytest.mark.parametrize("shape", sorted(_extra_shapes()))
def test_extra_metadata_is_what_the_full_decode_gives(shape: str) -> None:
    data = _extra_shapes()[shape]
    assert extra_metadata_of(data) == CommitMetadata.from_bytes(data).extra_metadata


def test_extra_metadata_skips_the_write_stats(monkeypatch: pytest.MonkeyPatch) -> None:
    data = _commit({f"p{p}": [_stat(f"p{p}/" + BASE, 1)] for p in range(100)})
    monkeypatch.setattr(
        CommitMetadata, "from_bytes", classmethod(lambda cls, d: pytest.fail("decoded"))
    )
    got = extra_metadata_of(data)
    assert got == {"schema": '{"type":"record","name":"r"}', "path": "x/extra"}
    with pytest.raises(CorruptFileError):  # torn: the full decode (unpatched) refuses it
        monkeypatch.undo()
        extra_metadata_of(data[:-40])


def test_apache_hudi_extra_metadata_is_read_as_decoded() -> None:
    require_fixtures()
    zips = sorted(FIXTURES_DIR.glob("*.zip")) + sorted(MORE_FIXTURES_DIR.glob("*/*.zip"))
    seen = 0
    for z in zips:
        with zipfile.ZipFile(z) as zf:
            for name in zf.namelist():
                if "__MACOSX" in name or not name.endswith(
                    (".commit", ".deltacommit", ".replacecommit")
                ):
                    continue
                data = zf.read(name)
                want = CommitMetadata.from_bytes(data).extra_metadata
                assert extra_metadata_of(data) == want, (z.name, name)
                seen += 1
    assert seen >= 20


def test_schema_and_streaming_checkpoint_lookups_decode_no_write_stats(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The table schema, the refusal of unsupported tables and a streaming sink's committed
    batch read only the commits' extraMetadata (a table with no checkpoint is scanned back
    to its first commit)."""
    opts = table_options("t", partition="p")
    path = str(tmp_path / "t")
    first = pa.table({"id": ["a", "b"], "ts": [1, 1], "p": ["x", "y"], "v": [1.0, 2.0]})
    hudi_ds.write(path, first, opts)
    hudi_ds.write(path, first.set_column(1, "ts", pa.array([2, 2])), opts)
    monkeypatch.setattr(
        Timeline, "read_commit_metadata", lambda tl, inst: pytest.fail("write stats decoded")
    )
    table = hudi_ds.HudiTable(path)
    assert table.schema.names[-4:] == ["id", "ts", "p", "v"]
    assert len(table.plan_read().slices) == 2
    assert WriteClient(path, opts).committed_streaming_batch("default_single_writer") is None
