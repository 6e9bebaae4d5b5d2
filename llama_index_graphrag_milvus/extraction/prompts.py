"""The default prompts of :class:`~llama_index_graphrag_milvus.extraction.TripletExtractor`:
triplets as JSON, or (``describe=True``) Microsoft GraphRAG's entities and relations with
descriptions."""

from __future__ import annotations

from llama_index.core.prompts import PromptTemplate

DEFAULT_TRIPLET_EXTRACT_PROMPT = PromptTemplate(
    "Extract knowledge-graph triplets from the passage below. A triplet is "
    "[subject, predicate, object]: subject and object are named entities or concise noun "
    "phrases, written as in the passage with pronouns resolved to the names they refer to; "
    "the predicate is a short verb phrase. Extract at most {max_triplets} triplets.\n"
    'Answer with JSON only, in the form {"triplets": [["subject", "predicate", "object"], '
    "...]}.\n\n"
    "Example passage: Leonhard Euler was born in Basel and was a student of Johann "
    "Bernoulli.\n"
    'Example answer: {"triplets": [["Leonhard Euler", "was born in", "Basel"], '
    '["Leonhard Euler", "was a student of", "Johann Bernoulli"]]}\n\n'
    "Passage:\n{text}\n\nAnswer:"
)
"""The default extraction prompt; variables ``{text}`` and ``{max_triplets}``."""

DEFAULT_ENTITY_TYPES = ("organization", "person", "geo", "event")
"""The entity types Microsoft GraphRAG's extraction asks for by default."""
# The JSON examples use single braces: core's PromptTemplate formats with a SafeFormatter
# that leaves unknown ``{...}`` groups as written (and would show ``{{`` doubled).
DEFAULT_DESCRIBED_EXTRACT_PROMPT = PromptTemplate(
    "Extract the entities of the passage below and the relations between them, for a "
    "knowledge graph.\n"
    "1. Entities: every entity of one of these types: {entity_types}. For each, give its "
    "name as written in the passage (pronouns resolved to the names they refer to), its "
    "type (one of the types above) and a short description of its attributes and "
    "activities as the passage tells them.\n"
    "2. Relations: the pairs of those entities (source, target) that the passage clearly "
    "relates. "
    "For each, give a predicate (a short verb phrase, so that \"source predicate target\" "
    "reads as a sentence), a short description of how they are related, and a strength "
    "from 1 to 10 (a number: how strong the relation is). Extract at most {max_triplets} "
    "relations.\n"
    'Answer with JSON only, in the form {"entities": [{"name": "...", "type": "...", '
    '"description": "..."}], "relations": [{"source": "...", "predicate": "...", '
    '"target": "...", "description": "...", "strength": 1}]}.\n\n'
    "Example passage: Leonhard Euler was born in Basel and was a student of Johann "
    "Bernoulli.\n"
    'Example answer: {"entities": [{"name": "Leonhard Euler", "type": "PERSON", '
    '"description": "A mathematician born in Basel who studied with Johann Bernoulli."}, '
    '{"name": "Basel", "type": "GEO", "description": "The city where Leonhard Euler was '
    'born."}, {"name": "Johann Bernoulli", "type": "PERSON", "description": "The teacher '
    'of Leonhard Euler."}], "relations": [{"source": "Leonhard Euler", "predicate": "was '
    'born in", "target": "Basel", "description": "Basel is the birthplace of Leonhard '
    'Euler.", "strength": 9}, {"source": "Leonhard Euler", "predicate": "was a student of", '
    '"target": "Johann Bernoulli", "description": "Johann Bernoulli taught Leonhard '
    'Euler.", "strength": 8}]}\n\n'
    "Passage:\n{text}\n\nAnswer:"
)
"""The default prompt of ``TripletExtractor(describe=True)`` (Microsoft GraphRAG's
extraction, answered in JSON); variables ``{text}``, ``{max_triplets}`` and
``{entity_types}`` (the types joined by ``", "``)."""
