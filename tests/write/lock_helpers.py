"""Helpers of the lock tests."""

from __future__ import annotations

import time
import uuid

from hudi_ds.concurrency.clock import MTIME_RESOLUTION_S, StorageClock
from hudi_ds.storage import Storage


def wait_until_written_ago(storage: Storage, rel: str, seconds: float) -> None:
    """Wait until ``rel`` was last written over ``seconds`` ago on the storage's own clock (its
    Last-Modified / mtime) as any lock sees it: a lease left by a dead holder running out. Each
    lock's :class:`StorageClock` may see it younger by up to the store's resolution (whole
    seconds on S3), so this waits that much longer.

    Raises:
        AssertionError: ``rel`` is gone, or did not get that old in ``seconds`` + 30 s.
    """
    clock = StorageClock(storage, f"{rel}.{uuid.uuid4().hex}.testclock")
    deadline = time.monotonic() + seconds + 30
    while time.monotonic() < deadline:
        ago = clock.written_ago(rel)
        assert ago is not None, f"{rel} is gone"
        if ago > seconds + MTIME_RESOLUTION_S:
            return
        time.sleep(0.1)
    raise AssertionError(f"{rel} did not get {seconds} s old")
