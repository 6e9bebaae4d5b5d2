"""Retrieval methods over one :class:`~llama_index_graphrag_milvus.index.GraphRAGIndex`.

- :mod:`.retriever`: :class:`GraphRAGRetriever`, the shared query steps;
- :mod:`.steps`, :mod:`.base`, :mod:`.io`: what every method shares (query checks, seeds,
  results, the requests and their sync and async drivers);
- one module per method: :mod:`.bridge` (graph-guided second hop, the default),
  :mod:`.pagerank` (personalized PageRank), :mod:`.pcst` (Steiner tree subgraph),
  :mod:`.khop` (k-hop pool);
- :mod:`.naive`: :class:`NaiveRetriever`, plain vector search with the same input checks.
"""

from llama_index_graphrag_milvus.retrieval.base import QueryContext, RetrievalMethod, SeedConfig
from llama_index_graphrag_milvus.retrieval.bridge import BridgeRetrieval
from llama_index_graphrag_milvus.retrieval.khop import KHopRetrieval
from llama_index_graphrag_milvus.retrieval.naive import NaiveRetriever
from llama_index_graphrag_milvus.retrieval.pagerank import PageRankRetrieval
from llama_index_graphrag_milvus.retrieval.pcst import PCSTRetrieval
from llama_index_graphrag_milvus.retrieval.retriever import (
    DEFAULT_PASSAGE_SCORING,
    PASSAGE_SCORINGS,
    GraphRAGRetriever,
)
from llama_index_graphrag_milvus.retrieval.steps import DEFAULT_NER_PROMPT, DEFAULT_SIMILARITY_TOP_K

__all__ = [
    "DEFAULT_NER_PROMPT",
    "DEFAULT_PASSAGE_SCORING",
    "DEFAULT_SIMILARITY_TOP_K",
    "PASSAGE_SCORINGS",
    "BridgeRetrieval",
    "GraphRAGRetriever",
    "KHopRetrieval",
    "NaiveRetriever",
    "PCSTRetrieval",
    "PageRankRetrieval",
    "QueryContext",
    "RetrievalMethod",
    "SeedConfig",
]
