"""Local search on a served index reads only its entities' communities (issue 34): the same
reports, entity table and descriptions as with the graph in memory, from bounded reads, never
the whole community or description collection."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.schema import NodeWithScore, QueryBundle

from llama_index_graphrag_milvus import GraphRAGIndex
from llama_index_graphrag_milvus.communities import build
from llama_index_graphrag_milvus.communities.around import (
    LocalCommunities,
    ServedCommunities,
    deepest,
)
from llama_index_graphrag_milvus.communities.build import STATE_KEY
from llama_index_graphrag_milvus.communities.local_search import rank_communities
from llama_index_graphrag_milvus.errors import (
    CommunitiesNotBuiltError,
    EmbeddingDimensionError,
    InvalidInputError,
)
from llama_index_graphrag_milvus.ids import entity_id
from llama_index_graphrag_milvus.metadata import CONTEXT_KIND_KEY
from llama_index_graphrag_milvus.records import Community, CommunityReport
from tests.communities.test_communities import QUESTION, described_passages, groups
from tests.conftest import FAMILY
from tests.support.fakes import HashEmbedding

pytestmark = pytest.mark.milvus
XDIST_GROUP = "local_served"  # the module's Lite index is built once, on one worker

ODD = 'Ada "the \\ Countess" Lovelace'
"""An entity name a filter must quote (double quote, backslash)."""


def data() -> list[Any]:
    odd = [(f"{ODD} wrote notes with Charles Babbage.",
            [(ODD, "wrote notes with", "Charles Babbage")]),
           (f"Charles Babbage built engines with {ODD}.",
            [("Charles Babbage", "built engines with", ODD)])]
    return [*FAMILY, *groups(4, 5), *described_passages(), *odd]


@pytest.fixture(scope="module")
def uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One index, communities in several levels and split into part rows (two members a
    row), descriptions stored: built once, only read by the tests."""
    path = str(tmp_path_factory.mktemp("local_served") / "local.db")
    patch = pytest.MonkeyPatch()
    patch.setattr(build, "COMMUNITY_MEMBERS_PER_ROW", 2)
    index = GraphRAGIndex.from_triplets(data(), uri=path, embed_model=HashEmbedding(dim=64))
    stats = index.build_communities(max_cluster_size=4)
    patch.undo()
    assert stats.levels >= 2 and stats.descriptions is not None
    index.close()
    yield path


def parts(nodes: list[NodeWithScore], kind: str) -> list[tuple[str, Any]]:
    return [(n.node.get_content(), n.node.metadata.get("graphrag_community"))
            for n in nodes if n.node.metadata[CONTEXT_KIND_KEY] == kind]


