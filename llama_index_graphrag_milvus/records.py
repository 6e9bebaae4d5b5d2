"""Small typed records passed between the stages, and the id and name rules.

Ids are deterministic: a hash of the normalized text. Re-ingesting the same input is an
upsert, never a duplicate, and an interrupted ingestion can simply be run again.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from llama_index.core.schema import BaseNode, TextNode

# Metadata keys written on passage nodes. They are excluded from what an LLM or an embedding
# model sees (see :func:`hide_from_models`).
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

MILVUS_MAX_TOP_K = 16_384
"""The largest ``limit`` a Milvus search accepts."""
ENTITY_NAME_MAX_BYTES = 2048
"""Longest entity name (UTF-8 bytes) the entity collection accepts."""
RELATION_TEXT_MAX_BYTES = 8192
"""Longest relation text (UTF-8 bytes) the relation collection accepts."""
PASSAGE_TEXT_MAX_BYTES = 65535
"""Longest passage text (UTF-8 bytes): the VARCHAR limit of the passage collection."""


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


def clean_text(text: str) -> str:
    """Collapse runs of whitespace and strip: the form an entity name is shown in."""
    return " ".join(text.split())


def normalize_name(text: str) -> str:
    """The identity of an entity name: case-folded, whitespace collapsed.

    >>> normalize_name("  Leonhard   EULER ")
    'leonhard euler'
    """
    return clean_text(text).casefold()


ENTITY_KINDS = ("named", "title", "date", "concept")
"""What an entity is: ``"named"`` (a named entity or a proper-noun phrase), ``"title"`` (a
passage's main entity, or a quoted title), ``"date"``, ``"concept"`` (a common-noun phrase:
a type or an attribute of a specific entity). The spaCy extractor records the kind of each
entity it names; for other triplets it is inferred from the name (:func:`infer_kind`)."""
KIND_CODES: dict[str, int] = {"": 0, **{kind: code for code, kind in enumerate(ENTITY_KINDS, 1)}}
"""A small integer per kind (0: not recorded), as the in-memory graph holds them."""
SPECIFIC_KINDS: frozenset[str] = frozenset({"named", "title"})
"""The kinds that name one thing, and so can link passages and be bridges."""
_MONTHS = frozenset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec".split())
_DATE_WORDS = frozenset("ad bc bce ce between to and from until or century early mid late "
                        "the of in on c circa st nd rd th s".split())
_DATE_TOKEN = re.compile(r"[a-z]+|\d+(?:st|nd|rd|th|s)?")
_WORDS = re.compile(r"(?<!\S)[\"'(\[“‘]*([^\W\d_]\S*)")
"""Words (between spaces) that start with a letter: not "26th"; "Jong-chul" is one."""


def _is_date(name: str) -> bool:
    """Whether a name is only a date or a span of dates: numbers, month names and the
    words of dates ("July 1967", "1–14 August 2014", "18th century", "1990s")."""
    tokens = _DATE_TOKEN.findall(name.casefold())
    if not tokens or any(not (t[0].isdigit() or t in _MONTHS or t in _DATE_WORDS)
                         for t in tokens):
        return False
    return any(t in _MONTHS or (t[0].isdigit() and (len(t) >= 3 or t.endswith(
        ("st", "nd", "rd", "th")))) for t in tokens)


def stronger_kind(first: str, second: str) -> str:
    """The kind to record when two passages give one entity two kinds: a recorded kind over
    none, then title, named, date, concept (a name some passage names specifically is a
    specific entity).

    >>> stronger_kind("concept", "named"), stronger_kind("", "date")
    ('named', 'date')
    """
    order = ("title", "named", "date", "concept", "")
    return min(first, second, key=lambda kind: order.index(kind) if kind in order else 5)


def infer_kind(name: str) -> str:
    """The kind of an entity known only by its name (an LLM's or a user's triplets): a date
    ("July 1967", "1–14 August 2014", "18th century"); a concept unless its first and last
    words are capitalized ("son", "frontman of Slipknot", "Portuguese retired footballer",
    "1,231 retail locations": a description, not a name); else named.

    >>> [infer_kind(n) for n in ("July 1967", "son", "frontman of Slipknot",
    ...                          "Portuguese retired footballer", "Johann Bernoulli",
    ...                          "26th Chess Olympiad", "University of Copenhagen")]
    ['date', 'concept', 'concept', 'concept', 'named', 'named', 'named']
    """
    cleaned = clean_text(name)
    if _is_date(cleaned):
        return "date"
    words = _WORDS.findall(cleaned)
    if not words:
        return "concept"
    return "named" if all(any(c.isupper() for c in w) for w in (words[0], words[-1])) \
        else "concept"


def clip_utf8(text: str, max_bytes: int) -> str:
    """``text`` cut to at most ``max_bytes`` UTF-8 bytes (on a character boundary).

    >>> clip_utf8("café", 4)
    'caf'
    """
    data = text.encode("utf-8", "surrogatepass")
    return text if len(data) <= max_bytes else data[:max_bytes].decode("utf-8", "ignore")


def stable_id(kind: str, key: str) -> str:
    """A deterministic 32-hex-digit id for ``key`` in the namespace ``kind``."""
    return hashlib.sha256(f"{kind}\x1f{key}".encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Triplet:
    """A (subject, predicate, object) statement, parts shown as written.

    >>> Triplet("Euler", "was a student of", "Johann Bernoulli").text
    'Euler was a student of Johann Bernoulli'
    """

    subject: str
    predicate: str
    object: str

    @property
    def text(self) -> str:
        """The relation as one sentence: ``"subject predicate object"``."""
        return f"{self.subject} {self.predicate} {self.object}"

    @property
    def id(self) -> str:
        """Relation id: the same for triplets that differ only in case or whitespace."""
        key = "\x1f".join(normalize_name(p) for p in (self.subject, self.predicate, self.object))
        return stable_id("relation", key)

    @property
    def subject_id(self) -> str:
        return entity_id(self.subject)

    @property
    def object_id(self) -> str:
        return entity_id(self.object)


def entity_id(name: str) -> str:
    """Entity id of a name: names equal after :func:`normalize_name` share it."""
    return stable_id("entity", normalize_name(name))


def passage_id(text: str, document_id: str | None = None, identity: str = "") -> str:
    """Passage id: a hash of the source document id (when there is one), of the identity
    metadata (``identity``, a canonical text of the metadata that makes passages distinct,
    such as a tenant key; see :mod:`~llama_index_graphrag_milvus.ingestion.identity`) and of the
    passage text with whitespace collapsed. The same text in two documents, or in two
    tenants, gives two passages, so that deleting one never removes the other's.

    >>> passage_id("Euler was Swiss.") == passage_id("Euler  was Swiss.")
    True
    >>> passage_id("Euler was Swiss.", identity='{"tenant_id": "acme"}') == passage_id(
    ...     "Euler was Swiss.", identity='{"tenant_id": "globex"}')
    False
    """
    parts = [clean_text(text)]
    if document_id is not None:
        parts.insert(0, document_id)
    if identity:
        parts.append(identity)
    return stable_id("passage", "\x1f".join(parts))


@dataclass(frozen=True)
class RelationColumns:
    """A batch of relation rows as columns: what the in-memory graph is built from.

    Milvus returns query results column by column; keeping them that way skips building a
    dict per row, which is most of the cost of loading a million relations.

    >>> batch = RelationColumns.from_rows([
    ...     {"id": "r1", "subject_id": "a", "object_id": "b", "passage_ids": ["p1"],
    ...      "embedding": [1.0, 0.0]}], dim=2)
    >>> len(batch), batch.embeddings.shape
    (1, (1, 2))
    """

    ids: Sequence[str]
    subject_ids: Sequence[str]
    object_ids: Sequence[str]
    passage_ids: Sequence[Sequence[str]]
    embeddings: np.ndarray
    """``float32`` array of shape ``(len(ids), dim)``."""
    texts: Sequence[str] | None = None
    """The relation texts, when they were read (the graph then answers text lookups)."""
    kinds: Sequence[tuple[str, str]] | None = None
    """The recorded kinds of each relation's subject and object (``""``: not recorded),
    when the collection has them."""

    def __post_init__(self) -> None:
        sizes = {len(self.ids), len(self.subject_ids), len(self.object_ids),
                 len(self.passage_ids), len(self.embeddings),
                 *([] if self.texts is None else [len(self.texts)]),
                 *([] if self.kinds is None else [len(self.kinds)])}
        if len(sizes) != 1:
            raise ValueError(f"relation columns differ in length: {sorted(sizes)}")

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def from_rows(cls, rows: Sequence[dict[str, Any]], dim: int) -> RelationColumns:
        """Columns of relation rows (``id``, ``subject_id``, ``object_id``, ``passage_ids``,
        ``embedding``, and ``text`` when every row has it)."""
        embeddings = (np.asarray([r["embedding"] for r in rows], np.float32) if rows
                      else np.zeros((0, dim), np.float32))
        texts = [r["text"] for r in rows] if all("text" in r for r in rows) else None
        kinds = ([(r["subject_kind"], r["object_kind"]) for r in rows]
                 if all("subject_kind" in r for r in rows) else None)
        return cls([r["id"] for r in rows], [r["subject_id"] for r in rows],
                   [r["object_id"] for r in rows], [list(r["passage_ids"]) for r in rows],
                   embeddings.reshape(len(rows), dim), texts, kinds)


@dataclass(frozen=True)
class EntityColumns:
    """A batch of entity rows as columns (what the in-memory entity table is built
    from)."""

    ids: Sequence[str]
    names: Sequence[str]
    embeddings: np.ndarray
    """``float32`` array of shape ``(len(ids), dim)``."""

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True)
class PassageColumns:
    """A batch of passage ids and vectors (what the in-memory passage table is built from)."""

    ids: Sequence[str]
    embeddings: np.ndarray
    """``float32`` array of shape ``(len(ids), dim)``."""

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True)
class EntityHit:
    """An entity found by a vector search, for one searched name (or the query)."""

    id: str
    name: str
    score: float
    searched: str


@dataclass(frozen=True)
class RelationHit:
    """A relation found by the vector search of the whole query, with its endpoints' ids."""

    id: str
    text: str
    score: float
    subject_id: str = ""
    object_id: str = ""
    subject_kind: str = ""
    """The subject's kind as the relation records it (``""``: not recorded)."""
    object_kind: str = ""
    """The object's kind as the relation records it (``""``: not recorded)."""
    passage_ids: tuple[str, ...] = ()
    """The passages the relation comes from, when the search read them (the served
    graph's does)."""


