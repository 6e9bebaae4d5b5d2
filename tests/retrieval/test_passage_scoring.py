"""Pool diversity (max_relations_per_passage) and passage scoring of the graph retriever."""

from __future__ import annotations

import numpy as np
import pytest

from llama_index_graphrag_milvus import InvalidInputError
from llama_index_graphrag_milvus.graph import EntityRelationGraph, ExpansionConfig
from llama_index_graphrag_milvus.milvus.filters import in_list
from tests.support.markers import LITE_ONLY


def _graph() -> EntityRelationGraph:
    # p1 has three relations close to the query, p2 and p3 one each, a bit further away.
    rows = [
        {"id": "r1", "subject_id": "a", "object_id": "b", "passage_ids": ["p1"],
         "embedding": [1.0, 0.0]},
        {"id": "r2", "subject_id": "a", "object_id": "c", "passage_ids": ["p1"],
         "embedding": [0.99, 0.1]},
        {"id": "r3", "subject_id": "a", "object_id": "d", "passage_ids": ["p1"],
         "embedding": [0.98, 0.2]},
        {"id": "r4", "subject_id": "a", "object_id": "e", "passage_ids": ["p2"],
         "embedding": [0.9, 0.4]},
        {"id": "r5", "subject_id": "a", "object_id": "f", "passage_ids": ["p3"],
         "embedding": [0.8, 0.6]},
    ]
    return EntityRelationGraph.from_rows([rows], dim=2)


def test_cap_per_passage_diversifies_the_pool() -> None:
    graph = _graph()
    plain = graph.expand(np.array([1.0, 0.0]), ["a"], [],
                         ExpansionConfig(hops=0, max_candidate_relations=3))
    assert [c.id for c in plain] == ["r1", "r2", "r3"]
    capped = graph.expand(np.array([1.0, 0.0]), ["a"], [],
                          ExpansionConfig(hops=0, max_candidate_relations=3,
                                          max_relations_per_passage=1))
    assert [c.id for c in capped] == ["r1", "r4", "r5"]
    assert {p for c in capped for p in c.passage_ids} == {"p1", "p2", "p3"}
    with pytest.raises(ValueError,
                       match="max_relations_per_passage must be None or an integer >= 1"):
        ExpansionConfig(max_relations_per_passage=0)


def test_id_filter_escapes_quotes() -> None:
    assert in_list("id", ['a"b', "c\\d"]) == 'id in ["a\\"b", "c\\\\d"]'


@LITE_ONLY  # ranking logic; the server variants of the filter tests cover its searches
def test_passage_scoring_orders_the_pool_by_passage_similarity(family_index) -> None:
    query = "Who is the son of Euler's teacher?"
    by_relation = family_index.as_retriever(similarity_top_k=10).retrieve(query)
    by_passage = family_index.as_retriever(similarity_top_k=10,
                                           passage_scoring="passage").retrieve(query)
    assert {n.node.node_id for n in by_passage} == {n.node.node_id for n in by_relation}
    scores = [n.score for n in by_passage]
    assert scores == sorted(scores, reverse=True)
    assert all(n.node.metadata["graphrag_relations"] for n in by_passage)
    top2 = family_index.as_retriever(similarity_top_k=2, passage_scoring="passage")
    assert [n.node.node_id for n in top2.retrieve(query)] == [
        n.node.node_id for n in by_passage[:2]]
    with pytest.raises(InvalidInputError, match="passage_scoring must be"):
        family_index.as_retriever(passage_scoring="bm25")


async def test_passage_scoring_sync_and_async_agree(family_index) -> None:
    retriever = family_index.as_retriever(passage_scoring="passage",
                                          max_relations_per_passage=1)
    query = "What did Daniel Bernoulli contribute to?"
    sync = [(n.node.node_id, n.score) for n in retriever.retrieve(query)]
    both = [(n.node.node_id, n.score) for n in await retriever.aretrieve(query)]
    assert sync == both
