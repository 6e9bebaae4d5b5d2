"""The two drivers that run a plan, and the one table that says how each request is answered.

:class:`SyncDriver` answers with blocking calls (a :class:`~.requests.Together` runs in the
store's threads), :class:`AsyncDriver` with awaits (a ``Together`` is an
``asyncio.gather``). Both look the request's type up in the same :data:`HANDLERS` table: a
:class:`Handler` holds the blocking and the awaitable way to answer one request type, side by
side, so the two paths cannot drift apart.

The table is the merge of one table per source of answers: :data:`MODEL_HANDLERS` (the LLM
and the embedding model), :data:`MILVUS_HANDLERS` (the collections) and
:data:`MEMORY_HANDLERS` (the index's in-memory copies: graph, entity and passage tables,
communities), plus :class:`~.requests.Known`.

- A new request type: a ``Request[Answer]`` dataclass in :mod:`.requests`, its two
  handler functions here, and one line in the table of its source.
- Another source for the same requests (the graph served by Milvus instead of held in
  memory, for example): a table of its own for those request types, merged over the
  defaults and given to the drivers, ``SyncDriver(context, {**HANDLERS, **served})``; the
  plans do not change.

Example::

    context = DriverContext(index, llm=None, ner_prompt=DEFAULT_NER_PROMPT)
    hits = SyncDriver(context).run(search_relations(query, seeds))
    same = await AsyncDriver(context).run(search_relations(query, seeds))
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from llama_index.core.llms.llm import LLM
from llama_index.core.prompts import BasePromptTemplate
from llama_index.core.schema import BaseNode

from llama_index_graphrag_milvus.records import CandidateRelation, EntityHit, RelationHit
from llama_index_graphrag_milvus.retrieval.requests import (
    EmbedTexts,
    EntityPassages,
    GetEntityNames,
    GetPassages,
    GetRelations,
    GetRelationTexts,
    Known,
    LoadCommunities,
    LoadEntities,
    LoadGraph,
    LoadPassages,
    Ner,
    Plan,
    RelationsAround,
    Request,
    SearchEntities,
    SearchPassages,
    SearchRelations,
    Together,
)
from llama_index_graphrag_milvus.retrieval.steps import parse_ner

if TYPE_CHECKING:
    from llama_index_graphrag_milvus.communities.build import CommunitySet
    from llama_index_graphrag_milvus.graph import EntityRelationGraph
    from llama_index_graphrag_milvus.graph.seeds import EntityTable, PassageTable
    from llama_index_graphrag_milvus.index import GraphRAGIndex
    from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore

A = TypeVar("A")
T = TypeVar("T")


@dataclass(frozen=True)
class DriverContext:
    """What the handlers answer from: the index (its models, store and in-memory copies),
    and the query NER's LLM and prompt (no NER without an LLM)."""

    index: GraphRAGIndex
    llm: LLM | None
    ner_prompt: BasePromptTemplate

    @property
    def store(self) -> MilvusGraphStore:
        return self.index.store


@dataclass(frozen=True)
class Handler(Generic[A]):
    """How one request type is answered: ``call`` blocks, ``acall`` is awaited; both take
    the context and the request and give the same answer."""

    call: Callable[[DriverContext, Any], A]
    acall: Callable[[DriverContext, Any], Awaitable[A]]


Handlers = Mapping[type[Request[Any]], Handler[Any]]
"""Request type to its handler."""


def handler(kind: type[Request[A]], call: Callable[[DriverContext, Any], A],
            acall: Callable[[DriverContext, Any], Awaitable[A]]
            ) -> tuple[type[Request[Any]], Handler[Any]]:
    """A table entry; mypy checks that both functions give the request's answer type."""
    return kind, Handler(call, acall)


# ---------------------------------------------------------------------------- the models


def _ner(context: DriverContext, request: Ner) -> list[str]:
    if context.llm is None:
        return []
    try:
        raw: str | BaseException = context.llm.predict(context.ner_prompt,
                                                       query_str=request.query)
    except Exception as exc:  # NER is an optional refinement: fall back, never fail
        raw = exc
    return parse_ner(raw)


