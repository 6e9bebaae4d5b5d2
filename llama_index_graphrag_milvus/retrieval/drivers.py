"""The two drivers that run a plan, and the tables that say how each request is answered.

:class:`SyncDriver` answers with blocking calls (a :class:`~.requests.Together` runs in the
store's threads), :class:`AsyncDriver` with awaits (a ``Together`` is an
``asyncio.gather``). Both look the request's type up in the same table. An entry is either

- a :class:`Handler`: the blocking and the awaitable way to answer one request type, side
  by side, so that the two paths cannot drift apart (one Milvus call, one model call); or
- a :class:`Steps`: a plan of further requests that answers it, run by the same driver (a
  graph request answered by a few Milvus requests, or by the in-memory graph), written once
  for both drivers.

The table of one query is the merge of :data:`MODEL_HANDLERS` (the LLM and the embedding
model), :data:`MILVUS_HANDLERS` (the collections), :data:`COPY_HANDLERS` (the index's
in-memory copies), and the table of the query's *graph source*: the graph held in memory or
served by Milvus (:mod:`.sources`), chosen once per query from ``DriverContext.graph``. The
methods' plans ask the graph requests of :mod:`.requests` and never know which source
answers them.

- A new request type: a ``Request[Answer]`` dataclass in :mod:`.requests`, and its entry in
  the table of what answers it (a graph request: in both sources' tables).
- Another source for the graph requests: a table of its own, given to the drivers,
  ``SyncDriver(context, {**default_handlers(context), **mine})``; the plans do not change.

Example::

    context = DriverContext.of(index)                  # the graph in memory
    hits = SyncDriver(context).run(search_relations(query, seeds))
    same = await AsyncDriver(context).run(search_relations(query, seeds))
    served = SyncDriver(replace(context, graph=GraphMode.MILVUS)).run(...)
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms.llm import LLM
from llama_index.core.prompts import BasePromptTemplate
from llama_index.core.schema import BaseNode

from llama_index_graphrag_milvus.embeddings import (
    aembed_queries,
    aembed_texts,
    aqueries_apart,
    embed_queries,
    embed_texts,
    queries_apart,
)
from llama_index_graphrag_milvus.llm import within, within_thread
from llama_index_graphrag_milvus.parsing import strip_echo
from llama_index_graphrag_milvus.records import EntityHit, RelationHit
from llama_index_graphrag_milvus.retrieval.requests import (
    EmbedQueries,
    EmbedTexts,
    GetEntityNames,
    GetPassages,
    GetRelationTexts,
    Known,
    LoadCommunities,
    LoadEntities,
    LoadGraph,
    LoadPassages,
    LoadScope,
    LoadWords,
    MatchPassages,
    MatchWords,
    MilvusRequests,
    Ner,
    Plan,
    Request,
    SearchEntities,
    SearchPassages,
    SearchRelations,
    Together,
    advance,
)
from llama_index_graphrag_milvus.retrieval.settings import GraphMode, SearchSettings
from llama_index_graphrag_milvus.retrieval.steps import DEFAULT_NER_PROMPT, parse_ner

if TYPE_CHECKING:
    from llama_index_graphrag_milvus.communities.build import CommunitySet
    from llama_index_graphrag_milvus.graph import EntityRelationGraph
    from llama_index_graphrag_milvus.graph.tables import EntityTable, PassageScope, PassageTable
    from llama_index_graphrag_milvus.graph.word_table import WordTable
    from llama_index_graphrag_milvus.index_cache import IndexCache
    from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore

A = TypeVar("A")
T = TypeVar("T")

logger = logging.getLogger(__name__)


class IndexParts(Protocol):
    """What :meth:`DriverContext.of` takes from an index (a ``GraphRAGIndex``)."""

    @property
    def store(self) -> MilvusGraphStore: ...

    @property
    def cache(self) -> IndexCache: ...

    @property
    def embed_model(self) -> BaseEmbedding: ...


@dataclass
class Scope:
    """A filtered retrieval's scope: the filter expression on passage metadata (``where``),
    and what this query learned of which passages match it (shared by the query's requests,
    also those run at the same time)."""

    where: str
    tenants: tuple[str, ...] | None = None
    """The tenants the filter allows at most, when it pins the index's ``tenant_key``: the
    served graph then searches those tenants' relations and entities only."""
    matching: dict[str, bool] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def unknown(self, ids: Iterable[str]) -> tuple[str, ...]:
        """Those of ``ids`` not checked yet."""
        with self.lock:
            return tuple(p for p in dict.fromkeys(ids) if p not in self.matching)

    def learn(self, asked: Iterable[str], matching: Iterable[str]) -> None:
        found = set(matching)
        with self.lock:
            self.matching.update((p, p in found) for p in asked)

    def visible(self, ids: Iterable[str]) -> list[str]:
        """Those of ``ids`` known to match, in order."""
        with self.lock:
            return [p for p in ids if self.matching.get(p)]


