"""The graph-guided second hop: relations lead from the question to bridge entities, and the
bridges become second passage queries.

For "Who founded the publisher of the Journal of Psychotherapy Integration?", the relation most
similar to the question is "Journal of Psychotherapy Integration published by American
Psychological Association". The question names its subject, so its object is a *bridge*: the
entity the answer hangs on that the question never names. The second query "question +
bridge" finds the passage about the American Psychological Association, which the question
alone does not resemble.

One query costs one relation search, one batch embedding of the second queries and one
batched passage search (the question and every bridge in the same Milvus call). The lists are
interleaved: the question's 1st passage, each bridge's 1st, the question's 2nd, and so on,
skipping passages already taken. A query whose relations yield no bridge is plain vector
search over the passages; passages without triplets are ranked like any other.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, ClassVar, Generic, TypeVar

from llama_index.core.schema import BaseNode, NodeWithScore

from llama_index_graphrag_milvus.graph import EntityRelationGraph
from llama_index_graphrag_milvus.records import (
    FOUND_BY_KEY,
    TIMINGS_KEY,
    CandidateRelation,
    RelationHit,
    entity_id,
    normalize_name,
)
from llama_index_graphrag_milvus.retrieval.method import QueryContext, RetrievalMethod, SeedConfig
from llama_index_graphrag_milvus.retrieval.passages import (
    Result,
    fetch_passages,
    rank_in_memory,
    with_own_relations,
)
from llama_index_graphrag_milvus.retrieval.requests import (
    EmbedTexts,
    LoadGraph,
    Plan,
    SearchPassages,
)
from llama_index_graphrag_milvus.retrieval.seeds import search_relations
from llama_index_graphrag_milvus.validation import check_choice, check_int

T = TypeVar("T")

DEFAULT_MAX_BRIDGES = 3
"""Second queries per question (one per bridge entity)."""

_WORD = re.compile(r"\w+")
_STOP_WORDS = frozenset(
    "a an the of in on at to for and or by with from as is was were be been s what which "
    "who whom whose when where why how did does do".split())


def content_words(text: str) -> set[str]:
    """Case-folded words of ``text`` without stop words.

    >>> sorted(content_words("What did the son of Euler's teacher make?"))
    ['euler', 'make', 'son', 'teacher']
    """
    return {w for w in _WORD.findall(text.casefold()) if w not in _STOP_WORDS}


def is_named(name: str, question_words: set[str]) -> bool:
    """Whether the question names the entity: at least half of the name's content words are
    in the question ("Euler" names "Leonhard Euler"). A name with no content word counts as
    named (it cannot be a useful second query).

    >>> words = content_words("What did the son of Euler's teacher make?")
    >>> is_named("Leonhard Euler", words), is_named("Johann Bernoulli", words)
    (True, False)
    """
    words = content_words(name)
    return not words or 2 * len(words & question_words) >= len(words)


def endpoint_names(hit: RelationHit) -> tuple[str, str] | None:
    """Subject and object names of a relation-search hit, recovered from its text
    (``"subject predicate object"``, whitespace collapsed) and its endpoint ids; ``None``
    when they cannot be recovered (a relation written by other tools).

    >>> from llama_index_graphrag_milvus.records import Triplet
    >>> t = Triplet("Leonhard Euler", "was a student of", "Johann Bernoulli")
    >>> endpoint_names(RelationHit(t.id, t.text, 0.9, t.subject_id, t.object_id))
    ('Leonhard Euler', 'Johann Bernoulli')
    """
    words = hit.text.split(" ")
    subject_end = next((i for i in range(1, len(words) - 1)
                        if entity_id(" ".join(words[:i])) == hit.subject_id), None)
    if subject_end is None:
        return None
    object_start = next((j for j in range(len(words) - 1, subject_end, -1)
                         if entity_id(" ".join(words[j:])) == hit.object_id), None)
    if object_start is None:
        return None
    return " ".join(words[:subject_end]), " ".join(words[object_start:])


@dataclass(frozen=True)
class Bridge:
    """An entity the question does not name, reached by a relation it resembles; ``named``
    is the relation's other endpoint when the question names it."""

    name: str
    relation: RelationHit
    named: str | None = None


