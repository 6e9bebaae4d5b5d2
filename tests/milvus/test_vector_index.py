"""The vector index of the collections an index creates: ``AUTOINDEX`` on a server (see
tests/retrieval/test_served_graph.py), ``FLAT`` on Milvus Lite, or the ``index_type`` given."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pymilvus import MilvusClient

from llama_index_graphrag_milvus import GraphRAGIndex, InvalidInputError, MilvusStoreError
from tests.support.fakes import HashEmbedding
from tests.support.indexes import field_indexes
from tests.support.markers import LITE_ONLY, SERVER_ONLY

pytestmark = pytest.mark.milvus

QUESTION = "What did the son of Euler's teacher contribute?"


def dense_indexes(index: GraphRAGIndex) -> dict[str, dict[str, Any]]:
    """Each collection's dense vector index, as Milvus describes it."""
    store = index.store
    return {collection: field_indexes(store.client, collection)["embedding"]
            for collection in (store.passage_collection, store.entity_collection,
                               store.relation_collection)}


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"index_type": "HNSW"}, "Milvus Lite builds FLAT indexes only"),
    ({"index_type": "BTREE"}, "index_type must be one of AUTOINDEX, FLAT, HNSW"),
    ({"index_type": 3}, "index_type must be one of"),
    ({"index_params": {"M": 8}}, "index_params .* needs an index_type"),
    ({"index_type": "FLAT", "index_params": "M=8"}, "index_params must be a mapping"),
])
@LITE_ONLY
def test_bad_vector_index_settings_are_refused(milvus_uri: str, kwargs: dict[str, Any],
                                               message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        GraphRAGIndex(uri=milvus_uri, embed_model=HashEmbedding(), **kwargs)


@LITE_ONLY
def test_lite_builds_flat_whatever_the_case(make_index: Callable[..., GraphRAGIndex]) -> None:
    index = make_index(index_type="flat")
    try:
        assert {i["index_type"] for i in dense_indexes(index).values()} == {"FLAT"}
    finally:
        index.close()


@SERVER_ONLY  # one case: the type and its parameters reach every collection ("FLAT" alike)
def test_a_server_index_builds_the_vector_index_given(
        make_index: Callable[..., GraphRAGIndex]) -> None:
    index = make_index(index_type="hnsw", index_params={"M": 8, "efConstruction": 64},
                       graph="memory")
    try:
        for info in dense_indexes(index).values():
            assert info["index_type"] == "HNSW"
            assert (info["M"], info["efConstruction"]) == ("8", "64")
        expected = [n.node.node_id for n in index.as_retriever(
            method="passage", similarity_top_k=3).retrieve(QUESTION)]
        served = GraphRAGIndex(uri=index.store.uri, embed_model=index.embed_model,
                               graph="milvus")
        # the served graph's searches and reads on the index given: the in-memory answer
        assert [n.node.node_id for n in served.as_retriever(
            method="passage", similarity_top_k=3).retrieve(QUESTION)] == expected
        served.close()
    finally:
        index.close()


@SERVER_ONLY
def test_parameters_the_server_refuses_leave_nothing_behind(
        milvus_uri: str, make_index: Callable[..., GraphRAGIndex]) -> None:
    # Milvus 2.3 refuses HNSW without efConstruction when it builds the index, after the
    # collection is created: the failed creation must not leave a collection without its
    # index, which the next open (with good parameters) would take for an index
    with pytest.raises(MilvusStoreError, match="efConstruction"):
        make_index(index_type="HNSW", index_params={"M": 8})
    client = MilvusClient(uri=milvus_uri)
    try:
        assert client.list_collections() == []
    finally:
        client.close()
    index = make_index(index_type="HNSW", index_params={"M": 8, "efConstruction": 64})
    try:
        assert {i["index_type"] for i in dense_indexes(index).values()} == {"HNSW"}
        assert index.as_retriever(similarity_top_k=3).retrieve(QUESTION)
    finally:
        index.close()
