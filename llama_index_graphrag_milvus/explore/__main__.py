"""``python -m llama_index_graphrag_milvus.explore --help``."""

import sys

from llama_index_graphrag_milvus.explore.cli import main

sys.exit(main())
