"""GraphRAGRetriever on Milvus (Lite, server), k-hop method: NER, batched entity search, hops,
sync == async. The default method (the second hop) is tested in test_bridge.py."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from llama_index.core import Settings
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.schema import (
    MetadataMode,
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)

from llama_index_graphrag_milvus import GraphRAGIndex, GraphRAGRetriever, InvalidInputError
from llama_index_graphrag_milvus.ids import passage_id
from llama_index_graphrag_milvus.limits import QUERY_MAX_BYTES
from llama_index_graphrag_milvus.metadata import FOUND_BY_KEY, RELATIONS_KEY
from llama_index_graphrag_milvus.records import Triplet
from llama_index_graphrag_milvus.retrieval.steps import parse_ner
from tests.conftest import FAMILY
from tests.support.fakes import HangingLLM, ScriptedLLM
from tests.support.markers import LITE_ONLY

# Parsing, argument checks and fallbacks do not depend on the backend: Lite only. The tests
# that only read (no spy on the client's calls) share one index (``shared_family_index``).

QUESTION = "What did the son of Euler's teacher contribute?"
EULER, DANIEL, JAKOB, FLUID = (p for p, _ in FAMILY)


def khop(index: GraphRAGIndex, **kwargs: Any) -> GraphRAGRetriever:
    """The k-hop method (these tests pin it; the default is the second hop)."""
    return index.as_retriever(passage_scoring="passage", **kwargs)


def texts(hits: list) -> list[str]:
    return [h.node.get_content() for h in hits]


class SearchSpy:
    """Counts Milvus search calls per collection on the real client (Milvus still answers)."""

    def __init__(self, index: GraphRAGIndex, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[str, int]] = []
        original = index.store.client.search

        def search(collection_name: str, data: list, **kwargs: Any) -> Any:
            self.calls.append((collection_name, len(data)))
            return original(collection_name=collection_name, data=data, **kwargs)

        monkeypatch.setattr(index.store.client, "search", search)


def ner(names: list[str]) -> ScriptedLLM:
    return ScriptedLLM(lambda prompt: json.dumps({"named_entities": names}))


@LITE_ONLY  # which collections a query searches does not depend on the backend
@pytest.mark.parametrize(("relation_search", "entity_search", "searches"), [
    # entity search, relation search, the entities among the question's words ("Euler",
    # "teacher"...: match_entity_names), then the pool's passages ranked by a filtered search
    ("milvus", "milvus",
     [("graphrag_entities", 1), ("graphrag_relations", 1), ("graphrag_entities", 1),
      ("graphrag_passages", 1)]),
    # the relations ranked in memory (the graph holds their vectors): no relation search
    ("auto", "milvus", [("graphrag_entities", 1), ("graphrag_entities", 1),
                        ("graphrag_passages", 1)]),
    # and the entities too (the index's entity table): the passage search alone
    ("auto", "auto", [("graphrag_passages", 1)]),
])
def test_without_llm_the_query_vector_searches_entities(
        family_index: GraphRAGIndex, monkeypatch: pytest.MonkeyPatch, relation_search: str,
        entity_search: str, searches: list[tuple[str, int]]) -> None:
    spy = SearchSpy(family_index, monkeypatch)
    hits = khop(family_index, hops=1, relation_search=relation_search,
                entity_search=entity_search, passage_search="milvus").retrieve(QUESTION)
    assert spy.calls == searches
    assert DANIEL in texts(hits)
    for hit in hits:
        relations = hit.node.metadata[RELATIONS_KEY]
        assert relations and {"id", "text", "score", "hop"} <= set(relations[0])
    # default passage scoring: a passage's score is its own cosine similarity to the query
    query = np.asarray(family_index.embed_model.get_query_embedding(QUESTION))
    for hit in hits:
        passage = np.asarray(family_index.embed_model.get_text_embedding(
            hit.node.get_content(metadata_mode=MetadataMode.EMBED)))
        assert hit.score == pytest.approx(float(query @ passage), abs=1e-4)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)


def test_relation_scoring_orders_passages_by_their_best_relation(
        shared_family_index: GraphRAGIndex) -> None:
    hits = shared_family_index.as_retriever(passage_scoring="relation").retrieve(QUESTION)
    assert hits
    for hit in hits:
        assert hit.score == pytest.approx(hit.node.metadata[RELATIONS_KEY][0]["score"],
                                          abs=1e-5)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    with pytest.raises(InvalidInputError, match="passage_scoring must be"):
        shared_family_index.as_retriever(passage_scoring="bm25")


def test_relations_metadata_is_kept_out_of_llm_and_embedding_text(
        family_index: GraphRAGIndex) -> None:
    hit = khop(family_index).retrieve(QUESTION)[0]
    for mode in (MetadataMode.LLM, MetadataMode.EMBED):
        content = hit.node.get_content(metadata_mode=mode)
        assert "graphrag_relations" not in content and "graphrag_triplets" not in content
    assert "graphrag_relations" in hit.node.get_content(metadata_mode=MetadataMode.ALL)


@LITE_ONLY  # counts the calls the plan makes
def test_ner_names_are_searched_in_one_batched_call(family_index: GraphRAGIndex,
                                                    monkeypatch) -> None:
    spy = SearchSpy(family_index, monkeypatch)
    llm = ner(["Euler", "Johann Bernoulli", "Basel"])
    retriever = khop(family_index, llm=llm, entity_top_k=1, entity_search="milvus",
                     relation_similarity_threshold=1.01)
    hits = retriever.retrieve(QUESTION)
    assert ("graphrag_entities", 3) in spy.calls
    assert sum(1 for c, _ in spy.calls if c == "graphrag_entities") == 1
    assert QUESTION in llm.prompts[0]
    assert EULER in texts(hits)


def test_multi_hop_needs_the_hop(shared_family_index: GraphRAGIndex) -> None:
    # relation seeds off: only the NER entity 'Leonhard Euler' seeds the expansion
    common: dict[str, Any] = {"llm": ner(["Leonhard Euler"]), "entity_top_k": 1,
                              "relation_similarity_threshold": 1.01}
    zero = texts(khop(shared_family_index, hops=0, **common).retrieve(QUESTION))
    one = texts(khop(shared_family_index, hops=1, **common).retrieve(QUESTION))
    two = khop(shared_family_index, hops=2, **common).retrieve(QUESTION)
    three = texts(khop(shared_family_index, hops=3, **common).retrieve(QUESTION))
    assert zero == [EULER]
    assert set(one) == {EULER, DANIEL, JAKOB}
    assert set(texts(two)) == {EULER, DANIEL, JAKOB}
    daniel_relations = {r["text"]: r["hop"] for h in two if h.node.get_content() == DANIEL
                        for r in h.node.metadata[RELATIONS_KEY]}
    assert daniel_relations == {"Daniel Bernoulli was the son of Johann Bernoulli": 1,
                                "Daniel Bernoulli made contributions to fluid dynamics": 2}
    assert set(three) == {EULER, DANIEL, JAKOB, FLUID}
    reached = [h for h in khop(shared_family_index, hops=1, **common).retrieve(QUESTION)
               if h.node.get_content() != EULER]
    assert all(r["hop"] == 1 for h in reached for r in h.node.metadata[RELATIONS_KEY])


@pytest.mark.parametrize("answer", [
    "Sorry, I cannot help with that.",
    '{"entities": ["Euler"]}',
    '{"named_entities": "Euler"',
    RuntimeError("rate limited"),
])
def test_unusable_ner_falls_back_to_the_query_vector(shared_family_index: GraphRAGIndex,
                                                     caplog, answer: object) -> None:
    expected = texts(khop(shared_family_index).retrieve(QUESTION))
    with caplog.at_level(logging.WARNING):
        hits = khop(shared_family_index, llm=ScriptedLLM([answer])).retrieve(QUESTION)
    assert texts(hits) == expected
    assert "searching entities with the query vector" in caplog.text


@pytest.mark.parametrize("use_async", [False, True])
async def test_an_ner_call_past_ner_timeout_falls_back_to_the_query_vector(
        shared_family_index: GraphRAGIndex, caplog, use_async: bool) -> None:
    expected = texts(khop(shared_family_index).retrieve(QUESTION))
    llm = HangingLLM([], hang_on=QUESTION)
    retriever = khop(shared_family_index, llm=llm, ner_timeout=0.2)
    try:
        with caplog.at_level(logging.WARNING):
            hits = await (retriever.aretrieve(QUESTION) if use_async
                          else asyncio.to_thread(retriever.retrieve, QUESTION))
        finished_before_release = llm.finished
    finally:
        llm.release()
    assert texts(hits) == expected
    assert llm.hung == 1 and finished_before_release == 0
    assert "query NER failed (NoAnswer('no answer within 0.2 s'))" in caplog.text


def test_ner_calls_given_up_are_bounded_so_a_dead_llm_leaves_few_threads(
        shared_family_index: GraphRAGIndex) -> None:
    from llama_index_graphrag_milvus.retrieval.retriever import NER_THREADS
    expected = texts(khop(shared_family_index).retrieve(QUESTION))
    llm = HangingLLM([], hang_on=QUESTION)
    retriever = khop(shared_family_index, llm=llm, ner_timeout=0.05)
    try:
        answers = [texts(retriever.retrieve(QUESTION)) for _ in range(NER_THREADS + 4)]
        started = llm.hung
    finally:
        llm.release()
    assert answers == [expected] * (NER_THREADS + 4)
    assert started == NER_THREADS  # the later queries did not start a call


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), "soon"])
def test_ner_timeout_must_be_positive_seconds(shared_family_index: GraphRAGIndex,
                                              bad: object) -> None:
    with pytest.raises(InvalidInputError, match="ner_timeout must be None or a finite number"):
        shared_family_index.as_retriever(ner_timeout=bad)


@LITE_ONLY
def test_ner_answer_in_code_fences_is_parsed(family_index: GraphRAGIndex, monkeypatch) -> None:
    spy = SearchSpy(family_index, monkeypatch)
    llm = ScriptedLLM(['```json\n{"named_entities": ["Euler", "Euler", "Basel"]}\n``` ok'])
    khop(family_index, llm=llm, entity_search="milvus").retrieve(QUESTION)
    assert ("graphrag_entities", 2) in spy.calls


@LITE_ONLY
async def test_an_ner_answer_after_an_echo_of_the_prompt_is_read_not_the_echo(
        family_index: GraphRAGIndex, monkeypatch) -> None:
    spy = SearchSpy(family_index, monkeypatch)  # the prompt's format line holds ["..."]
    llm = ScriptedLLM(lambda prompt: prompt + ' {"named_entities": ["Basel", "Daniel"]}')
    retriever = khop(family_index, llm=llm, entity_search="milvus")
    hits = retriever.retrieve(QUESTION)
    assert ("graphrag_entities", 2) in spy.calls  # both names, not the echo's "..."
    assert texts(await retriever.aretrieve(QUESTION)) == texts(hits)  # the async twin alike


@pytest.mark.parametrize(("raw", "names"), [
    ('{"named_entities": ["Euler", "Euler", "Johann Ber', ["Euler"]),  # cut off
    ('Sure: ["Euler", "Basel"]', ["Euler", "Basel"]),
    ('{"why": "[1] is a note", "named_entities": ["Basel"]', ["Basel"]),  # no closing brace
    ('{"named_entities": "Euler"', []),
])
def test_parse_ner_reads_complete_names_of_a_cut_or_broken_answer(raw: str,
                                                                 names: list[str]) -> None:
    assert parse_ner(raw) == names


def test_retriever_never_reaches_for_settings_llm(shared_family_index: GraphRAGIndex,
                                                 monkeypatch) -> None:
    trap = ScriptedLLM(lambda prompt: pytest.fail("Settings.llm was called"))
    monkeypatch.setattr(Settings, "_llm", trap)
    assert khop(shared_family_index).retrieve(QUESTION)
    assert trap.prompts == []


@pytest.mark.parametrize("scoring", ["passage", "relation", "ppr", "bridge"])
def test_seeds_that_reach_nothing_fall_back_to_the_passages_own_similarity(
        shared_family_index: GraphRAGIndex, scoring: str) -> None:
    """Thresholds that drop every seed: never an empty answer while passages match."""
    strict = shared_family_index.as_retriever(entity_similarity_threshold=1.01,
                                              relation_similarity_threshold=1.01,
                                              passage_scoring=scoring, similarity_top_k=3)
    naive = shared_family_index.as_naive_retriever(similarity_top_k=3).retrieve(QUESTION)
    hits = strict.retrieve(QUESTION)
    assert texts(hits) == texts(naive)
    if scoring != "ppr":  # PageRank keeps its own (mass) scores
        assert [h.score for h in hits] == pytest.approx(
            [h.score for h in naive] if scoring != "bridge" else [1.0, 0.5, 1 / 3], abs=1e-5)
    assert all(h.node.metadata[FOUND_BY_KEY]["query"] != "bridge" for h in hits)


def test_thresholds_drop_weak_hits(family_index: GraphRAGIndex) -> None:
    """With ``hops=0`` the pool is the seeds' relations: a threshold between the best seed
    and the next drops the next, and a threshold above every hit leaves no seed at all."""
    def pool(**thresholds: Any) -> tuple[list[NodeWithScore], dict[str, float]]:
        hits = khop(family_index, hops=0, **thresholds).retrieve(QUESTION)
        return hits, {r["text"]: r["score"] for h in hits for r in h.node.metadata[RELATIONS_KEY]}

    nothing = 1.01  # above any cosine similarity
    # relation seeds alone (no entity hit passes 1.01): the relations most similar to the query
    _, loose = pool(entity_similarity_threshold=nothing, relation_similarity_threshold=-1.0)
    best, second = sorted(loose.values(), reverse=True)[:2]
    assert len(loose) == 3 and best > second
    _, strict = pool(entity_similarity_threshold=nothing,
                     relation_similarity_threshold=(best + second) / 2)
    assert list(strict.values()) == [best]  # the weaker relation hits were dropped
    # entity seeds alone: the relations of the entities similar to the query (the fourth
    # ties with the third under the test embedding: both are taken)
    _, by_entities = pool(entity_similarity_threshold=-1.0, relation_similarity_threshold=nothing,
                          entity_top_k=4)
    assert set(loose) < set(by_entities)
    # neither: no seed passes, the passages come by their own similarity
    hits, _ = pool(entity_similarity_threshold=nothing, relation_similarity_threshold=nothing)
    assert hits and {h.node.metadata[FOUND_BY_KEY]["query"] for h in hits} == {
        "question (the seeds reach nothing)"}


def test_similarity_top_k_and_pool_size(family_index: GraphRAGIndex) -> None:
    assert len(khop(family_index, hops=2, similarity_top_k=2).retrieve(QUESTION)) == 2
    hits = khop(family_index, hops=2, max_candidate_relations=1).retrieve(QUESTION)
    assert len(hits) == 1 and len(hits[0].node.metadata[RELATIONS_KEY]) == 1


def test_query_bundle_embedding_is_used(family_index: GraphRAGIndex) -> None:
    vector = family_index.embed_model.get_query_embedding("Daniel Bernoulli son")
    bundle = QueryBundle(query_str="anything at all", embedding=vector)
    by_vector = texts(khop(family_index).retrieve(bundle))
    by_text = texts(khop(family_index).retrieve("Daniel Bernoulli son"))
    assert by_vector == by_text


def test_a_zero_query_vector_is_refused_by_every_retriever(
        shared_family_index: GraphRAGIndex) -> None:
    """It has no direction: the default scored three arbitrary passages 1.0."""
    index = shared_family_index
    dim = len(index.embed_model.get_query_embedding(QUESTION))
    for retriever in (index.as_retriever(), index.as_retriever(method="ppr"),
                      index.as_naive_retriever()):
        with pytest.raises(InvalidInputError, match=r"QueryBundle\.embedding is all zeros"):
            retriever.retrieve(QueryBundle(QUESTION, embedding=[0.0] * dim))
        with pytest.raises(InvalidInputError, match="all zeros"):
            asyncio.run(retriever.aretrieve(QueryBundle(QUESTION, embedding=[0.0] * dim)))
        one = [0.0] * dim
        one[0] = 1e-30  # tiny is a direction
        assert isinstance(retriever.retrieve(QueryBundle(QUESTION, embedding=one)), list)


@pytest.mark.parametrize("query", ["", "   \n\t"])
def test_empty_query(shared_family_index: GraphRAGIndex, query: str) -> None:
    with pytest.raises(InvalidInputError, match="empty or whitespace"):
        khop(shared_family_index).retrieve(query)
    with pytest.raises(InvalidInputError, match="empty or whitespace"):
        asyncio.run(khop(shared_family_index).aretrieve(query))


def test_a_document_pasted_as_the_query_is_refused_by_every_retriever(
        shared_family_index: GraphRAGIndex) -> None:
    """The bridge's word logic read every word: 26 s for 200,000 Chinese characters."""
    index = shared_family_index
    longest = "x" * QUERY_MAX_BYTES  # just within
    for retriever in (index.as_retriever(), index.as_naive_retriever()):
        assert isinstance(retriever.retrieve(longest), list)
        with pytest.raises(InvalidInputError, match=r"the query is 65538 UTF-8 bytes long, "
                                                    r"over the 65535 a retriever takes"):
            retriever.retrieve(longest + "欧")
        with pytest.raises(InvalidInputError, match="over the 65535 a retriever takes"):
            asyncio.run(retriever.aretrieve("Euler " * 20000))


