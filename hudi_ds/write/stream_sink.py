"""The table side of an exactly-once streaming sink: one micro-batch is one instant.

An engine's sink (``hudi_ds.spark.streaming``) keeps its batch ids in the table, not only in
its own checkpoint: a commit records Hudi's ``_hudi_streaming_sink_checkpoint =
{"<identifier>": "<batchId>"}`` in its extra metadata (Hudi's key and format, so Hudi's own
sink resumes from it too), and a batch id already recorded is skipped. What else the sink
keeps in the table lives here too:

* the inflight file of a micro-batch's instant names the writer identifier and batch id
  (:data:`STREAM_BATCH_KEY`), so an abort that was told no instant finds it;
* an abort record per writer identifier (:data:`ABORTS_FOLDER`), written before the abort
  looks for the batch's instant: a task that would create the instant afterwards sees it.
"""

from __future__ import annotations

import json
import time
import uuid
from urllib.parse import quote

from hudi_ds.storage import Storage
from hudi_ds.timeline.instant import MAX_INSTANT_AHEAD_MS, new_instant_time
from hudi_ds.timeline.timeline import DATA_ACTIONS
from hudi_ds.write.client import STREAMING_CHECKPOINT_KEY, WriteClient

#: inflight extra metadata of a sink's instant: ``{"identifier", "batchId", "queryId"}``.
STREAM_BATCH_KEY = "_hudi_py_streaming_batch"
#: the sink's abort records, ``<URL-quoted writer identifier>.json``: in Hudi's auxiliary
#: folder, which readers and Hudi's services do not read
ABORTS_FOLDER = ".hoodie/.aux/.hudi_py_streaming_aborts"


def checkpoint_value(identifier: str, batch_id: int) -> str:
    """Hudi's ``_hudi_streaming_sink_checkpoint`` value: a JSON object identifier -> batch id
    (a string, as Java's ``CommitUtils.getCheckpointValueAsString`` writes it)."""
    return json.dumps({identifier: str(batch_id)}, separators=(",", ":"))


def latest_abort(storage: Storage, identifier: str) -> str | None:
    """The abort record of writer ``identifier`` (None if it never aborted a micro-batch)."""
    try:
        return storage.read_text(_abort_record(identifier))
    except FileNotFoundError:
        return None


def record_abort(storage: Storage, identifier: str, batch_id: int) -> None:
    """Record that the driver aborted micro-batch ``batch_id`` of writer ``identifier``: a
    new record, unique to this abort, replaces the previous one."""
    record = {
        "batchId": str(batch_id),
        "abortedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "id": uuid.uuid4().hex,
    }
    storage.write_atomic(_abort_record(identifier), json.dumps(record).encode())


def _abort_record(identifier: str) -> str:
    return f"{ABORTS_FOLDER}/{quote(identifier, safe='')}.json"


class StreamSink:
    """The micro-batches of one writer identifier in the table of ``client``.

    Args:
        client: the sink's write client (its table state is the sink's view of the table).
        identifier: the writer identifier the batch ids are recorded under
            (``hoodie.datasource.write.streaming.checkpoint.identifier``).
    """

    def __init__(self, client: WriteClient, identifier: str) -> None:
        self.client = client
        self.identifier = identifier

    def committed_batch(self) -> int | None:
        """The latest batch id committed under the identifier (a fresh listing)."""
        return self.client.committed_streaming_batch(self.identifier)

    def allocate_instant(self) -> str:
        """A new instant time after every instant on the timeline (no instant file is
        written: the batch's tasks create it when they have rows)."""
        last = self.client.table_state().timeline.latest_time()  # the writer's state
        return new_instant_time(after=last, max_ahead_ms=MAX_INSTANT_AHEAD_MS)

    def batch_marker(self, batch_id: int, query_id: str | None) -> dict[str, str]:
        """The inflight extra metadata naming this identifier's micro-batch ``batch_id``."""
        marker = json.dumps(
            {"identifier": self.identifier, "batchId": str(batch_id), "queryId": query_id},
            sort_keys=True,
        )
        return {STREAM_BATCH_KEY: marker}

    def checkpoint(self, batch_id: int) -> dict[str, str]:
        """The commit's extra metadata recording micro-batch ``batch_id`` as committed."""
        return {STREAMING_CHECKPOINT_KEY: checkpoint_value(self.identifier, batch_id)}

    def latest_abort(self) -> str | None:
        """The identifier's abort record (:func:`latest_abort`)."""
        return latest_abort(self.client.storage, self.identifier)

    def record_abort(self, batch_id: int) -> None:
        """Record the abort of micro-batch ``batch_id`` (:func:`record_abort`)."""
        record_abort(self.client.storage, self.identifier, batch_id)

    def on_timeline(self, instant: str) -> bool:
        """Whether ``instant`` is on the timeline, listed again (rollbacks and other attempts
        of the batch may have changed the table)."""
        state = self.client.state
        assert state is not None
        return state.reload_timeline().get(instant) is not None

    def pending_instants_of(self, batch_id: int) -> set[str]:
        """Pending instants whose inflight marker names this identifier and batch."""
        out = set()
        tl = self.client.table_state().reload_timeline()  # the batch's attempts as they are now
        for inst in tl.pending().filter_actions(*DATA_ACTIONS):
            if not inst.is_inflight:
                continue
            try:
                md = tl.read_commit_metadata(inst)
                mark = json.loads(md.extra_metadata.get(STREAM_BATCH_KEY) or "{}")
            except Exception:  # a torn inflight file: the next commit rolls it back
                continue
            if mark.get("identifier") == self.identifier and mark.get("batchId") == str(batch_id):
                out.add(inst.requested_time)
        return out

    def roll_back(self, instants: set[str]) -> None:
        """Roll back those of ``instants`` that are not completed (a completed one stays: it
        may be past the commit point of a commit that raised)."""
        tl = self.client.table_state().reload_timeline()
        for t in sorted(instants):
            if not tl.is_completed(t):
                self.client.abort(t)
