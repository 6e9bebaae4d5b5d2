"""Entity kinds: recorded with the relations (from the spaCy extractor's metadata), merged
across passages, read back by both relation searches, and absent from an index written before
they were recorded (then inferred from names)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from llama_index.core.schema import TextNode

from llama_index_graphrag_milvus import GraphRAGIndex
from llama_index_graphrag_milvus.metadata import ENTITY_KINDS_KEY
from llama_index_graphrag_milvus.milvus.schema import (
    ENTITY_FIELDS,
    KIND_FIELDS,
    RELATION_FIELDS,
    create_collection,
)
from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore
from llama_index_graphrag_milvus.retrieval.bridge import distinct_bridges, rank_bridges
from tests.support.fakes import HashEmbedding

pytestmark = pytest.mark.milvus  # every test here opens a Milvus Lite file

FILM = ("Night Harbour is a film directed by Ada Kovar.",
        [("Night Harbour", "directed by", "Ada Kovar"), ("Night Harbour", "is a", "film")],
        {"Night Harbour": "title", "Ada Kovar": "named", "film": "concept"})
DIRECTOR = ("Ada Kovar was born in Leeds.", [("Ada Kovar", "was born in", "Leeds")],
            {"Ada Kovar": "title", "Leeds": "named"})


def node(text: str, triplets: list[tuple[str, str, str]], kinds: object) -> TextNode:
    """A passage whose extractor recorded ``kinds`` for the entities of ``triplets``."""
    return TextNode(text=text, metadata={ENTITY_KINDS_KEY: kinds})


def stored_kinds(index: GraphRAGIndex) -> dict[str, tuple[str, str]]:
    graph = index.graph
    rows = np.arange(graph.num_relations)
    texts = graph.texts.get(rows) if graph.texts is not None else []
    return dict(zip(texts, graph.endpoint_kinds(rows), strict=True))


def test_kinds_are_recorded_merged_and_read_back(tmp_path: Path) -> None:
    index = GraphRAGIndex(uri=str(tmp_path / "kinds.db"), embed_model=HashEmbedding())
    index.insert_triplets([(node(text, triplets, kinds), triplets)
                           for text, triplets, kinds in (FILM, DIRECTOR)])
    kinds = stored_kinds(index)
    assert kinds["Night Harbour directed by Ada Kovar"] == ("title", "named")
    assert kinds["Night Harbour is a film"] == ("title", "concept")
    # the same relation from a passage that names its object as a concept first, then as
    # a named entity: the stronger kind stays
    triplet = ("Ada Kovar", "met", "Tom Reyes")
    index.insert_triplets([(node("Ada Kovar met Tom Reyes.", [triplet],
                                 {"Ada Kovar": "named", "tom reyes": "concept"}), [triplet])])
    assert stored_kinds(index)["Ada Kovar met Tom Reyes"] == ("named", "concept")
    index.insert_triplets([(node("Tom Reyes met Ada Kovar there.", [triplet],
                                 {"Tom Reyes": "named"}), [triplet])])
    assert stored_kinds(index)["Ada Kovar met Tom Reyes"] == ("named", "named")
    # Milvus' relation search reads them too
    hits = index.store.search_relations(HashEmbedding().get_query_embedding(
        "Night Harbour directed by Ada Kovar"), 1, None)
    assert (hits[0].subject_kind, hits[0].object_kind) == ("title", "named")
    index.close()


def test_odd_kind_metadata_is_ignored(tmp_path: Path) -> None:
    index = GraphRAGIndex(uri=str(tmp_path / "odd.db"), embed_model=HashEmbedding())
    text, triplets, _ = FILM
    index.insert_triplets([(node(text, triplets, "named"), triplets),
                           (node("Ada Kovar lived in Leeds.", [], {"Ada Kovar": "boss", 3: "x"}),
                            [("Ada Kovar", "lived in", "Leeds")])])
    assert set(stored_kinds(index).values()) == {("", "")}
    index.close()


def test_an_index_without_kinds_is_read_and_written_without_them(tmp_path: Path) -> None:
    """An index written before kinds were recorded: its relation collection has no kind
    fields; it is used as it is, and bridges fall back on the names' shapes."""
    uri = str(tmp_path / "old.db")
    store = MilvusGraphStore(uri)
    old_fields = tuple(f for f in RELATION_FIELDS if f[0] not in KIND_FIELDS)
    for name, fields in ((store.entity_collection, ENTITY_FIELDS),
                         (store.relation_collection, old_fields)):
        create_collection(store.client, name, fields, 64, store.index_type,
                          store.consistency_level)
    store.close()
    index = GraphRAGIndex(uri=uri, embed_model=HashEmbedding())
    assert not index.store.records_kinds
    index.insert_triplets([(node(text, triplets, kinds), triplets)
                           for text, triplets, kinds in (FILM, DIRECTOR)])
    assert set(stored_kinds(index).values()) == {("", "")}
    nodes = index.as_retriever(similarity_top_k=2, relation_search="milvus").retrieve(
        "Where was the director of Night Harbour born?")
    assert nodes
    [hit] = index.store.search_relations(HashEmbedding().get_query_embedding(
        "Night Harbour is a film"), 1, None)
    assert (hit.subject_kind, hit.object_kind) == ("", "")
    # the kinds are inferred from the names then: "film" is a concept, a last resort
    bridges = rank_bridges(distinct_bridges("Who made Night Harbour?", [hit]), 3)
    assert [(b.name, b.kind) for b in bridges] == [("film", "concept")]
    index.close()
    reopened = GraphRAGIndex(uri=uri, embed_model=HashEmbedding())
    assert not reopened.store.records_kinds and reopened.graph.kinds is None
    reopened.close()

