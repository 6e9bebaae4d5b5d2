"""A retrieval method written outside the package, and the drivers' request table."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest
from llama_index.core.schema import NodeWithScore

from llama_index_graphrag_milvus import GraphRAGIndex, InvalidInputError
from llama_index_graphrag_milvus.records import FOUND_BY_KEY, RELATIONS_KEY
from llama_index_graphrag_milvus.retrieval import (
    AsyncDriver,
    DriverContext,
    Plan,
    QueryContext,
    Request,
    Result,
    RetrievalMethod,
    SeedConfig,
    SyncDriver,
    first,
    search_passages,
    with_own_relations,
)
from llama_index_graphrag_milvus.retrieval.drivers import HANDLERS, handler
from llama_index_graphrag_milvus.retrieval.requests import Known, Together
from llama_index_graphrag_milvus.retrieval.steps import DEFAULT_NER_PROMPT

LITE_ONLY = pytest.mark.parametrize("milvus_uri", ["lite"], indirect=True)
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
    retriever = family_index.as_retriever(passage_scoring=method, similarity_top_k=2)
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
                       match=r"passage_scoring must be one of bridge, .* or a RetrievalMethod"):
        family_index.as_retriever(passage_scoring=NearestPassages)  # the class, not one


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
    index: Any = SimpleNamespace(store=SequentialStore())
    return DriverContext(index=index, llm=None, ner_prompt=DEFAULT_NER_PROMPT)


def test_a_request_without_a_handler_says_where_to_add_one() -> None:
    with pytest.raises(TypeError, match="no handler for the retrieval request Shout"):
        SyncDriver(context()).run(plan_with_shouts())


def test_one_more_request_type_is_one_more_table_entry() -> None:
    table = {**HANDLERS, **dict([handler(Shout, shout, ashout)])}
    assert SyncDriver(context(), table).run(plan_with_shouts()) == ("GRAPH", (1, "RAG"))
    assert asyncio.run(AsyncDriver(context(), table).run(plan_with_shouts())) == (
        "GRAPH!", (1, "RAG!"))