@dataclass(frozen=True)
class PassageHit:
    """A passage ranked by similarity to a query vector: its node when the ranking read it
    (a Milvus search), else ``None`` (a ranking in memory, which knows only ids)."""

    id: str
    score: float
    node: BaseNode | None = None


@dataclass(frozen=True)
class CandidateRelation:
    """A relation in the candidate pool: its similarity to the query and the hop it came at.

    ``hop`` is 0 for relations that touch a seed entity or were found by the relation search;
    ``n`` for relations reached after ``n`` expansion steps.
    """

    id: str
    score: float
    hop: int
    text: str = ""
    passage_ids: tuple[str, ...] = ()
    subject_id: str = ""
    """The subject's entity id, when the step that found the relation read it."""
    object_id: str = ""
    """The object's entity id, when the step that found the relation read it."""
    subject_kind: str = ""
    object_kind: str = ""

    def as_metadata(self) -> dict[str, object]:
        """The JSON-safe form stored in passage node metadata."""
        return {"id": self.id, "text": self.text, "score": round(self.score, 6), "hop": self.hop}


def best_relations(relations: Iterable[CandidateRelation], limit: int
                   ) -> list[CandidateRelation]:
    """The ``limit`` most similar relations, best first (ties by id, as the in-memory graph's
    row order breaks them)."""
    return sorted(relations, key=lambda c: (-c.score, c.id))[:limit]


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


