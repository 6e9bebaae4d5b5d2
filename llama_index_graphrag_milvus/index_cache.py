"""The in-memory copies an index reads from Milvus on first use, and their invalidation.

A copy (the graph, the entity table, the passage table, the passages' words, the
communities, the passages each filter keeps) is built by the
first query that needs it and dropped by every write of the index. Builds take seconds to
minutes on a large index, and writes must not wait for them, so a build and a write can
overlap: the write ends while the build still holds the rows it read before. Such a build
must not be kept, or it would hide the write until the next write or ``refresh()``. Each
copy has a generation, bumped by every drop; a build keeps its copy only when the generation
it started from is still current (the query that built it uses it all the same: it started
before the write finished). One build runs at a time (two queries on a cold index build the
graph once); a drop never waits for a build.

Milvus is the truth: a fresh process pointed at the same collections builds the same copies.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from llama_index_graphrag_milvus.communities.around import CommunityInfo
from llama_index_graphrag_milvus.communities.build import (
    CommunitySet,
    built_info,
    load_communities,
    warn_if_stale,
)
from llama_index_graphrag_milvus.graph import EntityRelationGraph
from llama_index_graphrag_milvus.graph.tables import EntityTable, PassageScope, PassageTable
from llama_index_graphrag_milvus.graph.word_table import Analyzer, WordTable, analyze
from llama_index_graphrag_milvus.milvus.fulltext import folded_words, is_standard
from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore

T = TypeVar("T")

logger = logging.getLogger(__name__)

GRAPH = "graph"
ENTITIES = "entities"
PASSAGES = "passages"
PASSAGE_COUNT = "passage_count"
WORDS = "words"
COMMUNITIES = "communities"
COMMUNITY_INFO = "community_info"
GRAPH_MODE = "graph_mode"
SCOPES = "scopes"
COPIES = (GRAPH, ENTITIES, PASSAGES, PASSAGE_COUNT, WORDS, COMMUNITIES, COMMUNITY_INFO,
          GRAPH_MODE, SCOPES)
"""The names of the copies an index keeps."""
MAX_SCOPES = 64
"""The filters whose passages an index remembers (the least recently used is forgotten):
one byte per passage each."""


GRAPH_BYTES_PER_RELATION = 120
"""The in-memory graph's bytes per relation besides its vector: the structure (about 52,
see ``EntityRelationGraph.memory``), the packed text (about 60 on MuSiQue) and the kinds."""


def graph_bytes(relations: int, dim: int) -> int:
    """The estimated size of the in-memory graph of ``relations`` relations of ``dim``
    floats: ``relations * (GRAPH_BYTES_PER_RELATION + 4 * dim)``.

    >>> graph_bytes(1_000_000, 1536) / 1e9
    6.264
    """
    return relations * (GRAPH_BYTES_PER_RELATION + 4 * dim)


def memory_analyzer(params: Mapping[str, Any] | None, is_lite: bool) -> Analyzer | None:
    """The function that splits texts into words as the index's full-text search does, for
    BM25 in memory: :func:`~.graph.word_table.analyze` for Milvus's standard analyzer; on
    Milvus Lite, whose analyzers run in Python, Lite's own for any other (``{"tokenizer":
    "jieba"}``: the same words, so the same scores); ``None`` for another analyzer on a
    server (its own code, not reproduced here: Milvus runs BM25) or one Lite cannot build.

    >>> memory_analyzer(None, is_lite=False)("Euler's teacher")
    ['euler', 's', 'teacher']
    >>> memory_analyzer({"tokenizer": "jieba"}, is_lite=False) is None
    True
    """
    if is_standard(params):
        return analyze
    if not is_lite or params is None:
        return None
    try:
        from milvus_lite.analyzer import create_analyzer

        return cast(Analyzer, create_analyzer(dict(params)).tokenize)
    except Exception as exc:  # a version without it, jieba missing...
        logger.info("BM25 stays in Milvus Lite: its analyzer %r is not available here (%s)",
                    dict(params), exc)
        return None


def folding(analyzer: Analyzer) -> Analyzer:
    """``analyzer`` applied to a query's text as a folding index's BM25 reads it
    (:func:`~.milvus.fulltext.folded_words`; the passages' stored texts are folded when
    written).

    >>> folding(analyze)("Aschenbrödel's")
    ['aschenbrodel', 's']
    """
    return lambda text: analyzer(folded_words(text))


class IndexCache:
    """The in-memory copies of one store's collections, built on first use, dropped on
    writes (see the module docstring).

    Args:
        store: the collections the copies are read from.
        hub_degree: the graph's hub threshold (see ``GraphRAGIndex``).
        show_progress: progress bars while a copy is read.

    Example::

        cache = IndexCache(store, hub_degree=DEFAULT_HUB_DEGREE)
        graph = cache.graph()      # read from the relation collection
        cache.drop()               # after a write: read again on the next use
    """

    def __init__(self, store: MilvusGraphStore, hub_degree: int,
                 show_progress: bool = False) -> None:
        self.store = store
        self.hub_degree = hub_degree
        self.show_progress = show_progress
        self._build = threading.Lock()
        self._state = threading.Lock()
        self._copies: dict[str, Any] = {}
        self._generations: dict[str, int] = dict.fromkeys(COPIES, 0)
        self.graph_written: str | None = None
        """The write token (``MilvusGraphStore.written_token``) the graph was read after."""
        self.queries_apart: bool | None = None
        """Whether the index's embedding model embeds a query otherwise than a passage
        (:func:`~llama_index_graphrag_milvus.embeddings.queries_apart`), learnt by the
        first query that embeds second queries; kept across writes."""

    # ------------------------------------------------------------------ the mechanics

    def peek(self, name: str) -> Any | None:
        """The copy ``name`` if it is built, else ``None``; never waits."""
        return self._copies.get(name)

    def get(self, name: str, build: Callable[[], T]) -> T:
        """The copy ``name``, built by ``build()`` when there is none (``None`` is not
        kept: the next call builds again). A drop of ``name`` while ``build()`` runs makes
        this call return what it built without keeping it."""
        with self._build:
            with self._state:
                found = self._copies.get(name)
                generation = self._generations[name]
            if found is not None:
                return found
            value = build()
            with self._state:
                if value is not None and self._generations[name] == generation:
                    self._copies[name] = value
            return value

    async def aget(self, name: str, get: Callable[[], T]) -> T:
        """The copy ``name`` at once when it is built, else ``get()`` in a worker thread
        (a build must not block the event loop)."""
        found = self.peek(name)
        return found if found is not None else await asyncio.to_thread(get)

    def drop(self, *names: str) -> None:
        """Forget the copies ``names`` (all when none is named); builds in progress of
        those copies are not kept."""
        with self._state:
            for name in names or COPIES:
                self._generations[name] += 1
                self._copies.pop(name, None)

    # ------------------------------------------------------------------ the copies

    def graph(self) -> EntityRelationGraph:
        """The entity-relation graph of the relation collection."""
        def read() -> EntityRelationGraph:
            written = self.store.written_token()  # before the rows: a write during is seen
            graph = EntityRelationGraph.from_columns(
                self.store.read_relations(show_progress=self.show_progress),
                dim=self.store.dim or 0, hub_degree=self.hub_degree)
            self.graph_written = written
            return graph

        return self.get(GRAPH, read)

    async def aget_graph(self) -> EntityRelationGraph:
        """:meth:`graph` without blocking the event loop when it has to be built."""
        return await self.aget(GRAPH, self.graph)

    def entity_table(self) -> EntityTable:
        """Every entity's id, name and vector."""
        return self.get(ENTITIES, lambda: EntityTable.from_columns(
            self.store.read_entities(show_progress=self.show_progress),
            dim=self.store.dim or 0))

    async def aget_entity_table(self) -> EntityTable:
        """:meth:`entity_table` without blocking the event loop when it has to be read."""
        return await self.aget(ENTITIES, self.entity_table)

    def passage_table(self, max_floats: int | None = None) -> PassageTable | None:
        """Every passage's id and vector; ``None`` when ``passages * dim`` is above
        ``max_floats``: the budget is the caller's (each retriever has its own), the
        passage count is the index's (one count query, remembered until the next drop)."""
        if self._too_large(max_floats, self.passage_count):
            return None
        dim = self.store.dim or 0
        return self.get(PASSAGES, lambda: PassageTable.from_columns(
            self.store.read_passage_vectors(show_progress=self.show_progress), dim))

    async def apassage_table(self, max_floats: int | None = None) -> PassageTable | None:
        """:meth:`passage_table` without blocking the event loop when it has to be read."""
        table: PassageTable | None = self.peek(PASSAGES)
        known: int | None = self.peek(PASSAGE_COUNT)
        if table is not None or known is not None:  # no thread hop per query
            count = len(table) if table is not None else known
            if self._too_large(max_floats, lambda: count or 0):
                return None
            if table is not None:
                return table
        return await asyncio.to_thread(self.passage_table, max_floats)

    def word_table(self, max_floats: int | None = None) -> WordTable | None:
        """The passages' BM25 term weights (:class:`WordTable`), under the same budget as
        :meth:`passage_table` on a server (``None`` above it: the server's BM25 is native);
        on Milvus Lite whatever the budget, since Lite's own BM25 is the same computation
        in Python at every query (125 ms a text on 20,000 passages, where the table's
        takes under a millisecond). ``None`` when the passages have no full-text search,
        or when their words cannot be split here as Milvus splits them (see
        :func:`memory_analyzer`: Milvus runs BM25 then)."""
        store = self.store
        if not store.full_text or (not store.is_lite
                                   and self._too_large(max_floats, self.passage_count)):
            return None

        def build() -> WordTable | None:
            analyzer = memory_analyzer(store.full_text_analyzer, store.is_lite)
            return None if analyzer is None else WordTable.from_texts(
                store.read_passage_words(show_progress=self.show_progress),
                *store.full_text_bm25(), analyzer=analyzer,  # the stored texts: folded
                query_analyzer=folding(analyzer) if store.folds_words else None)
        return self.get(WORDS, build)

    async def aword_table(self, max_floats: int | None = None) -> WordTable | None:
        """:meth:`word_table` without blocking the event loop when it has to be read."""
        table: WordTable | None = self.peek(WORDS)
        if table is not None:  # no thread hop per query
            return None if self._too_large(max_floats, lambda: len(table)) else table
        return await asyncio.to_thread(self.word_table, max_floats)

    def passage_scope(self, where: str, max_floats: int | None = None
                      ) -> PassageScope | None:
        """The passages ``where`` keeps, over the passage table: one query of ids,
        remembered for the :data:`MAX_SCOPES` filters used last while no write of the graph
        happens in this process (the write gate's generation, shared by every index object
        of the graph). ``None`` when the table is not held under ``max_floats``, or a write
        runs or ran meanwhile (the query then asks Milvus, live)."""
        table = self.passage_table(max_floats)
        if table is None:
            return None
        found = self.known_scope(where)
        if found is not None and found.table is table:
            return found
        gate = self.store.gate
        generation = gate.generation
        if gate.busy():
            return None
        mask = table.mask(self.store.passage_ids_where(where))
        if gate.generation != generation or gate.busy():
            return None  # a write moved rows while they were read
        scope = PassageScope(table, mask, generation)
        scopes: dict[str, PassageScope] = self.get(SCOPES, dict)
        with self._state:
            scopes[where] = scope
            while len(scopes) > MAX_SCOPES:
                scopes.pop(next(iter(scopes)))
        return scope

    async def apassage_scope(self, where: str, max_floats: int | None = None
                             ) -> PassageScope | None:
        """:meth:`passage_scope` without blocking the event loop when it has to be read."""
        found = self.known_scope(where)
        if found is not None and not self._too_large(max_floats, lambda: len(found.table)):
            return found  # no thread hop per query
        return await asyncio.to_thread(self.passage_scope, where, max_floats)

    def known_scope(self, where: str) -> PassageScope | None:
        """The passages ``where`` keeps when a query already read them (over the current
        passage table, and no write of the graph since or now), else ``None``; never
        reads. A filter found is the most recently used."""
        table: PassageTable | None = self.peek(PASSAGES)
        scopes: dict[str, PassageScope] | None = self.peek(SCOPES)
        if table is None or scopes is None:
            return None
        gate = self.store.gate
        with self._state:
            found = scopes.pop(where, None)
            if found is None or found.table is not table or \
                    found.generation != gate.generation or gate.busy():
                return None  # (a stale one is dropped)
            scopes[where] = found  # the most recently used last
        return found

    def passage_count(self) -> int:
        """The passages the table holds or would hold (a count query, remembered)."""
        table: PassageTable | None = self.peek(PASSAGES)
        if table is not None:
            return len(table)
        return self.get(PASSAGE_COUNT, lambda: self.store.count(self.store.passage_collection))

    def _too_large(self, max_floats: int | None, count: Callable[[], int]) -> bool:
        return max_floats is not None and count() * (self.store.dim or 0) > max_floats

    def graph_mode(self, setting: str, budget: int) -> str:
        """Where the graph is read from: ``setting`` when it is ``"memory"`` or
        ``"milvus"``; for ``"auto"``, memory while the graph's estimated size
        (:func:`graph_bytes` of the relation count: the loaded graph's, else one count
        query; remembered until the next drop) fits ``budget`` bytes, else Milvus. Logs the
        choice."""
        if setting != "auto":
            return setting

        def decide() -> str:
            graph: EntityRelationGraph | None = self.peek(GRAPH)
            relations = (graph.num_relations if graph is not None
                         else self.store.count(self.store.relation_collection))
            estimate = graph_bytes(relations, self.store.dim or 0)
            mode = "memory" if estimate <= budget else "milvus"
            logger.info("graph='auto': %s relations, about %.1f MB in memory against a budget "
                        "of %.1f MB: the graph is %s", relations, estimate / 1e6, budget / 1e6,
                        "held in memory" if mode == "memory" else "served by Milvus")
            return mode

        return self.get(GRAPH_MODE, decide)

    async def agraph_mode(self, setting: str, budget: int) -> str:
        """:meth:`graph_mode` without blocking the event loop for its count query."""
        if setting != "auto" or self.peek(GRAPH_MODE) is not None:
            return self.graph_mode(setting, budget)
        return await asyncio.to_thread(self.graph_mode, setting, budget)

    def communities(self) -> CommunitySet:
        """The communities and reports; warns when they were built on another number of
        relations than the collection holds now."""
        return self.get(COMMUNITIES, self._load_communities)

    async def aget_communities(self) -> CommunitySet:
        """:meth:`communities` without blocking the event loop when they are read."""
        return await self.aget(COMMUNITIES, self.communities)

    def community_info(self) -> CommunityInfo:
        """The communities' levels and whether descriptions are stored, without reading
        the communities (what local search on a served index needs first); raises
        :class:`~llama_index_graphrag_milvus.errors.CommunitiesNotBuiltError` when they
        were never built."""
        def read() -> CommunityInfo:
            recorded = built_info(self.store)
            warn_if_stale(self.store, recorded)
            return CommunityInfo(int(recorded.get("levels", 0)),
                                 self.store.descriptions.open(),
                                 int(recorded.get("communities", 0)))

        return self.get(COMMUNITY_INFO, read)

    async def aget_community_info(self) -> CommunityInfo:
        """:meth:`community_info` without blocking the event loop when it is read."""
        return await self.aget(COMMUNITY_INFO, self.community_info)

    def _load_communities(self) -> CommunitySet:
        communities = load_communities(self.store)
        warn_if_stale(self.store, communities.info)
        return communities

    def is_stale(self) -> bool:
        """Whether the relation, entity or passage collection holds another number of rows
        than its copy was built from (a count query per built copy; ``False`` when the
        graph is not built)."""
        self.store.check_open()  # a closed index raises, also before anything is loaded
        graph = self.peek(GRAPH)
        entities, passages = self.peek(ENTITIES), self.peek(PASSAGES)
        if graph is None:
            return False
        store = self.store
        if store.count(store.relation_collection) != graph.num_relations:
            return True
        if passages is not None and store.count(store.passage_collection) != len(passages):
            return True
        return entities is not None and store.count(store.entity_collection) != len(entities)
