"""Naive RAG reads at the index's consistency level, not at the level its collections were
created with: ``MilvusVectorStore`` sends its searches without one, so an index opened at
``"Strong"`` over collections created at ``"Bounded"`` read its naive searches at
``"Bounded"`` (the load benchmark caught 11 deleted passages returned after their deletes
were acknowledged)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from llama_index.core import Document
from pymilvus import AsyncMilvusClient, MilvusClient

from llama_index_graphrag_milvus import GraphRAGIndex
from llama_index_graphrag_milvus.retrieval import NaiveSearch
from tests.support.fakes import HashEmbedding
from tests.support.markers import SERVER_ONLY

pytestmark = pytest.mark.milvus


@pytest.fixture
def search_levels(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, Any]]]:
    """``(call, consistency_level)`` of every search this process sends (the calls still
    run), sync and async."""
    seen: list[tuple[str, Any]] = []

    def spy(cls: type, name: str) -> None:
        real = getattr(cls, name)

        def recording(self: Any, *args: Any, **kwargs: Any) -> Any:
            seen.append((name, kwargs.get("consistency_level")))
            return real(self, *args, **kwargs)

        monkeypatch.setattr(cls, name, recording)

    for cls in (MilvusClient, AsyncMilvusClient):
        for name in ("search", "hybrid_search"):
            spy(cls, name)
    yield seen


def reopened(milvus_uri: str, embed_model: HashEmbedding,
             make_index: Callable[..., GraphRAGIndex]) -> GraphRAGIndex:
    """FAMILY written by an index at ``"Bounded"`` (its collections' level), opened again
    at ``"Strong"``."""
    make_index(consistency_level="Bounded").close()
    return GraphRAGIndex(uri=milvus_uri, embed_model=embed_model, consistency_level="Strong")


def test_naive_searches_read_at_the_index_level(milvus_uri: str, embed_model: HashEmbedding,
                                                 make_index: Callable[..., GraphRAGIndex],
                                                 search_levels: list[tuple[str, Any]]) -> None:
    index = reopened(milvus_uri, embed_model, make_index)
    searches = [NaiveSearch.DENSE, *((NaiveSearch.BM25, NaiveSearch.HYBRID)
                                     if index.store.full_text else ())]
    try:
        for search in searches:
            retriever = index.as_naive_retriever(similarity_top_k=2, search=search)
            search_levels.clear()
            assert retriever.retrieve("Who taught Leonhard Euler?")
            assert asyncio.run(retriever.aretrieve("Who taught Leonhard Euler?"))
            assert len(search_levels) >= 2, search
            assert {level for _, level in search_levels} == {"Strong"}, (search, search_levels)
    finally:
        index.close()


def test_a_call_that_names_its_level_keeps_it(family_index: GraphRAGIndex,
                                              search_levels: list[tuple[str, Any]]) -> None:
    client = family_index.store.passages.client
    vector = family_index.embed_model.get_query_embedding("Euler")
    client.search(family_index.store.passage_collection, data=[vector], limit=1,
                  consistency_level="Eventually")
    client.search(family_index.store.passage_collection, data=[vector], limit=1)
    assert search_levels == [("search", "Eventually"),
                             ("search", family_index.store.consistency_level)]


@SERVER_ONLY
def test_no_deleted_passage_after_an_acknowledged_delete(
        milvus_uri: str, embed_model: HashEmbedding,
        make_index: Callable[..., GraphRAGIndex]) -> None:
    """On the server, over collections created at ``"Bounded"`` (5 s of staleness allowed):
    at ``"Strong"`` naive RAG finds a passage as soon as its insert returns, and not once
    its delete returns."""
    index = reopened(milvus_uri, embed_model, make_index)
    text = "The Zwolle manuscript of 1724 lists Jakob Hermann among the Basel mathematicians."
    naive = index.as_naive_retriever(similarity_top_k=3)
    try:
        index.insert_triplets([(Document(text=text, doc_id="zwolle"),
                                [("Zwolle manuscript", "lists", "Jakob Hermann")])])
        assert text in [hit.node.get_content() for hit in naive.retrieve(text)]
        index.delete_ref_doc("zwolle")
        assert text not in [hit.node.get_content() for hit in naive.retrieve(text)]
    finally:
        index.close()
