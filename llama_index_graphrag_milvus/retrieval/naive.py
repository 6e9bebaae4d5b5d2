"""Naive vector RAG over the passage collection, with the graph retriever's input checks.

Core's ``VectorIndexRetriever`` on the passages' ``MilvusVectorStore``, plus what the graph
retriever guarantees: an empty query, a non-text query, a ``similarity_top_k`` Milvus refuses
and an embedding model of the wrong dimension are package errors, not pymilvus or pydantic
ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from llama_index.core import VectorStoreIndex
from llama_index.core.indices.vector_store.retrievers import VectorIndexRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle

from llama_index_graphrag_milvus.records import MILVUS_MAX_TOP_K
from llama_index_graphrag_milvus.retrieval.base import positive_int
from llama_index_graphrag_milvus.retrieval.steps import (
    CheckedQueryMixin,
    check_query,
)

if TYPE_CHECKING:
    from llama_index_graphrag_milvus.store import MilvusGraphStore


class NaiveRetriever(CheckedQueryMixin, VectorIndexRetriever):
    """Plain vector search over the passages (what :meth:`GraphRAGIndex.as_naive_retriever`
    returns).

    Example::

        naive = index.as_naive_retriever(similarity_top_k=5)
        hits = naive.retrieve("Who taught Euler?")
    """

    def __init__(self, store: MilvusGraphStore, index: VectorStoreIndex,
                 similarity_top_k: int = 2, **kwargs: Any) -> None:
        self._graph_store = store
        super().__init__(index, similarity_top_k=positive_int(
            "similarity_top_k", similarity_top_k, MILVUS_MAX_TOP_K), **kwargs)

    def _checked(self, query_bundle: QueryBundle, vector: list[float]) -> QueryBundle:
        self._graph_store.check_dimension(len(vector), "the embedding model")
        query_bundle.embedding = vector
        return query_bundle

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = check_query(query_bundle)
        vector = query_bundle.embedding or self._embed_model.get_query_embedding(query)
        return super()._retrieve(self._checked(query_bundle, vector))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = check_query(query_bundle)
        vector = (query_bundle.embedding
                  or await self._embed_model.aget_query_embedding(query))
        return await super()._aretrieve(self._checked(query_bundle, vector))
