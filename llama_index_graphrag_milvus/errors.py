"""Exceptions raised by llama_index_graphrag_milvus.

Every error the package raises on purpose derives from :class:`GraphRAGError`, so a caller
can catch them all with one ``except``. Errors about bad arguments or bad input data also
derive from :class:`ValueError`.
"""

from __future__ import annotations


class GraphRAGError(Exception):
    """Base class of every error raised on purpose by this package."""


class InvalidInputError(GraphRAGError, ValueError):
    """Raised for a bad argument or bad input data, before anything is written.

    Examples: an empty or whitespace query, a collection prefix Milvus cannot use as a
    collection name, a passage longer than the Milvus VARCHAR limit.
    """


class EmptyIndexError(GraphRAGError):
    """Raised when a query reaches an index that holds no relations yet.

    Usually the ``uri`` or ``collection_prefix`` points at a different store than the one
    that was ingested, or nothing was ingested.
    """


class EmbeddingModelError(GraphRAGError, ValueError):
    """Raised when a reopened index is given an embedding model other than the one it was
    built with (its vectors differ from the recorded probe's), and
    ``allow_embed_model_change`` is off.
    """


class EmbeddingDimensionError(EmbeddingModelError):
    """Raised when the embedding model's dimension differs from the stored collections'.

    The collections were created with the embedding model used at ingestion; a reopened
    index must use the same model (or a new ``collection_prefix``).
    """


class MilvusStoreError(GraphRAGError):
    """Raised when a Milvus call fails; the pymilvus error is chained as ``__cause__``."""


class MissingDependencyError(GraphRAGError, ImportError):
    """Raised when an optional dependency is not installed; the message names the install
    command.

    Examples: :class:`~llama_index_graphrag_milvus.extraction.spacy_extractor.SpacyTripletExtractor`
    without spaCy (``pip install "llama-index-graphrag-milvus[nlp]"``) or without the spaCy
    pipeline it is asked to load. The ``ImportError`` (or spaCy's ``OSError``) is chained as
    ``__cause__``.
    """


class CommunitiesNotBuiltError(GraphRAGError):
    """Raised when local or global search, or a community read, reaches an index whose
    communities were never built, or whose last ``build_communities`` was interrupted.

    Run ``index.build_communities()`` (with ``pip install
    "llama-index-graphrag-milvus[communities]"``); an interrupted build is simply run again.
    """


class SolverError(GraphRAGError, RuntimeError):
    """Raised when an external solver fails on a problem the package built (the PCST
    solver, ``pcst_fast``); the solver's error is chained as ``__cause__``. The Steiner tree
    method catches it and returns the k-hop pool's passages instead, with a warning and a
    note in the explanation.
    """
