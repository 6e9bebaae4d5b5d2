"""Entity passages: each entity row lists the passages its relations come from, kept by
inserts, re-ingestion with other triplets, updates and deletes; a hub's list is capped; an
index written before entities listed them is read and written without them."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from llama_index.core.schema import Document, TextNode

from llama_index_graphrag_milvus import GraphRAGIndex, MilvusStoreError
from llama_index_graphrag_milvus.ingestion import entity_rows
from llama_index_graphrag_milvus.milvus.schema import (
    ENTITY_FIELDS,
)
from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore
from llama_index_graphrag_milvus.records import Triplet
from tests.support.fakes import HashEmbedding
from tests.support.indexes import field_indexes
from tests.support.layouts import create_older_layout
from tests.support.markers import LITE_ONLY

pytestmark = pytest.mark.milvus  # every test here opens Milvus (Lite, or the test server)

EULER = Triplet("Euler", "x", "y").subject_id
BASEL = Triplet("x", "y", "Basel").object_id


def listed_sets(index: GraphRAGIndex, *entities: str) -> dict[str, set[str]]:
    """:func:`listed` as sets (an upgrade lists in the order it reads the relations)."""
    return {entity: set(texts) for entity, texts in listed(index, *entities).items()}


def listed(index: GraphRAGIndex, *entities: str) -> dict[str, list[str]]:
    """The passages each entity row lists, by the passages' texts (missing rows left out)."""
    store = index.store
    rows = store.get_rows(store.entity_collection, list(entities), ["passage_ids"])
    ids = [p for row in rows.values() for p in row["passage_ids"]]
    text = {n.node_id: n.get_content() for n in store.get_passages(ids)}
    return {entity: [text[p] for p in row["passage_ids"]] for entity, row in rows.items()}


def triplet_doc(doc_id: str, text: str, triplets: list[tuple[str, str, str]]
                ) -> tuple[Document, list[tuple[str, str, str]]]:
    return Document(text=text, id_=doc_id), triplets


def test_entities_list_their_passages_through_every_write(tmp_path: Path) -> None:
    index = GraphRAGIndex(uri=str(tmp_path / "lists.db"), embed_model=HashEmbedding())
    assert index.upgrade() == 0  # nothing stored yet: nothing to upgrade
    index.insert_triplets([
        triplet_doc("born", "Euler was born in Basel.", [("Euler", "born in", "Basel")]),
        triplet_doc("studied", "Euler studied in Basel under Bernoulli.",
                    [("Euler", "studied in", "Basel"), ("Euler", "student of", "Bernoulli")]),
    ])
    assert listed(index, EULER, BASEL) == {
        EULER: ["Euler was born in Basel.", "Euler studied in Basel under Bernoulli."],
        BASEL: ["Euler was born in Basel.", "Euler studied in Basel under Bernoulli."]}
    # the same passage again with other triplets: Basel no longer leads to it
    index.insert_triplets([triplet_doc("studied", "Euler studied in Basel under Bernoulli.",
                                       [("Euler", "student of", "Bernoulli")])])
    assert listed(index, EULER, BASEL) == {
        EULER: ["Euler was born in Basel.", "Euler studied in Basel under Bernoulli."],
        BASEL: ["Euler was born in Basel."]}
    index.delete_ref_doc("born")
    assert listed(index, EULER, BASEL) == {EULER: ["Euler studied in Basel under Bernoulli."]}
    # ingesting the same again changes nothing
    index.insert_triplets([triplet_doc("studied", "Euler studied in Basel under Bernoulli.",
                                       [("Euler", "student of", "Bernoulli")])])
    assert listed(index, EULER) == {EULER: ["Euler studied in Basel under Bernoulli."]}
    index.close()
    with pytest.raises(MilvusStoreError, match="closed"):
        index.upgrade()


