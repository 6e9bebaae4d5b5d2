"""Ingestion both ways, reopen from Milvus, idempotent upserts and bad input (Lite and server)."""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np
import pytest
from llama_index.core import Document
from llama_index.core.indices.property_graph import SimpleLLMPathExtractor
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import NodeRelationship, TextNode

from llama_index_graphrag_milvus import EmptyIndexError, GraphRAGIndex, InvalidInputError
from llama_index_graphrag_milvus.errors import EmbeddingDimensionError
from llama_index_graphrag_milvus.graph import EntityRelationGraph
from llama_index_graphrag_milvus.graph.tables import EntityTable
from llama_index_graphrag_milvus.ids import entity_id, passage_id
from llama_index_graphrag_milvus.ingestion.identity import IndexSettings
from llama_index_graphrag_milvus.metadata import TRIPLETS_KEY
from llama_index_graphrag_milvus.milvus import MilvusGraphStore
from llama_index_graphrag_milvus.milvus.columns import (
    ROW_BYTES_BESIDES_VECTOR,
    CollectionReads,
    ColumnQuery,
)
from llama_index_graphrag_milvus.records import Triplet
from tests.conftest import FAMILY
from tests.support.fakes import HashEmbedding, ScriptedLLM
from tests.support.markers import LITE_ONLY

# Backend-independent logic (parsing, validation, naming) runs on Lite only, to keep the suite fast.

MakeIndex = Callable[..., GraphRAGIndex]


def counts(index: GraphRAGIndex) -> tuple[int, int, int]:
    store = index.store
    return (store.count(store.entity_collection), store.count(store.relation_collection),
            store.count(store.passage_collection))


def retrieved(index: GraphRAGIndex, query: str = "Who was the son of Euler's teacher?"
              ) -> list[tuple[str, float]]:
    return [(n.node.node_id, round(n.score or 0.0, 5))
            for n in index.as_retriever(hops=1).retrieve(query)]


def test_from_triplets_writes_three_linked_collections(family_index: GraphRAGIndex) -> None:
    # 7 triplets over 8 distinct entities, 4 passages
    assert counts(family_index) == (8, 7, 4)
    store = family_index.store
    daniel = passage_id(FAMILY[1][0])
    rows = store.get_rows(store.relation_collection, [], ["id"])
    assert rows == {}
    graph = family_index.graph
    assert graph.num_relations == 7 and graph.num_entities == 8
    johann = entity_id("Johann Bernoulli")
    son_rows = store.client.query(store.relation_collection,
                                  filter=f'object_id == "{johann}"',
                                  output_fields=["text", "subject_id", "passage_ids"])
    by_text = {r["text"]: r for r in son_rows}
    son = by_text["Daniel Bernoulli was the son of Johann Bernoulli"]
    assert son["subject_id"] == entity_id("Daniel Bernoulli")
    assert list(son["passage_ids"]) == [daniel]
    assert len(by_text) == 3  # Euler, Daniel and Jakob point at Johann


def test_reingesting_the_same_input_duplicates_nothing(make_index: MakeIndex) -> None:
    index = make_index()
    before = counts(index)
    first = retrieved(index)
    stats = index.insert_triplets(FAMILY)
    assert stats.new_entities == 0
    assert counts(index) == before
    assert retrieved(index) == first


@LITE_ONLY
def test_entity_names_are_normalized_for_identity_but_shown_as_written(
        make_index: MakeIndex) -> None:
    index = make_index([
        ("Euler was born in Basel.", [("Leonhard Euler", "was born in", "Basel")]),
        ("EULER lived in  basel.", [("  leonhard   EULER ", "lived in", "BASEL")]),
    ])
    store = index.store
    assert store.count(store.entity_collection) == 2
    row = store.get_rows(store.entity_collection, [entity_id("LEONHARD euler")], ["name"])
    assert [r["name"] for r in row.values()] == ["Leonhard Euler"]


