"""A retrieval method written outside the package, and the drivers' request table."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest
from llama_index.core.schema import NodeWithScore

from llama_index_graphrag_milvus import GraphRAGIndex, InvalidInputError
from llama_index_graphrag_milvus.graph import ExpansionConfig
from llama_index_graphrag_milvus.metadata import FOUND_BY_KEY, RELATIONS_KEY
from llama_index_graphrag_milvus.retrieval import (
    Plan,
    QueryContext,
    Result,
    RetrievalMethod,
    SeedConfig,
    expand_pool,
    find_seeds,
    first,
    read_relation_texts,
    relations_of,
    search_passages,
    with_own_relations,
)
from llama_index_graphrag_milvus.retrieval.drivers import (
    HANDLERS,
    AsyncDriver,
    DriverContext,
    SyncDriver,
    handler,
)
from llama_index_graphrag_milvus.retrieval.requests import Known, Request, Together
from tests.support.markers import LITE_ONLY

QUESTION = "What did the son of Euler's teacher contribute?"


class NearestPassages(RetrievalMethod):
    """The method of the ``retrieval.method`` docstring: the passages most similar to the
    question, each with its own relations."""

    name: ClassVar[str] = "nearest"

    def __init__(self) -> None:
        self.plans = 0

    def plan(self, query: QueryContext, seeds: SeedConfig) -> Plan[list[NodeWithScore]]:
        self.plans += 1
        hits = first((yield from search_passages(query, (query.vector,),
                                                 query.similarity_top_k)))
        return (yield from with_own_relations(query, [
            Result(node, score, metadata={FOUND_BY_KEY: {"query": self.name}})
            for node, score in hits]))

    def describe(self) -> dict[str, Any]:
        return {"passage_scoring": self.name, "plans": self.plans}


@LITE_ONLY
async def test_a_method_of_your_own_runs_sync_and_async(family_index: GraphRAGIndex) -> None:
    method = NearestPassages()
    retriever = family_index.as_retriever(method=method, similarity_top_k=2)
    assert retriever.method is method
    hits = retriever.retrieve(QUESTION)
    again = await retriever.aretrieve(QUESTION)
    assert method.plans == 2
    assert [h.node.node_id for h in hits] == [h.node.node_id for h in again]
    assert len(hits) == 2
    naive = family_index.as_naive_retriever(similarity_top_k=2).retrieve(QUESTION)
    assert [h.node.node_id for h in hits] == [h.node.node_id for h in naive]
    assert all(h.node.metadata[FOUND_BY_KEY] == {"query": "nearest"} for h in hits)
    assert all(h.node.metadata[RELATIONS_KEY] for h in hits)  # the reranker can use them
    described = retriever.describe()
    assert described["passage_scoring"] == "nearest" and described["plans"] == 2
    with pytest.raises(InvalidInputError,
                       match=r"method must be a RetrievalMethod or one of bridge, .*got ABCMeta"):
        family_index.as_retriever(method=NearestPassages)  # the class, not one


class NotAPlan(RetrievalMethod):
    """A method whose ``plan`` returns its answer directly, or yields and returns a wrong
    type: common first mistakes."""

    name: ClassVar[str] = "wrong"

    def __init__(self, generator: bool) -> None:
        self.generator = generator

    def plan(self, query: QueryContext, seeds: SeedConfig) -> Any:
        if not self.generator:
            return ["a passage"]

        def steps() -> Plan[Any]:
            hits = first((yield from search_passages(query, (query.vector,), 2)))
            return [node for node, _ in hits]  # nodes, not NodeWithScore

        return steps()

    def describe(self) -> dict[str, Any]:
        return {"passage_scoring": self.name}


@LITE_ONLY
@pytest.mark.parametrize(("generator", "match"), [
    (False, r"NotAPlan.plan must be a generator of requests .*got a list"),
    (True, r"NotAPlan.plan must return a list of NodeWithScore, got list of TextNode"),
])
async def test_a_method_of_your_own_that_breaks_the_contract_is_told_how(
        family_index: GraphRAGIndex, generator: bool, match: str) -> None:
    retriever = family_index.as_retriever(method=NotAPlan(generator))
    with pytest.raises(InvalidInputError, match=match):
        retriever.retrieve(QUESTION)
    with pytest.raises(InvalidInputError, match=match):
        await retriever.aretrieve(QUESTION)
    with pytest.raises(InvalidInputError, match=match):
        retriever.explain(QUESTION)


class SeedNeighbours(RetrievalMethod):
    """A method of one's own on the graph building blocks: the seeds, their k-hop pool and
    the relations of the seed entities, then the passages those relations come from,
    ranked by their own similarity, each with the relations that reached it."""

    name: ClassVar[str] = "seed-neighbours"

    def plan(self, query: QueryContext, seeds: SeedConfig) -> Plan[list[NodeWithScore]]:
        found, _ = yield from find_seeds(query, seeds)
        pool = yield from expand_pool(query, found, ExpansionConfig(hops=1))
        around = yield from relations_of(query, [h.id for h in found.entities], 5)
        texts = yield from read_relation_texts([c.id for c in pool], found)
        reached: dict[str, list[str]] = {}
        for relation_id, passages in [*((c.id, c.passage_ids) for c in pool),
                                      *((h.id, h.passage_ids) for h in around)]:
            for passage in passages:
                reached.setdefault(passage, []).append(texts.get(relation_id, relation_id))
        hits = first((yield from search_passages(query, (query.vector,),
                                                 query.similarity_top_k, tuple(reached))))
        return (yield from with_own_relations(query, [
            Result(node, score, metadata={FOUND_BY_KEY: {"via": reached[node.node_id]}})
            for node, score in hits]))

    def describe(self) -> dict[str, Any]:
        return {"passage_scoring": self.name}


@LITE_ONLY
async def test_a_method_on_the_graph_building_blocks_runs_unchanged_in_both_modes(
        family_index: GraphRAGIndex) -> None:
    served = GraphRAGIndex(uri=family_index.store.uri, embed_model=family_index.embed_model,
                           collection_prefix=family_index.store.prefix, graph="milvus")
    try:
        answers = []
        for index in (family_index, served):
            retriever = index.as_retriever(method=SeedNeighbours(), similarity_top_k=3)
            for nodes in (retriever.retrieve(QUESTION), await retriever.aretrieve(QUESTION)):
                answers.append([(n.node.node_id, round(n.score or 0, 6),
                                 sorted(n.node.metadata[FOUND_BY_KEY]["via"]),
                                 [r["text"] for r in n.node.metadata[RELATIONS_KEY]])
                                for n in nodes])
        assert answers[0] and all(answer == answers[0] for answer in answers)
        assert family_index.graph_mode == "memory" and served.graph_mode == "milvus"
        assert all(served.cache.peek(name) is None for name in ("graph", "entities",
                                                                "passages"))
    finally:
        served.close()


# ---------------------------------------------------------------------- the request table

@dataclass(frozen=True)
class Shout(Request[str]):
    """A request type the package does not know."""

    text: str


def shout(context: DriverContext, request: Shout) -> str:
    return request.text.upper()


async def ashout(context: DriverContext, request: Shout) -> str:
    return request.text.upper() + "!"


def plan_with_shouts() -> Plan[tuple[str, Any]]:
    loud = yield from Shout("graph")
    both = yield from Together((Known(1), Shout("rag")))
    return loud, both


class SequentialStore:
    """Stands in for the store: a ``Together`` runs its calls one after the other."""

    @staticmethod
    def concurrently_all(calls: list[Any]) -> tuple[Any, ...]:
        return tuple(call() for call in calls)


def context() -> DriverContext:
    """No Milvus, no models: these plans ask for nothing that needs them."""
    index: Any = SimpleNamespace(store=SequentialStore(), cache=None, embed_model=None)
    return DriverContext.of(index)


def test_a_request_without_a_handler_says_where_to_add_one() -> None:
    with pytest.raises(TypeError, match="no handler for the retrieval request Shout"):
        SyncDriver(context()).run(plan_with_shouts())


def test_one_more_request_type_is_one_more_table_entry() -> None:
    table = {**HANDLERS, **dict([handler(Shout, shout, ashout)])}
    assert SyncDriver(context(), table).run(plan_with_shouts()) == ("GRAPH", (1, "RAG"))
    assert asyncio.run(AsyncDriver(context(), table).run(plan_with_shouts())) == (
        "GRAPH!", (1, "RAG!"))
