"""The metadata keys the package writes on nodes, and the node a retrieval returns.

Ingestion writes a passage's triplets and entity kinds; retrieval and rerank attach what found
a passage and why. The keys are kept out of what LLMs and embedding models see
(:func:`hide_from_models`), and what retrieval attaches is kept out of a retrieved node's
hash (:class:`GraphPassageNode`).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from llama_index.core.schema import BaseNode, TextNode
from pydantic_core import to_jsonable_python

TRIPLETS_KEY = "graphrag_triplets"
"""Node metadata key holding the ``[[subject, predicate, object], ...]`` of a passage."""

ENTITY_KINDS_KEY = "graphrag_entity_kinds"
"""Node metadata key of ``{entity name: kind}`` for the entities of its triplets, written by
the spaCy extractor (``"named"``, ``"title"``, ``"date"``, ``"concept"``); hidden from LLMs and
embedding models."""

RELATIONS_KEY = "graphrag_relations"
"""Node metadata key holding the candidate relations that brought a retrieved passage."""

RERANK_KEY = "graphrag_rerank"
"""Node metadata key holding what the reranker decided about a passage."""

FOUND_BY_KEY = "graphrag_found_by"
"""Node metadata key saying how a retrieval method found a passage (its query, bridge
entity, own similarity, PageRank mass...)."""

TIMINGS_KEY = "graphrag_timings"
"""Node metadata key holding the seconds a retrieval method spent in its own steps."""

SUBGRAPH_KEY = "graphrag_subgraph"
"""Node metadata key holding the subgraph a retrieval method chose (the PCST method: its
entities, relations and their G-Retriever text)."""

CONTEXT_KIND_KEY = "graphrag_context"
"""Node metadata key saying what a local-search node is: ``"report"``, ``"entities"``,
``"relations"`` or ``"passage"``."""

RETRIEVAL_KEYS = (RELATIONS_KEY, RERANK_KEY, FOUND_BY_KEY, TIMINGS_KEY, SUBGRAPH_KEY,
                  CONTEXT_KIND_KEY)
"""What retrieval and rerank attach to a passage: kept out of LLM and embedding text and of
the node's hash."""

COMMUNITY_KEY = "graphrag_community"
"""Node metadata key of a community report node: the community's id, level, rating..."""

ENTITY_DESCRIPTIONS_KEY = "graphrag_entity_descriptions"
"""Node metadata key holding the ``[[name, type, description], ...]`` of a passage, written
by ``TripletExtractor(describe=True)`` (Microsoft GraphRAG's entity descriptions)."""

RELATION_DESCRIPTIONS_KEY = "graphrag_relation_descriptions"
"""Node metadata key holding the ``[[subject, predicate, object, description, strength],
...]`` of a passage, written by ``TripletExtractor(describe=True)``."""



def hide_from_models(node: BaseNode, *keys: str) -> None:
    """Keep the metadata ``keys`` of ``node`` out of what LLMs and embedding models see
    (``excluded_llm_metadata_keys`` and ``excluded_embed_metadata_keys``); a key already
    hidden is not added again.

    >>> node = TextNode(text="Euler was born in Basel.", metadata={TRIPLETS_KEY: []})
    >>> hide_from_models(node, TRIPLETS_KEY)
    >>> node.excluded_llm_metadata_keys, node.excluded_embed_metadata_keys
    (['graphrag_triplets'], ['graphrag_triplets'])
    """
    for excluded in (node.excluded_embed_metadata_keys, node.excluded_llm_metadata_keys):
        excluded.extend(key for key in dict.fromkeys(keys) if key not in excluded)



class GraphPassageNode(TextNode):
    """A retrieved passage: a ``TextNode`` whose ``hash`` ignores what retrieval and rerank
    attach (``graphrag_relations``, ``graphrag_rerank``).

    The same passage from the graph retriever and from naive vector search then has the same
    hash, so core's ``QueryFusionRetriever`` merges the two instead of listing it twice.
    """

    @property
    def hash(self) -> str:
        stored = {k: v for k, v in self.metadata.items() if k not in RETRIEVAL_KEYS}
        identity = str(self.text) + str(stored)
        return hashlib.sha256(identity.encode("utf-8", "surrogatepass")).hexdigest()

    @classmethod
    def from_node(cls, node: BaseNode) -> GraphPassageNode:
        """The same node (id, text, metadata, relationships) as a ``GraphPassageNode``."""
        return node if isinstance(node, cls) else cls(**node.dict())


def sets_sorted(value: Any) -> Any:
    """``value`` with its sets (at any depth) as lists in a stable order (of their items'
    JSON texts): a set's own order changes from one process to the next (string hashing),
    and with it the stored list and the passage's id.

    >>> sets_sorted({"tags": {"b", "a"}, "n": [frozenset({2, 1})]})
    {'tags': ['a', 'b'], 'n': [[1, 2]]}
    """
    if isinstance(value, (set, frozenset)):
        return sorted((sets_sorted(v) for v in value),
                      key=lambda v: json.dumps(to_jsonable_python(v), sort_keys=True))
    if isinstance(value, dict):
        return {k: sets_sorted(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [sets_sorted(v) for v in value]
    return value


def stored_form(metadata: Any) -> str:
    """Metadata as Milvus stores it, as comparable text: pydantic's JSON form (dates as ISO
    text, bytes as text), sets sorted (:func:`sets_sorted`), keys sorted.

    >>> import datetime
    >>> stored_form({"d": datetime.date(2020, 1, 2), "t": {"y", "x"}})
    '{"d": "2020-01-02", "t": ["x", "y"]}'
    """
    return json.dumps(to_jsonable_python(sets_sorted(metadata)), sort_keys=True,
                      ensure_ascii=False)
