"""The graph served by Milvus (``GraphRAGIndex(graph="milvus")``): every method answers what
it answers with the graph in memory, reads nothing whole, and handles hubs, missing rows and
bad settings."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pytest
from llama_index.core.schema import NodeWithScore, TextNode

from llama_index_graphrag_milvus import GraphRAGIndex, InvalidInputError
from llama_index_graphrag_milvus.graph import ExpansionConfig
from llama_index_graphrag_milvus.index_cache import COPIES, GRAPH_MODE, graph_bytes
from llama_index_graphrag_milvus.metadata import RELATIONS_KEY, TRIPLETS_KEY
from llama_index_graphrag_milvus.milvus.served import ServedGraph
from llama_index_graphrag_milvus.records import EntityHit, Triplet
from llama_index_graphrag_milvus.retrieval import QueryContext
from llama_index_graphrag_milvus.retrieval.drivers import DriverContext, SyncDriver
from llama_index_graphrag_milvus.retrieval.neighbourhood import expand_pool
from llama_index_graphrag_milvus.retrieval.requests import (
    ExpandPool,
    MilvusRequests,
    OwnRelations,
    Plan,
    RelationSeeds,
)
from llama_index_graphrag_milvus.retrieval.seeds import Seeds
from tests.support.fakes import HashEmbedding
from tests.support.indexes import field_indexes
from tests.support.markers import LITE_ONLY, SERVER_ONLY
from tests.support.spies import count_query_rows

QUESTION = "What did the son of Euler's teacher contribute?"
METHODS = ["bridge", "passage", "ppr", "pcst"]


def summary(nodes: list[NodeWithScore]) -> list[tuple[str, float, list[str]]]:
    return [(n.node.node_id, round(n.score or 0.0, 6),
             [r["text"] for r in n.node.metadata.get(RELATIONS_KEY, [])]) for n in nodes]


def served(index: GraphRAGIndex) -> GraphRAGIndex:
    """Another index object on the same collections, its graph served by Milvus."""
    return GraphRAGIndex(uri=index.store.uri, embed_model=index.embed_model,
                         collection_prefix=index.store.prefix, graph="milvus")


def nothing_whole_was_read(index: GraphRAGIndex) -> bool:
    return all(index.cache.peek(name) is None for name in COPIES if name != GRAPH_MODE)


@pytest.mark.parametrize("method", METHODS)
def test_every_method_answers_the_same_from_the_served_graph(
        family_index: GraphRAGIndex, method: str) -> None:
    memory = family_index.as_retriever(passage_scoring=method, similarity_top_k=3)
    expected = summary(memory.retrieve(QUESTION))
    milvus = served(family_index)
    try:
        retriever = milvus.as_retriever(passage_scoring=method, similarity_top_k=3)
        assert milvus.graph_mode == "milvus"
        assert summary(retriever.retrieve(QUESTION)) == expected
        assert summary(asyncio.run(retriever.aretrieve(QUESTION))) == expected
        assert nothing_whole_was_read(milvus)
    finally:
        milvus.close()


@LITE_ONLY
def test_served_queries_name_their_requests(family_index: GraphRAGIndex) -> None:
    """The served k-hop pool: one filtered search per hop plus the seed relations' read."""
    milvus = served(family_index)
    try:
        seen: list[str] = []
        driver = SyncDriver(DriverContext.of(milvus, graph="milvus"))
        answer = driver.answer
        driver.answer = lambda request: (seen.append(type(request).__name__),  # type: ignore
                                         answer(request))[1]
        vector = milvus.embed_model.get_query_embedding(QUESTION)
        query = QueryContext(QUESTION, vector, 3)
        johann = Triplet("Johann Bernoulli", "x", "y").subject_id
        pool = driver.run(expand_pool(query, Seeds((), ()), ExpansionConfig(hops=2)))
        assert pool == [] and seen == ["ExpandPool", "Together", "RelationsAround",
                                       "GetRelations"]
        seen.clear()
        pool = driver.run(expand_pool(query, Seeds((EntityHit(johann, "Johann Bernoulli", .9,
                                                              "q"),), ()),
                                      ExpansionConfig(hops=2)))
        assert seen.count("RelationsAround") == 3  # hop 0 (in Together), then 1 and 2
        assert {c.subject_id for c in pool} | {c.object_id for c in pool} >= {johann}
        assert all(c.passage_ids and c.subject_id and c.object_id for c in pool)
        assert pool == sorted(pool, key=lambda c: (-c.score, c.id))
    finally:
        milvus.close()


