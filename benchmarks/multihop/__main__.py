"""``python -m benchmarks.multihop``: see :func:`.cli.main`."""

from __future__ import annotations

import sys

from benchmarks.multihop.cli import main
from benchmarks.multihop.data import guarded

sys.exit(guarded(main))
