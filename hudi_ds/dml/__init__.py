"""DML on a Hudi table: ``MERGE`` (:class:`~hudi_ds.dml.merge.TableMerger`), ``UPDATE`` and
``DELETE`` by predicate (:mod:`hudi_ds.dml.predicate`), their expressions compiled once into
Arrow expressions (:mod:`hudi_ds.dml.expr`), each statement written as one instant through
the write client (:mod:`hudi_ds.dml.commit`). Engine-free: Arrow tables in, a commit out; an
engine adapter (Spark) runs its own join and hands the rows over."""

from hudi_ds.dml.commit import DmlMetrics
from hudi_ds.dml.merge import TableMerger
from hudi_ds.dml.predicate import delete_where, update_where

__all__ = ["DmlMetrics", "TableMerger", "delete_where", "update_where"]