def test_a_relation_found_in_two_passages_links_both_across_inserts(
        make_index: MakeIndex) -> None:
    triplet = ("Euler", "was a student of", "Johann Bernoulli")
    index = make_index([("Euler studied with Johann Bernoulli.", [triplet])])
    index.insert_triplets([("As a young man, EULER learned from Johann.",
                            [("euler", "was a student of", "johann bernoulli")])])
    store = index.store
    rows = store.client.query(store.relation_collection, filter="", limit=10,
                              output_fields=["passage_ids", "text"])
    assert len(rows) == 1
    assert set(rows[0]["passage_ids"]) == {passage_id("Euler studied with Johann Bernoulli."),
                                           passage_id("As a young man, EULER learned from Johann.")}
    assert rows[0]["text"] == "euler was a student of johann bernoulli"
    hits = index.as_retriever().retrieve("Euler's teacher")
    assert len(hits) == 2


def test_reopen_in_a_fresh_object_rebuilds_the_graph_from_milvus(
        family_index: GraphRAGIndex, milvus_uri: str) -> None:
    expected = retrieved(family_index)
    reopened = GraphRAGIndex(uri=milvus_uri, embed_model=HashEmbedding(dim=64))
    assert reopened.graph.num_relations == family_index.graph.num_relations
    assert retrieved(reopened) == expected
    assert counts(reopened) == counts(family_index)


def test_refresh_sees_another_writer(family_index: GraphRAGIndex, milvus_uri: str) -> None:
    reader = GraphRAGIndex(uri=milvus_uri, embed_model=HashEmbedding(dim=64))
    assert not reader.is_stale()  # nothing loaded yet
    assert reader.graph.num_relations == 7
    reader.entity_table  # noqa: B018
    assert not reader.is_stale()
    family_index.insert_triplets([("Basel is a city in Switzerland.",
                                   [("Basel", "is a city in", "Switzerland")])])
    assert reader.graph.num_relations == 7  # a cache until refreshed
    assert reader.is_stale()
    assert reader.refresh().num_relations == 8
    assert not reader.is_stale() and len(reader.entity_table) == reader.graph.num_entities


def test_graph_loads_column_wise_in_key_ranges_and_matches_row_by_row(
        make_index: MakeIndex) -> None:
    passages = [(f"Passage {p} about people.",
                 [(f"Person {p}", f"knows number {k} of", f"Person {(p * 7 + k) % 40}")
                  for k in range(3)] + [("Person 0", "is mentioned in", f"Story {p % 4}")])
                for p in range(30)]
    index = make_index(passages)
    store = index.store
    expected = {Triplet(*t).id for _, triplets in passages for t in triplets}
    assert len(expected) == 94
    ranges = CollectionReads(range_rows=16, lite_range_bytes=0)  # 94 relations: 6 ranges
    assert ColumnQuery.connect(store.client, store.consistency_level) is not None
    batches = list(store.read_relations(reads=ranges))
    assert len(batches) == 6
    assert sum(len(b) for b in batches) == store.count(store.relation_collection) == 94
    fast = EntityRelationGraph.from_columns(batches, dim=64)

    by_row = CollectionReads(column_path=False)  # client.query and row conversion
    rows = EntityRelationGraph.from_columns(store.read_relations(reads=by_row), dim=64)
    for graph in (fast, rows):
        assert set(graph.relation_ids.ids(np.arange(graph.num_relations))) == expected
    assert np.array_equal(fast.relation_ids.keys, rows.relation_ids.keys)
    assert np.array_equal(fast.endpoints, rows.endpoints)
    assert np.array_equal(fast.vectors, rows.vectors)
    assert (fast.relation_passages != rows.relation_passages).nnz == 0
    shared = fast.relation_ids.lookup([Triplet("Person 0", "is mentioned in", "Story 1").id])
    assert sorted(fast.passages_of(shared)[0]) == sorted(
        passage_id(f"Passage {p} about people.") for p in range(1, 30, 4))
    # Person 0: 4 "is mentioned in" + 3 as subject (one a self-loop) + object of Person 17's
    person_0 = fast.entity_ids.lookup([entity_id("Person 0")])
    assert fast.incidence[person_0].nnz == 4 + 3 + 1
    # the relation texts, and the entity table read the same way
    assert fast.texts is not None and rows.texts is not None
    every = np.arange(fast.num_relations)
    assert fast.texts.get(every) == rows.texts.get(every)
    assert fast.relation_texts([Triplet("Person 0", "is mentioned in", "Story 1").id]) == {
        Triplet("Person 0", "is mentioned in", "Story 1").id: "Person 0 is mentioned in Story 1"}
    by_rows = EntityTable.from_columns(store.read_entities(reads=by_row), dim=64)
    by_columns = EntityTable.from_columns(store.read_entities(reads=ranges), dim=64)
    assert np.array_equal(by_rows.ids.keys, by_columns.ids.keys)
    assert np.array_equal(by_rows.vectors, by_columns.vectors)
    assert by_rows.names.get(np.arange(len(by_rows))) == by_columns.names.get(
        np.arange(len(by_columns)))
    assert "Story 3" in by_columns.names.get(np.arange(len(by_columns)))