@dataclass
class RequestCount:
    """The Milvus requests one query has sent (shared by the query's requests, also those
    run at the same time): each call of a :class:`Handler` marked ``milvus`` counts one. The
    reads that build the in-memory copies on first use are not counted."""

    value: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self) -> None:
        with self.lock:
            self.value += 1


@dataclass(frozen=True)
class DriverContext:
    """What the handlers answer from: the store, the index's in-memory copies, the embedding
    model, the query NER's LLM and prompt (no NER without an LLM), where the searches run
    when the graph is in memory, and where the graph lives for this query."""

    store: MilvusGraphStore
    cache: IndexCache
    embed_model: BaseEmbedding
    llm: LLM | None = None
    ner_prompt: BasePromptTemplate = field(default_factory=lambda: DEFAULT_NER_PROMPT)
    ner_timeout: float | None = None
    """Seconds the query NER's LLM call is waited for; past it the query goes on without
    its names (as when the call fails). ``None`` waits as long as the LLM client does."""
    ner_slots: threading.Semaphore | None = None
    """The retriever's bound on sync NER calls running at once, given-up ones included (see
    :func:`~llama_index_graphrag_milvus.llm.within_thread`)."""
    searches: SearchSettings = field(default_factory=SearchSettings)
    graph: GraphMode = GraphMode.MEMORY
    """``MEMORY`` or ``MILVUS`` (an index's ``"auto"`` is resolved before a query)."""
    scope: Scope | None = None
    """A filtered retrieval's scope: the graph requests then use and answer only what the
    filter's passages support (see :mod:`.sources.scoped`); ``None`` without filters."""
    requests: RequestCount = field(default_factory=RequestCount)
    """The Milvus requests the query has sent (see :class:`~.requests.MilvusRequests`)."""

    @classmethod
    def of(cls, index: IndexParts, **settings: Any) -> DriverContext:
        """The context of ``index`` (its store, copies and embedding model); ``settings``
        are the other fields."""
        return cls(index.store, index.cache, index.embed_model, **settings)


@dataclass(frozen=True)
class Handler(Generic[A]):
    """How one request type is answered: ``call`` blocks, ``acall`` is awaited; both take
    the context and the request and give the same answer."""

    call: Callable[[DriverContext, Any], A]
    acall: Callable[[DriverContext, Any], Awaitable[A]]
    milvus: bool = False
    """Whether a call is one Milvus request (counted in :class:`RequestCount`)."""


@dataclass(frozen=True)
class Steps(Generic[A]):
    """A request answered by a plan of further requests (``plan(context, request)``), which
    the driver runs as it runs any plan: one body for both drivers."""

    plan: Callable[[DriverContext, Any], Plan[A]]


Entry = Handler[Any] | Steps[Any]


@dataclass(frozen=True)
class Delegate(Request[A]):
    """``request`` answered by ``entry`` instead of the table's entry for its type: how a
    table that wraps another (the scoped source) asks the wrapped one."""

    entry: Entry
    request: Request[A]

Handlers = Mapping[type[Request[Any]], Entry]
"""Request type to what answers it."""


def handler(kind: type[Request[A]], call: Callable[[DriverContext, Any], A],
            acall: Callable[[DriverContext, Any], Awaitable[A]], milvus: bool = False
            ) -> tuple[type[Request[Any]], Handler[Any]]:
    """A table entry (``milvus``: each call is one Milvus request); mypy checks that both
    functions give the request's answer type."""
    return kind, Handler(call, acall, milvus)