# ---------------------------------------------------------------------- communities

COMMUNITY_KEY = "graphrag_community"
"""Node metadata key of a community report node: the community's id, level, rating..."""


@dataclass(frozen=True)
class Community:
    """One community of the entity graph at one level of the Leiden hierarchy.

    Level 0 is the root level (the most general communities); a community's ``children``
    split it at the next level. ``entity_ids`` are all its entities (a child's are a subset).
    """

    id: str
    level: int
    parent: str
    """The id of the community it splits, ``""`` at level 0."""
    children: tuple[str, ...]
    entity_ids: tuple[str, ...]
    num_relations: int = 0
    """Relations with both endpoints in the community."""
    num_passages: int = 0
    """Passages that support those relations."""


@dataclass(frozen=True)
class Finding:
    """One finding of a community report: a short summary and its explanation."""

    summary: str
    explanation: str


@dataclass(frozen=True)
class CommunityReport:
    """What is known about a community, as Microsoft GraphRAG's community report: a title,
    a summary, findings, and a 1-10 importance rating with its explanation.

    ``kind`` is ``"llm"`` (written by an LLM) or ``"extractive"`` (its most connected
    entities and relations, written without an LLM).

    >>> report = CommunityReport(Community("c1", 0, "", (), ("e1",)), "Bernoulli family",
    ...     "Mathematicians of Basel.", (Finding("Johann taught Euler", "A relation says so."),),
    ...     7.0, "Central to the corpus.", "llm")
    >>> print(report.as_text())
    # Bernoulli family
    <BLANKLINE>
    Mathematicians of Basel.
    <BLANKLINE>
    ## Johann taught Euler
    <BLANKLINE>
    A relation says so.
    """

    community: Community
    title: str
    summary: str
    findings: tuple[Finding, ...]
    rating: float
    rating_explanation: str
    kind: str

    @property
    def id(self) -> str:
        return self.community.id

    @property
    def level(self) -> int:
        return self.community.level

    def embedding_text(self) -> str:
        """What is embedded for the report retriever: the title, the summary and the
        findings' one-line summaries (their explanations left out: a third of the tokens
        of :meth:`as_text`, so three times faster to embed, with the same names in it)."""
        return "\n".join([self.title, self.summary, *(f.summary for f in self.findings)])

    def as_text(self) -> str:
        """The report as markdown (title, summary, one section per finding): the text
        shown to LLMs and returned as a node."""
        parts = [f"# {self.title}", self.summary]
        for finding in self.findings:
            parts.extend([f"## {finding.summary}", finding.explanation])
        return "\n\n".join(p for p in parts if p)


