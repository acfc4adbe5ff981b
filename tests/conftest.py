"""Suite-wide settings: hypothesis runs derandomized (the same examples every run, no example
database), so the suite is reproducible; set HUDI_DS_HYPOTHESIS=explore to search afresh."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("repro", derandomize=True, database=None, deadline=None)
settings.register_profile("explore", deadline=None)
settings.load_profile("explore" if os.environ.get("HUDI_DS_HYPOTHESIS") == "explore" else "repro")