def choose_bridges(question: str, hits: Sequence[RelationHit], limit: int,
                   graph: EntityRelationGraph | None = None) -> list[Bridge]:
    """Bridge entities from the relation hits (best first): in each relation, the endpoint
    the question does not name when it names the other; both endpoints when it names neither
    (subject first); none when it names both. Distinct entities, at most ``limit``.

    With the ``graph``, bridges that lead elsewhere (their relations reach a passage that
    the relation which found them does not come from) come first: an entity named in one
    passage only ("Johann Bernoulli's influence") cannot lead to a second-hop passage. The
    others follow, in case the second passage names the bridge in other words.

    >>> from llama_index_graphrag_milvus.records import Triplet
    >>> t = Triplet("Leonhard Euler", "was a student of", "Johann Bernoulli")
    >>> hit = RelationHit(t.id, t.text, 0.9, t.subject_id, t.object_id)
    >>> [b.name for b in choose_bridges("Who taught Euler?", [hit], 3)]
    ['Johann Bernoulli']
    """
    question_words = content_words(question)
    bridges: dict[str, Bridge] = {}
    for hit in hits:
        names = endpoint_names(hit)
        if names is None:
            continue
        named = [is_named(n, question_words) for n in names]
        for name, other, other_named in ((names[0], names[1], named[1]),
                                         (names[1], names[0], named[0])):
            if not is_named(name, question_words):
                bridges.setdefault(normalize_name(name),
                                   Bridge(name, hit, other if other_named else None))
    if graph is None:
        return list(bridges.values())[:limit]
    leads = {key: graph.leads_elsewhere(entity_id(b.name), b.relation.id)
             for key, b in bridges.items()}
    ranked = sorted(bridges, key=lambda key: not leads[key])  # stable: hit order kept
    return [bridges[key] for key in ranked[:limit]]


BRIDGE_QUERIES = ("substitute", "append")
"""How a second query is written (see :func:`second_query`)."""


def second_query(question: str, bridge: Bridge, mode: str = "substitute") -> str:
    """The text of a bridge's passage query.

    ``"append"``: the question followed by the bridge's name. ``"substitute"`` (default):
    the same, but without the words of the entity the question names and the relation
    resolves ("Euler" in "the son of Euler's teacher", resolved to Johann Bernoulli): the
    second query then looks for the bridge's passages rather than the first hop's again.

    >>> from llama_index_graphrag_milvus.records import Triplet
    >>> t = Triplet("Leonhard Euler", "was a student of", "Johann Bernoulli")
    >>> hit = RelationHit(t.id, t.text, 0.9, t.subject_id, t.object_id)
    >>> question = "What did the son of Euler's teacher make?"
    >>> [bridge] = choose_bridges(question, [hit], 3)
    >>> second_query(question, bridge)
    "What did the son of 's teacher make? Johann Bernoulli"
    >>> second_query(question, bridge, "append")
    "What did the son of Euler's teacher make? Johann Bernoulli"
    """
    if mode == "substitute" and bridge.named is not None:
        resolved = content_words(bridge.named)
        question = " ".join(_WORD.sub(lambda m: "" if m.group().casefold() in resolved
                                      else m.group(), question).split())
    return f"{question} {bridge.name}"


@dataclass(frozen=True)
class Ranked(Generic[T]):
    """A passage of the interleaved lists (a node, or its id before it is read): which list
    (0: the question, ``i``: bridge ``i``), the round it was taken in, and its similarity to
    that list's query."""

    node: T
    similarity: float
    source: int
    round: int


