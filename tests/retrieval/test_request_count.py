"""The Milvus requests of a query, counted by its driver (``MilvusRequests``) and reported
in every explanation: what the served graph's latency is made of."""

from __future__ import annotations

import asyncio

import pytest

from llama_index_graphrag_milvus import GraphRAGIndex
from llama_index_graphrag_milvus.retrieval.method import QueryContext
from llama_index_graphrag_milvus.retrieval.requests import (
    GetPassages,
    MilvusRequests,
    Plan,
    RankPassages,
    SearchPassages,
    Together,
)
from tests.conftest import FAMILY
from tests.support.fakes import HashEmbedding
from tests.support.markers import LITE_ONLY

pytestmark = [pytest.mark.milvus, LITE_ONLY]

QUESTION = "What did the son of Euler's teacher contribute?"


def counting_plan(query: QueryContext) -> Plan[list[int]]:
    """The count after each step of a plan whose Milvus requests are known."""
    counts = [(yield from MilvusRequests())]
    hits = yield from SearchPassages((query.vector,), 2)                      # one search
    counts.append((yield from MilvusRequests()))
    yield from Together((SearchPassages((query.vector,), 1),                  # two at once
                         GetPassages(tuple(node.node_id for node, _ in hits[0]))))
    counts.append((yield from MilvusRequests()))
    yield from RankPassages((query.vector,), 2)        # the passage table: in memory, none
    counts.append((yield from MilvusRequests()))
    return counts


def test_a_query_counts_the_milvus_requests_it_sends(milvus_uri: str,
                                                     embed_model: HashEmbedding) -> None:
    with GraphRAGIndex.from_triplets(FAMILY, uri=milvus_uri, embed_model=embed_model) as index:
        retriever = index.as_retriever(passage_search="memory")
        assert retriever.run(QUESTION, counting_plan) == [0, 1, 3, 3]
        # a fresh count per query, the same in the async driver
        assert asyncio.run(retriever.arun(QUESTION, counting_plan)) == [0, 1, 3, 3]
        searched = index.as_retriever(passage_search="milvus")
        assert searched.run(QUESTION, counting_plan) == [0, 1, 3, 4]


def test_every_explanation_reports_the_methods_milvus_requests(
        milvus_uri: str, embed_model: HashEmbedding) -> None:
    counts: dict[str, dict[str, int | None]] = {}
    GraphRAGIndex.from_triplets(FAMILY, uri=milvus_uri, embed_model=embed_model).close()
    for graph in ("memory", "milvus"):
        with GraphRAGIndex(uri=milvus_uri, embed_model=embed_model, graph=graph) as index:
            counts[graph] = {}
            for method in ("bridge", "ppr", "pcst", "passage", "relation"):
                retriever = index.as_retriever(method=method, similarity_top_k=2)
                explanation = retriever.explain(QUESTION)
                counts[graph][method] = explanation.milvus_requests
                assert explanation.to_dict()["milvus_requests"] == explanation.milvus_requests
                # a count, not part of what the explanation says: equal explanations stay equal
                again = retriever.explain(QUESTION)
                assert again == explanation and again.milvus_requests == \
                    explanation.milvus_requests
    # in memory only the chosen passages are read, by id; the served graph asks Milvus for
    # its seeds, relations and passages
    assert counts["memory"] == {"bridge": 1, "ppr": 1, "pcst": 1, "passage": 1,
                                "relation": 1}, counts
    assert all(counts["milvus"][m] > counts["memory"][m] for m in counts["memory"]), counts
