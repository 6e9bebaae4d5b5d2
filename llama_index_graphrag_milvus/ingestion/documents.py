"""Documents into passages with triplets: the transformations an index runs before it writes.

The documents are split by node parsers (``Settings.node_parser`` by default) and their
passages go through a triplet extractor (:class:`~llama_index_graphrag_milvus.extraction.
TripletExtractor` by default, or any ``TransformComponent`` that leaves triplets in node
metadata). :class:`ExtractionOptions` are the keyword arguments of every index method that
takes documents; :func:`extract_documents` and :func:`aextract_documents` run the same
pipeline through the extractor's sync or async API.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from llama_index.core.ingestion import arun_transformations, run_transformations
from llama_index.core.llms.llm import LLM
from llama_index.core.schema import BaseNode, Document, MetadataMode, TextNode, TransformComponent
from llama_index.core.settings import Settings

from llama_index_graphrag_milvus.errors import InvalidInputError
from llama_index_graphrag_milvus.extraction.cache import ExtractionCache
from llama_index_graphrag_milvus.extraction.extractor import TripletExtractor
from llama_index_graphrag_milvus.limits import DOCUMENT_ID_MAX_BYTES
from llama_index_graphrag_milvus.validation import check_int, is_utf8

logger = logging.getLogger(__name__)


class ExtractionOptions(TypedDict, total=False):
    """How documents become passages with triplets (keyword arguments, all optional).

    Keys:
        llm: the extraction LLM (defaults to ``Settings.llm``) when ``kg_extractor`` is
            not given.
        transformations: node parsers run before extraction; defaults to
            ``[Settings.node_parser]`` (a ``SentenceSplitter``).
        kg_extractor: the extractor to use instead of :class:`TripletExtractor`: any
            ``TransformComponent`` that leaves triplets in node metadata, core's
            ``SimpleLLMPathExtractor`` and friends included.
        extraction_cache: keeps the triplets of every passage extracted successfully (for
            example ``ExtractionCache("./extraction_cache.json")``): run the same call again
            after a crash or failures and only the missing passages go to the LLM. Not with
            ``kg_extractor`` (give that one its own cache).
        extraction_workers: LLM requests in flight at most (``TripletExtractor``'s
            ``num_workers``, default 4); not with ``kg_extractor``.
    """

    llm: LLM | None
    transformations: Sequence[TransformComponent] | None
    kg_extractor: TransformComponent | None
    extraction_cache: ExtractionCache | None
    extraction_workers: int | None


EXTRACTION_OPTIONS = ("llm", "transformations", "kg_extractor", "extraction_cache",
                      "extraction_workers")
"""The keys of :class:`ExtractionOptions`."""


def split_options(kwargs: Mapping[str, Any]) -> tuple[ExtractionOptions, dict[str, Any]]:
    """``kwargs`` split into the extraction options and the rest.

    >>> options, rest = split_options({"llm": None, "uri": "./graphrag.db"})
    >>> options, rest
    ({'llm': None}, {'uri': './graphrag.db'})
    """
    options: Any = {k: v for k, v in kwargs.items() if k in EXTRACTION_OPTIONS}
    return options, {k: v for k, v in kwargs.items() if k not in EXTRACTION_OPTIONS}


def pipeline(options: ExtractionOptions) -> list[TransformComponent]:
    """The node parsers and the extractor of ``options`` (checked by
    :func:`check_options`)."""
    check_options(options)
    kg_extractor = options.get("kg_extractor")
    workers = options.get("extraction_workers")
    fields: dict[str, Any] = {} if workers is None else {
        "num_workers": check_int("extraction_workers", workers)}
    extractor = kg_extractor or TripletExtractor(llm=options.get("llm"),
                                                 cache=options.get("extraction_cache"),
                                                 **fields)
    return [*(options.get("transformations") or [Settings.node_parser]), extractor]


def check_options(options: ExtractionOptions) -> None:
    """Refuse extraction options the index does not take, before any LLM is resolved.

    Raises:
        InvalidInputError: an option that is not one of :data:`EXTRACTION_OPTIONS`, or
            ``extraction_cache`` / ``extraction_workers`` with ``kg_extractor``.
    """
    unknown = sorted(set(options) - set(EXTRACTION_OPTIONS))
    if unknown:
        raise InvalidInputError(
            f"unexpected arguments {unknown}: the extraction options are "
            f"{', '.join(EXTRACTION_OPTIONS)} (see ExtractionOptions).")
    kg_extractor = options.get("kg_extractor")
    cache = options.get("extraction_cache")
    workers = options.get("extraction_workers")
    if kg_extractor is not None and (cache is not None or workers is not None):
        raise InvalidInputError(
            "extraction_cache and extraction_workers configure the default "
            "TripletExtractor; with kg_extractor, set them on it instead: "
            "TripletExtractor(llm=llm, cache=..., num_workers=...)."
        )
    if workers is not None:
        check_int("extraction_workers", workers)


def check_document(document: Any) -> None:
    """Refuse what is not a document (a ``Document`` or a text node) and ids the passages'
    ``doc_id`` field cannot hold (not UTF-8, longer than :data:`DOCUMENT_ID_MAX_BYTES`).

    Raises:
        InvalidInputError: saying which and how to fix it.
    """
    if not isinstance(document, Document | TextNode):  # a node of text passes too
        raise InvalidInputError(
            f"documents must be llama_index Documents, got a {type(document).__name__}; "
            "wrap text as Document(text=..., doc_id=...).")
    doc_id = document.node_id
    if not is_utf8(doc_id):
        raise InvalidInputError(
            f"document id {doc_id!r} holds characters UTF-8 cannot encode (lone surrogates, "
            "often from a file name decoded with errors='surrogateescape'): give the document "
            "a clean doc_id.")
    if len(doc_id.encode("utf-8")) > DOCUMENT_ID_MAX_BYTES:
        raise InvalidInputError(
            f"document id {doc_id[:40]!r}... is {len(doc_id.encode('utf-8'))} bytes, more "
            f"than the {DOCUMENT_ID_MAX_BYTES} the passages' doc_id field holds: give the "
            "document a shorter doc_id (a hash of the long one, for example).")


def with_text(documents: Sequence[Document]) -> list[BaseNode]:
    """The documents that hold text, checked before any LLM call: a document whose text is
    not UTF-8 (a lone surrogate) is refused, one with no text is left out (as one of white
    space only always was: no passage), with a warning naming it.

    Raises:
        InvalidInputError: a document that is not a ``Document`` (or a text node), or
            whose text holds characters UTF-8 cannot encode.
    """
    kept: list[BaseNode] = []
    empty: list[BaseNode] = []
    for document in documents:
        check_document(document)
        if not is_utf8(document.text):
            raise InvalidInputError(
                f"document {document.node_id!r} holds characters UTF-8 cannot encode (lone "
                "surrogates, often from text decoded with errors='surrogateescape'): clean "
                "it, for example text.encode('utf-8', 'replace').decode('utf-8').")
        (kept if document.text.strip() else empty).append(document)
    if empty:
        logger.warning("%d document(s) hold no text and give no passage: %s", len(empty),
                       ", ".join(repr(d.node_id) for d in empty[:5]))
    return kept


def extract_documents(documents: Sequence[Document], options: ExtractionOptions,
                      show_progress: bool = False) -> Sequence[BaseNode]:
    """The passages of ``documents`` with their triplets (the extractor's sync API)."""
    kept = with_text(documents)
    return own_vectors_only(run_transformations(kept, pipeline(options),
                                                show_progress=show_progress), kept)


async def aextract_documents(documents: Sequence[Document], options: ExtractionOptions,
                             show_progress: bool = False) -> Sequence[BaseNode]:
    """:func:`extract_documents` through the extractor's async API (``acall``)."""
    kept = with_text(documents)
    return own_vectors_only(await arun_transformations(kept, pipeline(options),
                                                       show_progress=show_progress), kept)


def own_vectors_only(nodes: Sequence[BaseNode], documents: Sequence[BaseNode]
                     ) -> Sequence[BaseNode]:
    """``nodes`` without the embeddings they inherited: core's node parsers copy a
    document's ``embedding`` to each of its chunks, which is not the chunk's vector (an
    embedding step of the transformations gives each chunk its own, kept). A chunk whose
    text is its document's keeps it."""
    parents = {d.node_id: d for d in documents if d.embedding is not None}
    for node in nodes:
        parent = parents.get(node.ref_doc_id or "")
        if (parent is not None and node.embedding == parent.embedding
                and node.get_content(metadata_mode=MetadataMode.NONE)
                != parent.get_content(metadata_mode=MetadataMode.NONE)):
            node.embedding = None
    return nodes