# ------------------------------------------------------------- described extraction

ENTITY_DESCRIPTIONS_KEY = "graphrag_entity_descriptions"
"""Node metadata key holding the ``[[name, type, description], ...]`` of a passage, written
by ``TripletExtractor(describe=True)`` (Microsoft GraphRAG's entity descriptions)."""
RELATION_DESCRIPTIONS_KEY = "graphrag_relation_descriptions"
"""Node metadata key holding the ``[[subject, predicate, object, description, strength],
...]`` of a passage, written by ``TripletExtractor(describe=True)``."""


@dataclass(frozen=True)
class EntityDescription:
    """An entity as Microsoft GraphRAG's extraction describes it in one passage: its name,
    its type (upper-cased, ``""`` when unknown) and a short description (``""`` when none).

    >>> EntityDescription("Leonhard Euler", "PERSON", "A Swiss mathematician.").id == (
    ...     entity_id("leonhard  euler"))
    True
    """

    name: str
    type: str
    description: str

    @property
    def id(self) -> str:
        """The entity id of :attr:`name` (see :func:`entity_id`)."""
        return entity_id(self.name)


@dataclass(frozen=True)
class RelationDescription:
    """A relation as Microsoft GraphRAG's extraction describes it in one passage: the
    triplet, a short description and a strength from 1 to 10.

    >>> RelationDescription("Leonhard Euler", "was a student of", "Johann Bernoulli",
    ...                     "Bernoulli taught Euler in Basel.", 8.0).triplet.text
    'Leonhard Euler was a student of Johann Bernoulli'
    """

    subject: str
    predicate: str
    object: str
    description: str
    strength: float

    @property
    def triplet(self) -> Triplet:
        """The (subject, predicate, object) of the relation."""
        return Triplet(self.subject, self.predicate, self.object)
