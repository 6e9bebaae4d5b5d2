"""Exceptions raised by llama_index_graphrag_milvus.

Every error the package raises on purpose derives from :class:`GraphRAGError`, so a caller
can catch them all with one ``except``. Errors about bad arguments or bad input data also
derive from :class:`ValueError`; the other builtin bases are listed in parentheses. The
tree, one line per class and when it is raised::

    GraphRAGError                   any error the package raises on purpose
    ├── InvalidInputError           (ValueError) a bad argument or input, before any write
    ├── EmptyIndexError             a query reaches an index that holds no relations
    ├── EmbeddingModelError         (ValueError) a reopened index gets another embedding model
    │   └── EmbeddingDimensionError     ... whose dimension differs from the collections'
    ├── MilvusStoreError            a Milvus call failed for good, or the index is closed
    │   └── MilvusUnavailableError      ... because the server is away or late: may be retried
    ├── MissingDependencyError      (ImportError) an optional dependency is not installed
    ├── CommunitiesNotBuiltError    communities are read before build_communities() ran
    ├── LLMTimeoutError             (TimeoutError) an LLM call gave no answer in time
    ├── LLMAnswerError              nothing usable in the answers of the LLM calls a step needs
    ├── ExtractionError             an update's new content could not be extracted
    ├── SolverError                 (RuntimeError) the PCST solver failed (k-hop answers)
    └── NotFoundError               (LookupError) the explorer is asked for a missing item

Catch :class:`MilvusUnavailableError` to retry a call (a server restarts, a network drops,
a call outlives the client timeout), and let other :class:`MilvusStoreError` propagate: a
missing collection or a rejected request fails the same way the next time.

>>> issubclass(MilvusUnavailableError, MilvusStoreError)
True
>>> issubclass(LLMTimeoutError, TimeoutError) and issubclass(LLMTimeoutError, GraphRAGError)
True
"""

from __future__ import annotations

import os
import sys
import warnings


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
    ``allow_embed_model_change`` is off; or when the model returned what cannot be stored or
    searched (another number of vectors than texts, vectors of different lengths, values
    that are not numbers, NaN or infinite ones), checked before anything is written.
    """


class EmbeddingDimensionError(EmbeddingModelError):
    """Raised when the embedding model's dimension differs from the stored collections'.

    The collections were created with the embedding model used at ingestion; a reopened
    index must use the same model (or a new ``collection_prefix``).
    """


class MilvusStoreError(GraphRAGError):
    """Raised when a Milvus call fails; the pymilvus error is chained as ``__cause__``.

    Also raised when the index was closed, and when a Milvus Lite file is held by another
    process. The failures a retry may cure are the subclass
    :class:`MilvusUnavailableError`; the others fail the same way the next time (a
    collection that is missing or was not created by this package, a rejected request).
    """


class MilvusUnavailableError(MilvusStoreError):
    """Raised when a Milvus call fails because the server cannot be reached or did not
    answer in time: the connection failed or was lost (pymilvus' code 2, "Fail connecting
    to server"; gRPC's ``UNAVAILABLE``), the call outlived the client timeout (gRPC's
    ``DEADLINE_EXCEEDED``, pymilvus' "Retry timeout"), or a restarted server has not loaded
    the collection again yet ("collection not loaded").

    The same call may succeed later, with no action on the index: its clients reconnect.
    Retry it after a pause (a restarted server takes seconds to load its collections).
    """


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


class LLMTimeoutError(GraphRAGError, TimeoutError):
    """Raised when an LLM call the package cannot do without gives no answer within its
    ``timeout``: the reduce call of
    :class:`~llama_index_graphrag_milvus.communities.GlobalSearchQueryEngine`.

    Also a builtin ``TimeoutError``, so ``except TimeoutError`` catches it. Raise the
    timeout, or make the prompt smaller (``reduce_max_tokens``). Calls that may fail one by
    one (a map batch, a passage's extraction, the reranker) do not raise it: they are
    counted or logged, and the run goes on.
    """


class LLMAnswerError(GraphRAGError):
    """Raised when the LLM answered, but nothing a step needs could be read from its
    answers: every map call of
    :class:`~llama_index_graphrag_milvus.communities.GlobalSearchQueryEngine` failed (it
    raised, or answered without JSON points), or its reduce call answered nothing. The
    message quotes the first failure; the LLM's error, if any, is chained as
    ``__cause__``. Check the LLM (its key, its model, its output-token limit) and ask
    again. (Some map calls failing is not an error: they are counted in
    ``response.metadata["map_failures"]``.)
    """


class ExtractionError(GraphRAGError):
    """Raised by ``update_ref_doc`` (and its async twin) when the LLM could not extract the
    triplets of some of the new content's passages (the extractor's retries spent): writing
    it would replace the document's graph with passages that have none. Nothing was
    deleted or written; run the update again once the LLM answers. (An insert stores such
    passages and marks them instead: see
    :func:`~llama_index_graphrag_milvus.extraction.extraction_failures`.)
    """


class SolverError(GraphRAGError, RuntimeError):
    """Raised when an external solver fails on a problem the package built (the PCST
    solver, ``pcst_fast``); the solver's error is chained as ``__cause__``. The Steiner tree
    method catches it and returns the k-hop pool's passages instead, with a warning and a
    note in the explanation.
    """


class NotFoundError(GraphRAGError, LookupError):
    """Raised when the explorer is asked for an entity, passage or community the index does
    not hold (its web app answers 404)."""


class UnsplitTextWarning(UserWarning):
    """Warned when most passages written to an index with full-text search are Chinese or
    Japanese and its analyzer is Milvus's standard one, which keeps a run of such characters
    between punctuation marks as one word: BM25 then matches almost nothing in them. Create
    the index with ``full_text_analyzer={"tokenizer": "jieba"}`` instead (Milvus Lite needs
    ``pip install jieba``), or silence it with
    ``warnings.filterwarnings("ignore", category=UnsplitTextWarning)`` (imported from
    ``llama_index_graphrag_milvus.errors``)."""


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn(message: str, category: type[Warning]) -> None:
    """``warnings.warn`` attributed to the first caller outside the package (the user's
    line, whatever the depth of the package's own calls in between), as
    ``skip_file_prefixes`` does from Python 3.12."""
    frame = sys._getframe(1)
    level = 2
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1  # type: ignore[assignment]
    warnings.warn(message, category, stacklevel=level)
