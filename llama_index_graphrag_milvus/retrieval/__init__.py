"""Retrieval methods over one :class:`~llama_index_graphrag_milvus.index.GraphRAGIndex`.

Where things are:

- :mod:`.retriever`: :class:`GraphRAGRetriever`, the shared query steps around a method;
- :mod:`.method`: what a method is (:class:`RetrievalMethod`) and what it is given
  (:class:`QueryContext`, :class:`SeedConfig`); a method of your own is a subclass,
  passed as ``passage_scoring`` (the module shows one);
- one module per method: :mod:`.bridge` (graph-guided second hop, the default),
  :mod:`.pagerank` (personalized PageRank), :mod:`.pcst` (Steiner tree subgraph),
  :mod:`.khop` (k-hop pool); Microsoft GraphRAG's local search is in
  :mod:`llama_index_graphrag_milvus.communities.local_search`;
- the steps the methods share: :mod:`.seeds` (entity and relation seeds),
  :mod:`.neighbourhood` (the graph steps, in memory or served by Milvus),
  :mod:`.passages` (passage searches, relation texts, results), :mod:`.steps` (pure);
- the I/O: :mod:`.requests` (typed requests a plan yields) and :mod:`.drivers` (the one
  table that answers them, sync and async);
- :mod:`.naive`: :class:`NaiveRetriever`, plain vector search with the same input checks.

A new method: a module here with a :class:`RetrievalMethod` subclass (its ``plan`` uses the
shared steps), then a name for it in :data:`PASSAGE_SCORINGS` and one line in
``GraphRAGRetriever.__init__`` (or pass an instance, without touching the package).
"""

from llama_index_graphrag_milvus.retrieval.bridge import BridgeRetrieval
from llama_index_graphrag_milvus.retrieval.drivers import AsyncDriver, DriverContext, SyncDriver
from llama_index_graphrag_milvus.retrieval.khop import KHopRetrieval
from llama_index_graphrag_milvus.retrieval.method import QueryContext, RetrievalMethod, SeedConfig
from llama_index_graphrag_milvus.retrieval.naive import NaiveRetriever
from llama_index_graphrag_milvus.retrieval.neighbourhood import (
    expand_pool,
    own_relation_lists,
    relations_of,
)
from llama_index_graphrag_milvus.retrieval.pagerank import PageRankRetrieval
from llama_index_graphrag_milvus.retrieval.passages import (
    Result,
    by_own_similarity,
    fetch_passages,
    read_relation_texts,
    search_passages,
    with_own_relations,
)
from llama_index_graphrag_milvus.retrieval.pcst import PCSTRetrieval
from llama_index_graphrag_milvus.retrieval.requests import (
    EmbedTexts,
    GetEntityNames,
    GetPassages,
    GetRelationTexts,
    LoadGraph,
    Plan,
    Request,
    SearchPassages,
    SearchRelations,
    first,
)
from llama_index_graphrag_milvus.retrieval.retriever import (
    DEFAULT_PASSAGE_SCORING,
    PASSAGE_SCORINGS,
    GraphRAGRetriever,
)
from llama_index_graphrag_milvus.retrieval.seeds import find_seeds, search_relations
from llama_index_graphrag_milvus.retrieval.steps import DEFAULT_NER_PROMPT, DEFAULT_SIMILARITY_TOP_K

__all__ = [
    "DEFAULT_NER_PROMPT",
    "DEFAULT_PASSAGE_SCORING",
    "DEFAULT_SIMILARITY_TOP_K",
    "PASSAGE_SCORINGS",
    "AsyncDriver",
    "BridgeRetrieval",
    "DriverContext",
    "EmbedTexts",
    "GetEntityNames",
    "GetPassages",
    "GetRelationTexts",
    "GraphRAGRetriever",
    "KHopRetrieval",
    "LoadGraph",
    "NaiveRetriever",
    "PCSTRetrieval",
    "PageRankRetrieval",
    "Plan",
    "QueryContext",
    "Request",
    "Result",
    "RetrievalMethod",
    "SearchPassages",
    "SearchRelations",
    "SeedConfig",
    "SyncDriver",
    "by_own_similarity",
    "expand_pool",
    "fetch_passages",
    "find_seeds",
    "first",
    "own_relation_lists",
    "read_relation_texts",
    "relations_of",
    "search_passages",
    "search_relations",
    "with_own_relations",
]
