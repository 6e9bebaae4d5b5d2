"""The explorer on a served index (``graph="milvus"``, Milvus Lite): the same answers as in
memory where they are defined alike, pages of an entity's relations in relation id order,
a sampled degree distribution said to be one, no collection read whole, and the same errors.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from llama_index.core.vector_stores import MetadataFilter, MetadataFilters
from starlette.testclient import TestClient

from llama_index_graphrag_milvus import GraphRAGIndex, InvalidInputError
from llama_index_graphrag_milvus.errors import MilvusStoreError
from llama_index_graphrag_milvus.explore import ExplorerData, NotFoundError
from llama_index_graphrag_milvus.explore.app import create_app
from llama_index_graphrag_milvus.explore.data import MAX_PAGE
from llama_index_graphrag_milvus.explore.memory import MemoryGraphView
from llama_index_graphrag_milvus.explore.served import IdPages, ServedGraphView
from llama_index_graphrag_milvus.ids import entity_id
from tests.explore.test_data import HUB
from tests.support.explain_data import FAMILY_WITH_HOSTILE_PASSAGES
from tests.support.fakes import HashEmbedding

pytestmark = pytest.mark.milvus

HOSTILE_IDS = ["nope", 'a"b', "back\\slash", '" or "1"=="1', "x" * 500, "\ud800", "",
               "line\nbreak"]
"""Entity ids no index holds: quotes, backslashes, filter syntax, too long, not UTF-8."""
WHOLE_READS = ("read_all", "read_relations", "read_entities", "read_passage_vectors",
               "read_passage_words", "passage_ids_where")
"""The store's reads of whole collections."""


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GraphRAGIndex]:
    built = GraphRAGIndex.from_triplets(FAMILY_WITH_HOSTILE_PASSAGES + HUB,
                                        uri=str(tmp_path_factory.mktemp("served") / "x.db"),
                                        embed_model=HashEmbedding(dim=64), graph="memory")
    yield built
    built.close()


@pytest.fixture(scope="module")
def served(memory: GraphRAGIndex) -> Iterator[GraphRAGIndex]:
    """Another index object on the same collections, its graph served by Milvus."""
    index = GraphRAGIndex(uri=memory.store.uri, embed_model=memory.embed_model,
                          collection_prefix=memory.store.prefix, graph="milvus")
    yield index
    index.close()


@pytest.fixture()
def nothing_whole(served: GraphRAGIndex, monkeypatch: pytest.MonkeyPatch) -> GraphRAGIndex:
    """The served index, every whole-collection read and in-memory copy refusing to run."""
    def refuse(name: str) -> Any:
        def refused(*args: object, **kwargs: object) -> Any:
            raise AssertionError(f"{name} read a collection whole")
        return refused

    for name in WHOLE_READS:
        monkeypatch.setattr(served.store, name, refuse(f"store.{name}"))
    for name in ("graph", "entity_table", "passage_table", "aget_graph"):
        monkeypatch.setattr(served.cache, name, refuse(f"cache.{name}"))
    return served


def all_pages(data: ExplorerData, entity: str, limit: int) -> list[dict[str, Any]]:
    relations: list[dict[str, Any]] = []
    offset = 0
    while True:
        page = data.neighbourhood(entity, offset, limit)
        relations += page["relations"]
        offset += limit
        if offset >= page["total"]:
            return relations


def test_a_served_explorer_reads_milvus_and_says_what_it_sampled(
        memory: GraphRAGIndex, nothing_whole: GraphRAGIndex) -> None:
    data = ExplorerData(nothing_whole)
    assert isinstance(data.graph, ServedGraphView)
    expected = ExplorerData(memory).summary()
    summary = data.summary()
    assert summary["counts"] == expected["counts"]
    assert expected["sample"] is None
    assert summary["sample"] == {"entities": 73, "of": 73}  # the whole of a small index
    assert summary["degrees"] == expected["degrees"]
    assert summary["hubs"][0] == expected["hubs"][0] == {
        "id": entity_id("The Hub"), "name": "The Hub", "degree": 60}
    small = ServedGraphView(nothing_whole, window=16, sample=20).degrees()
    assert small.sample == {"entities": 20, "of": 73}
    assert sum(b["entities"] for b in small.histogram) == 20


