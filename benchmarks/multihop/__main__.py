"""``python -m benchmarks.multihop``: see :func:`.cli.main`."""

from __future__ import annotations

import sys

from benchmarks.multihop.cli import main

sys.exit(main())
