"""Automatic registration of the ``hudi_py`` format.

pyspark (>= 4.0) imports every top-level module named ``pyspark_*`` on its Python path the
first time a session resolves a data source and registers its ``DefaultSource`` under
``DefaultSource.name()``. Readers registered this way do not push filters down; call
:func:`hudi_ds.spark.register` for that.
"""

from hudi_ds.spark.datasource import HudiDataSource as DefaultSource

__all__ = ["DefaultSource"]