async def _aner(context: DriverContext, request: Ner) -> list[str]:
    if context.llm is None:
        return []
    try:
        raw: str | BaseException = await context.llm.apredict(context.ner_prompt,
                                                              query_str=request.query)
    except Exception as exc:  # NER is an optional refinement: fall back, never fail
        raw = exc
    return parse_ner(raw)


def _embed(context: DriverContext, request: EmbedTexts) -> list[list[float]]:
    return context.index.embed_model.get_text_embedding_batch(list(request.texts))


async def _aembed(context: DriverContext, request: EmbedTexts) -> list[list[float]]:
    return await context.index.embed_model.aget_text_embedding_batch(list(request.texts))


MODEL_HANDLERS: Handlers = dict([
    handler(Ner, _ner, _aner),
    handler(EmbedTexts, _embed, _aembed),
])
"""Answered by the query NER's LLM and the index's embedding model."""


# ---------------------------------------------------------------------------- Milvus


def _search_entities(context: DriverContext, r: SearchEntities) -> list[list[EntityHit]]:
    return context.store.search_entities(r.vectors, r.names, r.top_k, r.threshold)


async def _asearch_entities(context: DriverContext, r: SearchEntities
                            ) -> list[list[EntityHit]]:
    return await context.store.asearch_entities(r.vectors, r.names, r.top_k, r.threshold)


def _search_relations(context: DriverContext, r: SearchRelations) -> list[RelationHit]:
    return context.store.search_relations(r.vector, r.top_k, r.threshold)


async def _asearch_relations(context: DriverContext, r: SearchRelations) -> list[RelationHit]:
    return await context.store.asearch_relations(r.vector, r.top_k, r.threshold)


def _search_passages(context: DriverContext, r: SearchPassages
                     ) -> list[list[tuple[BaseNode, float]]]:
    return context.store.search_passage_lists(r.vectors, r.limit, r.ids, r.where)


async def _asearch_passages(context: DriverContext, r: SearchPassages
                            ) -> list[list[tuple[BaseNode, float]]]:
    return await context.store.asearch_passage_lists(r.vectors, r.limit, r.ids, r.where)


def _get_passages(context: DriverContext, r: GetPassages) -> list[BaseNode]:
    return context.store.get_passages(r.ids, r.where)


async def _aget_passages(context: DriverContext, r: GetPassages) -> list[BaseNode]:
    return await context.store.aget_passages(r.ids, r.where)


def _relation_texts(context: DriverContext, r: GetRelationTexts) -> dict[str, str]:
    return context.store.get_relation_texts(r.ids)


async def _arelation_texts(context: DriverContext, r: GetRelationTexts) -> dict[str, str]:
    return await context.store.aget_relation_texts(r.ids)


def _entity_names(context: DriverContext, r: GetEntityNames) -> dict[str, str]:
    return context.store.get_entity_names(r.ids)


async def _aentity_names(context: DriverContext, r: GetEntityNames) -> dict[str, str]:
    return await context.store.aget_entity_names(r.ids)


def _around(context: DriverContext, r: RelationsAround) -> list[CandidateRelation]:
    return context.store.served.relations_around(r.vector, r.entity_ids, r.limit)


async def _aaround(context: DriverContext, r: RelationsAround) -> list[CandidateRelation]:
    return await context.store.served.arelations_around(r.vector, r.entity_ids, r.limit)


def _relations(context: DriverContext, r: GetRelations) -> list[CandidateRelation]:
    return context.store.served.relations(r.ids, r.vector)


async def _arelations(context: DriverContext, r: GetRelations) -> list[CandidateRelation]:
    return await context.store.served.arelations(r.ids, r.vector)


def _entity_passages(context: DriverContext, r: EntityPassages) -> dict[str, list[str]]:
    return context.store.served.entity_passages(r.entity_ids, r.cap)


async def _aentity_passages(context: DriverContext, r: EntityPassages
                            ) -> dict[str, list[str]]:
    return await context.store.served.aentity_passages(r.entity_ids, r.cap)


