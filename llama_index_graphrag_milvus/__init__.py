"""Graph RAG on Milvus for LlamaIndex: multi-hop retrievers, an LLM relation reranker, and
Microsoft GraphRAG's communities with local and global search.

>>> from llama_index_graphrag_milvus import GraphRAGIndex, GraphRelationRerank
"""

from llama_index_graphrag_milvus.communities.build import CommunityBuildStats, CommunitySet
from llama_index_graphrag_milvus.communities.global_search import (
    GlobalSearchQueryEngine,
    GlobalSearchStats,
)
from llama_index_graphrag_milvus.communities.local_search import LocalSearchRetriever
from llama_index_graphrag_milvus.communities.report_retriever import CommunityReportRetriever
from llama_index_graphrag_milvus.communities.reports import CommunityReporter
from llama_index_graphrag_milvus.errors import (
    CommunitiesNotBuiltError,
    EmbeddingDimensionError,
    EmbeddingModelError,
    EmptyIndexError,
    GraphRAGError,
    InvalidInputError,
    MilvusStoreError,
    MissingDependencyError,
)
from llama_index_graphrag_milvus.extraction import (
    DescribedExtraction,
    ExtractionCache,
    ExtractionReport,
    TripletExtractor,
    extraction_failures,
    parse_described,
    parse_triplets,
)
from llama_index_graphrag_milvus.extraction.spacy_extractor import SpacyTripletExtractor
from llama_index_graphrag_milvus.graph import EntityRelationGraph, ExpansionConfig
from llama_index_graphrag_milvus.index import GraphRAGIndex
from llama_index_graphrag_milvus.ingestion import IngestionStats
from llama_index_graphrag_milvus.ingestion.deletion import DeletionStats
from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore
from llama_index_graphrag_milvus.records import (
    CandidateRelation,
    Community,
    CommunityReport,
    EntityDescription,
    Finding,
    RelationDescription,
    Triplet,
)
from llama_index_graphrag_milvus.rerank import GraphRelationRerank
from llama_index_graphrag_milvus.retrieval import GraphRAGRetriever

__version__ = "0.1.0"

__all__ = [
    "CandidateRelation",
    "CommunitiesNotBuiltError",
    "Community",
    "CommunityBuildStats",
    "CommunityReport",
    "CommunityReportRetriever",
    "CommunityReporter",
    "CommunitySet",
    "DeletionStats",
    "DescribedExtraction",
    "EmbeddingDimensionError",
    "EmbeddingModelError",
    "EmptyIndexError",
    "EntityDescription",
    "EntityRelationGraph",
    "ExpansionConfig",
    "ExtractionCache",
    "ExtractionReport",
    "Finding",
    "GlobalSearchQueryEngine",
    "GlobalSearchStats",
    "GraphRAGError",
    "GraphRAGIndex",
    "GraphRAGRetriever",
    "GraphRelationRerank",
    "IngestionStats",
    "InvalidInputError",
    "LocalSearchRetriever",
    "MilvusGraphStore",
    "MilvusStoreError",
    "MissingDependencyError",
    "RelationDescription",
    "SpacyTripletExtractor",
    "Triplet",
    "TripletExtractor",
    "__version__",
    "extraction_failures",
    "parse_described",
    "parse_triplets",
]