def test_a_hub_lists_its_first_passages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                        ) -> None:
    """More passages than an ARRAY holds (3 here): the first are listed, the write goes
    through, and the served graph still sees a hub."""
    monkeypatch.setattr(entity_rows, "MAX_PASSAGES_PER_RELATION", 3)
    index = GraphRAGIndex(uri=str(tmp_path / "hub.db"), embed_model=HashEmbedding())
    towns = [triplet_doc(f"town{i}", f"Town {i} lies in Basel.",
                         [(f"Town {i}", "lies in", "Basel")]) for i in range(5)]
    index.insert_triplets(towns[:2])
    index.insert_triplets(towns[2:])
    assert listed(index, BASEL)[BASEL] == [f"Town {i} lies in Basel." for i in range(3)]
    assert len(index.store.served.entity_passages([BASEL], 10)[BASEL]) == 3
    index.close()


QUESTION = "What did the son of Euler's teacher contribute?"
FAMILY = [
    triplet_doc("born", "Euler was born in Basel.", [("Euler", "born in", "Basel")]),
    triplet_doc("studied", "Euler studied under Bernoulli in Basel.",
                [("Euler", "student of", "Bernoulli"), ("Euler", "lived in", "Basel")]),
    triplet_doc("son", "Daniel Bernoulli was the son of Johann Bernoulli.",
                [("Daniel Bernoulli", "son of", "Bernoulli")])]


def old_index(uri: str, tenant_key: str | None = None) -> GraphRAGIndex:
    """An index whose entity collection was created before entities listed their
    passages, with the family passages (of tenant "acme" with a ``tenant_key``)."""
    create_older_layout(uri, ENTITY_FIELDS, tenant_key)
    index = GraphRAGIndex(uri=uri, embed_model=HashEmbedding())
    index.insert_triplets([(Document(text=doc.text, id_=doc.doc_id,
                                     metadata={tenant_key: "acme"} if tenant_key else {}),
                            triplets) for doc, triplets in FAMILY])
    return index


def answers(index: GraphRAGIndex) -> list[tuple[str, float]]:
    return [(n.node.node_id, round(n.score or 0.0, 6))
            for n in index.as_retriever(similarity_top_k=2).retrieve(QUESTION)]


def entity_fields(index: GraphRAGIndex) -> set[str]:
    return {f["name"] for f in index.store.client.describe_collection(
        index.store.entity_collection)["fields"]}


def test_an_entitys_passages_are_counted_alike_in_memory_and_served(
        tmp_path: Path) -> None:
    """Each passage gives Sweden three relations: the in-memory graph reads Sweden's
    relations until it has ``cap`` distinct passages, as the served entity row lists them
    (reading only its first ``cap`` relations found a hub's first passage or two, and the
    bridge then took a hub for a bridge in memory only)."""
    index = GraphRAGIndex(uri=str(tmp_path / "hub.db"), embed_model=HashEmbedding())
    index.insert_triplets([
        triplet_doc(f"town{i}", f"Town {i} lies in Sweden.",
                    [(f"Town {i}", "lies in", "Sweden"), (f"Mayor {i}", "governs in", "Sweden"),
                     (f"River {i}", "flows through", "Sweden")])
        for i in range(6)])
    sweden = Triplet("x", "y", "Sweden").object_id
    served = GraphRAGIndex(uri=index.store.uri, embed_model=HashEmbedding(), graph="milvus")
    try:
        for cap in (2, 4, 6, 10):
            in_memory = index.graph.entity_passages(sweden, cap)
            listed = served.store.served.entity_passages([sweden], cap)[sweden]
            assert len(in_memory) == len(set(in_memory)) == len(listed) == min(cap, 6)
        assert sorted(in_memory) == sorted(listed)  # all six (the first ones may differ)
    finally:
        served.close()
        index.close()


def test_an_index_without_entity_passages_is_read_and_written_without_them(
        milvus_uri: str) -> None:
    """An entity collection created before entities listed their passages: it is used as it
    is (passages read from the relations), and the served graph answers as the in-memory
    one."""
    uri = milvus_uri
    index = old_index(uri)
    assert not index.store.records_entity_passages
    assert "passage_ids" not in entity_fields(index)
    assert sorted(index.store.served.entity_passages([EULER], 5)[EULER]) == sorted(
        index.graph.entity_passages(EULER, 5))
    memory = answers(index)
    served = GraphRAGIndex(uri=uri, embed_model=HashEmbedding(), graph="milvus")
    assert answers(served) == memory
    served.close()
    index.delete_ref_doc("born")
    assert index.store.get_rows(index.store.entity_collection, [BASEL], ["id"]) != {}
    index.delete_ref_doc("studied")
    assert index.store.get_rows(index.store.entity_collection, [BASEL], ["id"]) == {}
    index.close()