MILVUS_HANDLERS: Handlers = dict([
    handler(SearchEntities, _search_entities, _asearch_entities),
    handler(SearchRelations, _search_relations, _asearch_relations),
    handler(SearchPassages, _search_passages, _asearch_passages),
    handler(GetPassages, _get_passages, _aget_passages),
    handler(GetRelationTexts, _relation_texts, _arelation_texts),
    handler(GetEntityNames, _entity_names, _aentity_names),
    handler(RelationsAround, _around, _aaround),
    handler(GetRelations, _relations, _arelations),
    handler(EntityPassages, _entity_passages, _aentity_passages),
])
"""Answered by the index's Milvus collections (one request, one Milvus call)."""


# ---------------------------------------------------------------------------- in memory


def _graph(context: DriverContext, r: LoadGraph) -> EntityRelationGraph:
    return context.index.graph


async def _agraph(context: DriverContext, r: LoadGraph) -> EntityRelationGraph:
    return await context.index.aget_graph()


def _entities(context: DriverContext, r: LoadEntities) -> EntityTable:
    return context.index.entity_table


async def _aentities(context: DriverContext, r: LoadEntities) -> EntityTable:
    return await context.index.aget_entity_table()


def _passages(context: DriverContext, r: LoadPassages) -> PassageTable | None:
    return context.index.passage_table(r.max_floats)


async def _apassages(context: DriverContext, r: LoadPassages) -> PassageTable | None:
    return await context.index.aget_passage_table(r.max_floats)


def _communities(context: DriverContext, r: LoadCommunities) -> CommunitySet:
    return context.index.communities


async def _acommunities(context: DriverContext, r: LoadCommunities) -> CommunitySet:
    return await context.index.aget_communities()


MEMORY_HANDLERS: Handlers = dict([
    handler(LoadGraph, _graph, _agraph),
    handler(LoadEntities, _entities, _aentities),
    handler(LoadPassages, _passages, _apassages),
    handler(LoadCommunities, _communities, _acommunities),
])
"""Answered by the index's in-memory copies (read from Milvus on first use)."""


async def _known(context: DriverContext, r: Known[A]) -> A:
    return r.value


HANDLERS: Handlers = {
    **MODEL_HANDLERS,
    **MILVUS_HANDLERS,
    **MEMORY_HANDLERS,
    Known: Handler(lambda context, r: r.value, _known),
}
"""Every request type the built-in plans yield, and how each is answered."""


# ---------------------------------------------------------------------------- the drivers


class _Driver:
    def __init__(self, context: DriverContext, handlers: Handlers = HANDLERS) -> None:
        self.context = context
        self.handlers = handlers

    def _handler(self, request: Request[Any]) -> Handler[Any]:
        found = self.handlers.get(type(request))
        if found is None:
            raise TypeError(f"no handler for the retrieval request {request!r}: add one to "
                            "the driver's table (see llama_index_graphrag_milvus.retrieval."
                            "drivers)")
        return found


class SyncDriver(_Driver):
    """Runs a plan with blocking calls; :class:`~.requests.Together` runs in the store's
    threads."""

    def run(self, plan: Plan[T]) -> T:
        answer: Any = None
        while True:
            try:
                request = plan.send(answer)
            except StopIteration as stop:
                return stop.value
            answer = self.answer(request)

    def answer(self, request: Request[A]) -> A:
        if isinstance(request, Together):
            answers: Any = self.context.store.concurrently_all(
                [partial(self.answer, r) for r in request.requests])
            return answers
        return self._handler(request).call(self.context, request)


class AsyncDriver(_Driver):
    """Runs a plan with awaits; :class:`~.requests.Together` is an ``asyncio.gather``."""

    async def run(self, plan: Plan[T]) -> T:
        answer: Any = None
        while True:
            try:
                request = plan.send(answer)
            except StopIteration as stop:
                return stop.value
            answer = await self.answer(request)

    async def answer(self, request: Request[A]) -> A:
        if isinstance(request, Together):
            answers: Any = tuple(await asyncio.gather(*(self.answer(r)
                                                        for r in request.requests)))
            return answers
        return await self._handler(request).acall(self.context, request)
