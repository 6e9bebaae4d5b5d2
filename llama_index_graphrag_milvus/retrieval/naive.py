"""Naive vector RAG over the passage collection, with the graph retriever's input checks.

Core's ``VectorIndexRetriever`` on the passages' ``MilvusVectorStore``, plus what the graph
retriever guarantees: an empty query, a non-text query, a ``similarity_top_k`` Milvus refuses
and an embedding model of the wrong dimension are package errors, not pymilvus or pydantic
ones.

Metadata ``filters`` are turned into a Milvus expression by the package's own
:func:`~llama_index_graphrag_milvus.milvus.filters.to_milvus_expression` (the graph retriever's
expression, handed to ``MilvusVectorStore.query`` as ``string_expr``), not by the vector
store's translation: both retrievers read the same filter language with the same results.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from llama_index.core import VectorStoreIndex
from llama_index.core.indices.vector_store.retrievers import VectorIndexRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.vector_stores import MetadataFilters
from llama_index.core.vector_stores.types import VectorStoreQueryMode

from llama_index_graphrag_milvus.embeddings import aembed_question, embed_question
from llama_index_graphrag_milvus.errors import InvalidInputError
from llama_index_graphrag_milvus.limits import MILVUS_MAX_TOP_K
from llama_index_graphrag_milvus.milvus.filters import in_list
from llama_index_graphrag_milvus.milvus.schema import milvus_errors
from llama_index_graphrag_milvus.retrieval.settings import NaiveSearch
from llama_index_graphrag_milvus.retrieval.steps import (
    CheckedQueryMixin,
    check_query,
    check_vector,
    given_vector,
)
from llama_index_graphrag_milvus.validation import check_choice, check_int

_QUERY_MODES = {NaiveSearch.BM25: VectorStoreQueryMode.TEXT_SEARCH,
                NaiveSearch.HYBRID: VectorStoreQueryMode.HYBRID}

if TYPE_CHECKING:
    from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore


_VECTOR_RETRIEVER_ARGUMENTS = frozenset(
    name for name, parameter in inspect.signature(VectorIndexRetriever.__init__).parameters.items()
    if parameter.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    and name not in ("self", "index", "similarity_top_k", "filters")) | {"vector_store_kwargs"}
"""What ``VectorIndexRetriever`` takes beside the naive retriever's own arguments (it keeps
any other keyword and ignores it: a misspelt one would change nothing, silently)."""


def _ids_expression(field: str, name: str, ids: Any) -> str:
    """``node_ids`` / ``doc_ids`` as a filter on ``field``, every id quoted (the vector
    store pastes them into its expression as they are: a quote in an id broke the search, and
    a crafted one widened it to other documents). Empty or ``None``: no restriction, as in
    core.

    >>> print(_ids_expression("doc_id", "doc_ids", ['a"b.md']))
    doc_id in ["a\\"b.md"]
    """
    if not ids:
        return ""
    if isinstance(ids, str) or not all(isinstance(i, str) for i in ids):
        raise InvalidInputError(
            f"{name} takes a list of string ids, got {ids!r}: pass [\"id\", ...].")
    return in_list(field, list(ids))


class NaiveRetriever(CheckedQueryMixin, VectorIndexRetriever):
    """Plain vector search over the passages (what :meth:`GraphRAGIndex.as_naive_retriever`
    returns), or BM25, or both fused (``search``: :class:`~.settings.NaiveSearch`), with the
    vector store's own query modes.

    Example::

        naive = index.as_naive_retriever(similarity_top_k=5)
        hits = naive.retrieve("Who taught Euler?")
        # dense + BM25 (an index created with full_text_search=True)
        hybrid = index.as_naive_retriever(similarity_top_k=5, search="hybrid")

    Raises:
        InvalidInputError: ``filters`` holds a key, operator or value the filter language
            refuses (see :mod:`llama_index_graphrag_milvus.milvus.filters`); ``filters``,
            ``node_ids`` or ``doc_ids`` come with a ``string_expr`` of the caller's, which
            ``MilvusVectorStore`` would let override them; ids that are not strings.
        MilvusStoreError: the search failed in Milvus (the pymilvus error is chained).
    """

    def __init__(self, store: MilvusGraphStore, index: VectorStoreIndex,
                 similarity_top_k: int = 2, filters: MetadataFilters | None = None,
                 search: NaiveSearch | str = NaiveSearch.DENSE, **kwargs: Any) -> None:
        unknown = sorted(set(kwargs) - _VECTOR_RETRIEVER_ARGUMENTS)
        if unknown:
            raise InvalidInputError(
                f"as_naive_retriever got unexpected arguments {unknown}: it takes "
                "similarity_top_k, filters, search and VectorIndexRetriever's "
                f"({', '.join(sorted(_VECTOR_RETRIEVER_ARGUMENTS))}).")
        self._graph_store = store
        self.search = NaiveSearch.of("search", search)
        if self.search is not NaiveSearch.DENSE:
            if not store.full_text:
                raise InvalidInputError(
                    f"search={self.search.value!r} needs Milvus's full-text search on the "
                    f"passages, and the index {store.prefix!r} was created without it: build "
                    "a new index (another collection_prefix) with full_text_search=True or "
                    "left unset (the default where Milvus has BM25: Lite, servers from 2.5), "
                    "or use search='dense'.")
            if "vector_store_query_mode" in kwargs:
                raise InvalidInputError(
                    "pass search= or vector_store_query_mode, not both.")
            kwargs["vector_store_query_mode"] = _QUERY_MODES[self.search]
        elif "vector_store_query_mode" in kwargs:  # core's retriever raises a bare ValueError
            check_choice("vector_store_query_mode", kwargs["vector_store_query_mode"],
                         [member.value for member in VectorStoreQueryMode],
                         "search='bm25' or 'hybrid'")
        store_kwargs = dict(kwargs.pop("vector_store_kwargs", None) or {})
        expression = " and ".join(f"({part})" for part in (
            store.filter_expression(filters),
            _ids_expression("id", "node_ids", kwargs.pop("node_ids", None)),
            _ids_expression("doc_id", "doc_ids", kwargs.pop("doc_ids", None))) if part)
        if expression:
            if store_kwargs.get("string_expr"):
                raise InvalidInputError(
                    "filters, node_ids and doc_ids cannot be combined with "
                    "vector_store_kwargs['string_expr']: MilvusVectorStore would apply one "
                    "and drop the other; express the restriction as metadata filters only."
                )
            store_kwargs["string_expr"] = expression
        super().__init__(index, similarity_top_k=check_int(
            "similarity_top_k", similarity_top_k, maximum=MILVUS_MAX_TOP_K,
            hint="the largest search limit Milvus accepts"),
            vector_store_kwargs=store_kwargs, **kwargs)

    def _checked(self, query_bundle: QueryBundle, vector: list[float], given: bool
                 ) -> QueryBundle:
        """``query_bundle`` with ``vector``, checked (``given``: the caller's
        ``QueryBundle.embedding``, not the model's)."""
        vector = check_vector(vector)
        self._graph_store.check_dimension(len(vector), "the embedding model", given)
        query_bundle.embedding = vector
        return query_bundle

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = check_query(query_bundle)
        if self.search is NaiveSearch.BM25:
            checked = query_bundle  # the query's words only: nothing to embed
        else:
            given = given_vector(query_bundle)
            vector = given or embed_question(self._embed_model, query, query_bundle)
            checked = self._checked(query_bundle, vector, given is not None)
        with milvus_errors(f"search {self._graph_store.passage_collection}"):
            return super()._retrieve(checked)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = check_query(query_bundle)
        if self.search is NaiveSearch.BM25:
            checked = query_bundle
        else:
            given = given_vector(query_bundle)
            vector = given or await aembed_question(self._embed_model, query, query_bundle)
            checked = self._checked(query_bundle, vector, given is not None)
        with milvus_errors(f"search {self._graph_store.passage_collection}"):
            return await super()._aretrieve(checked)
