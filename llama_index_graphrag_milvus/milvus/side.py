"""The collections beside the graph's: communities and merged descriptions.

Each is a :class:`SideCollection` of a store (``store.communities``,
``store.descriptions``): created on the first write (after the graph collections exist),
read whole, dropped on demand. Their fields are in
:mod:`~llama_index_graphrag_milvus.milvus.schema`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from llama_index_graphrag_milvus.errors import MilvusStoreError
from llama_index_graphrag_milvus.milvus.schema import (
    Fields,
    create_collection,
    milvus_errors,
    recorded_properties,
)

if TYPE_CHECKING:
    from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore


class SideCollection:
    """One collection of ``fields`` (plus ``id`` and ``embedding``) beside a store's graph.

    Example::

        store.communities.exists()          # build_communities() ran once
        rows = store.descriptions.read()    # every row, vectors included
    """

    def __init__(self, store: MilvusGraphStore, name: str, fields: Fields) -> None:
        self.store = store
        self.name = name
        self.fields = fields

    @property
    def field_names(self) -> list[str]:
        """The scalar fields, in schema order (without ``id`` and ``embedding``)."""
        return [name for name, _, _ in self.fields]

    def exists(self) -> bool:
        """Whether the collection exists."""
        with milvus_errors("list collections"):
            return bool(self.store.client.has_collection(self.name))

    def open(self) -> bool:
        """Whether the collection exists; when it does, it is loaded (a collection of a
        reopened Milvus Lite file is not, and cannot be searched or read until it is)."""
        if not self.exists():
            return False
        with milvus_errors(f"load {self.name}"):
            self.store.client.load_collection(self.name)
        return True

    def create(self) -> None:
        """Create (and load) the collection when it does not exist; the graph collections
        must exist (their dimension is the vectors')."""
        store = self.store
        if store.dim is None:
            raise MilvusStoreError("the graph collections do not exist yet: ingest first")
        if self.exists():
            return
        with milvus_errors(f"create {self.name}"):
            create_collection(store.client, self.name, self.fields, store.dim,
                              store.index_type, store.consistency_level,
                              index_params=store.index_params)

    def drop(self) -> None:
        """Drop the collection (no-op when it does not exist)."""
        if self.exists():
            with milvus_errors(f"drop {self.name}"):
                self.store.client.drop_collection(self.name)

    def properties(self) -> dict[str, str]:
        """What was recorded on the collection (empty when it does not exist); loads it."""
        if not self.open():
            return {}
        with milvus_errors(f"describe {self.name}"):
            info = self.store.client.describe_collection(self.name)
        return recorded_properties(info)

    def set_properties(self, properties: Mapping[str, str]) -> None:
        """Record ``properties`` on the collection."""
        with milvus_errors(f"alter {self.name}"):
            self.store.client.alter_collection_properties(self.name,
                                                          properties=dict(properties))

    def read(self) -> list[dict[str, Any]]:
        """Every row (all fields and the vector); loads the collection first."""
        with milvus_errors(f"load {self.name}"):
            self.store.client.load_collection(self.name)
        return self.store.read_all(self.name, [*self.field_names, "embedding"])

    def write(self, rows: Sequence[dict[str, Any]], stale: Sequence[str]) -> None:
        """Create the collection if needed, upsert ``rows``, delete the ``stale`` ids and
        flush."""
        self.create()
        self.store.upsert_rows(self.name, rows)
        self.store.delete_rows(self.name, stale)
        self.store.flush_collection(self.name)
