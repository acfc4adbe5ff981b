"""Schemas: Hudi's meta columns, Arrow <-> Avro, schema evolution and schema on write.

Hudi keeps every schema in Avro (commit metadata, ``hoodie.table.create.schema``, the ``SCHEMA``
header of log blocks); hudi_ds works on Arrow. One module per concern:

* :mod:`~hudi_ds.schema.meta` -- Hudi's meta columns;
* :mod:`~hudi_ds.schema.avro` -- Avro schemas <-> Arrow schemas;
* :mod:`~hudi_ds.schema.records` -- Avro record data <-> Arrow;
* :mod:`~hudi_ds.schema.evolution` -- the one type-promotion rule and rows brought to a schema;
* :mod:`~hudi_ds.schema.write` -- a write's input schema checked against the table's;
* :mod:`~hudi_ds.schema.plain` -- input normalisation at the write path's edge.
"""
