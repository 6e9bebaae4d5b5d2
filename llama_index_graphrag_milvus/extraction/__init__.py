"""Triplet extraction: passages in, ``(subject, predicate, object)`` triplets in node metadata.

- :mod:`.extractor`: :class:`TripletExtractor` (an LLM), its prompts, parsing, cache and
  report;
- :mod:`.spacy_extractor`: :class:`SpacyTripletExtractor` (spaCy, no LLM; the ``nlp``
  extra).
"""

from llama_index_graphrag_milvus.extraction.extractor import (
    ExtractionCache,
    ExtractionReport,
    TripletExtractor,
)
from llama_index_graphrag_milvus.extraction.spacy_extractor import SpacyTripletExtractor

__all__ = ["ExtractionCache", "ExtractionReport", "SpacyTripletExtractor", "TripletExtractor"]