def seed_pool(given: bool) -> Callable[[QueryContext], Plan[tuple[list[Any], int]]]:
    """A plan: the relation seeds, then their one-hop pool with their hits given to
    ``ExpandPool`` or not; the pool (id, score, text, passages, ends, kinds) and the Milvus
    requests the pool took."""
    def plan(query: QueryContext) -> Plan[tuple[list[Any], int]]:
        hits = yield from RelationSeeds(query.vector, 3, None)
        before = yield from MilvusRequests()
        pool = yield from ExpandPool(query.vector, (), tuple(h.id for h in hits),
                                     ExpansionConfig(hops=1), tuple(hits) if given else ())
        taken = (yield from MilvusRequests()) - before
        return [(c.id, c.score, c.hop, c.text, c.passage_ids, c.subject_id, c.object_id,
                 c.subject_kind, c.object_kind) for c in pool], taken
    return plan


def same_pool(pool: list[Any], other: list[Any]) -> bool:
    """The same relations in the same order with the same fields, scores equal but for
    float rounding (Milvus's similarity against numpy's)."""
    return [r[:1] + r[2:] for r in pool] == [r[:1] + r[2:] for r in other] and all(
        r[1] == pytest.approx(o[1], abs=1e-5) for r, o in zip(pool, other, strict=True))


@LITE_ONLY
def test_the_seed_relations_a_search_returned_are_not_read_again(
        family_index: GraphRAGIndex) -> None:
    """The relation hits come with everything a pool's relation holds: the served graph's
    k-hop pool takes them instead of reading the seed relations by id (one request fewer),
    and the pool is the same; in memory the hits change nothing."""
    milvus = served(family_index)
    try:
        retriever = milvus.as_retriever(method="passage")
        (read, read_requests), (given, given_requests) = (
            retriever.run(QUESTION, seed_pool(False)), retriever.run(QUESTION, seed_pool(True)))
        assert same_pool(given, read) and len(read) > 3
        assert given_requests == read_requests - 1
        awaited, awaited_requests = asyncio.run(retriever.arun(QUESTION, seed_pool(True)))
        assert awaited == given and awaited_requests == given_requests
        in_memory = family_index.as_retriever(method="passage")
        remembered = in_memory.run(QUESTION, seed_pool(True))[0]
        assert remembered == in_memory.run(QUESTION, seed_pool(False))[0]
        assert same_pool(remembered, read)
    finally:
        milvus.close()


@LITE_ONLY
def test_a_hub_is_read_by_its_relations_most_similar_to_the_query(
        make_index: Callable[..., GraphRAGIndex]) -> None:
    """A hub of 300 relations: hop 0 reads the per-hop budget of them, the most similar
    first, without reading the others."""
    towns = [(f"Town {i} lies in Sweden and has {i} bridges.",
              [(f"Town {i}", "lies in", "Sweden"), (f"Town {i}", "has", f"{i} bridges")])
             for i in range(300)]
    index = make_index(towns)
    milvus = served(index)
    try:
        question = "Which town lies in Sweden and has 7 bridges?"
        vector = milvus.embed_model.get_query_embedding(question)
        query = QueryContext(question, vector, 3)
        sweden = Triplet("a", "b", "Sweden").object_id
        seeds = Seeds((EntityHit(sweden, "Sweden", 0.9, "q"),), ())
        config = ExpansionConfig(hops=0, per_hop_max_relations=20)
        driver = SyncDriver(DriverContext.of(milvus, graph="milvus"))
        pool = driver.run(expand_pool(query, seeds, config))
        memory = index.graph.expand(vector, [sweden], [], config)
        assert len(pool) == 20
        # the 20 relations of the hub most similar to the question, exactly
        assert [c.id for c in pool] == [c.id for c in sorted(
            index.graph.expand(vector, [sweden], [], ExpansionConfig(
                hops=0, per_hop_max_relations=1000, max_candidate_relations=1000,
                per_hop_max_hub_relations=1000)),
            key=lambda c: (-c.score, c.id))[:20]]
        assert len(memory) == 20
        assert nothing_whole_was_read(milvus)
    finally:
        milvus.close()


