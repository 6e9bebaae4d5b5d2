"""Graph RAG on Milvus for LlamaIndex: a multi-hop retriever and an LLM relation reranker.

>>> from llama_index_graphrag_milvus import GraphRAGIndex, GraphRelationRerank
"""

from llama_index_graphrag_milvus.deletion import DeletionStats
from llama_index_graphrag_milvus.errors import (
    EmbeddingDimensionError,
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
    TripletExtractor,
    extraction_failures,
    parse_triplets,
)
from llama_index_graphrag_milvus.graph import EntityRelationGraph, ExpansionConfig
from llama_index_graphrag_milvus.index import GraphRAGIndex
from llama_index_graphrag_milvus.ingestion import IngestionStats
from llama_index_graphrag_milvus.nlp_extraction import SpacyTripletExtractor
from llama_index_graphrag_milvus.records import CandidateRelation, Triplet
from llama_index_graphrag_milvus.rerank import GraphRelationRerank
from llama_index_graphrag_milvus.retrieval import GraphRAGRetriever
from llama_index_graphrag_milvus.store import MilvusGraphStore

__version__ = "0.1.0"

__all__ = [
    "CandidateRelation",
    "DeletionStats",
    "EmbeddingDimensionError",
    "EmbeddingModelError",
    "EmptyIndexError",
    "EntityRelationGraph",
    "ExpansionConfig",
    "ExtractionCache",
    "ExtractionReport",
    "GraphRAGError",
    "GraphRAGIndex",
    "GraphRAGRetriever",
    "GraphRelationRerank",
    "IngestionStats",
    "InvalidInputError",
    "MilvusGraphStore",
    "MilvusStoreError",
    "MissingDependencyError",
    "SpacyTripletExtractor",
    "Triplet",
    "TripletExtractor",
    "__version__",
    "extraction_failures",
    "parse_triplets",
]
