"""``python -m hudi_ds.cli``: the ``hudi-py`` command."""

import sys

from hudi_ds.cli import main

sys.exit(main())