def steps(kind: type[Request[A]], plan: Callable[[DriverContext, Any], Plan[A]]
          ) -> tuple[type[Request[Any]], Steps[Any]]:
    """A table entry answered by a plan."""
    return kind, Steps(plan)


# ---------------------------------------------------------------------------- the models


def _ner(context: DriverContext, request: Ner) -> list[str]:
    if context.llm is None:
        return []
    llm, prompt = context.llm, context.ner_prompt
    # NER is an optional refinement: a failure or no answer in time falls back, never fails
    raw = within_thread(lambda: llm.predict(prompt, query_str=request.query),
                        context.ner_timeout, context.ner_slots)
    return _ner_names(context, request, raw)


async def _aner(context: DriverContext, request: Ner) -> list[str]:
    if context.llm is None:
        return []
    raw = await within(context.llm.apredict(context.ner_prompt, query_str=request.query),
                       context.ner_timeout)
    return _ner_names(context, request, raw)


def _ner_names(context: DriverContext, request: Ner, raw: str | BaseException) -> list[str]:
    """The names of an NER answer, read after an echo of the prompt (whose example names
    would otherwise be taken for the question's)."""
    if isinstance(raw, str):
        raw = strip_echo(raw, context.ner_prompt.format(query_str=request.query))
    return parse_ner(raw)


def _of_index(context: DriverContext, vectors: list[list[float]]) -> list[list[float]]:
    if vectors:
        context.store.check_dimension(len(vectors[0]), "the embedding model")
    return vectors


def _embed(context: DriverContext, request: EmbedTexts) -> list[list[float]]:
    return _of_index(context, embed_texts(context.embed_model, request.texts))


async def _aembed(context: DriverContext, request: EmbedTexts) -> list[list[float]]:
    return _of_index(context, await aembed_texts(context.embed_model, request.texts))


def _probe_failed(exc: Exception) -> None:
    """A probe of the model's sides that failed (an API's hiccup) costs the query the batch
    of texts for its second queries, not its answer; the next query probes again."""
    logger.warning("could not tell whether the embedding model embeds queries apart (%r): "
                   "the second queries go as one batch of texts", exc)


def _embed_queries(context: DriverContext, request: EmbedQueries) -> list[list[float]]:
    model, cache = context.embed_model, context.cache
    if cache.queries_apart is None:  # learnt once per index
        try:
            cache.queries_apart = queries_apart(model)
        except Exception as exc:
            _probe_failed(exc)
    return _of_index(context, embed_queries(model, request.texts, bool(cache.queries_apart)))


async def _aembed_queries(context: DriverContext, request: EmbedQueries) -> list[list[float]]:
    model, cache = context.embed_model, context.cache
    if cache.queries_apart is None:
        try:
            cache.queries_apart = await aqueries_apart(model)
        except Exception as exc:
            _probe_failed(exc)
    return _of_index(context, await aembed_queries(model, request.texts,
                                                   bool(cache.queries_apart)))


MODEL_HANDLERS: Handlers = dict([
    handler(Ner, _ner, _aner),
    handler(EmbedTexts, _embed, _aembed),
    handler(EmbedQueries, _embed_queries, _aembed_queries),
])
"""Answered by the query NER's LLM and the index's embedding model."""


# ---------------------------------------------------------------------------- Milvus


def _search_entities(context: DriverContext, r: SearchEntities) -> list[list[EntityHit]]:
    return context.store.search_entities(r.vectors, r.names, r.top_k, r.threshold, r.where,
                                         r.among, r.keys)


async def _asearch_entities(context: DriverContext, r: SearchEntities
                            ) -> list[list[EntityHit]]:
    return await context.store.asearch_entities(r.vectors, r.names, r.top_k, r.threshold,
                                                r.where, r.among, r.keys)


def _search_relations(context: DriverContext, r: SearchRelations) -> list[RelationHit]:
    return context.store.search_relations(r.vector, r.top_k, r.threshold, r.where)


async def _asearch_relations(context: DriverContext, r: SearchRelations) -> list[RelationHit]:
    return await context.store.asearch_relations(r.vector, r.top_k, r.threshold, r.where)


