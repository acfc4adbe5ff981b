"""Concurrency: table locks, leases and their fence, heartbeats and writer liveness -- used by
writers and table services alike (docs/concurrency.md)."""
