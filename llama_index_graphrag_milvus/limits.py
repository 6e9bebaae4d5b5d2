"""What Milvus accepts: the largest search limit and the longest texts of the collections."""

from __future__ import annotations

MILVUS_MAX_TOP_K = 16_384
"""The largest ``limit`` a Milvus search accepts."""

ENTITY_NAME_MAX_BYTES = 2048
"""Longest entity name (UTF-8 bytes) the entity collection accepts."""

RELATION_TEXT_MAX_BYTES = 8192
"""Longest relation text (UTF-8 bytes) the relation collection accepts."""

PASSAGE_TEXT_MAX_BYTES = 65535
"""Longest passage text (UTF-8 bytes): the VARCHAR limit of the passage collection."""

QUERY_MAX_BYTES = PASSAGE_TEXT_MAX_BYTES
"""Longest question (UTF-8 bytes) a retriever takes: as long as the longest passage. The
graph's word logic reads every word of the question, so a pasted document as the question
(hundreds of kilobytes) took tens of seconds before any search."""

DOCUMENT_ID_MAX_BYTES = 65535
"""Longest document id (UTF-8 bytes): the VARCHAR limit of the passages' ``doc_id``."""

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
"""The integers Milvus stores and compares (metadata values, filter bounds)."""
