"""``python -m llama_index_graphrag_milvus.bench.multihop``: see :func:`.cli.main`."""

from __future__ import annotations

import sys

from llama_index_graphrag_milvus.bench.multihop.cli import main

sys.exit(main())
