"""The backend markers: a test of the Milvus fixtures (``milvus_uri``, ``make_index``,
``family_index``) runs on Milvus Lite and on the test server unless it is pinned to one."""

from __future__ import annotations

import pytest

LITE_ONLY = pytest.mark.parametrize("milvus_uri", ["lite"], indirect=True)
"""On Milvus Lite only (what the test checks does not depend on the backend, or only Lite
has it)."""
SERVER_ONLY = pytest.mark.parametrize("milvus_uri", ["server"], indirect=True)
"""On the test server only (scalar indexes, restarts, several processes)."""