@pytest.mark.parametrize(("milvus_uri", "tenant_key"), [
    pytest.param("lite", None, id="lite"),
    pytest.param("lite", "tenant_id", id="lite-tenant_key"),
    pytest.param("server", None, id="server", marks=pytest.mark.server),
], indirect=["milvus_uri"])  # the tenant fields are copied the same way on both backends
def test_upgrade_lists_the_passages_of_an_older_index(milvus_uri: str,
                                                      tenant_key: str | None) -> None:
    uri = milvus_uri
    index = old_index(uri, tenant_key)
    assert index.store.tenant_key == tenant_key and not index.store.records_entity_passages
    assert index.store.needs_upgrade()
    before = answers(index)
    vectors = index.store.get_rows(index.store.entity_collection, [EULER], ["embedding"])
    assert index.upgrade() == 4  # Euler, Basel, Bernoulli, Daniel Bernoulli
    assert index.store.records_entity_passages and "passage_ids" in entity_fields(index)
    assert listed_sets(index, EULER, BASEL) == {
        EULER: {"Euler was born in Basel.", "Euler studied under Bernoulli in Basel."},
        BASEL: {"Euler was born in Basel.", "Euler studied under Bernoulli in Basel."}}
    assert index.store.get_rows(index.store.entity_collection, [EULER],
                                ["embedding"]) == vectors
    assert answers(index) == before
    assert asyncio.run(index.aupgrade()) == 0  # nothing left to do
    assert not index.store.needs_upgrade()
    if tenant_key:
        assert index.store.get_rows(index.store.entity_collection, [EULER], ["tenants"])[
            EULER]["tenants"] == ["acme"]
    visit = Document(text="Euler visited Berlin.", id_="visit",
                     metadata={tenant_key: "acme"} if tenant_key else {})
    index.insert_triplets([(visit, [("Euler", "visited", "Berlin")])])
    index.delete_ref_doc("born")
    assert listed(index, EULER, BASEL) == {
        EULER: ["Euler studied under Bernoulli in Basel.", "Euler visited Berlin."],
        BASEL: ["Euler studied under Bernoulli in Basel."]}
    index.close()
    reopened = GraphRAGIndex(uri=uri, embed_model=HashEmbedding(), graph="milvus")
    assert reopened.store.records_entity_passages
    assert reopened.upgrade() == 0
    reopened.close()


def test_an_index_opened_before_another_s_upgrade_writes_with_the_new_layout(
        milvus_uri: str) -> None:
    """A long-lived index object (a worker's) opened before an upgrade done through another:
    its writes took the old layout, which Milvus refuses (the entity rows' ``passage_ids``
    missing), and left each attempt's passage without relations."""
    old_index(milvus_uri).close()
    worker = GraphRAGIndex(uri=milvus_uri, embed_model=HashEmbedding())
    admin = GraphRAGIndex(uri=milvus_uri, embed_model=HashEmbedding())
    try:
        assert not worker.store.records_entity_passages
        assert admin.upgrade() == 4
        visit = Document(text="Euler visited Berlin.", id_="visit")
        worker.insert_triplets([(visit, [("Euler", "visited", "Berlin")])])
        assert worker.store.records_entity_passages
        assert "Euler visited Berlin." in listed(admin, EULER, BASEL)[EULER]
        worker.delete_ref_doc("visit")
        assert "Euler visited Berlin." not in listed(admin, EULER, BASEL)[EULER]
    finally:
        worker.close()
        admin.close()