def refuse_whole_reads(index: GraphRAGIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a served local search read a whole collection")

    for side in (index.store.communities, index.store.descriptions):
        monkeypatch.setattr(side, "read", refuse)
    monkeypatch.setattr(index.store, "read_all", refuse)


@pytest.mark.parametrize("level", [None, 0, 1])
def test_served_local_search_gives_the_memory_context_from_its_own_communities(
        uri: str, level: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    memory = GraphRAGIndex(uri=uri, embed_model=HashEmbedding(dim=64), graph="memory")
    served = GraphRAGIndex(uri=uri, embed_model=HashEmbedding(dim=64), graph="milvus")
    try:
        expected = memory.as_local_retriever(similarity_top_k=4, level=level).retrieve(QUESTION)
        refuse_whole_reads(served, monkeypatch)
        local = served.as_local_retriever(similarity_top_k=4, level=level)
        found = local.retrieve(QUESTION)
        assert parts(found, "report") and parts(found, "report") == parts(expected, "report")
        assert parts(found, "entities") == parts(expected, "entities")
        assert "PERSON: " in parts(found, "entities")[0][0]  # descriptions read by id
        # the relation table may hold other relations (a hub's are searched), each with
        # the description the memory table gives it
        table = memory.communities.descriptions.relations
        [relations] = [n for n in found if n.node.metadata[CONTEXT_KIND_KEY] == "relations"]
        for relation in relations.node.metadata["graphrag_relations"]:
            description = table.get(relation["id"], ("", 0.0))[0]
            line = f"{relation['text']}: {description}" if description else relation["text"]
            assert line in relations.node.get_content().splitlines()
        again = asyncio.run(local.aretrieve(QUESTION))
        assert [n.node.get_content() for n in again] == [n.node.get_content() for n in found]
        assert served.cache.peek("communities") is None and served.cache.peek("graph") is None
    finally:
        memory.close()
        served.close()


@pytest.mark.parametrize("level", [None, 0])
def test_served_report_retriever_searches_the_community_collection(
        uri: str, level: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a served index the report retriever is one vector search of the community
    collection: the same reports, order and scores as the in-memory cosine ranking."""
    memory = GraphRAGIndex(uri=uri, embed_model=HashEmbedding(dim=64), graph="memory")
    served = GraphRAGIndex(uri=uri, embed_model=HashEmbedding(dim=64), graph="milvus")
    try:
        expected = memory.as_report_retriever(level=level, similarity_top_k=4).retrieve(
            QUESTION)
        refuse_whole_reads(served, monkeypatch)
        retriever = served.as_report_retriever(level=level, similarity_top_k=4)
        for found in (retriever.retrieve(QUESTION),
                      asyncio.run(retriever.aretrieve(QUESTION))):
            assert [(n.node.node_id, n.node.get_content(),
                     n.node.metadata["graphrag_community"]) for n in found] == [
                (n.node.node_id, n.node.get_content(), n.node.metadata["graphrag_community"])
                for n in expected]
            assert [n.score for n in found] == pytest.approx([n.score for n in expected],
                                                             abs=1e-5)
        assert served.cache.peek("communities") is None
        with pytest.raises(InvalidInputError, match="level"):
            served.as_report_retriever(level=9).retrieve(QUESTION)
        for index in (memory, served):  # a caller's vector is the caller's mistake
            with pytest.raises(EmbeddingDimensionError, match=r"QueryBundle\.embedding has 16"):
                index.as_report_retriever().retrieve(QueryBundle(QUESTION, embedding=[0.1] * 16))
    finally:
        memory.close()
        served.close()


def test_memberships_across_part_rows_and_quoted_names(uri: str) -> None:
    """An entity listed in a community's second part row is found; a name with quotes and
    backslashes is matched literally; an unknown entity has no community."""
    index = GraphRAGIndex(uri=uri, embed_model=HashEmbedding(dim=64), graph="memory")
    try:
        communities = index.communities
        depth = communities.num_levels - 1
        listed = {e for r in communities.reports.values() for e in r.community.entity_ids}
        wanted = [*sorted(listed)[:12], entity_id(ODD), entity_id("nobody at all")]
        expected = communities.around(wanted, depth)
        served = ServedCommunities(index.store)
        for found in (served.around(wanted, depth),
                      asyncio.run(served.aaround(wanted, depth))):
            assert dict(found.community) == dict(expected.community)
            assert entity_id(ODD) in found.community
            assert entity_id("nobody at all") not in found.community
            for cid, report in found.reports.items():
                assert report.as_text() == expected.reports[cid].as_text()
                assert report.community.entity_ids == ()  # no member lists read
        split = [r for r in communities.reports.values() if len(r.community.entity_ids) > 2]
        assert split  # members beyond the first part row exist
        late = split[0].community.entity_ids[-1]
        assert served.around([late], split[0].level).community[late] == \
            communities.around([late], split[0].level).community[late]
    finally:
        index.close()


def test_served_local_search_before_and_after_an_interrupted_build(tmp_path: Path) -> None:
    path = str(tmp_path / "none.db")
    index = GraphRAGIndex.from_triplets(FAMILY, uri=path, embed_model=HashEmbedding(dim=64),
                                        graph="milvus")
    try:
        with pytest.raises(CommunitiesNotBuiltError, match="never built"):
            index.as_local_retriever().retrieve(QUESTION)
        index.build_communities()
        assert parts(index.as_local_retriever().retrieve(QUESTION), "report")
        index.store.communities.set_properties({STATE_KEY: "building"})
        fresh = GraphRAGIndex(uri=path, embed_model=HashEmbedding(dim=64), graph="milvus")
        try:
            with pytest.raises(CommunitiesNotBuiltError, match="interrupted"):
                fresh.as_local_retriever().retrieve(QUESTION)
            with pytest.raises(InvalidInputError, match="level"):
                index.as_local_retriever(level=7).retrieve(QUESTION)
        finally:
            fresh.close()
    finally:
        index.close()


def test_deepest_membership_and_ranking() -> None:
    rows = [{"community_id": "root", "level": 0}, {"community_id": "leaf", "level": 1}]
    assert deepest(rows, 1) == "leaf" and deepest(rows, 0) == "root" and deepest([], 3) is None

    def report(cid: str, rating: float) -> CommunityReport:
        return CommunityReport(Community(cid, 0, "", (), ()), cid, "", (), rating, "", "llm")

    local = LocalCommunities({"a": "c1", "b": "c2", "c": "c2"},
                             {"c1": report("c1", 9.0), "c2": report("c2", 1.0)})
    passages = {"a": ["p1"], "b": ["p1", "p2"], "c": ["p3"]}
    assert rank_communities(local, ["a", "b", "c", "zz"], passages) == [("c2", 3), ("c1", 1)]
    assert rank_communities(local, ["a"], {"a": ["p1"]}) == [("c1", 1)]


@pytest.mark.parametrize("milvus_uri", ["server"], indirect=True)
def test_on_a_milvus_server(milvus_uri: str) -> None:
    """The server's filters on the arrays of members (``array_contains``) and children
    (``array_length``) find the same communities as the loaded set."""
    index = GraphRAGIndex.from_triplets([*FAMILY, *groups(3, 4)], uri=milvus_uri,
                                        embed_model=HashEmbedding(dim=64))
    served = GraphRAGIndex(uri=milvus_uri, embed_model=HashEmbedding(dim=64), graph="milvus")
    try:
        index.build_communities()
        expected = index.as_local_retriever(similarity_top_k=3).retrieve(QUESTION)
        found = served.as_local_retriever(similarity_top_k=3).retrieve(QUESTION)
        assert parts(found, "report") and parts(found, "report") == parts(expected, "report")
        # the report retriever's filter on the array of children (array_length)
        reports = served.as_report_retriever(similarity_top_k=3).retrieve(QUESTION)
        assert [n.node.node_id for n in reports] == [
            n.node.node_id for n in index.as_report_retriever(similarity_top_k=3).retrieve(
                QUESTION)]
        assert served.cache.peek("communities") is None
    finally:
        served.close()
        index.close()


BROTHERS = "Was Jakob Bernoulli older than Johann Bernoulli?"


@pytest.mark.parametrize("graph", ["memory", "milvus"])
def test_the_entities_a_question_names_join_the_context(uri: str, graph: str) -> None:
    """With one entity by similarity, the vector search finds one Bernoulli at most; the
    names the question holds as words bring both into the entity table (and their
    relations and communities), unless ``match_entity_names=False``."""
    index = GraphRAGIndex(uri=uri, embed_model=HashEmbedding(dim=64), graph=graph)
    try:
        def table(**kwargs: Any) -> str:
            local = index.as_local_retriever(similarity_top_k=2, context_entity_top_k=1,
                                             **kwargs)
            [(text, _)] = parts(local.retrieve(BROTHERS), "entities")
            return text

        alone, named = table(match_entity_names=False), table()
        assert not ("Jakob Bernoulli" in alone and "Johann Bernoulli" in alone)
        assert "Jakob Bernoulli" in named and "Johann Bernoulli" in named
        assert len(named.splitlines()) > len(alone.splitlines())
    finally:
        index.close()


def test_a_fresh_served_index_loads_the_description_collection(uri: str) -> None:
    """A Lite file reopened by a served index alone (no in-memory read loading the
    collections first): the descriptions are read by id from a loaded collection (they
    were "released", and local search failed)."""
    index = GraphRAGIndex(uri=uri, embed_model=HashEmbedding(dim=64), graph="milvus")
    try:
        found = index.as_local_retriever(similarity_top_k=2).retrieve(QUESTION)
        assert "PERSON: " in parts(found, "entities")[0][0]
    finally:
        index.close()


def test_a_fresh_served_index_searches_the_reports(uri: str) -> None:
    """The report retriever of a Lite file reopened by a served index alone: the community
    collection is loaded before its search."""
    index = GraphRAGIndex(uri=uri, embed_model=HashEmbedding(dim=64), graph="milvus")
    try:
        found = index.as_report_retriever(similarity_top_k=2).retrieve(QUESTION)
        assert len(found) == 2 and all(n.node.metadata["graphrag_community"] for n in found)
    finally:
        index.close()
