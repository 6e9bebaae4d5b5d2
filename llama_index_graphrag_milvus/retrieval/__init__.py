"""Retrieval methods over one :class:`~llama_index_graphrag_milvus.index.GraphRAGIndex`.

Where things are:

- :mod:`.retriever`: :class:`GraphRAGRetriever`, the shared query steps around a method;
- :mod:`.method`: what a method is (:class:`RetrievalMethod`) and what it is given
  (:class:`QueryContext`, :class:`SeedConfig`); a method of your own is a subclass, passed as
  ``method=`` (the module shows one);
- one module per method, each an object that owns its settings: :mod:`.bridge`
  (:class:`BridgeRetrieval`, the graph-guided second hop, the default), :mod:`.pagerank`
  (:class:`PageRankRetrieval`), :mod:`.pcst` (:class:`PCSTRetrieval`), :mod:`.khop`
  (:class:`KHopRetrieval`); :mod:`.methods` names them (:class:`PassageScoring`) and keeps
  the keyword form of earlier releases; Microsoft GraphRAG's local search is in
  :mod:`llama_index_graphrag_milvus.communities.local_search`;
- the steps the methods share: :mod:`.seeds` (entity and relation seeds),
  :mod:`.neighbourhood` (the graph steps), :mod:`.passages` (passage rankings, relation
  texts, results), :mod:`.steps` (pure);
- the I/O: :mod:`.requests` (the typed requests a plan yields), :mod:`.drivers` (the tables
  that answer them, sync and async) and :mod:`.sources` (where the graph lives: the graph
  requests answered in memory or by Milvus);
- :mod:`.settings`: the closed sets of choices (:class:`SearchPlace`...) and where searches
  run; :mod:`.naive`: :class:`NaiveRetriever`, plain vector search with the same input
  checks.

This package exports what a user composes and what a method's author needs; the request
types and the drivers import from their modules.
"""

from llama_index_graphrag_milvus.retrieval.bridge import BridgeQuery, BridgeRetrieval
from llama_index_graphrag_milvus.retrieval.khop import KHopRetrieval, PoolOrder
from llama_index_graphrag_milvus.retrieval.method import QueryContext, RetrievalMethod, SeedConfig
from llama_index_graphrag_milvus.retrieval.methods import (
    DEFAULT_PASSAGE_SCORING,
    PASSAGE_SCORINGS,
    PassageScoring,
)
from llama_index_graphrag_milvus.retrieval.naive import NaiveRetriever
from llama_index_graphrag_milvus.retrieval.neighbourhood import expand_pool, relations_of
from llama_index_graphrag_milvus.retrieval.pagerank import PageRankRetrieval
from llama_index_graphrag_milvus.retrieval.passages import (
    Result,
    by_own_similarity,
    read_relation_texts,
    search_passages,
    with_own_relations,
)
from llama_index_graphrag_milvus.retrieval.pcst import PCSTRetrieval
from llama_index_graphrag_milvus.retrieval.requests import Plan, first, side_by_side
from llama_index_graphrag_milvus.retrieval.retriever import GraphRAGRetriever
from llama_index_graphrag_milvus.retrieval.seeds import find_seeds, search_relations
from llama_index_graphrag_milvus.retrieval.settings import GraphMode, NaiveSearch, SearchPlace

__all__ = [
    "DEFAULT_PASSAGE_SCORING",
    "PASSAGE_SCORINGS",
    "BridgeQuery",
    "BridgeRetrieval",
    "GraphMode",
    "GraphRAGRetriever",
    "KHopRetrieval",
    "NaiveRetriever",
    "NaiveSearch",
    "PCSTRetrieval",
    "PageRankRetrieval",
    "PassageScoring",
    "Plan",
    "PoolOrder",
    "QueryContext",
    "Result",
    "RetrievalMethod",
    "SearchPlace",
    "SeedConfig",
    "by_own_similarity",
    "expand_pool",
    "find_seeds",
    "first",
    "read_relation_texts",
    "relations_of",
    "search_passages",
    "search_relations",
    "side_by_side",
    "with_own_relations",
]
