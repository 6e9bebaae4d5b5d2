"""Triplet extraction: passages in, ``(subject, predicate, object)`` triplets in node metadata.

- :mod:`.extractor`: :class:`TripletExtractor`, an LLM extracts (concurrent, retried,
  cached); its prompts are in :mod:`.prompts`;
- :mod:`.triplets`: what a triplet is (:func:`to_triplets`), reading an LLM answer
  (:func:`parse_triplets`) and node metadata (:func:`triplets_from_node`);
- :mod:`.described`: Microsoft GraphRAG's entities and relations with descriptions
  (:func:`parse_described`, :func:`descriptions_from_node`);
- :mod:`.cache`: :class:`ExtractionCache`, what makes a run resumable;
- :mod:`.extraction_report`: :class:`ExtractionReport`, :func:`extraction_failures`;
- :mod:`.spacy_extractor`: :class:`SpacyTripletExtractor` (spaCy, no LLM; the ``nlp``
  extra, imported only when one is created).

The loggers are children of ``llama_index_graphrag_milvus.extraction``.
"""

from llama_index_graphrag_milvus.extraction.cache import ExtractionCache
from llama_index_graphrag_milvus.extraction.described import (
    DescribedExtraction,
    descriptions_from_node,
    parse_described,
)
from llama_index_graphrag_milvus.extraction.extraction_report import (
    EXTRACTION_ERROR_KEY,
    ExtractionFailure,
    ExtractionReport,
    extraction_failures,
)
from llama_index_graphrag_milvus.extraction.extractor import TripletExtractor
from llama_index_graphrag_milvus.extraction.prompts import (
    DEFAULT_DESCRIBED_EXTRACT_PROMPT,
    DEFAULT_TRIPLET_EXTRACT_PROMPT,
)
from llama_index_graphrag_milvus.extraction.spacy_extractor import SpacyTripletExtractor
from llama_index_graphrag_milvus.extraction.triplets import (
    parse_triplets,
    to_triplets,
    triplets_from_node,
)

__all__ = [
    "DEFAULT_DESCRIBED_EXTRACT_PROMPT",
    "DEFAULT_TRIPLET_EXTRACT_PROMPT",
    "EXTRACTION_ERROR_KEY",
    "DescribedExtraction",
    "ExtractionCache",
    "ExtractionFailure",
    "ExtractionReport",
    "SpacyTripletExtractor",
    "TripletExtractor",
    "descriptions_from_node",
    "extraction_failures",
    "parse_described",
    "parse_triplets",
    "to_triplets",
    "triplets_from_node",
]
