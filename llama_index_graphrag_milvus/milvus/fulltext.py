"""Milvus full-text search (BM25) on the passage collection.

An index created with ``GraphRAGIndex(full_text_search=True)`` gets, on its passage
collection, what llama-index-vector-stores-milvus gives a ``MilvusVectorStore`` created with
``enable_sparse=True`` and a :class:`BM25BuiltInFunction`: the ``text`` field analysed, a
sparse field ``sparse_embedding`` that Milvus fills with the text's BM25 terms on every
insert, and a sparse index on it. The package does not write another BM25 path: the vector
store's own ``"sparse"`` and ``"hybrid"`` query modes (dense + BM25, reciprocal rank fusion)
are what :meth:`~llama_index_graphrag_milvus.GraphRAGIndex.as_naive_retriever` uses.

The choice is made at creation (Milvus adds a function only to a new collection) and read
back from the collection's schema when the index is reopened.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llama_index.core.schema import BaseNode
from llama_index.core.vector_stores.types import VectorStoreQuery
from llama_index.vector_stores.milvus import MilvusVectorStore
from llama_index.vector_stores.milvus.utils import BM25BuiltInFunction
from pymilvus import FunctionType

from llama_index_graphrag_milvus.errors import InvalidInputError

FULL_TEXT_FIELD = "sparse_embedding"
"""The passage collection's BM25 field (the vector store's default sparse field)."""
TEXT_FIELD = "text"
"""The passage text, which the BM25 function reads."""
RRF_K = 60
"""Reciprocal rank fusion's constant in hybrid search (Milvus's and the literature's)."""


class PassageVectorStore(MilvusVectorStore):
    """``MilvusVectorStore`` whose BM25 search (``"sparse"`` / ``"text_search"`` query
    modes) sends no ``drop_ratio_search``: the vector store asks for 0.2, which Milvus
    refuses on a BM25 field ("only drop_ratio_search=0 is supported"); BM25 scores every
    query term already. Its scores are BM25's, positive on every Milvus."""

    def _bm25_request(self, query: VectorStoreQuery, string_expr: str,
                      output_fields: list[str], kwargs: dict[str, Any]) -> dict[str, Any]:
        return {"collection_name": self.collection_name, "data": [query.query_str],
                "anns_field": self.sparse_embedding_field, "limit": query.similarity_top_k,
                "filter": string_expr, "output_fields": output_fields,
                "search_params": {"metric_type": "BM25"},
                "partition_names": kwargs.get("milvus_partition_names")}

    def _bm25_hits(self, result: Any) -> tuple[list[BaseNode], list[float], list[str]]:
        """Nodes, BM25 scores (positive, best first: Milvus Lite reports them negated, a
        server as they are) and ids."""
        nodes, scores, ids = self._parse_from_milvus_results(result)
        return nodes, [abs(float(score)) for score in scores], ids

    def _sparse_search(self, query: VectorStoreQuery, string_expr: str,
                       output_fields: list[str], **kwargs: Any
                       ) -> tuple[list[BaseNode], list[float], list[str]]:
        if not isinstance(self.sparse_embedding_function, BM25BuiltInFunction):
            return super()._sparse_search(query, string_expr, output_fields, **kwargs)
        result = self.client.search(
            **self._bm25_request(query, string_expr, output_fields, kwargs))
        return self._bm25_hits(result)

    async def _async_sparse_search(self, query: VectorStoreQuery, string_expr: str,
                                   output_fields: list[str], **kwargs: Any
                                   ) -> tuple[list[BaseNode], list[float], list[str]]:
        if not isinstance(self.sparse_embedding_function, BM25BuiltInFunction):
            return await super()._async_sparse_search(query, string_expr, output_fields,
                                                      **kwargs)
        assert self.aclient is not None, "the passage store is opened with an async client"
        result = await self.aclient.search(
            **self._bm25_request(query, string_expr, output_fields, kwargs))
        return self._bm25_hits(result)


def check_analyzer(analyzer: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The analyzer parameters as Milvus takes them (a ``dict``), or ``None`` for Milvus's
    standard analyzer.

    >>> check_analyzer({"tokenizer": "jieba"})
    {'tokenizer': 'jieba'}
    >>> check_analyzer(None) is None
    True
    """
    if analyzer is None:
        return None
    if not isinstance(analyzer, Mapping) or not analyzer:
        raise InvalidInputError(
            f"full_text_analyzer must be a non-empty dict of Milvus analyzer parameters, "
            f"got {analyzer!r}: for example {{'tokenizer': 'jieba'}} (Chinese) or "
            "{{'tokenizer': 'standard', 'filter': ['lowercase']}} (see Milvus's analyzer "
            "documentation).")
    return dict(analyzer)


def vector_store_kwargs(analyzer: Mapping[str, Any] | None) -> dict[str, Any]:
    """What ``MilvusVectorStore`` takes to create (or open) a passage collection with BM25
    full-text search."""
    function = BM25BuiltInFunction(input_field_names=TEXT_FIELD,
                                   output_field_names=FULL_TEXT_FIELD,
                                   analyzer_params=dict(analyzer) if analyzer else None)
    return {"enable_sparse": True, "sparse_embedding_field": FULL_TEXT_FIELD,
            "sparse_embedding_function": function, "hybrid_ranker": "RRFRanker",
            "hybrid_ranker_params": {"k": RRF_K}}


def has_full_text(collection_info: Mapping[str, Any]) -> bool:
    """Whether a described collection has a BM25 function (``describe_collection``)."""
    for function in collection_info.get("functions") or ():
        kind = function.get("type")
        if kind in (FunctionType.BM25, "BM25", int(FunctionType.BM25)):
            return True
    return False
