"""The writer's post-commit services run on the writer's table state.

With nothing to do they neither read ``hoodie.properties`` again nor list the timeline; when
they do work, the state they leave behind equals a fresh listing of the table.
"""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import hudi_ds
from hudi_ds.config import Options
from hudi_ds.services import run_post_commit_services
from hudi_ds.storage import Storage
from hudi_ds.timeline.view import TableState
from tests.builders import trips
from tests.conftest import table_options

OPTS = table_options("trips", partition="city")


class Counts:
    """Reads of ``hoodie.properties`` and listings of the timeline folder on one storage."""

    def __init__(self, storage: Storage, monkeypatch: pytest.MonkeyPatch) -> None:
        self.props = 0
        self.listings: list[str] = []
        read, list_files, list_dirs = storage.read_bytes, storage.list_files, storage.list_dirs

        def read_bytes(rel: str) -> bytes:
            if rel.endswith("hoodie.properties"):
                self.props += 1
            return read(rel)

        def files(rel: str = "", recursive: bool = False) -> Any:
            self.listings.append(rel)
            return list_files(rel, recursive)

        def dirs(rel: str = "", recursive: bool = False) -> Any:
            self.listings.append(rel)
            return list_dirs(rel, recursive)

        monkeypatch.setattr(storage, "read_bytes", read_bytes)
        monkeypatch.setattr(storage, "list_files", files)
        monkeypatch.setattr(storage, "list_dirs", dirs)


def writer_after_commit(path: str, options: dict[str, str]) -> SimpleNamespace:
    """What the post-commit services get from the write client: its state (current after the
    commit), storage and options."""
    state = TableState.open(path)
    state.timeline  # noqa: B018 - listed, as the writer's commit left it
    return SimpleNamespace(state=state, storage=state.storage, options=Options.of(options))


@pytest.mark.parametrize("version", ["6", "8", "9"])
@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_nothing_to_do_reads_and_lists_nothing(
    tmp_path: Path,
    table_type: str,
    version: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    path = str(tmp_path / "t")
    opts = {
        **OPTS,
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.write.table.version": version,
    }
    for ts in range(3):
        hudi_ds.write(path, trips([1, 2], ts), opts)  # 2-row upserts, default services
    client = writer_after_commit(path, opts)
    last = client.state.timeline.commits().last()
    counts = Counts(client.storage, monkeypatch)
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="hudi_ds.services"):
        run_post_commit_services(client, last)
    assert not caplog.records, [r.getMessage() for r in caplog.records]
    assert counts.props == 0
    assert counts.listings == []


@pytest.mark.parametrize("version", ["6", "8", "9"])
def test_services_with_work_leave_the_state_current(
    tmp_path: Path, version: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = str(tmp_path / "t")
    opts = {
        **OPTS,
        "hoodie.write.table.version": version,
        "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
        "hoodie.clean.automatic": "false",
        "hoodie.archive.automatic": "false",
    }
    for ts in range(8):
        hudi_ds.write(path, trips([1, 2, 3], ts), opts)
    services = {
        **opts,
        "hoodie.clean.automatic": "true",
        "hoodie.clean.max.commits": "1",
        "hoodie.cleaner.commits.retained": "1",
        "hoodie.archive.automatic": "true",
        "hoodie.keep.min.commits": "2",
        "hoodie.keep.max.commits": "3",
    }
    client = writer_after_commit(path, services)
    before = len(client.state.timeline)
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="hudi_ds.services"):
        run_post_commit_services(client, client.state.timeline.commits().last())
    assert not caplog.records, [r.getMessage() for r in caplog.records]
    fresh = TableState.open(path).timeline
    assert fresh.completed().filter_actions("clean"), "the clean ran"
    assert len(fresh) < before, "archival ran"
    assert list(client.state.timeline) == list(fresh)