@pytest.mark.parametrize("milvus_uri", ["lite", "server"], indirect=True)
def test_an_entity_sets_relations_are_ranked_exactly_and_a_hub_is_searched(
        make_index: Callable[..., GraphRAGIndex], milvus_uri: str) -> None:
    """Below the exact read's budget (a count first) one filtered query gives the entity's
    relations ranked exactly (a vector index's filtered search can miss the few rows a filter
    keeps); at the budget (a hub) the filtered search answers; with a FLAT index the search
    alone (exact).
    Sync and async alike."""
    towns = [(f"Town {i} lies in Sweden and has {i} bridges.",
              [(f"Town {i}", "lies in", "Sweden"), (f"Town {i}", "has", f"{i} bridges")])
             for i in range(60)]
    index = make_index(towns)
    try:
        vector = index.embed_model.get_query_embedding("Which town has 7 bridges?")
        sweden = Triplet("a", "b", "Sweden").object_id
        built = index.store.index_type
        index.store.index_type = "AUTOINDEX"  # read them all, ranked exactly
        everything = ServedGraph(index.store).relations_around(vector, [sweden], 1000)
        assert len(everything) == 60 and all(sweden == c.object_id for c in everything)
        best = everything[:10]
        assert [c.id for c in best] == [c.id for c in sorted(
            everything, key=lambda c: (-c.score, c.id))][:10]
        # the server's vector index: counted first, then read and ranked exactly, or (a hub:
        # more relations than the exact read's budget, here with exact_bytes=1) searched; a
        # FLAT index (Lite's) searches exactly at once (Lite checked both ways: the choice
        # follows the index type the store builds); relations added between the count and
        # the read (the count patched to 0): searched
        raced = ServedGraph(index.store, exact_bytes=1)
        raced._count_around = lambda entity_ids: 0  # type: ignore[method-assign]
        cases = [(ServedGraph(index.store), ["query", "query"], True),
                 (ServedGraph(index.store, exact_bytes=1), ["query", "search"], False),
                 (raced, ["query", "search"], False)]
        if index.store.is_lite:
            cases.append((ServedGraph(index.store), ["search"], False))
        for graph, calls, exact in cases:
            index.store.index_type = "FLAT" if calls == ["search"] else "AUTOINDEX"
            made: list[str] = []
            counted: list[None] = []
            graph.on_call = lambda _c=counted: _c.append(None)
            for name in ("query", "search"):
                spied = getattr(index.store.client, name)
                setattr(index.store.client, name,
                        lambda *a, _f=spied, _n=name, _m=made, **k: (_m.append(_n), _f(*a, **k))[1])
            try:
                found = graph.relations_around(vector, [sweden], 10)
            finally:
                for name in ("query", "search"):
                    delattr(index.store.client, name)
            # the search reads again while the test embedding's tie at the cut runs past the
            # rows it read: one call counted
            assert list(dict.fromkeys(made)) == list(dict.fromkeys(calls))
            assert made[:len(calls)] == calls and len(counted) == len(calls)
            assert [round(c.score, 5) for c in found] == [round(c.score, 5) for c in best]
            if exact or index.store.is_lite:  # the query's rows, or a FLAT search: exact,
                assert [c.id for c in found] == [c.id for c in best]  # ties by id at the cut
            else:  # a server's vector index: approximate, within the entity's relations
                assert {c.id for c in found} <= {c.id for c in everything}
            again = asyncio.run(graph.arelations_around(vector, [sweden], 10))
            assert [(c.id, round(c.score, 5)) for c in again] == [
                (c.id, round(c.score, 5)) for c in found]
        assert ServedGraph(index.store).relations_around(vector, [], 10) == []
        index.store.index_type = built
    finally:
        index.close()


