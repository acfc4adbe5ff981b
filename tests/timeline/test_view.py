"""TableState: one opened table; its timeline writer keeps the cached timeline current."""

from __future__ import annotations

import pyarrow as pa

import hudi_ds
from hudi_ds.timeline.instant import Instant, State
from hudi_ds.timeline.view import TableState
from tests.conftest import table_options

OPTS = table_options("t", buckets=None)


def _table(tmp_path):
    path = str(tmp_path / "t")
    hudi_ds.write(path, pa.table({"id": [1, 2], "ts": [1, 1], "v": ["a", "b"]}), OPTS)
    return path


def test_writer_transitions_match_a_fresh_listing(tmp_path):
    state = TableState.open(_table(tmp_path))
    before = state.timeline
    writer = state.timeline_writer()
    inst = Instant("20991231000000000", "deltacommit", State.REQUESTED)
    assert writer.create_requested(inst)
    assert state.timeline.get(inst.requested_time).state == State.REQUESTED
    writer.transition_to_inflight(inst)
    writer.complete(inst, b"{}")
    assert state.timeline == state.load_timeline()
    assert len(state.timeline) == len(before) + 1
    assert state.timeline.is_completed(inst.requested_time)


def test_deleting_instant_files_forgets_the_timeline(tmp_path):
    state = TableState.open(_table(tmp_path))
    last = state.timeline.last()
    state.timeline_writer().delete_instant_files(last)
    assert state.timeline == state.load_timeline()
    assert last not in state.timeline


def test_visibility_and_schema_of_the_opened_table(tmp_path):
    state = TableState.open(_table(tmp_path))
    (commit,) = state.timeline.commits()
    vis = state.visibility()
    assert vis.instants == frozenset({commit.requested_time})
    assert state.visibility(as_of="20000101").instants == frozenset()
    assert state.schema.names[-3:] == ["id", "ts", "v"]
