"""The metadata table (MDT): Hudi's ``.hoodie/metadata``, a MERGE_ON_READ table of HFiles that
lists the data table's partitions and files (its ``files`` partition) and, where the table has
one, where each record key lives (``record_index``), kept in step with every action that changes
files.

Modules:

- :mod:`hudi_ds.metadata.records` -- ``HoodieMetadataRecord`` records of the ``files``
  partition: their Avro encoding (the key field blanked, meta fields prepended), Hudi's merge
  rule, and the file changes an instant's metadata (commit, clean, rollback, restore) implies
  (Java ``HoodieTableMetadataUtil.convertMetadataToFilesPartitionRecords``).
- :mod:`hudi_ds.metadata.writer` -- ``MetadataWriter``: creates the MDT from a listing,
  mirrors each data instant as an MDT deltacommit before the data instant completes
  (installed as :attr:`hudi_ds.timeline.view.TableState.before_complete`), rolls back MDT
  deltacommits of failed data instants, compacts the MDT, deletes it
  (``hoodie.metadata.enable=false``).
- :mod:`hudi_ds.metadata.record_index` -- the ``record_index`` partition (Java's global
  record-level index): its records, the key -> file group hash, reading it (only the HFile
  blocks of the keys looked up), the index recomputed from a table's slices.
- :mod:`hudi_ds.metadata.record_index_writer` -- what each data instant changes in it, written
  in the same MDT deltacommit as the ``files`` block; its creation with the MDT.
- :mod:`hudi_ds.metadata.layout` -- the MDT's own ``hoodie.properties``, file id, bootstrap
  instant and latest slice, as Java lays them out per table version.
- :mod:`hudi_ds.metadata.column_stats` -- ``column_stats`` / ``partition_stats`` records
  (``HoodieMetadataColumnStats``): keys, value types, encoding, Java's merge rule;
  :mod:`hudi_ds.metadata.stats_build` computes them from data files,
  :mod:`hudi_ds.metadata.stats_reader` reads them back, :mod:`hudi_ds.metadata.stats_writer`
  keeps the two partitions in step for the writer (:mod:`hudi_ds.metadata.mdt_files`: which
  MDT files a clean deletes, the plan of an MDT rollback).
- :mod:`hudi_ds.metadata.index_partitions` -- the index partitions kept in step (stats and
  record index) as one set for the writer: kept and unmaintained partitions, the files a
  deltacommit adds, the logs an MDT rollback deletes; :mod:`hudi_ds.metadata.recovery` undoes
  MDT instants no reader counts.
- :mod:`hudi_ds.metadata.reader` -- ``MetadataReader``: lists partitions and files through
  the MDT when it is present and in step with the data timeline (fewer storage calls),
  else says so and the table layer lists the storage.

Layer: above ``log`` and ``layout`` (HFile: :mod:`hudi_ds.layout.hfile`), below ``table``.
"""
