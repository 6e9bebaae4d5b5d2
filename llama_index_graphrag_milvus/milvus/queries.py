"""The searches and reads of the query path: entity, relation and passage searches, relation
texts and passages by id, sync and async (each pair builds the same request and parses the
same answer with :mod:`.rows`; only the client call differs).

A mixin of :class:`~llama_index_graphrag_milvus.milvus.store.MilvusGraphStore`, apart from its
set-up, writes and whole-collection reads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from llama_index.core.schema import BaseNode
from pymilvus import AsyncMilvusClient, MilvusClient

from llama_index_graphrag_milvus.milvus.filters import in_list
from llama_index_graphrag_milvus.milvus.fulltext import (
    bm25_score,
    folded_words,
    parse_words_hits,
    words_search_kwargs,
)
from llama_index_graphrag_milvus.milvus.rows import (
    GET_CHUNK,
    RELATION_HIT_FIELDS,
    advance,
    chunks,
    id_filter,
    parse_entity_hits,
    parse_passage_hits,
    parse_relation_hits,
    ranked_search,
    rows_to_passages,
    search_kwargs,
    similarity,
)
from llama_index_graphrag_milvus.milvus.schema import PASSAGE_FIELDS, milvus_errors
from llama_index_graphrag_milvus.records import EntityHit, RelationHit


class QueryPath:
    """The query-path methods of a store (see the module docstring)."""

    entity_collection: str
    relation_collection: str
    passage_collection: str
    read_options: dict[str, Any]
    write_options: dict[str, Any]
    full_text: bool
    folds_words: bool
    records_name_keys: bool

    @property
    def client(self) -> MilvusClient:
        raise NotImplementedError

    def aclient(self) -> AsyncMilvusClient:
        raise NotImplementedError

    def relation_fields(self, fields: Sequence[str]) -> list[str]:
        raise NotImplementedError


    def ranked_search(self, kwargs: dict[str, Any], limit: int,
                      score: Callable[[dict[str, Any]], float] = similarity
                      ) -> list[list[dict[str, Any]]]:
        """A search's hits, highest ``score`` (the similarity) first and ties by id, the
        limit's tie settled (see :func:`~.rows.ranked_search`)."""
        steps = ranked_search(kwargs, limit, score)
        request: dict[str, Any] | None = next(steps)
        hits: list[list[dict[str, Any]]] = []
        with milvus_errors(f"search {kwargs['collection_name']}"):
            while request is not None:
                request, hits = advance(steps, self.client.search(**request,
                                                                  **self.read_options))
        return hits

    async def aranked_search(self, kwargs: dict[str, Any], limit: int,
                             score: Callable[[dict[str, Any]], float] = similarity
                             ) -> list[list[dict[str, Any]]]:
        """Async twin of :meth:`ranked_search`."""
        steps = ranked_search(kwargs, limit, score)
        request: dict[str, Any] | None = next(steps)
        hits: list[list[dict[str, Any]]] = []
        with milvus_errors(f"search {kwargs['collection_name']}"):
            while request is not None:
                request, hits = advance(steps, await self.aclient().search(
                    **request, **self.read_options))
        return hits

    def entity_search(self, vectors: Sequence[Sequence[float]], top_k: int, where: str = "",
                      among: Sequence[str] | None = None, keys: Sequence[str] | None = None
                      ) -> dict[str, Any] | None:
        """The arguments of an entity search (``None`` when it can match nothing): among the
        rows matching ``where``, and among the entities whose :func:`~llama_index_graphrag_
        milvus.words.name_key` is one of ``keys`` where the collection records them, else
        among the ids ``among``, when given."""
        if keys is not None and self.records_name_keys:
            if not keys:
                return None
            where = in_list("name_key", keys) + (f" and {where}" if where else "")
            among = None
        if not vectors or (among is not None and not among):
            return None
        return search_kwargs(self.entity_collection, vectors, top_k, ["name"], among, where)

    def search_entities(self, vectors: Sequence[Sequence[float]], names: Sequence[str],
                        top_k: int, threshold: float | None, where: str = "",
                        among: Sequence[str] | None = None, keys: Sequence[str] | None = None
                        ) -> list[list[EntityHit]]:
        """All entity searches of one query in one batched call: hits per searched name
        (among the entities :meth:`entity_search` says)."""
        kwargs = self.entity_search(vectors, top_k, where, among, keys)
        if kwargs is None:
            return [[] for _ in vectors]
        return parse_entity_hits(self.ranked_search(kwargs, top_k), names, threshold)

    async def asearch_entities(self, vectors: Sequence[Sequence[float]], names: Sequence[str],
                               top_k: int, threshold: float | None, where: str = "",
                               among: Sequence[str] | None = None,
                               keys: Sequence[str] | None = None) -> list[list[EntityHit]]:
        """Async twin of :meth:`search_entities`."""
        kwargs = self.entity_search(vectors, top_k, where, among, keys)
        if kwargs is None:
            return [[] for _ in vectors]
        return parse_entity_hits(await self.aranked_search(kwargs, top_k), names, threshold)

    def search_relations(self, vector: Sequence[float], top_k: int,
                         threshold: float | None, where: str = "") -> list[RelationHit]:
        """The relations most similar to the query vector (among the rows matching
        ``where``, when given)."""
        kwargs = search_kwargs(self.relation_collection, [vector], top_k,
                                self.relation_fields(RELATION_HIT_FIELDS), where=where)
        return parse_relation_hits(self.ranked_search(kwargs, top_k), threshold)

    async def asearch_relations(self, vector: Sequence[float], top_k: int,
                                threshold: float | None, where: str = "") -> list[RelationHit]:
        """Async twin of :meth:`search_relations`."""
        kwargs = search_kwargs(self.relation_collection, [vector], top_k,
                                self.relation_fields(RELATION_HIT_FIELDS), where=where)
        return parse_relation_hits(await self.aranked_search(kwargs, top_k), threshold)

    def get_relation_texts(self, ids: Sequence[str]) -> dict[str, str]:
        """Relation texts by id, in one call."""
        return self._field_by_id(self.relation_collection, ids, "text")

    async def aget_relation_texts(self, ids: Sequence[str]) -> dict[str, str]:
        """Async twin of :meth:`get_relation_texts`."""
        return await self._afield_by_id(self.relation_collection, ids, "text")

    def get_entity_names(self, ids: Sequence[str]) -> dict[str, str]:
        """Entity names by id, in one call (ids not stored are left out)."""
        return self._field_by_id(self.entity_collection, ids, "name")

    async def aget_entity_names(self, ids: Sequence[str]) -> dict[str, str]:
        """Async twin of :meth:`get_entity_names`."""
        return await self._afield_by_id(self.entity_collection, ids, "name")

    def _field_by_id(self, collection: str, ids: Sequence[str], field: str) -> dict[str, str]:
        if not ids:
            return {}
        with milvus_errors(f"read {collection}"):
            rows = self.client.get(collection_name=collection, **self.read_options,
                                   ids=list(ids), output_fields=[field])
        return {row["id"]: row[field] for row in rows}

    async def _afield_by_id(self, collection: str, ids: Sequence[str], field: str
                            ) -> dict[str, str]:
        if not ids:
            return {}
        with milvus_errors(f"read {collection}"):
            rows = await self.aclient().get(collection_name=collection, **self.read_options,
                                             ids=list(ids), output_fields=[field])
        return {row["id"]: row[field] for row in rows}

    def search_passage_lists(self, vectors: Sequence[Sequence[float]], limit: int,
                             ids: Sequence[str] | None = None, where: str = ""
                             ) -> list[list[tuple[BaseNode, float]]]:
        """One batched search: for each vector, the ``limit`` most similar passages (among
        ``ids`` when given, matching ``where``), best first."""
        kwargs = self._passagesearch_kwargs(vectors, limit, ids, where)
        if kwargs is None:
            return [[] for _ in vectors]
        return parse_passage_hits(self.ranked_search(kwargs, limit))

    async def asearch_passage_lists(self, vectors: Sequence[Sequence[float]], limit: int,
                                    ids: Sequence[str] | None = None, where: str = ""
                                    ) -> list[list[tuple[BaseNode, float]]]:
        """Async twin of :meth:`search_passage_lists`."""
        kwargs = self._passagesearch_kwargs(vectors, limit, ids, where)
        if kwargs is None:
            return [[] for _ in vectors]
        return parse_passage_hits(await self.aranked_search(kwargs, limit))

    def _passagesearch_kwargs(self, vectors: Sequence[Sequence[float]], limit: int,
                               ids: Sequence[str] | None, where: str
                               ) -> dict[str, Any] | None:
        """The search request, or ``None`` when it cannot match anything."""
        if not vectors or (ids is not None and not ids):
            return None
        kwargs = search_kwargs(self.passage_collection, vectors, limit, PASSAGE_FIELDS, ids,
                                where)
        if ids is None and where:
            kwargs["filter"] = where
        return kwargs

    def match_passage_words(self, texts: Sequence[str], limit: int, where: str = ""
                            ) -> list[list[tuple[BaseNode, float]]]:
        """One batched BM25 search (Milvus full-text search): for each text, the ``limit``
        passages whose words match it best, ``(node, score)``, best first and ties by id (at
        the cut too); empty lists when the passage collection has no full-text search."""
        if not texts or not self.full_text:
            return [[] for _ in texts]
        return parse_words_hits(self.ranked_search(words_search_kwargs(
            self.passage_collection, self._words_of(texts), limit, where), limit, bm25_score))

    async def amatch_passage_words(self, texts: Sequence[str], limit: int, where: str = ""
                                   ) -> list[list[tuple[BaseNode, float]]]:
        """Async twin of :meth:`match_passage_words`."""
        if not texts or not self.full_text:
            return [[] for _ in texts]
        return parse_words_hits(await self.aranked_search(words_search_kwargs(
            self.passage_collection, self._words_of(texts), limit, where), limit, bm25_score))

    def _words_of(self, texts: Sequence[str]) -> list[str]:
        """The texts as this index's BM25 reads them (folded where it folds)."""
        return [folded_words(t) for t in texts] if self.folds_words else list(texts)

    def passages_matching(self, ids: Sequence[str], where: str) -> list[str]:
        """Those of ``ids`` whose passage matches ``where`` (a filter expression on passage
        metadata): one read of ids only, per chunk."""
        found: list[str] = []
        with milvus_errors(f"read {self.passage_collection}"):
            for chunk in chunks(ids, GET_CHUNK):
                found += [row["id"] for row in self.client.query(
                    collection_name=self.passage_collection, **self.read_options,
                    filter=id_filter(chunk, where), output_fields=["id"])]
        return found

    async def apassages_matching(self, ids: Sequence[str], where: str) -> list[str]:
        """Async twin of :meth:`passages_matching`."""
        found: list[str] = []
        with milvus_errors(f"read {self.passage_collection}"):
            for chunk in chunks(ids, GET_CHUNK):
                found += [row["id"] for row in await self.aclient().query(
                    collection_name=self.passage_collection, **self.read_options,
                    filter=id_filter(chunk, where), output_fields=["id"])]
        return found

    def get_passages(self, ids: Sequence[str], where: str = "", for_write: bool = False
                     ) -> list[BaseNode]:
        """Passage nodes by id (and matching ``where``), in the order of ``ids``; unknown
        ids are left out. ``for_write``: read for a write, at ``Strong`` whatever the
        index's level."""
        rows: list[dict[str, Any]] = []
        options = self.write_options if for_write else self.read_options
        with milvus_errors(f"read {self.passage_collection}"):
            for chunk in chunks(ids, GET_CHUNK):
                rows += self.client.query(collection_name=self.passage_collection,
                                          **options, filter=id_filter(chunk, where),
                                          output_fields=["id", *PASSAGE_FIELDS])
        return rows_to_passages(rows, ids)

    async def aget_passages(self, ids: Sequence[str], where: str = "") -> list[BaseNode]:
        """Async twin of :meth:`get_passages`."""
        rows: list[dict[str, Any]] = []
        with milvus_errors(f"read {self.passage_collection}"):
            for chunk in chunks(ids, GET_CHUNK):
                rows += await self.aclient().query(
                    collection_name=self.passage_collection, **self.read_options,
                    filter=id_filter(chunk, where), output_fields=["id", *PASSAGE_FIELDS])
        return rows_to_passages(rows, ids)
