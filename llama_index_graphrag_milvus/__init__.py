"""Graph RAG on Milvus for LlamaIndex: multi-hop retrievers, an LLM relation reranker, and
Microsoft GraphRAG's communities with local and global search.

The root holds what a user of the package needs: the index, its retrievers, reranker and
query engine, the extractors, the records the index returns, and the errors. The rest is
importable from its module; the folders name the pipeline's stages:

- :mod:`.extraction`: passages to triplets (an LLM, or spaCy);
- :mod:`.ingestion`: triplets and passages written to Milvus, documents deleted;
- :mod:`.milvus`: the collections (the only folder that imports pymilvus);
- :mod:`.graph`: the in-memory graph and its algorithms (pure numpy and scipy);
- :mod:`.retrieval`: the retrieval methods, one module each and each an object that owns
  its settings (:class:`BridgeRetrieval`, :class:`PageRankRetrieval`,
  :class:`PCSTRetrieval`, :class:`KHopRetrieval`), and what they share; where the graph
  lives (in memory, or served by Milvus) is its :mod:`~.retrieval.sources`' business;
- :mod:`.rerank`: the LLM relation reranker;
- :mod:`.communities`: Microsoft GraphRAG's communities, reports, local and global search;
- :mod:`.explain`: why a retrieval returned what it returned, as a record and an HTML page;
- :mod:`.explore`: a local web app to browse an index and compare methods with naive RAG;
- :mod:`.index`: :class:`GraphRAGIndex`, which ties them together.

>>> from llama_index_graphrag_milvus import GraphRAGIndex, GraphRelationRerank
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from llama_index_graphrag_milvus.communities import (
    CommunityBuildStats,
    CommunityReporter,
    GlobalSearchQueryEngine,
    LocalSearchRetriever,
)
from llama_index_graphrag_milvus.errors import (
    CommunitiesNotBuiltError,
    EmbeddingModelError,
    EmptyIndexError,
    GraphRAGError,
    InvalidInputError,
    MilvusStoreError,
    MissingDependencyError,
)
from llama_index_graphrag_milvus.extraction import (
    ExtractionCache,
    ExtractionReport,
    SpacyTripletExtractor,
    TripletExtractor,
)
from llama_index_graphrag_milvus.index import GraphRAGIndex
from llama_index_graphrag_milvus.ingestion import DeletionStats, IngestionStats
from llama_index_graphrag_milvus.rerank import GraphRelationRerank
from llama_index_graphrag_milvus.retrieval import (
    BridgeRetrieval,
    GraphRAGRetriever,
    KHopRetrieval,
    PageRankRetrieval,
    PCSTRetrieval,
)

__version__ = "0.2.0"

__all__ = [
    "BridgeRetrieval",
    "CommunitiesNotBuiltError",
    "CommunityBuildStats",
    "CommunityReporter",
    "DeletionStats",
    "EmbeddingModelError",
    "EmptyIndexError",
    "ExtractionCache",
    "ExtractionReport",
    "GlobalSearchQueryEngine",
    "GraphRAGError",
    "GraphRAGIndex",
    "GraphRAGRetriever",
    "GraphRelationRerank",
    "IngestionStats",
    "InvalidInputError",
    "KHopRetrieval",
    "LocalSearchRetriever",
    "MilvusStoreError",
    "MissingDependencyError",
    "PCSTRetrieval",
    "PageRankRetrieval",
    "SpacyTripletExtractor",
    "TripletExtractor",
    "__version__",
]

MOVED = {
    "CandidateRelation": "llama_index_graphrag_milvus.records",
    "Community": "llama_index_graphrag_milvus.records",
    "CommunityReport": "llama_index_graphrag_milvus.records",
    "CommunityReportRetriever": "llama_index_graphrag_milvus.communities",
    "CommunitySet": "llama_index_graphrag_milvus.communities",
    "DescribedExtraction": "llama_index_graphrag_milvus.extraction",
    "EmbeddingDimensionError": "llama_index_graphrag_milvus.errors",
    "EntityDescription": "llama_index_graphrag_milvus.records",
    "EntityRelationGraph": "llama_index_graphrag_milvus.graph",
    "ExpansionConfig": "llama_index_graphrag_milvus.graph",
    "Finding": "llama_index_graphrag_milvus.records",
    "GlobalSearchStats": "llama_index_graphrag_milvus.communities",
    "MilvusGraphStore": "llama_index_graphrag_milvus.milvus",
    "RelationDescription": "llama_index_graphrag_milvus.records",
    "Triplet": "llama_index_graphrag_milvus.records",
    "extraction_failures": "llama_index_graphrag_milvus.extraction",
    "parse_described": "llama_index_graphrag_milvus.extraction",
    "parse_triplets": "llama_index_graphrag_milvus.extraction",
}
"""Names the root exported in 0.1.0 that now live only in their modules: importing them from
the root still works, with a ``DeprecationWarning`` that names the module."""


def __getattr__(name: str) -> Any:
    module = MOVED.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(f"{__name__}.{name} is deprecated at the package root; import it from "
                  f"{module}", DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(module), name)