def test_whole_collection_reads_use_larger_ranges_on_lite(
        make_index: MakeIndex, milvus_uri: str) -> None:
    # Lite scans every row for each range filter: its ranges are sized by bytes, not rows
    index = make_index([(f"Passage {p}.", [(f"Person {p}", "knows", f"Person {p + 1}")])
                        for p in range(40)])
    store = index.store
    twenty_rows = 20 * (4 * 64 + ROW_BYTES_BESIDES_VECTOR)
    batches = list(store.read_relations(reads=CollectionReads(5, twenty_rows)))
    assert sum(len(b) for b in batches) == 40
    assert len(batches) == (2 if store.is_lite else 8)
    never_below = CollectionReads(range_rows=5, lite_range_bytes=0)  # never below range_rows
    assert len(list(store.read_relations(reads=never_below))) == 8


@LITE_ONLY
def test_collection_prefixes_keep_graphs_apart(make_index: MakeIndex, milvus_uri: str) -> None:
    make_index(collection_prefix="first")
    other = make_index(FAMILY[:1], collection_prefix="second")
    assert counts(other) == (3, 2, 1)
    assert counts(GraphRAGIndex(uri=milvus_uri, collection_prefix="first",
                                embed_model=HashEmbedding(dim=64))) == (8, 7, 4)


def test_passage_nodes_keep_metadata_and_source_document(make_index: MakeIndex) -> None:
    document = Document(text="Euler was born in Basel.", doc_id="doc-euler",
                        metadata={"title": "Euler"})
    node = TextNode(text="Euler was born in Basel in 1707.", metadata={"title": "Euler"})
    node.relationships[NodeRelationship.SOURCE] = document.as_related_node_info()
    index = make_index([(node, [("Euler", "was born in", "Basel")])])
    hit = index.as_retriever().retrieve("Where was Euler born?")[0]
    assert hit.node.metadata["title"] == "Euler"
    assert hit.node.ref_doc_id == "doc-euler"
    assert hit.node.metadata[TRIPLETS_KEY] == [["Euler", "was born in", "Basel"]]


def extraction_script(prompt: str) -> str:
    """A realistic extraction LLM: fenced JSON, one malformed 2-tuple, trailing prose."""
    passage = prompt.rsplit("Passage:", 1)[-1]
    if "son of Johann" in passage:
        return ('```json\n{"triplets": [["Daniel Bernoulli", "was the son of", '
                '"Johann Bernoulli"], ["Daniel Bernoulli", "fluid dynamics"]]}\n```\nDone.')
    if "student of Johann" in passage:
        return '{"triplets": [["Leonhard Euler", "was a student of", "Johann Bernoulli"]]}'
    return "I could not find any triplets."


@LITE_ONLY
def test_from_documents_extracts_triplets_with_an_llm(milvus_uri: str, caplog) -> None:
    documents = [Document(text="Leonhard Euler was a student of Johann Bernoulli."),
                 Document(text="Daniel Bernoulli was the son of Johann Bernoulli."),
                 Document(text="Basel is on the Rhine.")]
    llm = ScriptedLLM(extraction_script)
    with caplog.at_level(logging.INFO):
        index = GraphRAGIndex.from_documents(
            documents, llm=llm, uri=milvus_uri, embed_model=HashEmbedding(dim=64),
            transformations=[SentenceSplitter(chunk_size=64, chunk_overlap=0)])
    assert len(llm.prompts) == 3
    assert counts(index) == (3, 2, 3)
    assert "dropped 1 malformed triplets" in caplog.text
    assert "no JSON list of triplets" in caplog.text
    texts = {n.node.get_content() for n in index.as_retriever().retrieve("Euler's teacher's son")}
    assert "Daniel Bernoulli was the son of Johann Bernoulli." in texts


