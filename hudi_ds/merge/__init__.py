"""Record merging: merge modes, the RecordMerger API, Hudi's payload behaviours, the engine.

* :mod:`hudi_ds.merge.modes` -- merge modes, strategy ids, payload classes -> behaviours,
  option validation (:class:`MergeSpec`);
* :mod:`hudi_ds.merge.merger` -- the :class:`RecordMerger` API (per-record ``merge``,
  ``partial_merge``, vectorised ``merge_batches``) and the per-record fallback;
* :mod:`hudi_ds.merge.payloads` -- the built-in mergers, vectorised;
* :mod:`hudi_ds.merge.engine` -- :func:`merge_versions`, used wherever versions meet.
* :mod:`hudi_ds.merge.single` -- a base file's rows against log versions that name each key
  once (a compacted MOR slice read), without the engine's fold.
"""

from hudi_ds.merge.engine import (
    DataPart,
    DeleteKeys,
    MergeInput,
    VersionsBuilder,
    merge_versions,
    resolve_latest,
)
from hudi_ds.merge.merger import DELETE, MergeResult, Record, RecordMerger, Versions
from hudi_ds.merge.modes import MergeSpec, spec_for_mode, table_spec, write_spec
from hudi_ds.merge.payloads import BUILTIN_MERGERS, merger_for

__all__ = [
    "BUILTIN_MERGERS",
    "DELETE",
    "DataPart",
    "DeleteKeys",
    "MergeInput",
    "MergeResult",
    "MergeSpec",
    "Record",
    "RecordMerger",
    "Versions",
    "VersionsBuilder",
    "merge_versions",
    "merger_for",
    "resolve_latest",
    "spec_for_mode",
    "table_spec",
    "write_spec",
]