def _search_passages(context: DriverContext, r: SearchPassages
                     ) -> list[list[tuple[BaseNode, float]]]:
    return context.store.search_passage_lists(r.vectors, r.limit, r.ids, r.where)


async def _asearch_passages(context: DriverContext, r: SearchPassages
                            ) -> list[list[tuple[BaseNode, float]]]:
    return await context.store.asearch_passage_lists(r.vectors, r.limit, r.ids, r.where)


def _match_words(context: DriverContext, r: MatchWords) -> list[list[tuple[BaseNode, float]]]:
    return context.store.match_passage_words(r.texts, r.limit, r.where)


async def _amatch_words(context: DriverContext, r: MatchWords
                        ) -> list[list[tuple[BaseNode, float]]]:
    return await context.store.amatch_passage_words(r.texts, r.limit, r.where)


def _by_id(context: DriverContext, r: GetPassages) -> tuple[tuple[str, ...], str]:
    """The ids to read and the filter to read them with: on Milvus Lite, when a query read
    the passages of ``r.where`` (see :func:`~.sources.shared.held_scope`) and they include
    every id, those it keeps, read by id alone (Lite evaluates a filter over every passage
    at each request)."""
    known = context.cache.known_scope(r.where) if r.where and context.store.is_lite else None
    if known is None:
        return r.ids, r.where
    kept, elsewhere = known.split(r.ids)
    return (r.ids, r.where) if elsewhere else (tuple(kept), "")


def _get_passages(context: DriverContext, r: GetPassages) -> list[BaseNode]:
    return context.store.get_passages(*_by_id(context, r))


async def _aget_passages(context: DriverContext, r: GetPassages) -> list[BaseNode]:
    return await context.store.aget_passages(*_by_id(context, r))


def _match(context: DriverContext, r: MatchPassages) -> list[str]:
    return context.store.passages_matching(r.ids, r.where)


async def _amatch(context: DriverContext, r: MatchPassages) -> list[str]:
    return await context.store.apassages_matching(r.ids, r.where)


def _relation_texts(context: DriverContext, r: GetRelationTexts) -> dict[str, str]:
    return context.store.get_relation_texts(r.ids)


async def _arelation_texts(context: DriverContext, r: GetRelationTexts) -> dict[str, str]:
    return await context.store.aget_relation_texts(r.ids)


def _entity_names(context: DriverContext, r: GetEntityNames) -> dict[str, str]:
    return context.store.get_entity_names(r.ids)


async def _aentity_names(context: DriverContext, r: GetEntityNames) -> dict[str, str]:
    return await context.store.aget_entity_names(r.ids)


MILVUS_HANDLERS: Handlers = dict([
    handler(SearchEntities, _search_entities, _asearch_entities, milvus=True),
    handler(SearchRelations, _search_relations, _asearch_relations, milvus=True),
    handler(SearchPassages, _search_passages, _asearch_passages, milvus=True),
    handler(MatchWords, _match_words, _amatch_words, milvus=True),
    handler(GetPassages, _get_passages, _aget_passages, milvus=True),
    handler(MatchPassages, _match, _amatch, milvus=True),
    handler(GetRelationTexts, _relation_texts, _arelation_texts, milvus=True),
    handler(GetEntityNames, _entity_names, _aentity_names, milvus=True),
])
"""Answered by the index's Milvus collections (one request, one Milvus call)."""


# ---------------------------------------------------------------------------- in memory


def _graph(context: DriverContext, r: LoadGraph) -> EntityRelationGraph:
    return context.cache.graph()


async def _agraph(context: DriverContext, r: LoadGraph) -> EntityRelationGraph:
    return await context.cache.aget_graph()


def _entities(context: DriverContext, r: LoadEntities) -> EntityTable:
    return context.cache.entity_table()


async def _aentities(context: DriverContext, r: LoadEntities) -> EntityTable:
    return await context.cache.aget_entity_table()


def _passages(context: DriverContext, r: LoadPassages) -> PassageTable | None:
    return context.cache.passage_table(r.max_floats)


async def _apassages(context: DriverContext, r: LoadPassages) -> PassageTable | None:
    return await context.cache.apassage_table(r.max_floats)


def _scope(context: DriverContext, r: LoadScope) -> PassageScope | None:
    return context.cache.passage_scope(r.where, r.max_floats)


