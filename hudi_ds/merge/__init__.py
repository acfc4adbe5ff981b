"""Record merging: merge modes and the vectorised merge engine used everywhere records meet."""

from hudi_ds.merge.engine import MergeInput, resolve_latest

__all__ = ["MergeInput", "resolve_latest"]
