"""Entity passages: each entity row lists the passages its relations come from, kept by
inserts, re-ingestion with other triplets, updates and deletes; a hub's list is capped; an
index written before entities listed them is read and written without them."""

from __future__ import annotations

from pathlib import Path

import pytest
from llama_index.core.schema import Document, TextNode

from llama_index_graphrag_milvus import GraphRAGIndex
from llama_index_graphrag_milvus.ingestion import entity_rows
from llama_index_graphrag_milvus.milvus.schema import (
    ENTITY_FIELDS,
    RELATION_FIELDS,
    create_collection,
)
from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore
from llama_index_graphrag_milvus.records import Triplet
from tests.support.fakes import HashEmbedding

pytestmark = pytest.mark.milvus  # every test here opens a Milvus Lite file

EULER = Triplet("Euler", "x", "y").subject_id
BASEL = Triplet("x", "y", "Basel").object_id


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


def test_an_index_without_entity_passages_is_read_and_written_without_them(
        tmp_path: Path) -> None:
    """An entity collection created before entities listed their passages: it is used as it
    is (passages read from the relations), and the served graph answers as the in-memory
    one."""
    uri = str(tmp_path / "old.db")
    store = MilvusGraphStore(uri)
    for name, fields in ((store.entity_collection, ENTITY_FIELDS),
                         (store.relation_collection, RELATION_FIELDS)):
        create_collection(store.client, name, fields, 64, store.index_type,
                          store.consistency_level)
    store.close()
    index = GraphRAGIndex(uri=uri, embed_model=HashEmbedding())
    assert not index.store.records_entity_passages
    index.insert_triplets([
        triplet_doc("born", "Euler was born in Basel.", [("Euler", "born in", "Basel")]),
        triplet_doc("studied", "Euler studied under Bernoulli in Basel.",
                    [("Euler", "student of", "Bernoulli")]),
        triplet_doc("son", "Daniel Bernoulli was the son of Johann Bernoulli.",
                    [("Daniel Bernoulli", "son of", "Bernoulli")])])
    fields = {f["name"] for f in index.store.client.describe_collection(
        index.store.entity_collection)["fields"]}
    assert "passage_ids" not in fields
    assert sorted(index.store.served.entity_passages([EULER], 5)[EULER]) == sorted(
        index.graph.entity_passages(EULER, 5))
    question = "What did the son of Euler's teacher contribute?"
    memory = [(n.node.node_id, round(n.score or 0.0, 6))
              for n in index.as_retriever(similarity_top_k=2).retrieve(question)]
    served = GraphRAGIndex(uri=uri, embed_model=HashEmbedding(), graph="milvus")
    assert [(n.node.node_id, round(n.score or 0.0, 6))
            for n in served.as_retriever(similarity_top_k=2).retrieve(question)] == memory
    served.close()
    index.delete_ref_doc("born")
    assert index.store.get_rows(index.store.entity_collection, [BASEL], ["id"]) == {}
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