def test_an_upgrade_stopped_before_its_rename_is_finished_on_open(
        milvus_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    uri = milvus_uri
    index = old_index(uri)
    before = answers(index)

    def stopped(self: MilvusGraphStore) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(MilvusGraphStore, "finish_upgrade", stopped)
        with pytest.raises(KeyboardInterrupt):
            index.upgrade()
    assert index.store.entity_collection not in index.store.client.list_collections()
    index.close()
    reopened = GraphRAGIndex(uri=uri, embed_model=HashEmbedding())
    assert reopened.store.records_entity_passages
    assert answers(reopened) == before
    assert listed_sets(reopened, BASEL) == {BASEL: {"Euler was born in Basel.",
                                                   "Euler studied under Bernoulli in Basel."}}
    reopened.close()


@LITE_ONLY  # the restart does not depend on the backend
def test_an_upgrade_stopped_while_copying_starts_again(
        milvus_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The old collection is whole until the copy is done: a second run starts again."""
    uri = milvus_uri
    index = old_index(uri)
    client = index.store.client
    upsert = client.upsert

    def stopped(collection: str, rows: list[dict[str, object]]) -> None:
        upsert(collection, rows[:1])
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(client, "upsert", stopped)
        with pytest.raises(KeyboardInterrupt):
            index.upgrade()
    assert not index.store.records_entity_passages
    assert index.upgrade() == 4
    assert index.store.upgrade_collection not in client.list_collections()
    assert len(listed(index, EULER, BASEL)[BASEL]) == 2
    index.close()


def test_a_new_entity_lists_the_passages_of_a_relation_it_joins(tmp_path: Path) -> None:
    """An existing relation found again in a new passage: both ends list both passages."""
    index = GraphRAGIndex(uri=str(tmp_path / "again.db"), embed_model=HashEmbedding())
    index.insert_nodes([TextNode(text="Euler was born in Basel.", id_="a",
                                 metadata={"graphrag_triplets": [["Euler", "born in",
                                                                  "Basel"]]})])
    index.insert_nodes([TextNode(text="Basel saw Euler born.", id_="b",
                                 metadata={"graphrag_triplets": [["Euler", "born in",
                                                                  "Basel"]]})])
    assert listed(index, EULER, BASEL) == {
        EULER: ["Euler was born in Basel.", "Basel saw Euler born."],
        BASEL: ["Euler was born in Basel.", "Basel saw Euler born."]}
    index.close()


def passage_index(index: GraphRAGIndex) -> str | None:
    """The type of the passage collection's dense vector index (``None``: it has none)."""
    found = field_indexes(index.store.client, index.store.passage_collection)
    return found["embedding"]["index_type"] if "embedding" in found else None


def flat_passages(index: GraphRAGIndex) -> None:
    """The passage index as 0.1.0 built it: ``MilvusVectorStore``'s default, ``FLAT``."""
    client, collection = index.store.client, index.store.passage_collection
    client.release_collection(collection)
    client.drop_index(collection, "embedding")
    params = client.prepare_index_params()
    params.add_index("embedding", index_type="FLAT", metric_type="COSINE",
                     index_name="embedding")
    client.create_index(collection, params)
    client.load_collection(collection)


def test_upgrade_gives_a_flat_passage_collection_the_graphs_index(milvus_uri: str) -> None:
    uri = milvus_uri
    index = GraphRAGIndex(uri=uri, embed_model=HashEmbedding())
    index.insert_triplets([(doc, list(triplets)) for doc, triplets in FAMILY])
    if index.store.is_lite:  # FLAT is Milvus Lite's only index: nothing to change
        assert passage_index(index) == "FLAT" and not index.store.needs_upgrade()
        assert index.upgrade() == 0 and passage_index(index) == "FLAT"
        index.close()
        return
    assert passage_index(index) == "AUTOINDEX"  # what this version builds on a server
    assert not index.store.needs_upgrade()
    flat_passages(index)
    assert index.store.passages_scanned() and index.store.needs_upgrade()
    before = answers(index)
    assert index.upgrade() == 0  # the entities already list their passages
    assert passage_index(index) == "AUTOINDEX" and not index.store.needs_upgrade()
    assert answers(index) == before
    # stopped after the drop: the next open builds the index again
    client = index.store.client
    client.release_collection(index.store.passage_collection)
    client.drop_index(index.store.passage_collection, "embedding")
    index.close()
    reopened = GraphRAGIndex(uri=uri, embed_model=HashEmbedding())
    assert answers(reopened) == before
    assert passage_index(reopened) == "AUTOINDEX"
    reopened.close()
