"""What a retrieval method is: what it is given for one query, and what it must do.

A method (k-hop, PageRank, second hop, Steiner tree, or one of yours) decides only how it
selects relations and how it ranks passages. The query, its vector, the filters and the seed
settings come from :class:`~llama_index_graphrag_milvus.retrieval.retriever.
GraphRAGRetriever`; the steps every method shares are in :mod:`.seeds` (entity and relation
seeds), :mod:`.neighbourhood` (the graph steps: the k-hop pool, the relations of entities, the
own relations of passages), :mod:`.passages` (passage searches, relation texts, results) and
:mod:`.steps` (pure). Its I/O are the requests of :mod:`.requests`, answered by :mod:`.drivers`.

A method of your own, given to the retriever as ``passage_scoring``: the passages most
similar to the question, each with the relations of its own triplets::

    from llama_index_graphrag_milvus.retrieval import (
        Plan, QueryContext, Result, RetrievalMethod, SeedConfig, first, search_passages,
        with_own_relations)

    class NearestPassages(RetrievalMethod):
        name = "nearest"

        def plan(self, query: QueryContext, seeds: SeedConfig) -> Plan[list[NodeWithScore]]:
            hits = first((yield from search_passages(query, (query.vector,),
                                                     query.similarity_top_k)))
            return (yield from with_own_relations(query, [Result(node, score)
                                                          for node, score in hits]))

        def describe(self) -> dict[str, Any]:
            return {"passage_scoring": self.name}

    retriever = index.as_retriever(passage_scoring=NearestPassages())

The graph steps (:mod:`.neighbourhood`: the k-hop pool, the relations of entities, the own
relations of passages) read the graph held in memory or served by Milvus
(``QueryContext.graph_served``): a method written with them works in both.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from llama_index.core.schema import NodeWithScore

from llama_index_graphrag_milvus.records import MILVUS_MAX_TOP_K
from llama_index_graphrag_milvus.retrieval.requests import Plan
from llama_index_graphrag_milvus.validation import (
    check_choice,
    check_int,
    check_optional_number,
)

if TYPE_CHECKING:
    from llama_index_graphrag_milvus.explain.trace import Trace

SEED_SEARCHES = ("auto", "memory", "milvus")
"""Where the entity and relation seeds and the passages are searched (``entity_search``,
``relation_search``, ``passage_search``)."""

MEMORY_SEARCH_MAX_FLOATS = 20_000_000
"""``"auto"`` searches in memory while ``rows * dim`` (relations for the relation search,
entities for the entity search, passages for the passage searches) is at most this: about
52,000 rows of 384 dimensions, 5 to 10 ms per query on one core; Milvus above it. The
default of ``memory_search_max_floats`` (a retriever argument)."""

_MILVUS_LIMIT = f"the largest search limit Milvus accepts is {MILVUS_MAX_TOP_K}"


@dataclass(frozen=True)
class QueryContext:
    """One query as every method sees it."""

    text: str
    vector: list[float]
    similarity_top_k: int
    where: str = ""
    passage_search: str = "auto"
    """Where passage searches are ranked (``"auto"``, ``"memory"``, ``"milvus"``; see
    :func:`~.passages.search_passages`)."""
    milvus_lite: bool = False
    """The index is on Milvus Lite, whose searches scan every row: ``relation_search="auto"``
    then ranks the relations in memory whatever their number (see
    :func:`~.seeds.plan_relation_search`)."""
    memory_search_max_floats: int = MEMORY_SEARCH_MAX_FLOATS
    """The ``"auto"`` budget of in-memory searches (see :data:`MEMORY_SEARCH_MAX_FLOATS`)."""
    graph_served: bool = False
    """The graph is served by Milvus (``GraphRAGIndex(graph="milvus")``): no step reads the
    in-memory graph or a table of a whole collection; every search runs in Milvus and the
    graph steps ask :mod:`~llama_index_graphrag_milvus.milvus.served`'s bounded queries."""
    trace: Trace | None = field(default=None, compare=False, repr=False)
    """Collects the path under :meth:`~.retriever.GraphRAGRetriever.explain`; ``None`` (nothing
    collected) for ``retrieve``. Methods report to it with ``if query.trace: ...`` lines."""

    def in_memory(self, setting: str, rows: int, dim: int) -> bool:
        """Whether a search with this ``setting`` (``"auto"``, ``"memory"``, ``"milvus"``)
        runs in memory for ``rows`` vectors of ``dim`` floats.

        >>> query = QueryContext("q", [1.0], 5, memory_search_max_floats=100)
        >>> query.in_memory("auto", 10, 10), query.in_memory("auto", 11, 10)
        (True, False)
        >>> QueryContext("q", [1.0], 5, graph_served=True).in_memory("memory", 1, 1)
        False
        """
        return not self.graph_served and (
            setting == "memory" or (setting == "auto"
                                    and rows * dim <= self.memory_search_max_floats))


@dataclass(frozen=True)
class SeedConfig:
    """The seed searches: entities (per NER name, or the query) and relations (the query).

    ``relation_search`` and ``entity_search``: ``"memory"`` ranks the relations (entities)
    by the vectors held in memory (exact, no Milvus call: the graph holds the relation
    vectors and texts, the index's entity table the entity vectors and names), ``"milvus"``
    searches the collection, ``"auto"`` (default) takes memory up to the query's
    ``memory_search_max_floats``.
    """

    entity_top_k: int = 3
    relation_top_k: int = 3
    entity_threshold: float | None = None
    relation_threshold: float | None = None
    relation_search: str = "auto"
    entity_search: str = "auto"

    def __post_init__(self) -> None:
        check_int("entity_top_k", self.entity_top_k, maximum=MILVUS_MAX_TOP_K,
                  hint=_MILVUS_LIMIT)
        check_int("relation_top_k", self.relation_top_k, maximum=MILVUS_MAX_TOP_K,
                  hint=_MILVUS_LIMIT)
        check_optional_number("entity_similarity_threshold", self.entity_threshold,
                              hint="a cosine similarity, usually between -1 and 1")
        check_optional_number("relation_similarity_threshold", self.relation_threshold,
                              hint="a cosine similarity, usually between -1 and 1")
        check_choice("relation_search", self.relation_search, SEED_SEARCHES)
        check_choice("entity_search", self.entity_search, SEED_SEARCHES)


class RetrievalMethod(ABC):
    """How one retrieval method selects relations and ranks passages (see the module
    docstring for a method of your own).

    ``plan`` is a generator of requests (:mod:`.requests`): the same code runs in
    ``retrieve`` and ``aretrieve``. Return each passage as a ``NodeWithScore`` with
    ``metadata["graphrag_relations"]`` (:func:`~.passages.with_own_relations` and
    :func:`~.steps.as_result` write it), so that the reranker can use it.
    """

    name: ClassVar[str]
    """A short name, for logs and reports (``"bridge"``, ``"ppr"``...)."""

    @abstractmethod
    def plan(self, query: QueryContext, seeds: SeedConfig) -> Plan[list[NodeWithScore]]:
        """The method's steps for one query (see :mod:`.requests`)."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """The method's own settings, for logs and benchmark reports."""