def test_neighbourhood_pages_cover_the_same_relations_in_id_order(
        memory: GraphRAGIndex, nothing_whole: GraphRAGIndex) -> None:
    mine, theirs = ExplorerData(nothing_whole), ExplorerData(memory)
    for name in ("The Hub", "Johann Bernoulli", "Leonhard Euler"):
        eid = entity_id(name)
        expected = {r["id"]: r for r in all_pages(theirs, eid, 7)}
        found = all_pages(mine, eid, 7)
        assert [r["id"] for r in found] == sorted(expected)  # each once, in id order
        assert {r["id"]: r for r in found} == expected  # the same texts, ends, passages
        first = mine.neighbourhood(eid, 0, 3)
        assert first["entity"] == theirs.neighbourhood(eid, 0, 3)["entity"]
        assert first["total"] == len(expected)
    # a hub beyond the read window is paged by id ranges: the same pages
    hub = entity_id("The Hub")
    ranges = ServedGraphView(nothing_whole, window=16)
    by_ranges = [r for offset in range(0, 60, 9)
                 for r in ranges.neighbourhood(hub, offset, 9)["relations"]]
    assert [r["id"] for r in by_ranges] == [r["id"] for r in all_pages(mine, hub, 9)]


def test_id_pages_agree_however_the_ids_are_read(served: GraphRAGIndex) -> None:
    store = served.store
    whole = IdPages(store, store.passage_collection)
    total = whole.count()
    expected = whole.page(0, total, total)
    assert expected == sorted(expected) and len(expected) == total == 66
    for window in (16, 32, 64):
        pages = IdPages(store, store.passage_collection, window=window)
        assert [i for offset in range(0, total, 5)
                for i in pages.page(offset, 5, total)] == expected, window
        assert pages.page(total, 5, total) == pages.page(10**9, 5, total) == []
    # ranges that fill the window are read again as their sixteen sub-ranges
    tiny = IdPages(store, store.passage_collection, window=2)
    assert [i for offset in range(total) for i in tiny.page(offset, 1, total)] == expected


def test_passages_and_search_answer_as_in_memory(memory: GraphRAGIndex,
                                                 nothing_whole: GraphRAGIndex) -> None:
    mine, theirs = ExplorerData(nothing_whole), ExplorerData(memory)
    for offset in (0, 30, 60, 10**9):
        assert mine.passages(offset, 30) == theirs.passages(offset, 30)
    for text in ("bernoulli", "BERNOULLI", "person 1", "<SCRIPT>", "graphragPwned",
                 '"', "\\", "%", "_", "no such name"):
        assert mine.search_entities(text, 5) == theirs.search_entities(text, 5), text
    passage = mine.passages(0, 1)["passages"][0]
    assert mine.passage(passage["id"]) == passage


def test_a_milvus_without_infix_patterns_finds_names_by_their_start(
        nothing_whole: GraphRAGIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    view = ServedGraphView(nothing_whole)
    like = view._like

    def before_2_4(text: str, infix: bool) -> list[dict[str, Any]]:
        if infix:
            raise MilvusStoreError("like: prefix match only")
        return like(text, infix)

    monkeypatch.setattr(view, "_like", before_2_4)
    assert [h["name"] for h in view.search("person 1", 3)] == ["Person 1", "Person 10",
                                                               "Person 11"]
    assert view.infix is False and view.search("bernoulli", 5) == []  # not a prefix


def test_bad_requests_fail_as_in_memory(memory: GraphRAGIndex,
                                        nothing_whole: GraphRAGIndex) -> None:
    for data in (ExplorerData(nothing_whole), ExplorerData(memory)):
        for bad in HOSTILE_IDS:
            with pytest.raises(NotFoundError, match="no entity"):
                data.neighbourhood(bad, 0, 10)
        hub = entity_id("The Hub")
        page = data.neighbourhood(hub, 10**12, 10)
        assert (page["relations"], page["total"]) == ([], 60)
        with pytest.raises(InvalidInputError, match="limit"):
            data.neighbourhood(hub, 0, MAX_PAGE + 1)
        with pytest.raises(InvalidInputError, match="offset"):
            data.neighbourhood(hub, -1, 10)
        with pytest.raises(InvalidInputError, match="at most 200"):
            data.search_entities("x" * 201)
        with pytest.raises(NotFoundError):
            data.passage('" or "1"=="1')
    with TestClient(create_app(nothing_whole), base_url="http://127.0.0.1") as client:
        assert client.get("/api/entity/a%22b%5Cc").status_code == 404
        assert client.get(f"/api/entity/{'x' * 5000}").status_code == 404
        assert client.get("/api/summary").json()["sample"]["entities"] == 73


def test_a_filtered_explorer_of_a_served_index_reads_the_graph_in_memory(
        served: GraphRAGIndex, caplog: pytest.LogCaptureFixture) -> None:
    only = MetadataFilters(filters=[MetadataFilter(key="missing", value="x")])
    with caplog.at_level(logging.WARNING, "llama_index_graphrag_milvus.explore.data"):
        data = ExplorerData(served, only)
    assert isinstance(data.graph, MemoryGraphView)
    assert "reads the whole graph" in caplog.text
    assert data.summary()["counts"]["relations"] == 0
