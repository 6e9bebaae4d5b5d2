"""Where each relation's ends lead, recorded on the relation rows (``subject_passages``,
``object_passages``): equal to the entity rows' passage counts (capped) through every write,
re-ingestion, update and delete; a hub's relations never rewritten; the served default reads
them instead of the entity rows (one request fewer, the same answer); a row that does not
record them, or an index written before they were, is read as before."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from llama_index.core.schema import Document

from llama_index_graphrag_milvus import GraphRAGIndex
from llama_index_graphrag_milvus.ingestion.spreads import spread
from llama_index_graphrag_milvus.milvus.schema import SPREAD_CAP, SPREAD_FIELDS, UNKNOWN_SPREAD
from llama_index_graphrag_milvus.records import Triplet
from llama_index_graphrag_milvus.retrieval import BridgeRetrieval
from tests.conftest import FAMILY
from tests.support.fakes import HashEmbedding

pytestmark = pytest.mark.milvus  # every test here opens Milvus (Lite, or the test server)

HUB = Triplet("Hub", "x", "y").subject_id
ADA = Triplet("Ada", "x", "y").subject_id
QUESTION = "What did the son of Euler's teacher contribute?"


def rows(index: GraphRAGIndex, collection: str, fields: list[str]) -> dict[str, dict[str, Any]]:
    store = index.store
    found = store.client.query(collection, filter='id != ""', output_fields=["id", *fields],
                               limit=16384, consistency_level="Strong")
    return {row["id"]: row for row in found}


def recorded(index: GraphRAGIndex) -> dict[str, tuple[int, int]]:
    """Each relation's recorded spreads."""
    return {rid: (row["subject_passages"], row["object_passages"]) for rid, row in rows(
        index, index.store.relation_collection, ["subject_id", "object_id", *SPREAD_FIELDS]
    ).items()}


def assert_spreads_agree(index: GraphRAGIndex) -> None:
    """Every relation row records the (capped) passage counts of its ends' entity rows."""
    store = index.store
    listed = {eid: spread(row["passage_ids"]) for eid, row in rows(
        index, store.entity_collection, ["passage_ids"]).items()}
    relations = rows(index, store.relation_collection, ["subject_id", "object_id",
                                                        *SPREAD_FIELDS])
    assert relations
    wrong = {rid: ((row["subject_passages"], row["object_passages"]),
                   (listed.get(row["subject_id"]), listed.get(row["object_id"])))
             for rid, row in relations.items()
             if (row["subject_passages"], row["object_passages"]) !=
             (listed.get(row["subject_id"]), listed.get(row["object_id"]))}
    assert wrong == {}


def doc(doc_id: str, text: str, triplets: list[tuple[str, str, str]]
        ) -> tuple[Document, list[tuple[str, str, str]]]:
    return Document(text=text, id_=doc_id), triplets


def hub_docs(start: int, stop: int) -> list[tuple[Document, list[tuple[str, str, str]]]]:
    return [doc(f"hub-{i}", f"Hub links item {i}.", [("Hub", "links", f"Item {i}")])
            for i in range(start, stop)]


def test_relations_record_where_their_ends_lead_through_every_write(
        make_index: Callable[..., GraphRAGIndex], monkeypatch: pytest.MonkeyPatch) -> None:
    index = make_index([
        doc("a1", "Ada met Boris.", [("Ada", "met", "Boris")]),
        doc("a2", "Ada taught Chen.", [("Ada", "taught", "Chen")]),
    ])
    assert index.store.records_spreads
    assert_spreads_agree(index)
    met = Triplet("Ada", "met", "Boris").id
    assert recorded(index)[met] == (2, 1)
    # a third passage of Ada: her earlier relations, not in this write, say so too
    index.insert_triplets([doc("a3", "Ada hired Dara.", [("Ada", "hired", "Dara")])])
    assert recorded(index)[met] == (3, 1)
    assert_spreads_agree(index)
    # a hub: its relations record the cap once it has more passages
    index.insert_triplets(hub_docs(0, SPREAD_CAP + 2))
    assert_spreads_agree(index)
    hub_relations = {rid for rid, (s, _) in recorded(index).items()
                     if rid != met and s == SPREAD_CAP}
    assert len(hub_relations) == SPREAD_CAP + 2
    # past the cap, a new passage of the hub rewrites no other relation of it
    written: list[int] = []
    upsert = index.store.upsert_rows

    def counted(collection: str, batch: Any) -> None:
        if collection == index.store.relation_collection:
            written.append(len(batch))
        upsert(collection, batch)

    monkeypatch.setattr(index.store, "upsert_rows", counted)
    index.insert_triplets(hub_docs(SPREAD_CAP + 2, SPREAD_CAP + 3))
    assert sum(written) == 1  # the new relation only
    monkeypatch.undo()
    assert_spreads_agree(index)
    # a passage ingested again with other triplets (Chen loses it), then deletes that bring
    # the hub under the cap
    index.insert_triplets([doc("a2", "Ada taught Chen.", [("Ada", "married", "Emil")])])
    assert_spreads_agree(index)
    for i in range(4):
        index.delete(f"hub-{i}")
    assert_spreads_agree(index)
    assert {recorded(index)[rid][0] for rid in recorded(index)
            if rid in hub_relations} == {SPREAD_CAP - 1}
    index.delete("a1")
    assert_spreads_agree(index)
    assert recorded(index)[Triplet("Ada", "hired", "Dara").id] == (2, 1)


def test_the_served_default_reads_where_bridges_lead_from_the_relation_rows(
        make_index: Callable[..., GraphRAGIndex], embed_model: HashEmbedding) -> None:
    """The same answers as the graph in memory and as entity rows read, one request fewer;
    a row that does not record them (written by an older writer) is read as before."""
    index = make_index(FAMILY)
    uri = index.store.uri
    expected = [(n.node.node_id, n.score) for n in index.as_retriever().retrieve(QUESTION)]
    index.close()
    with GraphRAGIndex(uri=uri, embed_model=embed_model, graph="milvus") as served:
        retriever = served.as_retriever(method=BridgeRetrieval())
        answer = retriever.explain(QUESTION)
        assert [(n.node.node_id, n.score) for n in retriever.retrieve(QUESTION)] == expected
        assert [(n.node.node_id, n.score)
                for n in asyncio.run(retriever.aretrieve(QUESTION))] == expected
        served.store.records_spreads = False  # as on an index written before 0.3
        read = retriever.explain(QUESTION)
        assert [(n.node.node_id, n.score) for n in retriever.retrieve(QUESTION)] == expected
        served.store.records_spreads = True
        assert answer.milvus_requests is not None and read.milvus_requests is not None
        assert answer.milvus_requests == read.milvus_requests - 1
        # every row unrecorded: the entity rows are read again, the same answer
        store = served.store
        relations = store.get_rows(store.relation_collection, list(recorded(served)),
                                   store.relation_fields(["text", "subject_id", "object_id",
                                                          "passage_ids", "embedding"]),
                                   for_write=True)
        store.upsert_rows(store.relation_collection, [
            {**row, "embedding": [float(x) for x in row["embedding"]],
             **dict.fromkeys(SPREAD_FIELDS, UNKNOWN_SPREAD)} for row in relations.values()])
        store.flush()
        unknown = retriever.explain(QUESTION)
        assert [(n.node.node_id, n.score) for n in retriever.retrieve(QUESTION)] == expected
        assert unknown.milvus_requests == read.milvus_requests