async def _ascope(context: DriverContext, r: LoadScope) -> PassageScope | None:
    return await context.cache.apassage_scope(r.where, r.max_floats)


def _words(context: DriverContext, r: LoadWords) -> WordTable | None:
    return context.cache.word_table(r.max_floats)


async def _awords(context: DriverContext, r: LoadWords) -> WordTable | None:
    return await context.cache.aword_table(r.max_floats)


def _communities(context: DriverContext, r: LoadCommunities) -> CommunitySet:
    return context.cache.communities()


async def _acommunities(context: DriverContext, r: LoadCommunities) -> CommunitySet:
    return await context.cache.aget_communities()


COPY_HANDLERS: Handlers = dict([
    handler(LoadGraph, _graph, _agraph),
    handler(LoadEntities, _entities, _aentities),
    handler(LoadPassages, _passages, _apassages),
    handler(LoadScope, _scope, _ascope),
    handler(LoadWords, _words, _awords),
    handler(LoadCommunities, _communities, _acommunities),
])
"""Answered by the index's in-memory copies (read from Milvus on first use)."""


async def _known(context: DriverContext, r: Known[A]) -> A:
    return r.value


async def _acount(context: DriverContext, r: MilvusRequests) -> int:
    return context.requests.value


HANDLERS: Handlers = {
    **MODEL_HANDLERS,
    **MILVUS_HANDLERS,
    **COPY_HANDLERS,
    Known: Handler(lambda context, r: r.value, _known),
    MilvusRequests: Handler(lambda context, r: context.requests.value, _acount),
}
"""Every request type but the graph requests (those are the graph source's)."""


def default_handlers(context: DriverContext) -> Handlers:
    """:data:`HANDLERS` and the table of the context's graph source (scoped to the filter's
    passages when the context has a scope)."""
    from llama_index_graphrag_milvus.retrieval.sources import source_handlers

    return {**HANDLERS, **source_handlers(context.graph, scoped=context.scope is not None)}


# ---------------------------------------------------------------------------- the drivers


class _Driver:
    def __init__(self, context: DriverContext, handlers: Handlers | None = None) -> None:
        self.context = context
        self.handlers = default_handlers(context) if handlers is None else handlers

    def _entry(self, request: Request[Any]) -> tuple[Entry, Request[Any]]:
        """What answers ``request``, and the request it answers (a :class:`Delegate`'s
        own)."""
        if isinstance(request, Delegate):
            return request.entry, request.request
        found = self.handlers.get(type(request))
        if found is None:
            raise TypeError(f"no handler for the retrieval request {request!r}: add one to "
                            "the driver's table (see llama_index_graphrag_milvus.retrieval."
                            "drivers)")
        return found, request


class SyncDriver(_Driver):
    """Runs a plan with blocking calls; :class:`~.requests.Together` runs in the store's
    threads."""

    def run(self, plan: Plan[T]) -> T:
        request, value = advance(plan, None)
        while request is not None:
            request, value = advance(plan, self.answer(request))
        return cast(T, value)  # the plan returned it

    def answer(self, request: Request[A]) -> A:
        if isinstance(request, Together):
            answers: Any = self.context.store.concurrently_all(
                [partial(self.answer, r) for r in request.requests])
            return answers
        entry, request = self._entry(request)
        if isinstance(entry, Steps):
            return self.run(entry.plan(self.context, request))
        if entry.milvus:
            self.context.requests.add()
        return entry.call(self.context, request)


class AsyncDriver(_Driver):
    """Runs a plan with awaits; :class:`~.requests.Together` is an ``asyncio.gather``."""

    async def run(self, plan: Plan[T]) -> T:
        request, value = advance(plan, None)
        while request is not None:
            request, value = advance(plan, await self.answer(request))
        return cast(T, value)  # the plan returned it

    async def answer(self, request: Request[A]) -> A:
        if isinstance(request, Together):
            answers: Any = tuple(await asyncio.gather(*(self.answer(r)
                                                        for r in request.requests)))
            return answers
        entry, request = self._entry(request)
        if isinstance(entry, Steps):
            return await self.run(entry.plan(self.context, request))
        if entry.milvus:
            self.context.requests.add()
        return await entry.acall(self.context, request)
