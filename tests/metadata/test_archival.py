"""Archival with the metadata table: the data table's timeline and the MDT's own timeline are
both archived (v6: archived log files, v8/v9: the LSM history), within Java's limits, and after
every write the MDT lists exactly the committed files and hudi_ds and hudi-rs read the model."""

from __future__ import annotations

from pathlib import Path

import pytest

import hudi_ds
from hudi_ds.log.archive import load_archived
from hudi_ds.metadata.reader import MetadataReader
from hudi_ds.services import ServiceContext, archival
from hudi_ds.storage import Storage
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.instant import COMMIT
from hudi_ds.timeline.timeline import Timeline
from tests.metadata.test_writer import (
    Rows,
    _crash,
    apply,
    assert_in_step,
    batch,
    check_rows,
    committed_files,
    options,
)

KEEP = {
    "hoodie.keep.min.commits": "2",
    "hoodie.keep.max.commits": "3",
    "hoodie.metadata.keep.min.commits": "2",
    "hoodie.metadata.keep.max.commits": "3",
    "hoodie.cleaner.commits.retained": "1",
    "hoodie.metadata.compact.max.delta.commits": "3",
}


def _timeline(storage: Storage) -> Timeline:
    cfg = TableConfig.load(storage)
    return Timeline.load(storage, cfg.timeline_layout_version, cfg.timeline_path)


def reader_listing(root: Path) -> dict[str, dict[str, int]]:
    """The data files as the MDT's reader lists them (it must say "in step")."""
    data = Storage(str(root))
    cfg = TableConfig.load(data)
    reader = MetadataReader.open(data, cfg, _timeline(data))
    assert reader is not None
    assert reader.in_step, reader.why_not_in_step()
    out: dict[str, dict[str, int]] = {}
    for p in reader.partitions():
        files = reader.files(p)
        if files:
            out["" if p == "." else p] = {f.path.rsplit("/", 1)[-1]: f.size for f in files}
    return out


def archived_files(hoodie: Path, version: int) -> list[str]:
    folder = hoodie / ("archived" if version == 6 else "timeline/history")
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_both_timelines_archive_and_stay_in_step(
    table_type: str, version: int, tmp_path: Path
) -> None:
    root = tmp_path / "t"
    extra = dict(KEEP)
    if table_type == "MERGE_ON_READ":
        extra.update(
            {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "2"}
        )
    opts = options(table_type, version, **extra)
    data = Storage(str(root))
    mdt = Storage(str(root / ".hoodie" / "metadata"))
    model: Rows = {}
    seen_data: set[str] = set()
    seen_mdt: set[str] = set()
    for k in range(1, 17):
        t = batch(k)
        hudi_ds.write(str(root), t, opts)
        model = apply(model, t)
        assert_in_step(root)
        assert reader_listing(root) == committed_files(root)
        data_tl, mdt_tl = _timeline(data), _timeline(mdt)
        seen_data |= {i.requested_time for i in data_tl}
        seen_mdt |= {i.requested_time for i in mdt_tl}
        gone_data = seen_data - {i.requested_time for i in data_tl}
        gone_mdt = seen_mdt - {i.requested_time for i in mdt_tl}
        compactions = mdt_tl.completed().filter_actions(COMMIT)
        if gone_data:
            # Java: the data table archives nothing the MDT has not compacted
            assert compactions and max(gone_data) < compactions.instants[-1].requested_time
        if gone_mdt:
            # ... and the MDT nothing its latest compaction needs or the data table still has
            assert max(gone_mdt) < compactions.instants[-1].requested_time
            assert max(gone_mdt) < data_tl.instants[0].requested_time
        if k % 5 == 0:
            check_rows(root, model)
    check_rows(root, model)
    assert archived_files(root / ".hoodie", version)
    assert archived_files(root / ".hoodie" / "metadata" / ".hoodie", version)
    # the MDT's active timeline stays short (one deltacommit per data instant otherwise)
    mdt_tl = _timeline(mdt)
    assert len(mdt_tl.completed()) < 16, [i.requested_time for i in mdt_tl]
    assert gone_data and gone_mdt
    # the MDT's cleaning still finds the slices of archived compactions: two slices stay
    files_dir = root / ".hoodie" / "metadata" / "files"
    assert len([p for p in files_dir.iterdir() if p.name.endswith(".hfile")]) == 2
    # every MDT instant is on its active timeline or (once) in its archived timeline
    mcfg = TableConfig.load(mdt)
    archived = load_archived(
        mdt, mcfg.timeline_layout_version, mcfg.timeline_path, archive_folder=mcfg.archive_folder
    )
    archived_times = {i.requested_time for i in archived}
    active_times = {i.requested_time for i in _timeline(mdt)}
    assert archived_times.isdisjoint(active_times)
    assert seen_mdt <= archived_times | active_times
    # archival run again (nothing or little to do) keeps everything in step
    archival.archive(ServiceContext.open(str(root), opts))
    assert_in_step(root)
    assert reader_listing(root) == committed_files(root)
    check_rows(root, model)


