"""``own_relations``: how many of each result's own relations (its passage's stored triplets)
join the relations that reached it; 0 skips their read (one Milvus request fewer on a served
graph) and changes nothing else: the same passages in the same order, each keeping the
relations that reached it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from llama_index.core.schema import NodeWithScore

from llama_index_graphrag_milvus import GraphRAGIndex, InvalidInputError
from llama_index_graphrag_milvus.metadata import RELATIONS_KEY
from llama_index_graphrag_milvus.retrieval import QueryContext
from llama_index_graphrag_milvus.retrieval.passages import (
    Result,
    search_passages,
    with_own_relations,
)
from llama_index_graphrag_milvus.retrieval.requests import MilvusRequests, OwnRelations, Plan
from tests.support.explain_data import QUESTION

pytestmark = pytest.mark.milvus

METHODS = ["bridge", "passage", "ppr", "pcst"]


def relations(hits: list[NodeWithScore]) -> list[list[str]]:
    return [[r["id"] for r in hit.node.metadata.get(RELATIONS_KEY) or []] for hit in hits]


def passages(hits: list[NodeWithScore]) -> list[tuple[str, float | None]]:
    return [(hit.node.node_id, hit.score) for hit in hits]


def index_of(mode: str, shared_family_index: GraphRAGIndex,
             served_family_index: GraphRAGIndex) -> GraphRAGIndex:
    return shared_family_index if mode == "memory" else served_family_index


@pytest.mark.parametrize("mode", ["memory", "milvus"])
@pytest.mark.parametrize("method", METHODS)
def test_without_own_relations_the_same_passages_keep_the_relations_that_reached_them(
        shared_family_index: GraphRAGIndex, served_family_index: GraphRAGIndex,
        mode: str, method: str) -> None:
    index = index_of(mode, shared_family_index, served_family_index)
    full = index.as_retriever(method=method, similarity_top_k=5).retrieve(QUESTION)
    retriever = index.as_retriever(method=method, similarity_top_k=5, own_relations=0)
    assert retriever.describe()["own_relations"] == 0
    bare = retriever.retrieve(QUESTION)
    assert passages(bare) == passages(full)
    for kept, every in zip(relations(bare), relations(full), strict=True):
        assert kept == every[:len(kept)]  # the relations that reached it, then its own


@pytest.mark.parametrize("mode", ["memory", "milvus"])
def test_the_bridges_results_lose_their_own_relations(
        shared_family_index: GraphRAGIndex, served_family_index: GraphRAGIndex,
        mode: str) -> None:
    index = index_of(mode, shared_family_index, served_family_index)
    full = relations(index.as_retriever(similarity_top_k=5).retrieve(QUESTION))
    bare = relations(index.as_retriever(similarity_top_k=5, own_relations=0).retrieve(QUESTION))
    assert sum(map(len, full)) > sum(map(len, bare))
    assert [] in bare  # a passage the question's own search found: no relation reached it


@pytest.mark.parametrize("mode", ["memory", "milvus"])
def test_own_relations_caps_what_each_result_adds(
        shared_family_index: GraphRAGIndex, served_family_index: GraphRAGIndex,
        mode: str) -> None:
    index = index_of(mode, shared_family_index, served_family_index)
    bare = relations(index.as_retriever(similarity_top_k=5, own_relations=0).retrieve(QUESTION))
    one = relations(index.as_retriever(similarity_top_k=5, own_relations=1).retrieve(QUESTION))
    five = relations(index.as_retriever(similarity_top_k=5).retrieve(QUESTION))
    for reached, capped, full in zip(bare, one, five, strict=True):
        assert len(capped) - len(reached) <= 1
        assert capped == full[:len(capped)]  # the best own relation first
    assert any(len(c) > len(r) for r, c in zip(bare, one, strict=True))
    assert any(len(f) - len(r) > 1 for r, f in zip(bare, five, strict=True))


def test_no_own_relations_is_one_milvus_request_fewer_on_a_served_graph(
        served_family_index: GraphRAGIndex) -> None:
    """The bridge reads its results' own relations; PageRank those of its results that its
    similarity search did not bring (it read theirs already); k-hop and PCST attach the
    pool's relations to their results, and read none."""
    served = served_family_index
    similar = {n.node.node_id for n in served.as_naive_retriever(similarity_top_k=3)
               .retrieve(QUESTION)}
    ranked = {n.node.node_id for n in served.as_retriever(method="ppr", similarity_top_k=3)
              .retrieve(QUESTION)}
    for method, fewer in (("bridge", 1), ("ppr", int(bool(ranked - similar))),
                          ("passage", 0), ("pcst", 0)):
        retriever = served.as_retriever(method=method, similarity_top_k=3)
        full = retriever.explain(QUESTION).milvus_requests
        bare = served.as_retriever(method=method, own_relations=0, similarity_top_k=3
                                   ).explain(QUESTION)
        assert full is not None and bare.milvus_requests == full - fewer, method


