"""The I/O of a retrieval, as requests, and the two drivers that answer them.

A retrieval method is written once, as a *plan*: a generator that yields requests
(``SearchRelations(...)``, ``EmbedTexts(...)``...) and receives their answers. Everything
between the requests is pure. :class:`SyncDriver` answers with blocking calls,
:class:`AsyncDriver` with awaits; so ``_retrieve`` and ``_aretrieve`` share every line but
the I/O ones, and a method cannot drift between the two paths.

>>> def plan():
...     vectors = yield EmbedTexts(("a question",))
...     return len(vectors[0])
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from llama_index.core.llms.llm import LLM
from llama_index.core.prompts import BasePromptTemplate

from llama_index_graphrag_milvus.retrieval.steps import parse_ner

if TYPE_CHECKING:
    from llama_index_graphrag_milvus.index import GraphRAGIndex

T = TypeVar("T")


@dataclass(frozen=True)
class Ner:
    """Entity names in the query, by the LLM (an empty list without one, or on failure)."""

    query: str


@dataclass(frozen=True)
class EmbedTexts:
    """Embeddings of ``texts``, in one batch of the index's embedding model."""

    texts: tuple[str, ...]


@dataclass(frozen=True)
class SearchEntities:
    """One batched entity search: hits per searched name."""

    vectors: Sequence[Sequence[float]]
    names: tuple[str, ...]
    top_k: int
    threshold: float | None


@dataclass(frozen=True)
class SearchRelations:
    """The relations most similar to ``vector``."""

    vector: list[float]
    top_k: int
    threshold: float | None


@dataclass(frozen=True)
class SearchPassages:
    """One batched passage search: ``(node, similarity)`` lists, one per vector, among
    ``ids`` when given, matching the ``where`` filter expression."""

    vectors: tuple[list[float], ...]
    limit: int
    ids: tuple[str, ...] | None = None
    where: str = ""


@dataclass(frozen=True)
class GetPassages:
    """Passage nodes by id (matching ``where``), in the order of ``ids``."""

    ids: tuple[str, ...]
    where: str = ""


@dataclass(frozen=True)
class GetRelationTexts:
    """Relation texts by id."""

    ids: tuple[str, ...]


@dataclass(frozen=True)
class LoadGraph:
    """The index's in-memory graph (built from Milvus on first use)."""


@dataclass(frozen=True)
class LoadEntities:
    """The index's in-memory entity table (read from Milvus on first use)."""


@dataclass(frozen=True)
class LoadPassages:
    """The index's in-memory passage table, or ``None`` when it holds more than
    ``max_floats`` floats (``None``: no limit)."""

    max_floats: int | None


@dataclass(frozen=True)
class Known:
    """An answer found without I/O (a seed search done in memory): ``value`` comes back, so
    that a plan keeps one shape whether a step runs in Milvus or in memory."""

    value: Any


@dataclass(frozen=True)
class LoadCommunities:
    """The index's communities and reports (read from Milvus on first use)."""


@dataclass(frozen=True)
class Together:
    """Several requests at the same time; the answers come back as a tuple, in order."""

    requests: tuple[Any, ...]


Plan = Generator[Any, Any, T]
"""A retrieval step: yields requests, receives their answers, returns its result."""


class _Driver:
    def __init__(self, index: GraphRAGIndex, llm: LLM | None,
                 ner_prompt: BasePromptTemplate) -> None:
        self.index = index
        self.store = index.store
        self.llm = llm
        self.ner_prompt = ner_prompt


class SyncDriver(_Driver):
    """Runs a plan with blocking calls; :class:`Together` runs in the store's threads."""

    def run(self, plan: Plan[T]) -> T:
        answer: Any = None
        while True:
            try:
                request = plan.send(answer)
            except StopIteration as stop:
                return stop.value
            answer = self.answer(request)

    def answer(self, request: Any) -> Any:
        store = self.store
        if isinstance(request, Together):
            return store.concurrently_all([partial(self.answer, r) for r in request.requests])
        if isinstance(request, Ner):
            return self._ner(request.query)
        if isinstance(request, EmbedTexts):
            return self.index.embed_model.get_text_embedding_batch(list(request.texts))
        if isinstance(request, SearchEntities):
            return store.search_entities(request.vectors, request.names, request.top_k,
                                         request.threshold)
        if isinstance(request, SearchRelations):
            return store.search_relations(request.vector, request.top_k, request.threshold)
        if isinstance(request, SearchPassages):
            return store.search_passage_lists(request.vectors, request.limit, request.ids,
                                              request.where)
        if isinstance(request, GetPassages):
            return store.get_passages(request.ids, request.where)
        if isinstance(request, GetRelationTexts):
            return store.get_relation_texts(request.ids)
        if isinstance(request, Known):
            return request.value
        if isinstance(request, LoadGraph):
            return self.index.graph
        if isinstance(request, LoadEntities):
            return self.index.entity_table
        if isinstance(request, LoadPassages):
            return self.index.passage_table(request.max_floats)
        if isinstance(request, LoadCommunities):
            return self.index.communities
        raise TypeError(f"unknown retrieval request {request!r}")

    def _ner(self, query: str) -> list[str]:
        if self.llm is None:
            return []
        try:
            raw: str | BaseException = self.llm.predict(self.ner_prompt, query_str=query)
        except Exception as exc:  # NER is an optional refinement: fall back, never fail
            raw = exc
        return parse_ner(raw)


class AsyncDriver(_Driver):
    """Runs a plan with awaits; :class:`Together` is an ``asyncio.gather``."""

    async def run(self, plan: Plan[T]) -> T:
        answer: Any = None
        while True:
            try:
                request = plan.send(answer)
            except StopIteration as stop:
                return stop.value
            answer = await self.answer(request)

    async def answer(self, request: Any) -> Any:
        store = self.store
        if isinstance(request, Together):
            return tuple(await asyncio.gather(*(self.answer(r) for r in request.requests)))
        if isinstance(request, Ner):
            return await self._ner(request.query)
        if isinstance(request, EmbedTexts):
            return await self.index.embed_model.aget_text_embedding_batch(list(request.texts))
        if isinstance(request, SearchEntities):
            return await store.asearch_entities(request.vectors, request.names, request.top_k,
                                                request.threshold)
        if isinstance(request, SearchRelations):
            return await store.asearch_relations(request.vector, request.top_k,
                                                 request.threshold)
        if isinstance(request, SearchPassages):
            return await store.asearch_passage_lists(request.vectors, request.limit,
                                                     request.ids, request.where)
        if isinstance(request, GetPassages):
            return await store.aget_passages(request.ids, request.where)
        if isinstance(request, GetRelationTexts):
            return await store.aget_relation_texts(request.ids)
        if isinstance(request, Known):
            return request.value
        if isinstance(request, LoadGraph):
            return await self.index.aget_graph()
        if isinstance(request, LoadEntities):
            return await self.index.aget_entity_table()
        if isinstance(request, LoadPassages):
            return await self.index.aget_passage_table(request.max_floats)
        if isinstance(request, LoadCommunities):
            return await self.index.aget_communities()
        raise TypeError(f"unknown retrieval request {request!r}")

    async def _ner(self, query: str) -> list[str]:
        if self.llm is None:
            return []
        try:
            raw: str | BaseException = await self.llm.apredict(self.ner_prompt,
                                                               query_str=query)
        except Exception as exc:  # NER is an optional refinement: fall back, never fail
            raw = exc
        return parse_ner(raw)


def first(lists: Sequence[Sequence[T]]) -> list[T]:
    """The first list of a batched answer (empty when there is none)."""
    return list(lists[0]) if lists else []
