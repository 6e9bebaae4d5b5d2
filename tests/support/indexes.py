"""The indexes Milvus reports for a collection, by field (what the index tests compare)."""

from __future__ import annotations

from typing import Any

from pymilvus import MilvusClient


def field_indexes(client: MilvusClient, collection: str) -> dict[str, dict[str, Any]]:
    """Each indexed field of ``collection`` and its index, as Milvus describes it
    (``index_type``, ``metric_type``, the build parameters...) with its ``index_name``."""
    found = {}
    for name in client.list_indexes(collection):
        info = client.describe_index(collection, name)
        found[info["field_name"]] = {**info, "index_name": name}
    return found