@pytest.mark.parametrize("graph", ["memory", "milvus"])
def test_a_query_with_a_lone_surrogate_is_refused_by_every_retriever(
        shared_family_index: GraphRAGIndex, graph: str) -> None:
    """Milvus cannot encode it: the graph in memory answered, a search sent to Milvus (BM25,
    a served graph, naive RAG's BM25 and hybrid search) failed with a gRPC error."""
    index = shared_family_index
    opened = (index if graph == "memory" else
              GraphRAGIndex(uri=index.store.uri, embed_model=index.embed_model, graph="milvus"))
    try:
        retrievers = [opened.as_retriever(), opened.as_retriever(passage_search="milvus"),
                      opened.as_naive_retriever()]
        if opened.store.full_text:
            retrievers += [opened.as_naive_retriever(search="hybrid")]
        for retriever in retrievers:
            with pytest.raises(InvalidInputError, match="lone surrogates"):
                retriever.retrieve("Daniel \ud800 Bernoulli")
            with pytest.raises(InvalidInputError, match="lone surrogates"):
                asyncio.run(retriever.aretrieve("Daniel \ud800 Bernoulli"))
    finally:
        if opened is not index:
            opened.close()


@pytest.mark.parametrize("kwargs, match", [
    ({"hops": -1}, "hops must be an integer >= 0"),
    ({"entity_top_k": 0}, "entity_top_k must be an integer"),
    ({"similarity_top_k": "5"}, "similarity_top_k must be an integer >= 1"),
    ({"max_candidate_relations": 0}, "max_candidate_relations must be an integer >= 1"),
    ({"blas_threads": 0}, "blas_threads must be an integer from 1 to 1024"),
    ({"blas_threads": 2.0}, "blas_threads must be an integer from 1 to 1024"),
])
def test_bad_retriever_arguments(shared_family_index: GraphRAGIndex, kwargs: dict,
                                 match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        khop(shared_family_index, **kwargs)


@pytest.mark.parametrize("kwargs", [{}, {"hops": 2}, {"llm": "ner"}])
async def test_sync_and_async_give_the_same_answers(family_index: GraphRAGIndex,
                                                    kwargs: dict) -> None:
    if kwargs.get("llm") == "ner":
        kwargs = {"llm": ner(["Euler", "fluid dynamics"])}
    retriever = khop(family_index, **kwargs)
    for query in (QUESTION, "fluid dynamics", "Who studied probability?"):
        sync = retriever.retrieve(query)
        concurrent = await asyncio.gather(*(retriever.aretrieve(query) for _ in range(8)))
        for hits in concurrent:
            assert [(h.node.node_id, round(h.score or 0, 6)) for h in hits] == \
                   [(h.node.node_id, round(h.score or 0, 6)) for h in sync]
            assert [h.node.metadata[RELATIONS_KEY] for h in hits] == \
                   [h.node.metadata[RELATIONS_KEY] for h in sync]


def test_async_on_a_reopened_index_builds_the_graph(family_index: GraphRAGIndex,
                                                    milvus_uri: str) -> None:
    reopened = GraphRAGIndex(uri=milvus_uri, embed_model=family_index.embed_model)
    hits = asyncio.run(khop(reopened).aretrieve(QUESTION))
    assert texts(hits) == texts(khop(family_index).retrieve(QUESTION))


def test_prompts_are_customizable(shared_family_index: GraphRAGIndex) -> None:
    from llama_index.core.prompts import PromptTemplate

    retriever = khop(shared_family_index, llm=ner(["Euler"]))
    assert "ner_prompt" in retriever.get_prompts()
    retriever.update_prompts({"ner_prompt": PromptTemplate("ENTITIES OF: {query_str}")})
    retriever.retrieve(QUESTION)
    assert retriever._llm.prompts[-1] == f"ENTITIES OF: {QUESTION}"  # type: ignore[union-attr]


def test_composes_with_fusion_retriever(family_index: GraphRAGIndex,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    embeddings: list[str] = []
    original = family_index.embed_model._get_query_embedding

    def counting(query: str) -> list[float]:
        embeddings.append(query)
        return original(query)

    graph = khop(family_index)
    naive = family_index.as_naive_retriever(similarity_top_k=2)
    graph_ids = [h.node.node_id for h in graph.retrieve(QUESTION)]
    naive_ids = [h.node.node_id for h in naive.retrieve(QUESTION)]
    monkeypatch.setattr(family_index.embed_model, "_get_query_embedding", counting)
    fusion = QueryFusionRetriever([graph, naive], num_queries=1, mode="reciprocal_rerank",
                                  similarity_top_k=3, use_async=False, llm=ScriptedLLM([]))
    hits = fusion.retrieve(QUESTION)
    fused = [h.node.node_id for h in hits]
    assert len(fused) == len(set(fused)) == min(3, len(set(graph_ids) | set(naive_ids)))
    assert set(fused) <= set(graph_ids) | set(naive_ids)
    # a passage both retrievers return is one node with both reciprocal ranks added up
    shared = [h for h in hits if h.node.node_id in set(graph_ids) & set(naive_ids)]
    assert shared and all((h.score or 0) > 1 / 61 for h in shared)
    # the graph retriever's query vector is reused by the naive one: one embedding call
    assert embeddings == [QUESTION]
    assert isinstance(graph, GraphRAGRetriever)


def test_naive_retriever_reads_the_passage_collection(family_index: GraphRAGIndex) -> None:
    hits = family_index.as_naive_retriever(similarity_top_k=2).retrieve("fluid dynamics wings")
    assert len(hits) == 2
    assert FLUID in texts(hits)
    assert asyncio.run(family_index.as_naive_retriever(similarity_top_k=2)
                       .aretrieve("fluid dynamics wings"))[0].node.get_content() == texts(hits)[0]


@LITE_ONLY  # no read at all, on any backend
def test_relation_texts_come_from_the_passages_without_another_read(
        make_index: Callable[..., GraphRAGIndex], monkeypatch: pytest.MonkeyPatch) -> None:
    index = make_index()
    store = index.store
    reads: list[tuple[str, list[str]]] = []
    original = store.client.get

    def get(collection_name: str, ids: list[str], **kwargs: Any) -> Any:
        reads.append((collection_name, list(ids)))
        return original(collection_name=collection_name, ids=ids, **kwargs)

    monkeypatch.setattr(store.client, "get", get)
    expected = {Triplet(*t).id: Triplet(*t).text for _, triplets in FAMILY for t in triplets}

    def attached(hits: list) -> dict[str, list[tuple[str, str]]]:
        return {h.node.get_content(): [(r["id"], r["text"]) for r in
                                       h.node.metadata[RELATIONS_KEY]] for h in hits}

    # the relation seeds searched in Milvus come with their texts (in memory, the graph
    # holds them: see test_relation_seeds_in_memory_equal_the_milvus_search)
    before = attached(khop(index, hops=1, relation_search="milvus").retrieve(QUESTION))
    assert reads == []  # two searches and the passage search, nothing else
    assert DANIEL in before
    assert all(text == expected[rid] for pairs in before.values() for rid, text in pairs)

    # a passage rewritten by another tool, without its triplets: the graph has its texts
    stripped = TextNode(id_=passage_id(DANIEL), text=DANIEL,
                        embedding=index.embed_model.get_text_embedding(DANIEL))
    store.upsert_passages([stripped])
    store.flush()
    after = attached(khop(index, hops=1, relation_search="milvus").retrieve(QUESTION))
    assert after == before
    assert reads == []


def test_store_runs_the_two_seed_searches_at_the_same_time(
        shared_family_index: GraphRAGIndex) -> None:
    both_running = threading.Barrier(2, timeout=10)  # broken (an error) if run one by one

    def search(name: str) -> str:
        both_running.wait()
        return name

    assert shared_family_index.store.concurrently_all([lambda: search("entities"),
                                                       lambda: search("relations")]) == (
        "entities", "relations")


@pytest.mark.parametrize("threshold", [None, 0.0, 0.99])
def test_relation_seeds_in_memory_equal_the_milvus_search(
        shared_family_index: GraphRAGIndex, threshold: float | None) -> None:
    from llama_index_graphrag_milvus.retrieval.drivers import (
        AsyncDriver,
        DriverContext,
        SyncDriver,
    )
    from llama_index_graphrag_milvus.retrieval.method import QueryContext, SeedConfig
    from llama_index_graphrag_milvus.retrieval.seeds import search_relations
    from llama_index_graphrag_milvus.retrieval.settings import SearchSettings

    vector = shared_family_index.embed_model.get_query_embedding(QUESTION)
    query = QueryContext(QUESTION, vector, 5)
    found = {}
    for where in ("memory", "milvus"):
        config = SeedConfig(relation_top_k=4, relation_threshold=threshold)
        context = DriverContext.of(shared_family_index,
                                   searches=SearchSettings(relation_search=where))
        found[where] = SyncDriver(context).run(search_relations(query, config))
        async_driver = AsyncDriver(context)
        assert asyncio.run(async_driver.run(search_relations(query, config))) == found[where]
    memory, milvus = found["memory"], found["milvus"]
    assert [(h.id, h.text, h.subject_id, h.object_id, h.passage_ids) for h in memory] == [
        (h.id, h.text, h.subject_id, h.object_id, h.passage_ids) for h in milvus]
    assert [h.score for h in memory] == pytest.approx([h.score for h in milvus], abs=1e-5)
    if threshold == 0.99:
        assert memory == []
    else:
        assert len(memory) == 4 and all(h.text for h in memory)


@pytest.mark.parametrize("threshold", [None, 0.5])
def test_entity_seeds_in_memory_equal_the_milvus_search(
        shared_family_index: GraphRAGIndex, threshold: float | None) -> None:
    from llama_index_graphrag_milvus.retrieval.drivers import (
        AsyncDriver,
        DriverContext,
        SyncDriver,
    )
    from llama_index_graphrag_milvus.retrieval.method import QueryContext, SeedConfig
    from llama_index_graphrag_milvus.retrieval.seeds import find_seeds
    from llama_index_graphrag_milvus.retrieval.settings import SearchSettings

    vector = shared_family_index.embed_model.get_query_embedding(QUESTION)
    query = QueryContext(QUESTION, vector, 5)
    llm = ner(["Euler", "Johann Bernoulli", "fluid dynamics"])
    for top_k in (50, 3):  # every entity, and a cut inside the test embedding's ties
        found = {}
        for where in ("memory", "milvus"):
            config = SeedConfig(entity_top_k=top_k, entity_threshold=threshold)
            context = DriverContext.of(shared_family_index, llm=llm,
                                       searches=SearchSettings(entity_search=where))
            seeds, _ = SyncDriver(context).run(find_seeds(query, config))
            again, _ = asyncio.run(AsyncDriver(context).run(find_seeds(query, config)))
            assert again == seeds
            found[where] = seeds.entities
        memory, milvus = ([(h.searched, h.id, h.name) for h in found[where]]
                          for where in ("memory", "milvus"))
        assert memory == milvus  # most similar first, ties by id, at the cut too
        assert [h.score for h in found["memory"]] == pytest.approx(
            [h.score for h in found["milvus"]], abs=1e-5)
        everything = 3 * (shared_family_index.graph.num_entities if top_k == 50 else top_k)
        assert len(memory) == everything if threshold is None else 0 < len(memory) < everything


def test_seed_search_auto_uses_milvus_above_the_memory_budget(
        family_index: GraphRAGIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    spy = SearchSpy(family_index, monkeypatch)
    khop(family_index, hops=1, memory_search_max_floats=1).retrieve(QUESTION)
    assert ("graphrag_entities", 1) in spy.calls
    # on Lite the relations stay in memory whatever their number: a Lite search scans the
    # same vectors the graph holds, more slowly
    assert (("graphrag_relations", 1) in spy.calls) is not family_index.store.is_lite
    with pytest.raises(InvalidInputError, match="relation_search must be one of auto"):
        khop(family_index, relation_search="gpu")
    with pytest.raises(InvalidInputError, match="entity_search must be one of auto"):
        khop(family_index, entity_search="gpu")


@LITE_ONLY
def test_the_entity_table_follows_the_index_writes(make_index: Callable[..., GraphRAGIndex]
                                                   ) -> None:
    index = make_index()
    table = index.entity_table
    assert len(table) == index.graph.num_entities and table.nbytes > 0
    names = {table.names[i] for i in range(len(table))}
    assert "Johann Bernoulli" in names and "Gottfried Leibniz" not in names
    letter = TextNode(text="Leibniz corresponded with Johann Bernoulli.")
    letter.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id="letters")
    index.insert_triplets([(letter, [("Gottfried Leibniz", "corresponded with",
                                      "Johann Bernoulli")])])
    retriever = khop(index, llm=ner(["Gottfried Leibniz"]), entity_top_k=1)
    hits = retriever.retrieve("Whom did Leibniz write to?")
    assert index.entity_table is not table  # read again after the write
    assert "Leibniz corresponded with Johann Bernoulli." in texts(hits)
    index.delete("letters")
    assert "Gottfried Leibniz" not in {index.entity_table.names[i]
                                       for i in range(len(index.entity_table))}
