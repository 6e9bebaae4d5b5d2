"""Small typed records passed between the stages: triplets, the column batches the in-memory
copies are built from, search hits, candidate relations, communities and their reports,
and the descriptions of Microsoft GraphRAG's extraction.

What changes with other concerns lives apart: the ids and name rules in
:mod:`~llama_index_graphrag_milvus.ids`, the node metadata keys in
:mod:`~llama_index_graphrag_milvus.metadata`, Milvus's limits in
:mod:`~llama_index_graphrag_milvus.limits`, the entity kinds in
:mod:`~llama_index_graphrag_milvus.extraction.kinds`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from llama_index.core.schema import BaseNode

from llama_index_graphrag_milvus.ids import entity_id, normalize_name, stable_id

UNRECORDED = -1
"""A relation end's spread that was not read (:attr:`RelationHit.subject_passages`); the
value a relation row holds where a write could not tell it
(:data:`~.milvus.schema.UNKNOWN_SPREAD`)."""


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
    subject_passages: int = field(default=UNRECORDED, compare=False, repr=False)
    """How many passages the subject leads to, as the relation row records it (at most
    :data:`~.milvus.schema.SPREAD_CAP`; :data:`UNRECORDED` when not read)."""
    object_passages: int = field(default=UNRECORDED, compare=False, repr=False)
    """Likewise for the object."""

    def recorded_spread(self, entity: str) -> int:
        """How many passages the end ``entity`` (an entity id) leads to, as recorded on the
        row: :data:`UNRECORDED` when not recorded, or not an end of this relation.

        >>> RelationHit("r", "a x b", 0.9, "a", "b", object_passages=3).recorded_spread("b")
        3
        >>> RelationHit("r", "a x b", 0.9, "a", "b").recorded_spread("a")
        -1
        """
        if entity == self.subject_id:
            return self.subject_passages
        return self.object_passages if entity == self.object_id else UNRECORDED


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
    subject_passages: int = field(default=UNRECORDED, compare=False, repr=False)
    """How many passages the subject leads to, when the row records it (see
    :attr:`RelationHit.subject_passages`)."""
    object_passages: int = field(default=UNRECORDED, compare=False, repr=False)

    def as_metadata(self) -> dict[str, object]:
        """The JSON-safe form stored in passage node metadata."""
        return {"id": self.id, "text": self.text, "score": round(self.score, 6), "hop": self.hop}


@dataclass(frozen=True)
class Spread:
    """Where an entity's relations lead: how many passages they come from (up to the cap
    asked) and whether one of them is not a passage of the relation that reached it.

    >>> Spread.of(["p1", "p2"], RelationHit("r", "a x b", 0.9, "a", "b", passage_ids=("p1",)))
    Spread(passages=2, elsewhere=True)
    """

    passages: int
    elsewhere: bool


    @classmethod
    def of(cls, passages: Sequence[str], hit: RelationHit) -> Spread:
        """The spread of an entity that leads to ``passages`` (at most the cap asked),
        reached by ``hit``."""
        return cls(len(passages), bool(set(passages) - set(hit.passage_ids)))

    @classmethod
    def recorded(cls, entity: str, hit: RelationHit, cap: int) -> Spread | None:
        """The spread of ``entity`` (at most ``cap`` passages, ``cap`` at most
        :data:`~.milvus.schema.SPREAD_CAP`) as the relation row of ``hit`` records it:
        the same as :meth:`of` the entity's passages whenever it is at most ``cap``
        (the row's passages are among the entity's); ``None`` when not recorded.

        >>> hit = RelationHit("r", "a x b", 0.9, "a", "b", passage_ids=("p1",),
        ...                   object_passages=1)
        >>> Spread.recorded("b", hit, 65), Spread.recorded("a", hit, 65)
        (Spread(passages=1, elsewhere=False), None)
        """
        count = hit.recorded_spread(entity)
        if count < 0:
            return None
        return cls(min(count, cap), count > len(set(hit.passage_ids)))


def best_relations(relations: Iterable[CandidateRelation], limit: int
                   ) -> list[CandidateRelation]:
    """The ``limit`` most similar relations, best first (ties by id, as the in-memory graph's
    row order breaks them)."""
    return sorted(relations, key=lambda c: (-c.score, c.id))[:limit]


# ---------------------------------------------------------------------- communities


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
