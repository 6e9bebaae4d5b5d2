"""The extraction cache: the triplets of every passage extracted successfully, in a
LlamaIndex kvstore, so that a crashed or partly failed run is simply run again."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llama_index.core.ingestion import IngestionCache
from llama_index.core.storage.kvstore import SimpleKVStore
from llama_index.core.storage.kvstore.types import BaseKVStore

from llama_index_graphrag_milvus.errors import InvalidInputError
from llama_index_graphrag_milvus.extraction.described import (
    DescribedExtraction,
    entities_of,
    entity_lists,
    relation_lists,
    relations_of,
)
from llama_index_graphrag_milvus.extraction.triplets import to_triplets, triplet_lists
from llama_index_graphrag_milvus.records import Triplet
from llama_index_graphrag_milvus.validation import check_int

DEFAULT_CACHE_COLLECTION = "graphrag_triplets"
"""The kvstore collection of :class:`ExtractionCache` entries."""


def sha256(text: str) -> str:
    """The SHA-256 of ``text`` (UTF-8) in hex: what cache keys are made of."""
    return hashlib.sha256(text.encode()).hexdigest()


class ExtractionCache:
    """The triplets of every passage extracted successfully, in a LlamaIndex kvstore.

    Keys come from :meth:`TripletExtractor.cache_key`: the SHA-256 of the passage text as
    the LLM sees it, a hash of the prompt template and ``max_triplets_per_chunk`` (and of
    ``describe`` and ``entity_types`` for described runs), and the LLM's
    ``metadata.model_name``; a value is ``{"triplets": [[subject, predicate, object],
    ...]}``, plus ``"entities": [[name, type, description], ...]`` and ``"relations":
    [[subject, predicate, object, description, strength], ...]`` when a described run found
    some (:meth:`put_described`; an entry without them reads as no descriptions). A failed
    extraction is never stored, so the next run retries just those passages. The cache
    does not depend on the index: the same cache serves Milvus Lite, a Milvus server or
    Zilliz Cloud.

    Args:
        persist_path: a JSON file in the format of core's ``SimpleKVStore`` (the store of
            ``IngestionCache``). Loaded when it exists; written every ``persist_every`` new
            entries and at the end of every extraction call, a crashed one included (to a
            temporary file first, then renamed: a kill never leaves half a file).
        kvstore: any other LlamaIndex kvstore instead of the file (``RedisKVStore``,
            ``MongoDBKVStore``, ``PostgresKVStore``...), persistent by itself: the choice for
            several machines ingesting into one Milvus server.
        collection: the kvstore collection of the entries.
        persist_every: new entries between two writes of ``persist_path``.

    Example:
        >>> cache = ExtractionCache()  # in memory; ExtractionCache("./extraction.json") persists
        >>> cache.put("key", [Triplet("Euler", "born in", "Basel")])
        >>> cache.get("key")
        [Triplet(subject='Euler', predicate='born in', object='Basel')]
        >>> cache.get("another key") is None
        True
    """

    def __init__(
        self,
        persist_path: str | os.PathLike[str] | None = None,
        kvstore: BaseKVStore | None = None,
        collection: str = DEFAULT_CACHE_COLLECTION,
        persist_every: int = 100,
    ) -> None:
        if persist_path is not None and kvstore is not None:
            raise InvalidInputError(
                "ExtractionCache got both persist_path and kvstore; pass persist_path for a "
                "JSON file, or a kvstore that persists by itself, not both."
            )
        check_int("persist_every", persist_every)
        self.persist_path = Path(persist_path) if persist_path is not None else None
        self.collection = collection
        self.persist_every = persist_every
        self._unsaved = 0
        self.kvstore: BaseKVStore = kvstore or self._load(self.persist_path)

    @staticmethod
    def _load(path: Path | None) -> SimpleKVStore:
        if path is None or not path.exists():
            return SimpleKVStore()
        try:
            return SimpleKVStore.from_persist_path(str(path))
        except ValueError as exc:  # json.JSONDecodeError is a ValueError
            raise InvalidInputError(
                f"the extraction cache {path} is not a JSON kvstore file ({exc}); delete it "
                "(the triplets are extracted again) or pass another persist_path."
            ) from exc

    @classmethod
    def from_ingestion_cache(cls, cache: IngestionCache,
                             collection: str = DEFAULT_CACHE_COLLECTION) -> ExtractionCache:
        """Share the kvstore of an ``IngestionCache`` (e.g. the one of an ``IngestionPipeline``);
        the entries go to their own ``collection``.

        >>> from llama_index.core.ingestion import IngestionCache
        >>> ExtractionCache.from_ingestion_cache(IngestionCache()).collection
        'graphrag_triplets'
        """
        return cls(kvstore=cache.cache, collection=collection)

    @staticmethod
    def _decode(value: dict[str, Any] | None) -> DescribedExtraction | None:
        items = value.get("triplets") if isinstance(value, dict) else None
        if not isinstance(value, dict) or not isinstance(items, list):
            return None
        return DescribedExtraction(to_triplets(items)[0], entities_of(value.get("entities"))[0],
                                   relations_of(value.get("relations"))[0])

    @staticmethod
    def _encode(extraction: DescribedExtraction) -> dict[str, Any]:
        value: dict[str, Any] = {"triplets": triplet_lists(extraction.triplets)}
        if extraction.entities:
            value["entities"] = entity_lists(extraction.entities)
        if extraction.relations:
            value["relations"] = relation_lists(extraction.relations)
        return value

    def _saved_one(self) -> None:
        self._unsaved += 1
        if self._unsaved >= self.persist_every:
            self.persist()

    def get(self, key: str) -> list[Triplet] | None:
        """The cached triplets of ``key``, or ``None`` when there are none."""
        found = self.get_described(key)
        return None if found is None else found.triplets

    async def aget(self, key: str) -> list[Triplet] | None:
        """:meth:`get` through the kvstore's async API."""
        found = await self.aget_described(key)
        return None if found is None else found.triplets

    def get_described(self, key: str) -> DescribedExtraction | None:
        """The cached triplets of ``key`` with their entity and relation descriptions (none
        for an entry written by :meth:`put`), or ``None`` when there is no entry.

        >>> from llama_index_graphrag_milvus.records import EntityDescription, RelationDescription
        >>> cache = ExtractionCache()
        >>> cache.put_described("key", DescribedExtraction(
        ...     [Triplet("Euler", "born in", "Basel")], [EntityDescription("Basel", "GEO", "")],
        ...     [RelationDescription("Euler", "born in", "Basel", "", 9.0)]))
        >>> cache.get_described("key").relations
        [RelationDescription(subject='Euler', predicate='born in', object='Basel', \
description='', strength=9.0)]
        """
        return self._decode(self.kvstore.get(key, collection=self.collection))

    async def aget_described(self, key: str) -> DescribedExtraction | None:
        """:meth:`get_described` through the kvstore's async API."""
        return self._decode(await self.kvstore.aget(key, collection=self.collection))

    def put(self, key: str, triplets: Sequence[Triplet]) -> None:
        """Store the triplets of ``key`` (an empty list is a valid answer)."""
        self.put_described(key, DescribedExtraction(list(triplets), [], []))

    async def aput(self, key: str, triplets: Sequence[Triplet]) -> None:
        """:meth:`put` through the kvstore's async API."""
        await self.aput_described(key, DescribedExtraction(list(triplets), [], []))

    def put_described(self, key: str, extraction: DescribedExtraction) -> None:
        """Store the triplets of ``key`` with their entity and relation descriptions."""
        self.kvstore.put(key, self._encode(extraction), collection=self.collection)
        self._saved_one()

    async def aput_described(self, key: str, extraction: DescribedExtraction) -> None:
        """:meth:`put_described` through the kvstore's async API."""
        await self.kvstore.aput(key, self._encode(extraction), collection=self.collection)
        self._saved_one()

    def __len__(self) -> int:
        return len(self.kvstore.get_all(collection=self.collection))

    def __bool__(self) -> bool:
        return True  # an empty cache is still a cache: ``cache or default`` keeps it

    def persist(self) -> None:
        """Write the file of ``persist_path`` (nothing to do for other kvstores)."""
        if self.persist_path is None or not isinstance(self.kvstore, SimpleKVStore):
            return
        self.persist_path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.persist_path.with_name(f"{self.persist_path.name}.{os.getpid()}.tmp")
        self.kvstore.persist(str(partial))
        os.replace(partial, self.persist_path)
        self._unsaved = 0