@LITE_ONLY
def test_from_documents_accepts_core_path_extractors(milvus_uri: str) -> None:
    llm = ScriptedLLM(lambda prompt: "(Leonhard Euler, was a student of, Johann Bernoulli)\n"
                                     "(Leonhard Euler, was born in, Basel)")
    extractor = SimpleLLMPathExtractor(llm=llm, num_workers=1)
    index = GraphRAGIndex.from_documents(
        [Document(text="Leonhard Euler was a student of Johann Bernoulli, born in Basel.")],
        kg_extractor=extractor, uri=milvus_uri, embed_model=HashEmbedding(dim=64))
    assert counts(index) == (3, 2, 1)
    hit = index.as_retriever().retrieve("Euler")[0]
    # core's parser capitalizes each part ("Leonhard euler"); names are shown as it wrote them
    relation_texts = {r["text"].lower() for r in hit.node.metadata["graphrag_relations"]}
    assert "leonhard euler was a student of johann bernoulli" in relation_texts
    # core's EntityNode/Relation objects are not copied into the stored metadata
    assert "nodes" not in hit.node.metadata and "relations" not in hit.node.metadata


@LITE_ONLY
def test_nodes_without_triplets_are_still_stored_as_passages(make_index: MakeIndex) -> None:
    index = make_index([*FAMILY, ("A passage with no triplets at all.", [])])
    assert counts(index)[2] == 5
    naive = index.as_naive_retriever(similarity_top_k=1).retrieve("passage with no triplets")
    assert naive[0].node.get_content() == "A passage with no triplets at all."


# ---------------------------------------------------------------------- bad input


@LITE_ONLY
def test_triplets_with_empty_or_wrong_parts_are_skipped_and_counted(
        make_index: MakeIndex, caplog) -> None:
    with caplog.at_level(logging.WARNING):
        index = make_index([("Euler was born in Basel.", [
            ("Euler", "was born in", "Basel"), ("Euler", "", "Basel"), ("Euler", "Basel"),
            ("a", "b", "c", "d"), (None, "x", "y"), ("x" * 5000, "is", "long")])])
    assert counts(index) == (2, 1, 1)
    assert "skipped 5 triplets" in caplog.text


@pytest.mark.parametrize("passage, match", [
    ("   ", "empty or whitespace"),
    ("x" * 70000, "70000 bytes"),
    (42, "expected a str or a LlamaIndex node"),
])
@LITE_ONLY
def test_bad_passages_raise_before_anything_is_written(
        family_index: GraphRAGIndex, passage: object, match: str) -> None:
    before = counts(family_index)
    expected = retrieved(family_index)
    with pytest.raises(InvalidInputError, match=match):
        family_index.insert_triplets([("A good passage about Basel.", [("Basel", "is", "a city")]),
                                      (passage, [("a", "b", "c")])])
    assert counts(family_index) == before
    assert retrieved(family_index) == expected


def test_bad_passage_in_a_fresh_store_creates_nothing(milvus_uri: str) -> None:
    with pytest.raises(InvalidInputError, match="empty"):
        GraphRAGIndex.from_triplets([("", [])], uri=milvus_uri, embed_model=HashEmbedding())
    assert GraphRAGIndex(uri=milvus_uri, embed_model=HashEmbedding()).store.dim is None


@pytest.mark.parametrize("prefix", ["bad-prefix", "1abc", "has space", "", "x;drop"])
def test_illegal_collection_prefix(milvus_uri: str, prefix: str) -> None:
    with pytest.raises(InvalidInputError, match="cannot name a Milvus collection"):
        GraphRAGIndex(uri=milvus_uri, collection_prefix=prefix, embed_model=HashEmbedding())


