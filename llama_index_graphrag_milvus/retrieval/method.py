"""What a retrieval method is: what it is given for one query, and what it must do.

A method (k-hop, PageRank, second hop, Steiner tree, or one of yours) decides only how it
selects relations and how it ranks passages; it is an object that owns and checks its own
settings. The query, its vector, the filters and the seed settings come from
:class:`~llama_index_graphrag_milvus.retrieval.retriever.GraphRAGRetriever`; the steps every
method shares are in :mod:`.seeds` (entity and relation seeds), :mod:`.neighbourhood` (the
graph steps: the k-hop pool, the relations of entities, where bridges lead),
:mod:`.passages` (passage rankings, relation texts, results) and :mod:`.steps` (pure). Its
I/O are the requests of :mod:`.requests`, answered by :mod:`.drivers`.

A method of your own, given to the retriever as ``method``: the passages most similar to the
question, each with the relations of its own triplets::

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

    retriever = index.as_retriever(method=NearestPassages())

The graph steps are graph requests that the query's graph source answers, from the graph
held in memory or served by Milvus (:mod:`.sources`): a method written with them works in
both, unchanged.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from llama_index.core.schema import NodeWithScore

from llama_index_graphrag_milvus.errors import InvalidInputError
from llama_index_graphrag_milvus.limits import MILVUS_MAX_TOP_K
from llama_index_graphrag_milvus.retrieval.requests import Plan
from llama_index_graphrag_milvus.validation import check_bool, check_int, check_optional_number

if TYPE_CHECKING:
    from llama_index_graphrag_milvus.explain.trace import Trace

_MILVUS_LIMIT = f"the largest search limit Milvus accepts is {MILVUS_MAX_TOP_K}"

OWN_RELATIONS_PER_PASSAGE = 5
"""A result carries its passage's best own relations (its stored triplets, by similarity to
the query), at most this many by default (:attr:`QueryContext.own_relations`)."""
MAX_OWN_RELATIONS = 1024
"""The most own relations a result may ask for (a passage rarely has more triplets)."""


def check_own_relations(value: Any) -> int:
    """``value`` as the own relations each result carries (an integer from 0 to
    :data:`MAX_OWN_RELATIONS`), else :class:`~llama_index_graphrag_milvus.errors.
    InvalidInputError`."""
    return check_int("own_relations", value, minimum=0, maximum=MAX_OWN_RELATIONS)


@dataclass(frozen=True)
class QueryContext:
    """One query as every method sees it: the question, its vector, the passages to return
    and the filters (a Milvus expression, ``""`` for none)."""

    text: str
    vector: list[float]
    similarity_top_k: int
    where: str = ""
    trace: Trace | None = field(default=None, compare=False, repr=False)
    """Collects the path under :meth:`~.retriever.GraphRAGRetriever.explain`; ``None`` (nothing
    collected) for ``retrieve``. Methods report to it with ``if query.trace: ...`` lines."""
    own_relations: int = OWN_RELATIONS_PER_PASSAGE
    """The own relations each result carries at most (:func:`~.passages.with_own_relations`);
    0: none, and no read of them."""

    def __post_init__(self) -> None:
        check_own_relations(self.own_relations)


@dataclass(frozen=True)
class SeedConfig:
    """The seed searches: entities (per NER name, or the query) and relations (the query);
    where they run is the retriever's :class:`~.settings.SearchSettings`."""

    entity_top_k: int = 3
    relation_top_k: int = 3
    entity_threshold: float | None = None
    relation_threshold: float | None = None
    entity_names: bool = True
    """Whether the entities whose whole name the query holds as words join the entity
    seeds (without NER names; see :func:`~.seeds.find_seeds`)."""

    def __post_init__(self) -> None:
        check_bool("match_entity_names", self.entity_names)
        check_int("entity_top_k", self.entity_top_k, maximum=MILVUS_MAX_TOP_K,
                  hint=_MILVUS_LIMIT)
        check_int("relation_top_k", self.relation_top_k, maximum=MILVUS_MAX_TOP_K,
                  hint=_MILVUS_LIMIT)
        check_optional_number("entity_similarity_threshold", self.entity_threshold,
                              hint="a cosine similarity, usually between -1 and 1")
        check_optional_number("relation_similarity_threshold", self.relation_threshold,
                              hint="a cosine similarity, usually between -1 and 1")


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
    unscoped: ClassVar[str] = ""
    """Why the method cannot run under ``filters`` (it reads data that spans tenants), with
    what to do instead; empty when it can (every built-in method but local search)."""

    @abstractmethod
    def plan(self, query: QueryContext, seeds: SeedConfig) -> Plan[list[NodeWithScore]]:
        """The method's steps for one query (see :mod:`.requests`)."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """The method's own settings, for logs and benchmark reports."""


def method_plan(method: RetrievalMethod, query: QueryContext, seeds: SeedConfig
                ) -> Plan[list[NodeWithScore]]:
    """``method.plan(query, seeds)``, checked: the retriever drives a generator, and a
    custom method's ``plan`` that returns its nodes (or anything else) directly failed
    with ``'list' object has no attribute 'send'``; then the nodes it returns are
    checked too.

    Raises:
        InvalidInputError: ``plan`` is not a generator, or returns something other than a
            list of ``NodeWithScore``.
    """
    plan = method.plan(query, seeds)
    name = type(method).__name__
    if not inspect.isgenerator(plan):
        raise InvalidInputError(
            f"{name}.plan must be a generator of requests (its steps with 'yield from', "
            f"then 'return' the nodes), got a {type(plan).__name__}: see the custom method "
            "page of the docs.")
    nodes = yield from plan
    if not isinstance(nodes, list | tuple) or not all(
            isinstance(n, NodeWithScore) for n in nodes):
        raise InvalidInputError(
            f"{name}.plan must return a list of NodeWithScore, got "
            f"{type(nodes).__name__}" + (f" of {type(nodes[0]).__name__}" if isinstance(
                nodes, list | tuple) and nodes else "") + ".")
    return list(nodes)
