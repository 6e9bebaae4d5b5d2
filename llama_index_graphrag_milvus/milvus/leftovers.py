"""Collections left by a creation that stopped (a killed process, Ctrl-C at the wrong time).

A new index creates its collections one after another: the entities, the passages, then the
relations. The relation collection, made last, is what says that an index exists
(:meth:`~.store.MilvusGraphStore.open_if_created`), so a creation that stopped before it
leaves an index that does not exist yet, and the next creation finds the collections it
had made, empty: rows are written only once the index exists. Such a collection is kept
when it is the one this creation would make (the same dimension, fields and full-text
search: another process may be creating the same index at this moment); one that is not is
dropped and made again (a run with another embedding model, another tenant key). One that
holds rows is not a creation's (a collection of the user's under the same name): it is an
error, never dropped nor written to.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from pymilvus import MilvusClient

from llama_index_graphrag_milvus.errors import MilvusStoreError
from llama_index_graphrag_milvus.milvus.schema import milvus_errors

logger = logging.getLogger(__name__)

Fits = Callable[[Mapping[str, Any]], bool]
"""Whether a described collection (``describe_collection``) is the one a creation makes."""


def vector_dim(info: Mapping[str, Any]) -> int | None:
    """The dimension of a described collection's ``embedding`` field (``None``: none).

    >>> vector_dim({"fields": [{"name": "embedding", "params": {"dim": 64}}]})
    64
    """
    for field in info.get("fields") or ():
        if field.get("name") == "embedding":
            return int((field.get("params") or {}).get("dim", 0)) or None
    return None


def field_names(info: Mapping[str, Any]) -> set[str]:
    """The field names of a described collection."""
    return {str(field.get("name")) for field in info.get("fields") or ()}


def settle_leftover(client: MilvusClient, name: str, dim: int, fits: Fits, marker: str
                    ) -> bool:
    """Whether the collection ``name``, found while ``marker`` (the relation collection)
    does not exist, is kept for this creation (see the module docstring); when not kept,
    it has been dropped.

    Raises:
        MilvusStoreError: it holds rows.
    """
    with milvus_errors(f"describe {name}"):
        info = client.describe_collection(name)
        client.flush(name)  # a server counts the rows it has flushed
        rows = int(client.get_collection_stats(name).get("row_count", 0))
    if rows:  # rows are written once the index exists: these are not a creation's
        raise MilvusStoreError(
            f"the collection {name!r} exists with {rows} rows, but {marker!r} does not: it "
            "was not made by this index (or not with these settings). Choose another "
            f"collection_prefix, or drop {name!r} if it is not needed.")
    if vector_dim(info) == dim and fits(info):
        logger.info("%s was made by a creation that stopped before %s: kept", name, marker)
        return True
    logger.warning("%s was made by a creation that stopped before %s, for another "
                   "embedding model or other settings: dropped and made again", name, marker)
    with milvus_errors(f"drop {name}"):
        client.drop_collection(name)
    return False
