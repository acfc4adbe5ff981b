"""The write path: per-file-group handles, WriteStatus, markers and the write client."""
