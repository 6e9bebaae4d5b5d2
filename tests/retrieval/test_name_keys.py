"""Entity names matched whatever their accents and case (the entity rows' ``name_key``): a
question that writes "Aschenbrodel" seeds the entity "Aschenbrödel", and the explorer's
search finds "Zürich" for "zurich", in both graph modes alike; an index made before the
keys matches names as written, in both modes, until ``index.upgrade()`` records them, which
keeps every entity's passages, vector and tenant as they were."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from llama_index.core.schema import Document

from llama_index_graphrag_milvus import GraphRAGIndex
from llama_index_graphrag_milvus.explore import ExplorerData
from llama_index_graphrag_milvus.ids import entity_id
from llama_index_graphrag_milvus.milvus.schema import ENTITY_FIELDS, ENTITY_PASSAGE_FIELDS
from llama_index_graphrag_milvus.words import name_key
from tests.support.fakes import HashEmbedding
from tests.support.indexes import field_indexes
from tests.support.layouts import create_older_layout

pytestmark = pytest.mark.milvus

OPERETTA = [
    ("Aschenbrödel is an operetta by Karel Komzák.",
     [("Aschenbrödel", "is an operetta by", "Karel Komzák")]),
    ("Karel Komzák was born in Prague and played in Zürich.",
     [("Karel Komzák", "was born in", "Prague"), ("Karel Komzák", "played in", "Zürich")]),
    ("Zürich lies on the Limmat.", [("Zürich", "lies on", "Limmat")]),
]
QUESTION = "Where was the composer of Aschenbrodel born?"
ASCHENBRODEL = entity_id("Aschenbrödel")


def seeds(index: GraphRAGIndex, question: str = QUESTION) -> list[tuple[str, str]]:
    """``(name, searched)`` of the entity seeds of a k-hop retrieval."""
    retriever = index.as_retriever(method="passage", entity_top_k=1, similarity_top_k=3)
    return [(s.name, s.searched) for s in retriever.explain(question).entity_seeds]


def found(index: GraphRAGIndex, text: str) -> list[str]:
    return [hit["name"] for hit in ExplorerData(index).search_entities(text)]


def both_modes(uri: str) -> list[GraphRAGIndex]:
    return [GraphRAGIndex(uri=uri, embed_model=HashEmbedding(dim=64), graph=graph)
            for graph in ("memory", "milvus")]


def test_a_name_without_its_accents_seeds_the_entity_in_both_modes(tmp_path: Path) -> None:
    built = GraphRAGIndex.from_triplets(OPERETTA, uri=str(tmp_path / "op.db"),
                                        embed_model=HashEmbedding(dim=64))
    built.close()
    for index in both_modes(str(tmp_path / "op.db")):
        try:
            assert index.store.records_name_keys and not index.store.needs_upgrade()
            assert ("Aschenbrödel", "Aschenbrodel") in seeds(index)
            assert found(index, "zurich") == found(index, "ZÜRICH") == ["Zürich"]
            assert found(index, "komzak") == ["Karel Komzák"]
            assert found(index, "no such name") == []
        finally:
            index.close()


def test_names_sharing_a_key_are_all_seeded(tmp_path: Path) -> None:
    """Two extractors wrote one city with and without its accent: both are named."""
    index = GraphRAGIndex.from_triplets(
        [*OPERETTA, ("Zurich hosts FIFA.", [("Zurich", "hosts", "FIFA")])],
        uri=str(tmp_path / "two.db"), embed_model=HashEmbedding(dim=64))
    index.close()
    for index in both_modes(str(tmp_path / "two.db")):
        try:
            # one by the vector search (entity_top_k=1), the other by its name's key
            assert {name for name, _ in seeds(index, "What lies in Zurich?")} >= {
                "Zurich", "Zürich"}
            assert sorted(found(index, "zurich")) == ["Zurich", "Zürich"]
        finally:
            index.close()


def index_of_0_2(uri: str, tenant_key: str | None = None) -> GraphRAGIndex:
    """An index whose entity rows list their passages but record no name keys (as 0.2
    created them), with the operetta passages (of tenant "acme" with a ``tenant_key``)."""
    create_older_layout(uri, (*ENTITY_FIELDS, *ENTITY_PASSAGE_FIELDS), tenant_key)
    tenants = tenant_key is not None
    index = GraphRAGIndex(uri=uri, embed_model=HashEmbedding(dim=64))
    index.insert_triplets([(Document(text=text, metadata={tenant_key: "acme"} if tenants
                                     else {}), triplets) for text, triplets in OPERETTA])
    return index


def entity_rows(index: GraphRAGIndex) -> dict[str, dict[str, Any]]:
    store = index.store
    fields = ["name", "embedding", "passage_ids", *(["tenants"] if store.tenant_key else [])]
    return {row["id"]: {k: (list(v) if k != "name" else v) for k, v in row.items()}
            for row in store.read_all(store.entity_collection, fields)}


@pytest.mark.parametrize(("milvus_uri", "tenant_key"), [
    pytest.param("lite", None, id="lite"),
    pytest.param("lite", "tenant_id", id="lite-tenant_key"),
    pytest.param("server", None, id="server", marks=pytest.mark.server),
], indirect=["milvus_uri"])
def test_an_index_of_0_2_matches_names_as_written_until_upgraded(
        milvus_uri: str, tenant_key: str | None) -> None:
    index = index_of_0_2(milvus_uri, tenant_key)
    served = GraphRAGIndex(uri=milvus_uri, embed_model=HashEmbedding(dim=64), graph="milvus")
    try:
        assert index.store.records_entity_passages and not index.store.records_name_keys
        assert index.store.needs_upgrade()
        for each in (index, served):  # both modes match as written, alike
            assert all(name != "Aschenbrödel" for name, _ in seeds(each))
            assert found(each, "zurich") == [] and found(each, "zürich") == ["Zürich"]
        # a passage linked later: Zürich's list is in the order of linking, not of reading
        index.insert_triplets([(Document(text="The Limmat flows through Zürich.",
                                         metadata={tenant_key: "acme"} if tenant_key else {}),
                                [("Limmat", "flows through", "Zürich")])])
        before = entity_rows(index)
        assert index.upgrade() == len(before)
        assert index.store.records_name_keys and not index.store.needs_upgrade()
        assert entity_rows(index) == before  # lists (in order), vectors, tenants kept
        keys = {row["id"]: row["name_key"] for row in index.store.read_all(
            index.store.entity_collection, ["name_key"])}
        assert keys[ASCHENBRODEL] == "aschenbrodel" == name_key("Aschenbrödel")
        if not index.store.is_lite:
            assert "name_key" in field_indexes(index.store.client,
                                               index.store.entity_collection)
        assert index.upgrade() == 0
        served.refresh()  # opened before the upgrade: reads the layout again
        for each in (index, served):
            assert ("Aschenbrödel", "Aschenbrodel") in seeds(each)
            assert found(each, "zurich") == ["Zürich"]
        # the object opened before the upgrade writes the keys of its new entities
        served.insert_triplets([(Document(text="Bern is the Swiss capital.",
                                          metadata={tenant_key: "acme"} if tenant_key else {}),
                                 [("Bern", "is the capital of", "Schweiz")])])
        assert index.store.get_rows(index.store.entity_collection, [entity_id("Bern")],
                                    ["name_key"])[entity_id("Bern")]["name_key"] == "bern"
    finally:
        served.close()
        index.close()


@pytest.mark.parametrize("graph", ["memory", "milvus"])
def test_names_with_quotes_and_backslashes_are_matched_literally(tmp_path: Path,
                                                                 graph: str) -> None:
    """The keys go into a Milvus filter (and the explorer's ``like``) as text: quotes and
    backslashes are matched as written, and nothing fails."""
    index = GraphRAGIndex.from_triplets(
        [*OPERETTA, ('Ó\'Brien "Bank" \\ Zürich lends money.',
                     [('Ó\'Brien "Bank" \\ Zürich', "lends", "money")])],
        uri=str(tmp_path / "hostile.db"), embed_model=HashEmbedding(dim=64), graph=graph)
    try:
        named = {name for name, _ in seeds(index, 'Who founded O\'Brien "Bank" \\ Zurich?')}
        assert 'Ó\'Brien "Bank" \\ Zürich' in named
        assert len(index.as_retriever(method="passage").retrieve('What is "\\" in Prague?')) > 0
        assert found(index, '"bank" \\ zurich') == ['Ó\'Brien "Bank" \\ Zürich']
    finally:
        index.close()