def test_dimension_mismatch_on_reopen_is_caught_before_any_write(
        family_index: GraphRAGIndex, milvus_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # the reopened index checks the recorded model when it opens
    with pytest.raises(EmbeddingDimensionError, match=r"32-dimensional.*64-dimensional"):
        GraphRAGIndex(uri=milvus_uri, embed_model=HashEmbedding(dim=32))
    # and the store still checks every vector (as for an index that recorded no model)
    monkeypatch.setattr(IndexSettings, "from_properties", classmethod(lambda cls, _: None))
    wrong = GraphRAGIndex(uri=milvus_uri, embed_model=HashEmbedding(dim=32))
    with pytest.raises(EmbeddingDimensionError, match=r"32-dimensional.*64-dimensional"):
        wrong.as_retriever().retrieve("Euler")
    with pytest.raises(EmbeddingDimensionError, match=r"same embedding model|collection_prefix"):
        wrong.insert_triplets([("Basel is a city.", [("Basel", "is", "a city")])])
    assert counts(family_index) == (8, 7, 4)


def test_query_on_an_empty_index(milvus_uri: str) -> None:
    index = GraphRAGIndex(uri=milvus_uri, embed_model=HashEmbedding())
    with pytest.raises(EmptyIndexError, match="ingest passages first"):
        index.as_retriever().retrieve("Euler")


@pytest.mark.parametrize("graph", ["milvus", "memory"])
def test_a_worker_opened_before_the_first_ingestion_answers_once_it_exists(
        milvus_uri: str, make_index: MakeIndex, graph: str) -> None:
    """A query worker may start before the ingestion job has created the collections: it
    says the index is empty until then, and answers from its next query on."""
    worker = GraphRAGIndex(uri=milvus_uri, embed_model=HashEmbedding(), graph=graph,
                           collection_prefix=f"late_{graph}")
    try:
        with pytest.raises(EmptyIndexError, match="ingest passages first"):
            worker.as_retriever().retrieve("Euler")
        writer = make_index(collection_prefix=f"late_{graph}")  # another index object
        question = "What did the son of Euler's teacher contribute?"
        expected = [n.node.node_id for n in writer.as_retriever().retrieve(question)]
        assert worker.store.dim is None  # nothing opened yet
        assert [n.node.node_id for n in worker.as_retriever().retrieve(question)] == expected
        assert worker.store.dim == writer.store.dim and worker.graph_mode == graph
    finally:
        worker.close()


@LITE_ONLY
def test_query_on_passages_without_relations(make_index: MakeIndex,
                                             caplog: pytest.LogCaptureFixture) -> None:
    """Every method answers by the passages' own similarity, in both graph modes, also with
    a passage no more similar than 0 (PageRank gave it no mass, and dropped it); the graph
    held in memory says why in a warning."""
    index = make_index([("Only a passage.", []), ("Nothing about wombats.", [])])
    served = GraphRAGIndex(uri=index.store.uri, embed_model=index.embed_model, graph="milvus")
    try:
        vectors = [index.embed_model.get_text_embedding(t)
                   for t in ("passage", "Nothing about wombats.")]
        assert sum(a * b for a, b in zip(*vectors, strict=True)) <= 0
        for opened in (index, served):
            for method in ("bridge", "passage", "ppr", "pcst"):
                hits = opened.as_retriever(method=method).retrieve("passage")
                assert [h.node.get_content() for h in hits] == [
                    "Only a passage.", "Nothing about wombats."], method
        assert "the index holds no relations" in caplog.text
    finally:
        served.close()


def test_store_wraps_milvus_errors(milvus_uri: str) -> None:
    from llama_index_graphrag_milvus import MilvusStoreError

    store = MilvusGraphStore(milvus_uri)
    with pytest.raises(MilvusStoreError, match=r"passage collection .* does not exist"):
        _ = store.passages
    with pytest.raises(MilvusStoreError, match="Milvus failed to read") as info:
        store.get_rows("no_such_collection", ["x"], ["id"])
    assert info.value.__cause__ is not None