def interleave(lists: Sequence[Sequence[tuple[T, float]]], limit: int,
               key: Callable[[T], str] = attrgetter("node_id")) -> list[Ranked[T]]:
    """Round robin over the lists (list 0 first in each round), skipping passages already
    taken (by ``key``: the node id, or the item itself for ids), until ``limit`` passages.

    >>> from llama_index.core.schema import TextNode
    >>> a, b, c = (TextNode(id_=i, text=i) for i in "abc")
    >>> [r.node.node_id for r in interleave([[(a, .9), (b, .8)], [(a, .7), (c, .6)]], 3)]
    ['a', 'b', 'c']
    >>> [r.node for r in interleave([[("a", .9)], [("a", .7), ("c", .6)]], 3, str)]
    ['a', 'c']
    """
    taken: dict[str, Ranked[T]] = {}
    for round_ in range(max((len(hits) for hits in lists), default=0)):
        for source, hits in enumerate(lists):
            if round_ < len(hits) and key(hits[round_][0]) not in taken:
                node, similarity = hits[round_]
                taken[key(node)] = Ranked(node, similarity, source, round_)
                if len(taken) == limit:
                    return list(taken.values())
    return list(taken.values())


class BridgeRetrieval(RetrievalMethod):
    """The graph-guided second hop (``passage_scoring="bridge"``).

    Scores: passages come in the interleaved order with score ``1 / (1 + round)`` (the
    question's and each bridge's first passages share round 0), so order-preserving
    consumers such as reciprocal-rank fusion keep the interleaving; each passage's own
    similarity to the query that found it is in ``metadata["graphrag_found_by"]``.
    """

    name: ClassVar[str] = "bridge"

    def __init__(self, max_bridges: int = DEFAULT_MAX_BRIDGES,
                 bridge_query: str = "substitute") -> None:
        self.max_bridges = check_int("max_bridges", max_bridges)
        self.bridge_query = check_choice("bridge_query", bridge_query, BRIDGE_QUERIES)

    def plan(self, query: QueryContext, seeds_config: SeedConfig) -> Plan[list[NodeWithScore]]:
        hits = yield from search_relations(query, seeds_config)
        graph = yield from LoadGraph()
        bridges = choose_bridges(query.text, hits, self.max_bridges, graph)
        started = time.perf_counter()
        vectors = (yield from EmbedTexts(tuple(
            second_query(query.text, b, self.bridge_query) for b in bridges))) if bridges else []
        timings = {"second_query_embedding": time.perf_counter() - started}
        chosen = yield from self._passages(query, (query.vector, *vectors))
        return with_own_relations(graph, query, [self._result(ranked, bridges, timings)
                                                 for ranked in chosen])

    @staticmethod
    def _passages(query: QueryContext, vectors: Sequence[Sequence[float]]
                  ) -> Plan[list[Ranked[BaseNode]]]:
        """The interleaved passages of the question's and the bridges' lists: ranked in
        memory, then only the chosen ones read; or one batched Milvus search."""
        limit = query.similarity_top_k
        ranked = yield from rank_in_memory(query, vectors, limit)
        if ranked is None:
            lists = yield from SearchPassages(tuple(list(v) for v in vectors), limit, None,
                                              query.where)
            return interleave(lists, limit)
        chosen = interleave(ranked, limit, str)
        nodes = yield from fetch_passages([r.node for r in chosen])
        return [Ranked(nodes[r.node], r.similarity, r.source, r.round)
                for r in chosen if r.node in nodes]

    @staticmethod
    def _result(ranked: Ranked[BaseNode], bridges: Sequence[Bridge],
                timings: dict[str, float]) -> Result:
        bridge = bridges[ranked.source - 1] if ranked.source else None
        found_by: dict[str, Any] = {"query": "bridge" if bridge else "question",
                                    "similarity": round(ranked.similarity, 6),
                                    "round": ranked.round}
        first: tuple[CandidateRelation, ...] = ()
        if bridge is not None:
            found_by["bridge"] = bridge.name
            relation = bridge.relation
            first = (CandidateRelation(relation.id, relation.score, 0, relation.text),)
        return Result(ranked.node, 1.0 / (1 + ranked.round), first,
                      metadata={FOUND_BY_KEY: found_by, TIMINGS_KEY: dict(timings)})

    def describe(self) -> dict[str, Any]:
        return {"passage_scoring": "bridge", "max_bridges": self.max_bridges,
                "bridge_query": self.bridge_query}