def spy_calls(client: Any, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Each Milvus call of ``client`` from now on: its name and what it asked for (the
    output fields, ``count(*)`` for a count)."""
    made: list[tuple[str, str]] = []
    for name in ("query", "search", "get"):
        call = getattr(client, name)

        def spied(*args: Any, _call: Any = call, _name: str = name, **kwargs: Any) -> Any:
            made.append((_name, ",".join(kwargs.get("output_fields") or ())))
            return _call(*args, **kwargs)

        monkeypatch.setattr(client, name, spied)
    return made


@LITE_ONLY
def test_relations_read_first_are_not_counted_and_a_hub_is_still_searched(
        make_index: Callable[..., GraphRAGIndex], monkeypatch: pytest.MonkeyPatch) -> None:
    """``read_first``: the entity set's relations read at once (no count), ranked exactly as
    after a count; when the read fills the exact read's budget (a hub after all) the
    filtered search answers, as after a count. Sync and async alike."""
    towns = [(f"Town {i} lies in Sweden and has {i} bridges.",
              [(f"Town {i}", "lies in", "Sweden"), (f"Town {i}", "has", f"{i} bridges")])
             for i in range(60)]
    index = make_index(towns)
    try:
        index.store.index_type = "AUTOINDEX"  # a vector index: counted before a read
        vector = index.embed_model.get_query_embedding("Which town has 7 bridges?")
        sweden = Triplet("a", "b", "Sweden").object_id
        made = spy_calls(index.store.client, monkeypatch)
        counted = ServedGraph(index.store).relations_around(vector, [sweden], 10)
        assert [name for name, _ in made] == ["query", "query"] and made[0][1] == "count(*)"
        for hub in (False, True):
            graph = ServedGraph(index.store, exact_bytes=1) if hub else ServedGraph(index.store)
            made.clear()
            found = graph.relations_around(vector, [sweden], 10, read_first=True)
            # a read of the relations with their vectors, no count; past the budget, searched
            assert [name for name, _ in made][:2] == (["query", "search"] if hub
                                                     else ["query"])
            assert "count(*)" not in {fields for _, fields in made}
            assert "embedding" in made[0][1]
            if not hub:
                assert [(c.id, round(c.score, 5)) for c in found] == [
                    (c.id, round(c.score, 5)) for c in counted]
            else:  # the search's hits: the entity's relations, the best first
                assert {c.object_id for c in found} == {sweden}
                assert [round(c.score, 5) for c in found] == [round(c.score, 5)
                                                             for c in counted]
            again = asyncio.run(graph.arelations_around(vector, [sweden], 10, read_first=True))
            assert [(c.id, round(c.score, 5)) for c in again] == [
                (c.id, round(c.score, 5)) for c in found]
    finally:
        index.close()


def test_the_named_entities_relations_are_read_without_a_count(
        family_index: GraphRAGIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    """A question whose relation hits offer too few bridges: the relations of the entities
    it names are read at once (beside the hits' spreads), not counted first: one Milvus
    request fewer than counting them, the same answer as the graph in memory."""
    question = "Who was the brother of Daniel Bernoulli's father?"
    expected = summary(family_index.as_retriever(similarity_top_k=3).retrieve(question))
    milvus = served(family_index)
    try:
        milvus.store.index_type = "AUTOINDEX"  # Lite's FLAT index needs no count at all
        retriever = milvus.as_retriever(similarity_top_k=3)
        made = spy_calls(milvus.store.client, monkeypatch)
        assert summary(retriever.retrieve(question)) == expected
        assert "count(*)" not in {fields for _, fields in made}
        spared = len(made)
        # the async twin (its calls go through the async client)
        assert summary(asyncio.run(retriever.aretrieve(question))) == expected
        made.clear()
        # counted first, as before: one request more, the same answer
        around = ServedGraph.relations_around
        monkeypatch.setattr(ServedGraph, "relations_around",
                            lambda self, vector, ids, limit, read_first=False:
                            around(self, vector, ids, limit))
        assert summary(retriever.retrieve(question)) == expected
        assert [fields for _, fields in made].count("count(*)") == 1
        assert len(made) == spared + 1
    finally:
        milvus.close()


@LITE_ONLY
def test_relations_gone_from_milvus_are_left_out(family_index: GraphRAGIndex) -> None:
    """A passage's stored triplet whose relation another writer deleted since (or that was
    never stored) is no own relation of it."""
    milvus = served(family_index)
    try:
        node = TextNode(text="Euler and nobody.", metadata={TRIPLETS_KEY: [
            ["Leonhard Euler", "was a student of", "Johann Bernoulli"],
            ["Nobody", "deleted", "Meanwhile"]]})
        vector = milvus.embed_model.get_query_embedding(QUESTION)
        driver = SyncDriver(DriverContext.of(milvus, graph="milvus"))
        [owns] = driver.answer(OwnRelations((node,), vector, 5))
        assert [c.text for c in owns] == ["Leonhard Euler was a student of Johann Bernoulli"]
    finally:
        milvus.close()


@LITE_ONLY
def test_auto_serves_the_graph_above_its_budget(family_index: GraphRAGIndex,
                                                caplog: pytest.LogCaptureFixture) -> None:
    relations = family_index.store.count(family_index.store.relation_collection)
    size = graph_bytes(relations, family_index.store.dim or 0)
    small = GraphRAGIndex(uri=family_index.store.uri, embed_model=family_index.embed_model,
                          graph_memory_budget=size - 1)
    large = GraphRAGIndex(uri=family_index.store.uri, embed_model=family_index.embed_model,
                          graph_memory_budget=size)
    try:
        with caplog.at_level(logging.INFO, logger="llama_index_graphrag_milvus.index_cache"):
            assert small.graph_mode == "milvus" and large.graph_mode == "memory"
        assert "served by Milvus" in caplog.text and "held in memory" in caplog.text
        nodes = small.as_retriever().retrieve(QUESTION)
        assert nodes and nothing_whole_was_read(small)
        # a write decides again: the graph grew past the budget
        large.insert_triplets([("Ada met Tom.", [("Ada", "met", "Tom")])])
        assert large.graph_mode == "milvus"
    finally:
        small.close()
        large.close()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"graph_memory_budget": 0}, "graph_memory_budget must be an integer >= 1"),
    ({"graph_memory_budget": -5}, "graph_memory_budget must be an integer >= 1"),
    ({"graph_memory_budget": 1.5}, "graph_memory_budget must be an integer"),
    ({"graph": "disk"}, "graph must be one of"),
])
@LITE_ONLY
def test_bad_graph_settings_are_refused(milvus_uri: str, kwargs: dict[str, Any],
                                        message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        GraphRAGIndex(uri=milvus_uri, embed_model=HashEmbedding(), **kwargs)


@SERVER_ONLY
def test_the_server_indexes_the_relations_ends(family_index: GraphRAGIndex) -> None:
    store = family_index.store
    assert {"subject_id", "object_id"} <= set(field_indexes(store.client,
                                                             store.relation_collection))


def test_passages_get_the_vector_index_of_the_graph_collections(
        family_index: GraphRAGIndex) -> None:
    # a server's AUTOINDEX, not MilvusVectorStore's FLAT (a scan of every passage per search)
    store = family_index.store
    kinds = {collection: field_indexes(store.client, collection)["embedding"]["index_type"]
             for collection in (store.passage_collection, store.relation_collection)}
    assert set(kinds.values()) == {store.index_type}
    assert store.index_type == ("FLAT" if store.is_lite else "AUTOINDEX")


@SERVER_ONLY
def test_an_older_server_index_gets_the_ends_indexed_on_open(
        family_index: GraphRAGIndex) -> None:
    store = family_index.store
    for field, info in field_indexes(store.client, store.relation_collection).items():
        if field in ("subject_id", "object_id"):
            store.client.release_collection(store.relation_collection)
            store.client.drop_index(store.relation_collection, info["index_name"])
    reopened = served(family_index)
    try:
        assert {"subject_id", "object_id"} <= set(field_indexes(store.client,
                                                                 store.relation_collection))
        assert summary(reopened.as_retriever(similarity_top_k=3).retrieve(QUESTION))
    finally:
        reopened.close()



TOWNS = [(f"Town {i} lies in Sweden.", [(f"Town {i}", "lies in", "Sweden")])
         for i in range(40)]
PAIRS = [*((f"Ada {i} met Bob {i}.", [(f"Ada {i}", "met", f"Bob {i}")]) for i in range(3)),
         ("Ada 0 also met Cy.", [("Ada 0", "met", "Cy")])]
ADAS = [Triplet(name, "x", "y").subject_id for name in ("Ada 0", "Ada 1", "Ada 2")]
SWEDEN = Triplet("a", "b", "Sweden").object_id


def test_entity_passages_are_one_read_by_id_whatever_the_degrees(
        make_index: Callable[..., GraphRAGIndex], monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the bridges lead (``EntityPassages``): the passages each entity row lists, one
    read by id for all the entities asked, a hub among them (no relation read); the
    passages the in-memory graph gives, capped."""
    index = make_index([*TOWNS, *PAIRS])
    milvus = served(index)
    try:
        assert milvus.store.records_entity_passages
        queries = count_query_rows(milvus.store.client, monkeypatch)
        gets = count_query_rows(milvus.store.client, monkeypatch, "get")
        graph = ServedGraph(milvus.store)
        found = graph.entity_passages([SWEDEN, *ADAS, "unknown"], 5)
        assert (queries, gets) == ([], [4])
        assert {e: set(found[e]) for e in ADAS} == {
            e: set(index.graph.entity_passages(e, 5)) for e in ADAS}
        assert len(found[ADAS[0]]) == 2  # Ada 0: two passages
        assert len(found[SWEDEN]) == 5 and found["unknown"] == []
        assert set(found[SWEDEN]) <= set(index.graph.entity_passages(SWEDEN, 100))
        assert asyncio.run(graph.aentity_passages([SWEDEN, *ADAS, "unknown"], 5)) == found
        assert graph.entity_passages([], 5) == {}
    finally:
        milvus.close()


def test_entity_passages_of_an_older_collection_are_one_query_a_hub_two(
        make_index: Callable[..., GraphRAGIndex], monkeypatch: pytest.MonkeyPatch) -> None:
    """An entity collection that does not list passages (written before it did): one query
    of the relations for all the entities asked, a second for those a hub crowded out; the
    passages the in-memory graph gives, capped."""
    index = make_index([*TOWNS, *PAIRS])
    milvus = served(index)
    try:
        ids, sweden = ADAS, SWEDEN
        milvus.store.records_entity_passages = False
        calls = count_query_rows(milvus.store.client, monkeypatch)
        graph = ServedGraph(milvus.store)
        small = graph.entity_passages(ids, 5)
        assert len(calls) == 1
        assert {e: set(p) for e, p in small.items()} == {
            e: set(index.graph.entity_passages(e, 5)) for e in ids}
        assert len(small[ids[0]]) == 2  # Ada 0: two passages
        calls.clear()
        mixed = graph.entity_passages([sweden, *ids, "unknown"], 5)
        assert len(calls) == 2 and calls[0] == 5 * 5  # the hub filled the first answer
        assert len(mixed[sweden]) == 5 and mixed["unknown"] == []
        assert {e: set(mixed[e]) for e in ids} == {e: set(small[e]) for e in ids}
        assert asyncio.run(graph.aentity_passages([sweden, *ids, "unknown"], 5)) == mixed
    finally:
        milvus.close()
