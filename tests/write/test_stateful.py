"""Differential testing: random operation sequences against a plain in-memory model.

A hypothesis state machine applies upserts (with late rows), inserts, deletes, compactions,
cleanings and rollbacks of the latest commit through the embedded API, on MOR and COW tables,
and after every step compares the table, read by hudi_ds and by hudi-rs, with the expected rows
(every column, no duplicate key). Runs 60 examples of up to 8 steps per table type by default
(``HUDI_DS_STATEFUL_EXAMPLES`` for more; ``make test-explore`` runs them with fresh examples).
Not fewer: the derandomized 60 reach operation pairs the first 30 do not (on MOR a compaction
right after a delete or a rollback, an insert rolled back; on COW a delete rolled back).

The model follows Hudi's merge in two steps on MOR (see tests/merge/test_delete_semantics.py): per
key it keeps the compacted base version and the fold of the later log versions (a delete
discards what the fold holds), and a reader returns the base version when the fold holds a
data version with a smaller ordering value -- so a key deleted and re-inserted with an older
``ts`` shows its compacted row again, as in Apache Hudi.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pyarrow as pa
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import hudi_ds
from hudi_ds.services.base import ServiceContext
from hudi_ds.services.clean import clean
from hudi_ds.services.compaction import run_compaction, schedule_compaction
from hudi_ds.services.rollback import rollback
from tests.conftest import assert_rows, hudi_rs_table, table_options

# 40 examples per table type take about 25 s (quiet machine): not in the quick loop; more with
# HUDI_DS_STATEFUL_EXAMPLES
pytestmark = pytest.mark.slow

EXAMPLES = int(os.environ.get("HUDI_DS_STATEFUL_EXAMPLES", "40"))
KEYS = st.lists(st.integers(0, 29), min_size=1, max_size=12, unique=True)
COLUMNS = ["id", "ts", "p", "v"]
Version = tuple[int, int]  # (ts, v)
DELETED = (-1, -1)  # the log fold holds a delete


def visible(base: Version | None, log: Version | None) -> Version | None:
    """Hudi's final merge of the base version (older) with the log fold (newer), event time."""
    if log is None:
        return base
    if log == DELETED:
        return None
    if base is not None and base[0] > log[0]:
        return base
    return log


class TableMachine(RuleBasedStateMachine):
    table_type = "MERGE_ON_READ"

    @initialize()
    def create(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="hudi-stateful-")
        self.path = os.path.join(self.dir, "t")
        self.opts = {
            **table_options("sm", partition="p", table_type=self.table_type),
            "hoodie.clean.automatic": "false",
            "hoodie.keep.min.commits": "1000",
            "hoodie.keep.max.commits": "1001",
            "hoodie.cleaner.commits.retained": "2",
        }
        # per key: (base file version, fold of the log versions); COW keeps no log part
        self.model: dict[str, tuple[Version | None, Version | None]] = {}
        self.history: list[dict] = []  # model before each data commit
        self.last_is_data = False
        self.step = 0

    def teardown(self) -> None:
        shutil.rmtree(getattr(self, "dir", ""), ignore_errors=True)

    def _rows(self, keys: list[int], ts: int) -> pa.Table:
        self.step += 1
        return pa.table(
            {
                "id": [f"k{k}" for k in keys],
                "ts": pa.array([ts] * len(keys), pa.int64()),
                "p": [f"p{k % 3}" for k in keys],
                "v": pa.array([self.step] * len(keys), pa.int64()),
            }
        )

    def _write(self, t: pa.Table, op: str) -> None:
        self.history.append(dict(self.model))
        hudi_ds.write(self.path, t, {**self.opts, "hoodie.datasource.write.operation": op})
        self.last_is_data = True

    @rule(keys=KEYS, ts=st.integers(0, 20), op=st.sampled_from(["upsert", "insert"]))
    def upsert(self, keys: list[int], ts: int, op: str) -> None:
        t = self._rows(keys, ts)
        self._write(t, op)
        for k, v in zip(t["id"].to_pylist(), t["v"].to_pylist(), strict=True):
            base, log = self.model.get(k, (None, None))
            if self.table_type == "COPY_ON_WRITE":
                if base is None or ts >= base[0]:
                    self.model[k] = ((ts, v), None)
            elif log is None or log == DELETED or ts >= log[0]:
                self.model[k] = (base, (ts, v))
        self._inline_compaction()

    @precondition(lambda self: bool(getattr(self, "model", None)))
    @rule(keys=KEYS)
    def delete(self, keys: list[int]) -> None:
        t = self._rows(keys, 0).select(["id", "p"])
        self._write(t, "delete")
        for k in t["id"].to_pylist():
            if self.table_type == "COPY_ON_WRITE" or k not in self.model:
                self.model.pop(k, None)
            else:
                self.model[k] = (self.model[k][0], DELETED)
        self._inline_compaction()

    def _inline_compaction(self) -> None:
        """A MERGE_ON_READ write compacts inline every 5 delta commits (Hudi's default): the
        compaction completes as a ``commit`` after the write's deltacommit. The model compacts
        too, and the latest commit is then the compaction, not the data write (rolling it back
        changes no row)."""
        if self.table_type != "MERGE_ON_READ":
            return
        if hudi_ds.HudiTable(self.path).timeline.commits()[-1].action == "commit":
            self.last_is_data = False
            self._compact_model()

    def _compact_model(self) -> None:
        merged = {k: visible(*bl) for k, bl in self.model.items()}
        self.model = {k: (v, None) for k, v in merged.items() if v is not None}

    @precondition(lambda self: getattr(self, "history", None))
    @rule()
    def compact(self) -> None:
        if self.table_type != "MERGE_ON_READ":
            return
        ctx = ServiceContext.open(self.path, self.opts)
        if schedule_compaction(ctx):
            run_compaction(ServiceContext.open(self.path, self.opts))
            self.last_is_data = False
            self._compact_model()

    @precondition(lambda self: getattr(self, "history", None))
    @rule()
    def clean_table(self) -> None:
        clean(ServiceContext.open(self.path, self.opts))

    @precondition(lambda self: getattr(self, "last_is_data", False))
    @rule()
    def rollback_last(self) -> None:
        table = hudi_ds.HudiTable(self.path)
        last = table.timeline.commits()[-1]
        rollback(ServiceContext.open(self.path, self.opts), last.requested_time)
        self.model = self.history.pop()
        self.last_is_data = False

    @invariant()
    def table_equals_model(self) -> None:
        if not getattr(self, "history", None):
            return
        expected = []
        for k, (base, log) in self.model.items():
            row = visible(base, log)
            if row is not None:
                expected.append((k, row[0], f"p{int(k[1:]) % 3}", row[1]))
        assert_rows(hudi_ds.read(self.path), expected, COLUMNS)
        assert_rows(hudi_rs_table(self.path), expected, COLUMNS)


class CowMachine(TableMachine):
    table_type = "COPY_ON_WRITE"


SETTINGS = settings(max_examples=EXAMPLES, stateful_step_count=8, deadline=None)
TestMorStateful = TableMachine.TestCase
TestMorStateful.settings = SETTINGS
TestCowStateful = CowMachine.TestCase
TestCowStateful.settings = SETTINGS