@pytest.mark.parametrize("spec", ["archive:1", "archive:2", "archive:3"])
@pytest.mark.parametrize("version", [6, 9])
def test_killed_mdt_archival(spec: str, version: int, tmp_path: Path) -> None:
    """The MDT's archival killed after writing its archive (:1) or while deleting the archived
    instant files (:2, :3): the MDT still lists exactly the committed files, the next run
    finishes it (no instant archived twice) and the next writes stay in step."""
    root = tmp_path / "t"
    opts = options("COPY_ON_WRITE", version, **KEEP)
    # the data table archives as it goes; the MDT keeps more instants until the killed run
    lazy = {
        **opts,
        "hoodie.metadata.keep.min.commits": "8",
        "hoodie.metadata.keep.max.commits": "9",
    }
    model: Rows = {}
    for k in range(1, 11):
        t = batch(k)
        hudi_ds.write(str(root), t, lazy)
        model = apply(model, t)
    code = _crash(
        spec, lambda: archival.archive_metadata_table(ServiceContext.open(str(root), opts))
    )
    assert code == 137  # killed inside the MDT's archival: it had instants to archive
    assert_in_step(root)
    assert reader_listing(root) == committed_files(root)
    result = archival.archive_metadata_table(ServiceContext.open(str(root), opts))
    assert result.archived
    assert_in_step(root)
    assert reader_listing(root) == committed_files(root)
    for k in (11, 12):
        t = batch(k)
        hudi_ds.write(str(root), t, opts)
        model = apply(model, t)
        assert_in_step(root)
        assert reader_listing(root) == committed_files(root)
    check_rows(root, model)


@pytest.mark.parametrize("version", [6, 9])
def test_no_data_archival_before_the_first_mdt_compaction(version: int, tmp_path: Path) -> None:
    """Java (HoodieTimelineArchiver.getInstantsToArchive): while the MDT has no compaction the
    data table archives nothing; without an MDT the same writes archive."""
    model: Rows = {}
    roots = {}
    for mdt_on in (True, False):
        root = roots[mdt_on] = tmp_path / f"t{mdt_on}"
        opts = options(
            "COPY_ON_WRITE",
            version,
            **{**KEEP, "hoodie.metadata.compact.max.delta.commits": "50"},
            **({} if mdt_on else {"hoodie.metadata.enable": "false"}),
        )
        model = {}
        for k in range(1, 8):
            t = batch(k)
            hudi_ds.write(str(root), t, opts)
            model = apply(model, t)
        check_rows(root, model)
    with_mdt = _timeline(Storage(str(roots[True])))
    assert len(with_mdt.commits()) == 7
    assert not archived_files(roots[True] / ".hoodie", version)
    assert not archived_files(roots[True] / ".hoodie" / "metadata" / ".hoodie", version)
    assert reader_listing(roots[True]) == committed_files(roots[True])
    assert len(_timeline(Storage(str(roots[False]))).commits()) < 7
    assert archived_files(roots[False] / ".hoodie", version)