def known_owns(query: QueryContext) -> Plan[list[Any]]:
    """The own relations of the question's 3 most similar passages read by
    ``with_own_relations`` without, with all and with one of them known, and the Milvus
    requests of each."""
    [hits] = yield from search_passages(query, (query.vector,), 3)
    results = [Result(node, score) for node, score in hits]
    owns = yield from OwnRelations(tuple(r.node for r in results), query.vector)
    every = {r.node.node_id: own for r, own in zip(results, owns, strict=True)}
    answers: list[Any] = []
    for known in (None, every, dict(list(every.items())[:1])):
        before = yield from MilvusRequests()
        nodes = yield from with_own_relations(query, results, known)
        answers.append((relations(nodes), (yield from MilvusRequests()) - before))
    return answers


@pytest.mark.parametrize("mode", ["memory", "milvus"])
def test_own_relations_already_read_are_not_read_again(
        shared_family_index: GraphRAGIndex, served_family_index: GraphRAGIndex,
        mode: str) -> None:
    index = index_of(mode, shared_family_index, served_family_index)
    unknown, every, one = index.as_retriever().run(QUESTION, known_owns)
    assert unknown[0] == every[0] == one[0] and sum(map(len, unknown[0])) > 3
    if mode == "milvus":
        assert (unknown[1], every[1], one[1]) == (1, 0, 1)


def owns_read(query: QueryContext, ends: bool) -> Plan[tuple[list[Any], int]]:
    """The own relations of the question's 3 most similar passages, read with or without
    their ends, and the Milvus requests of that read."""
    [hits] = yield from search_passages(query, (query.vector,), 3)
    before = yield from MilvusRequests()
    owns = yield from OwnRelations(tuple(node for node, _ in hits), query.vector, ends=ends)
    return owns, (yield from MilvusRequests()) - before


@pytest.mark.parametrize("mode", ["memory", "milvus"])
def test_own_relations_without_their_ends_have_the_same_ids_texts_and_scores(
        shared_family_index: GraphRAGIndex, served_family_index: GraphRAGIndex,
        mode: str) -> None:
    index = index_of(mode, shared_family_index, served_family_index)
    whole, whole_requests = index.as_retriever().run(QUESTION, lambda q: owns_read(q, True))
    slim, slim_requests = index.as_retriever().run(QUESTION, lambda q: owns_read(q, False))
    shown = [[(c.id, c.text, round(c.score, 6), c.hop) for c in own] for own in whole]
    assert [[(c.id, c.text, round(c.score, 6), c.hop) for c in own] for own in slim] == shown
    assert sum(map(len, shown)) > 3 and all(c.text for own in slim for c in own)
    assert all(c.passage_ids and c.subject_id for own in whole for c in own)
    if mode == "milvus":  # the served graph left out what was not asked for
        assert not any(c.passage_ids or c.subject_id for own in slim for c in own)
        assert slim_requests == whole_requests == 1


def test_the_async_twin_returns_the_same(served_family_index: GraphRAGIndex) -> None:
    retriever = served_family_index.as_retriever(method="ppr", own_relations=0,
                                                 similarity_top_k=5)
    sync = retriever.retrieve(QUESTION)
    awaited = asyncio.run(retriever.aretrieve(QUESTION))
    assert passages(awaited) == passages(sync)
    assert relations(awaited) == relations(sync)


@pytest.mark.parametrize("value", [-1, 1.5, "5", None, True, 10**6])
def test_a_bad_own_relations_is_refused_with_its_range(
        shared_family_index: GraphRAGIndex, value: Any) -> None:
    with pytest.raises(InvalidInputError, match=r"own_relations.*from 0 to 1024"):
        shared_family_index.as_retriever(own_relations=value)
    with pytest.raises(InvalidInputError, match="own_relations"):
        QueryContext("q", [1.0], 5, own_relations=value)
