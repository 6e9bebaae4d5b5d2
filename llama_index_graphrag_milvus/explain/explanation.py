"""The explanation of one retrieval, as small frozen records.

:class:`Explanation` holds the path a retrieval method took for one question: the seeds, the
bridges and their second queries, the candidate lists and their interleaving, the k-hop
pool, the PageRank entities, the Steiner tree, the community reports, the final passages with
the reason each was returned, naive RAG's list beside them, and the part of the graph that
connects them (:class:`GraphView`). Every record is JSON-serialisable
(:meth:`Explanation.to_dict`, :meth:`Explanation.to_json`) and the whole renders as a
self-contained HTML page (:meth:`Explanation.to_html`, :meth:`Explanation.save_html`, and
inline in Jupyter).

>>> step = PassageStep(rank=1, id="p1", text="Daniel Bernoulli...", score=1.0,
...                    found_by="bridge", reason="second query for bridge Johann Bernoulli")
>>> step.to_dict()["found_by"]
'bridge'
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any

import numpy as np


def finite(value: Any) -> Any:
    """``value`` as JSON holds it: every float that is not finite (a custom method's NaN
    score) as ``None`` (JSON has no literal for it, and a browser's ``JSON.parse`` refuses
    the page's data whole on a bare ``NaN``); numpy numbers and arrays as Python's, sets
    as sorted lists, and any other object (a custom method's ``describe()`` may hold one)
    as its ``str``.

    >>> finite({"score": float("nan"), "scores": [1.5, float("inf")]})
    {'score': None, 'scores': [1.5, None]}
    >>> import numpy as np
    >>> finite({"alpha": np.float32(0.5), "kinds": {"b", "a"}, "model": object})
    {'alpha': 0.5, 'kinds': ['a', 'b'], 'model': "<class 'object'>"}
    """
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(key): finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [finite(item) for item in value]
    if isinstance(value, set | frozenset):
        return [finite(item) for item in sorted(value, key=str)]
    if isinstance(value, np.generic | np.ndarray):
        return finite(value.tolist())
    return str(value)


def plain(value: Any) -> Any:
    """``value`` with records turned into dicts and tuples into lists (what JSON holds).

    >>> plain((EntityRef("e1", "Euler"), {"k": (1, 2)}))
    [{'id': 'e1', 'name': 'Euler'}, {'k': [1, 2]}]
    """
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    return value


class _Record:
    """``to_dict`` for the records below."""

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON-compatible dicts, lists, strings and numbers."""
        result: dict[str, Any] = plain(self)
        return result


@dataclass(frozen=True)
class EntityRef(_Record):
    """An entity: its id and name."""

    id: str
    name: str


@dataclass(frozen=True)
class SeedEntity(_Record):
    """An entity found by the entity search: its similarity to the ``searched`` text (a
    name the LLM found in the question, or the question itself)."""

    id: str
    name: str
    score: float
    searched: str


@dataclass(frozen=True)
class RelationRef(_Record):
    """A relation as one step of the path saw it: its text, its similarity to the question
    (``None`` when the step did not score it) and its hop in the k-hop pool (0: a seed
    relation or a relation of a seed entity)."""

    id: str
    text: str
    score: float | None = None
    hop: int | None = None


@dataclass(frozen=True)
class BridgeStep(_Record):
    """A bridge of the second hop: an entity the question does not name, reached by a
    relation the question resembles, and the second query it became.

    ``named`` is the relation's other end when the question names it (the words a
    ``"substitute"`` second query drops); ``fallback``: the relation came from the
    relations of the entities the question names, not from the relation search.
    ``second_query`` is the text that was embedded; ``reading`` says it in words (see
    :func:`~llama_index_graphrag_milvus.explain.assemble.read_second_query`).
    """

    entity_id: str
    name: str
    kind: str
    relation: RelationRef
    second_query: str
    named: str | None = None
    fallback: bool = False
    reading: str = ""


@dataclass(frozen=True)
class ListedPassage(_Record):
    """A passage of one candidate list, with its similarity to that list's query."""

    id: str
    similarity: float


@dataclass(frozen=True)
class CandidateList(_Record):
    """One passage list of the second hop: ``source`` 0 is the question's, ``i`` the
    ``i``-th bridge's; the lists are interleaved round by round (see
    :attr:`PassageStep.round`)."""

    source: int
    query: str
    bridge: str | None
    passages: tuple[ListedPassage, ...]


@dataclass(frozen=True)
class EntityMass(_Record):
    """An entity and its personalized PageRank mass."""

    id: str
    name: str
    mass: float


@dataclass(frozen=True)
class ReportStep(_Record):
    """A community report local search considered: ``matched_passages`` of the question's
    entities fall in its community; ``used`` says whether it fitted in the token budget."""

    community_id: str
    level: int
    title: str
    rating: float
    matched_passages: int
    text: str
    used: bool


@dataclass(frozen=True)
class PassageStep(_Record):
    """A passage the method returned, in order: its score, how it was found (``found_by``:
    ``"question"``, ``"bridge"``, ``"ppr"``, ``"pcst"``, ``"pool"``, ``"similarity"``), the
    reason in words, the relations that reached it, the entities of its triplets, its
    rank in naive RAG's list (``None``: naive RAG did not return it), and its BM25 score
    for the text of the list that took it (``words``; ``similarity`` is ``None`` when only
    those words found it)."""

    rank: int
    id: str
    text: str
    score: float | None
    found_by: str
    reason: str
    bridge: str | None = None
    round: int | None = None
    similarity: float | None = None
    relations: tuple[RelationRef, ...] = ()
    entity_ids: tuple[str, ...] = ()
    naive_rank: int | None = None
    words: float | None = None


@dataclass(frozen=True)
class NaivePassage(_Record):
    """A passage of naive RAG's list (the passages most similar to the question, same
    filters), with its rank among the method's passages (``None``: the method missed it)."""

    rank: int
    id: str
    text: str
    score: float
    graph_rank: int | None = None


@dataclass(frozen=True)
class GraphNode(_Record):
    """An entity of the drawn graph and its roles: ``"seed"`` (an entity hit or an end of
    a relation hit), ``"bridge"``, ``"found"`` (named by a returned passage's triplets),
    ``"pagerank"`` (among the top PageRank entities), ``"subgraph"`` (in the Steiner tree),
    ``"context"`` (a local-search entity)."""

    id: str
    name: str
    roles: tuple[str, ...] = ()


@dataclass(frozen=True)
class GraphEdge(_Record):
    """A relation of the drawn graph, from its subject to its object, labelled with its
    predicate, and its roles: ``"seed"`` (a relation hit), ``"bridge"`` (it offered a
    bridge), ``"pool"`` (in the k-hop pool), ``"subgraph"`` (in the Steiner tree),
    ``"passage"`` (it reached a returned passage), ``"context"`` (local search's
    relation table)."""

    id: str
    source: str
    target: str
    label: str
    text: str
    score: float | None = None
    roles: tuple[str, ...] = ()


@dataclass(frozen=True)
class GraphView(_Record):
    """The part of the graph the path went through: at most a few hundred edges (the most
    telling first: bridges, seeds, the subgraph, the returned passages' relations, then the
    pool); ``omitted`` counts the relations left out."""

    nodes: tuple[GraphNode, ...] = ()
    edges: tuple[GraphEdge, ...] = ()
    omitted: int = 0


@dataclass(frozen=True)
class Explanation(_Record):
    """Why a retrieval returned what it returned (see the module docstring).

    Returned by :meth:`GraphRAGRetriever.explain
    <llama_index_graphrag_milvus.retrieval.retriever.GraphRAGRetriever.explain>`; the
    fields a method does not use stay empty (no bridges for ``"ppr"``, no pool for
    ``"bridge"``...). ``timings`` (seconds) and ``milvus_requests`` are left out of equality,
    so that two runs of the same question compare equal.

    Example::

        explanation = index.as_retriever().explain("What did the son of Euler's teacher do?")
        print(explanation.passages[1].reason)
        explanation.save_html("explanation.html")   # open it in a browser, no network
        explanation                                  # in Jupyter: the same page, inline
    """

    question: str
    method: str
    settings: dict[str, Any]
    passages: tuple[PassageStep, ...]
    naive: tuple[NaivePassage, ...] = ()
    entity_seeds: tuple[SeedEntity, ...] = ()
    relation_seeds: tuple[RelationRef, ...] = ()
    bridges: tuple[BridgeStep, ...] = ()
    candidate_lists: tuple[CandidateList, ...] = ()
    pool: tuple[RelationRef, ...] = ()
    pagerank: tuple[EntityMass, ...] = ()
    subgraph: tuple[RelationRef, ...] = ()
    reports: tuple[ReportStep, ...] = ()
    context_entities: tuple[SeedEntity, ...] = ()
    graph: GraphView = GraphView()
    notes: tuple[str, ...] = ()
    timings: dict[str, float] = field(default_factory=dict, compare=False)
    milvus_requests: int | None = field(default=None, compare=False)
    """The Milvus requests the method sent for this question (searches, reads by id and
    queries, naive RAG's list and the explanation's own lookups not included; the reads
    that build the in-memory copies on first use are not counted either)."""

    def to_json(self, indent: int | None = None) -> str:
        """The record as JSON (see :meth:`to_dict`)."""
        return json.dumps(finite(self.to_dict()), indent=indent, ensure_ascii=False,
                          allow_nan=False)

    def to_html(self) -> str:
        """A self-contained HTML page (scripts and styles inline, nothing fetched) with the
        graph drawn and every step listed; every text of the index is shown as text."""
        from llama_index_graphrag_milvus.explain.html import render_page

        return render_page(self)

    def save_html(self, path: str | Path) -> Path:
        """Write :meth:`to_html` to ``path`` (UTF-8) and return the path."""
        target = Path(path)
        target.write_text(self.to_html(), encoding="utf-8")
        return target

    def _repr_html_(self) -> str:
        """Jupyter's inline view: the page in a sandboxed frame (scripts run in an opaque
        origin, apart from the notebook)."""
        from llama_index_graphrag_milvus.explain.html import render_frame

        return render_frame(self)
