"""The graph-guided second hop: relations lead from the question to bridge entities, and the
bridges become second passage queries.

For "Who founded the publisher of the Journal of Psychotherapy Integration?", the relation most
similar to the question is "Journal of Psychotherapy Integration published by American
Psychological Association". The question names its subject, so its object is a *bridge*: the
entity the answer hangs on that the question never names. The second query "question +
bridge" finds the passage about the American Psychological Association, which the question
alone does not resemble.

One query costs one relation search, one read of where the candidate bridges lead (beside
it, only when the relation hits offer fewer specific bridges than ``max_bridges``, the
relations of the entities the question names), one batch embedding of the second queries
and one batched passage search (the question and every bridge in the same Milvus call,
beside the read of where they lead when every bridge that may be chosen is chosen); on an
index with full-text search, one batched BM25 search of the same texts beside it, whose
lists follow the lists by meaning in each round. The lists are interleaved: the question's
1st passage, each bridge's 1st (among bridges of the same rank, the one closest to its
second query first), the question's 2nd, and so on, skipping passages already taken. A
query whose relations yield no bridge is plain vector search over the passages; passages
without triplets are ranked like any other.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from operator import attrgetter
from typing import Any, ClassVar, Generic, TypeVar

from llama_index.core.schema import BaseNode, NodeWithScore

from llama_index_graphrag_milvus.extraction.kinds import SPECIFIC_KINDS, recorded_or_inferred
from llama_index_graphrag_milvus.ids import entity_id, normalize_name
from llama_index_graphrag_milvus.metadata import FOUND_BY_KEY, TIMINGS_KEY
from llama_index_graphrag_milvus.records import CandidateRelation, PassageHit, RelationHit
from llama_index_graphrag_milvus.retrieval.method import QueryContext, RetrievalMethod, SeedConfig
from llama_index_graphrag_milvus.retrieval.neighbourhood import (
    Spread,
    bridge_spreads,
    relations_of,
)
from llama_index_graphrag_milvus.retrieval.passages import (
    Result,
    fetch_passages,
    rank_passages,
    with_own_relations,
)
from llama_index_graphrag_milvus.retrieval.requests import (
    EmbedQueries,
    Plan,
    RankWords,
    Together,
    side_by_side,
)
from llama_index_graphrag_milvus.retrieval.seeds import search_relations
from llama_index_graphrag_milvus.retrieval.settings import Choice
from llama_index_graphrag_milvus.validation import check_bool, check_int
from llama_index_graphrag_milvus.words import (
    Words,
    content_words,
    is_named,
    named_share,
    without_name,
)

T = TypeVar("T")

DEFAULT_MAX_BRIDGES = 3
"""Second queries per question (one per bridge entity)."""
DEFAULT_NAMED_RELATIONS = 5
"""Relations of the entities the question names, most similar to it, that join the relation
hits as places bridges may come from."""
DEFAULT_HUB_PASSAGES = 64
"""An entity whose relations come from more passages than this is a hub: a bridge of last
resort."""

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
    """An entity the question does not name, reached by a relation it resembles.

    ``named`` is the relation's other endpoint when the question names it and it is specific
    (the words a ``"substitute"`` second query drops: never those of a concept such as
    "director"); ``kind`` is the bridge's kind (see
    :data:`~llama_index_graphrag_milvus.extraction.kinds.ENTITY_KINDS`); ``fallback`` says that the
    relation came from the named entities' relations rather than from the relation search.
    """

    name: str
    relation: RelationHit
    named: str | None = None
    kind: str = "named"
    fallback: bool = False


def _unnamed_ends(names: tuple[str, str], question_words: Words) -> list[bool]:
    """Which ends of a relation the question does not name. When it names both by half
    their words but one wholly and the other not ("Kim Jong-chul is a son of Kim Jong-il"
    for a question on Kim Jong-chul), the other is not the one it names."""
    shares = [named_share(name, question_words) for name in names]
    unnamed = [2 * share < 1 for share in shares]
    if not any(unnamed) and max(shares) == 1.0 and min(shares) < 1.0:
        unnamed = [share < 1.0 for share in shares]
    return unnamed


def endpoint_kinds(hit: RelationHit, names: tuple[str, str]) -> tuple[str, str]:
    """The kinds of a relation's subject and object: as recorded with the relation (by the
    spaCy extractor), else inferred from the names (see :func:`~llama_index_graphrag_milvus.
    extraction.kinds.recorded_or_inferred`: a date recorded as named by an earlier extractor
    is a date)."""
    return (recorded_or_inferred(hit.subject_kind, names[0]),
            recorded_or_inferred(hit.object_kind, names[1]))


def candidate_bridges(question: str, hits: Sequence[RelationHit], fallback: bool = False
                      ) -> list[Bridge]:
    """The bridges the hits offer, in hit order: in each relation, the endpoint the question
    does not name (both when it names neither, subject first; none when it names both),
    unless it is a date (a second query about "1865" finds passages about years)."""
    question_words = content_words(question)
    bridges: list[Bridge] = []
    for hit in hits:
        names = endpoint_names(hit)
        if names is None:
            continue
        unnamed = _unnamed_ends(names, question_words)
        kinds = endpoint_kinds(hit, names)
        for end, other in ((0, 1), (1, 0)):
            if unnamed[end] and kinds[end] != "date":
                named = (names[other] if not unnamed[other] and kinds[other] in SPECIFIC_KINDS
                         else None)
                bridges.append(Bridge(names[end], hit, named, kinds[end], fallback))
    return bridges


def distinct_bridges(question: str, hits: Sequence[RelationHit],
                     fallback_hits: Sequence[RelationHit] = ()) -> list[Bridge]:
    """The distinct bridges (see :func:`candidate_bridges`) of the relation ``hits``, then
    of the ``fallback_hits`` (the relations of the entities the question names, see
    :func:`~.neighbourhood.relations_of`), in hit order."""
    bridges: dict[str, Bridge] = {}
    for bridge in (*candidate_bridges(question, hits),
                   *candidate_bridges(question, fallback_hits, fallback=True)):
        bridges.setdefault(normalize_name(bridge.name), bridge)
    return list(bridges.values())


def rank_bridges(bridges: Sequence[Bridge], limit: int,
                 spreads: Mapping[str, Spread] | None = None,
                 hub_passages: int = DEFAULT_HUB_PASSAGES) -> list[Bridge]:
    """The ``limit`` best bridges. Specific entities (named, titles) come before concepts,
    which are a last resort: a second query about "son" finds passages about sons. Among
    each, the bridges of the relation hits come before the fallback ones. Then, with the
    ``spreads`` (by entity id, see :func:`~.neighbourhood.bridge_spreads`), by where they
    lead (hit order kept within a rank): entities whose relations come from 2 to
    ``hub_passages`` passages (they lead to another passage), then those of one passage (an
    entity named there only, "Johann Bernoulli's influence", leads nowhere new, unless the
    second passage names it in other words), then hubs (more passages than
    ``hub_passages``: "United States" leads everywhere, so nowhere in particular)."""
    return sorted(bridges, key=lambda b: bridge_rank(b, spreads, hub_passages)
                  )[:limit]  # stable: hit order within a rank


BridgeRank = tuple[bool, bool, int]
"""Where a bridge ranks (lower first): a concept, a fallback bridge, where it leads (see
:func:`rank_bridges`)."""


def bridge_rank(bridge: Bridge, spreads: Mapping[str, Spread] | None = None,
                hub_passages: int = DEFAULT_HUB_PASSAGES) -> BridgeRank:
    """The rank of ``bridge`` in :func:`rank_bridges` (bridges of equal rank keep their hit
    order)."""
    spread = spreads.get(entity_id(bridge.name)) if spreads is not None else None
    where = 0 if spread is None else (2 if spread.passages > hub_passages
                                      else 0 if spread.elsewhere else 1)
    return bridge.kind not in SPECIFIC_KINDS, bridge.fallback, where


def choosable(bridges: Sequence[Bridge], limit: int) -> list[Bridge]:
    """The bridges :func:`rank_bridges` may choose among the first ``limit``, whatever their
    spreads: those of the ranks (specific or concept, of the hits or fallback) up to the
    rank of the ``limit``-th, in ranking order (hit order within a rank).

    >>> t = RelationHit("r", "a x b", 0.9, "a", "b")
    >>> named = [Bridge(n, t) for n in "ABC"]
    >>> [b.name for b in choosable([Bridge("c", t, kind="concept"), *named], 2)]
    ['A', 'B', 'C']
    >>> [b.name for b in choosable([Bridge("c", t, kind="concept"), *named], 4)]
    ['A', 'B', 'C', 'c']
    """
    ordered = sorted(bridges, key=bridge_rank)  # no spreads: where they lead is not known
    if len(ordered) <= limit:
        return ordered
    last = bridge_rank(ordered[limit - 1])
    return [b for b in ordered if bridge_rank(b) <= last]


def reached_by(bridges: Sequence[Bridge]) -> list[tuple[str, RelationHit]]:
    """Each bridge's entity id and the relation that reached it (what
    :func:`~.neighbourhood.bridge_spreads` takes)."""
    return [(entity_id(b.name), b.relation) for b in bridges]


def named_entities(question: str, hits: Sequence[RelationHit]) -> list[str]:
    """Ids of the relation hits' endpoints that the question names (by half their words,
    see :func:`is_named`), in hit order, each once."""
    words = content_words(question)
    named: dict[str, None] = {}
    for hit in hits:
        names = endpoint_names(hit)
        for name in names or ():
            if is_named(name, words):
                named.setdefault(entity_id(name))
    return list(named)


class BridgeQuery(Choice):
    """How a second query is written (see :func:`second_query`)."""

    SUBSTITUTE = "substitute"
    """The question without the words of the entity it names and the relation resolves,
    then the bridge."""
    APPEND = "append"
    """The whole question, then the bridge."""


BRIDGE_QUERIES = tuple(mode.value for mode in BridgeQuery)
"""The :class:`BridgeQuery` values."""


def second_query(question: str, bridge: Bridge,
                 mode: BridgeQuery | str = BridgeQuery.SUBSTITUTE) -> str:
    """The text of a bridge's passage query.

    ``"append"``: the question followed by the bridge's name. ``"substitute"`` (default):
    the same, but without the words of the entity the question names and the relation
    resolves ("Euler" in "the son of Euler's teacher", resolved to Johann Bernoulli): the
    second query then looks for the bridge's passages rather than the first hop's again.

    >>> from llama_index_graphrag_milvus.records import Triplet
    >>> t = Triplet("Leonhard Euler", "was a student of", "Johann Bernoulli")
    >>> hit = RelationHit(t.id, t.text, 0.9, t.subject_id, t.object_id)
    >>> question = "What did the son of Euler's teacher make?"
    >>> [bridge] = distinct_bridges(question, [hit])
    >>> second_query(question, bridge)
    "What did the son of 's teacher make? Johann Bernoulli"
    >>> second_query(question, bridge, "append")
    "What did the son of Euler's teacher make? Johann Bernoulli"
    """
    if mode == BridgeQuery.SUBSTITUTE and bridge.named is not None:
        question = without_name(question, bridge.named)
    return f"{question} {bridge.name}"


@dataclass(frozen=True)
class Ranked(Generic[T]):
    """A passage of the interleaved lists (a node, or its id before it is read): which list
    (0: the question, ``i``: bridge ``i``), the round it was taken in, and its similarity to
    that list's query (``None`` for a passage only that query's words found)."""

    node: T
    similarity: float | None
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


def closest_bridge_first(taken: Sequence[Ranked[T]], ranks: Sequence[BridgeRank]
                         ) -> list[Ranked[T]]:
    """``taken`` (see :func:`interleave`) with the first passages of the bridges' lists by
    meaning (round 0 of lists ``1`` to ``len(ranks)``, bridge ``i`` of rank ``ranks[i - 1]``)
    in the order of their similarity to their second queries among bridges of the same rank
    (see :func:`bridge_rank`), best first, in the places those passages hold, where the
    bridges' hit order put them. A second query that finds a passage very like it has found
    what its bridge is about; the rank still comes first (a bridge that leads nowhere new
    does not pass one that leads elsewhere however close its passage). The passages taken
    are the same, and every later round keeps the bridges' order.

    Chosen on the benchmarks' validation halves, where it moved R@2 by -0.6 to +2.5 (+0.9 on
    average over six sets and both offline embedders; R@5 the same by construction; see
    docs/benchmarks.md).

    >>> ranks = [(False, False, 0)] * 2
    >>> taken = [Ranked("q1", .9, 0, 0), Ranked("a1", .5, 1, 0), Ranked("b1", .8, 2, 0),
    ...          Ranked("w", 0.0, 3, 0), Ranked("q2", .7, 0, 1)]
    >>> [r.node for r in closest_bridge_first(taken, ranks)]
    ['q1', 'b1', 'a1', 'w', 'q2']
    >>> [r.node for r in closest_bridge_first(taken, [(False, False, 0), (False, False, 1)])]
    ['q1', 'a1', 'b1', 'w', 'q2']
    """
    ordered = list(taken)
    by_rank: dict[BridgeRank, list[int]] = {}
    for place, ranked in enumerate(taken):
        if ranked.round == 0 and 0 < ranked.source <= len(ranks):
            by_rank.setdefault(ranks[ranked.source - 1], []).append(place)
    for places in by_rank.values():
        closest = sorted((taken[i] for i in places), key=lambda r: -(r.similarity or 0.0))
        for place, ranked in zip(places, closest, strict=True):
            ordered[place] = ranked
    return ordered


class BridgeRetrieval(RetrievalMethod):
    """The graph-guided second hop (the default method): relations lead from the question to
    bridge entities, which become second passage queries (see the module docstring).

    Args:
        max_bridges: second queries per question (one per bridge entity). Default 3.
        bridge_query: how a second query is written (:class:`BridgeQuery`): ``"substitute"``
            (default) drops the words of the entity the question names and the relation
            resolves, then appends the bridge ("the son of Euler's teacher" + Johann
            Bernoulli -> "the son of 's teacher Johann Bernoulli"); ``"append"`` keeps the
            question whole.
        hub_passages: an entity whose relations come from more passages than this is a hub,
            a bridge of last resort. Default 64.
        named_relations: the relations of the entities the question names (most similar to
            it) that may offer bridges after the relation hits. Default 5.
        match_words: on an index with full-text search (a new index's default where
            Milvus has BM25, see ``GraphRAGIndex``'s ``full_text_search``), each
            list (the question's and each bridge's second query's) is followed by Milvus's
            BM25 list of the same text, taken after the lists by meaning in each round of
            the interleaving, so that names matched as words (a title, a rare surname) add
            passages without displacing the head of a ranking by meaning; nothing changes
            on an index without it, or under ``filters`` (BM25 weighs words by every
            tenant's passages). Default ``True``.

    Scores: passages come in the interleaved order with score ``1 / (1 + round)`` (the
    question's and each bridge's first passages share round 0), so order-preserving
    consumers such as reciprocal-rank fusion keep the interleaving; each passage's own
    similarity to the query that found it is in ``metadata["graphrag_found_by"]``.

    Example::

        retriever = index.as_retriever(method=BridgeRetrieval(max_bridges=5))
    """

    name: ClassVar[str] = "bridge"

    OVERLAP_PER_BRIDGE: ClassVar[int] = 1
    """The second queries of the bridges that may be chosen are searched beside the read of
    their spreads when they are at most this many per ``max_bridges``; more, and the spreads
    are read first (one more round trip, fewer second queries embedded and searched). At 1
    (the default) only when every bridge that may be chosen is chosen (the spreads then only
    order their lists): no extra work, one round trip less. Measured on 2 cores, where the
    embedded server's work is what a query waits for, searching up to twice ``max_bridges``
    second queries to save the round trip was slower (docs/benchmarks.md)."""

    def __init__(self, max_bridges: int = DEFAULT_MAX_BRIDGES,
                 bridge_query: BridgeQuery | str = BridgeQuery.SUBSTITUTE,
                 hub_passages: int = DEFAULT_HUB_PASSAGES,
                 named_relations: int = DEFAULT_NAMED_RELATIONS,
                 match_words: bool = True) -> None:
        self.max_bridges = check_int("max_bridges", max_bridges)
        self.match_words = check_bool("match_words", match_words)
        self.bridge_query = BridgeQuery.of("bridge_query", bridge_query)
        self.hub_passages = check_int("hub_passages", hub_passages)
        self.named_relations = check_int("named_relations", named_relations, minimum=0)

    def plan(self, query: QueryContext, seeds_config: SeedConfig) -> Plan[list[NodeWithScore]]:
        hits = yield from search_relations(query, seeds_config)
        if query.trace:
            query.trace.on_relation_hits(hits)
        candidates, spreads = yield from self._candidates(query, hits)
        # the bridges that may be chosen, whatever their spreads: when they are few (see
        # OVERLAP_PER_BRIDGE), their second queries are searched while their spreads are
        # read, and the lists of the chosen ones kept (the same passages as reading the
        # spreads first)
        possible = choosable(candidates, self.max_bridges)
        cap = self.hub_passages + 1
        unknown = [b for b in possible if entity_id(b.name) not in spreads]
        if len(possible) > self.OVERLAP_PER_BRIDGE * self.max_bridges:
            spreads = {**spreads, **(yield from bridge_spreads(query, reached_by(unknown), cap))}
            possible = rank_bridges(possible, self.max_bridges, spreads, self.hub_passages)
            unknown = []
        started = time.perf_counter()
        asked = tuple(second_query(query.text, b, self.bridge_query) for b in possible)
        vectors = (yield from EmbedQueries(asked)) if asked else []
        timings = {"second_query_embedding": time.perf_counter() - started}
        texts = (query.text, *asked) if self.match_words else ()
        read, (ranked, worded) = yield from side_by_side(
            bridge_spreads(query, reached_by(unknown), cap),
            self._rankings(query, (query.vector, *vectors), texts))
        spreads = {**spreads, **read}
        bridges = rank_bridges(possible, self.max_bridges, spreads, self.hub_passages)
        kept = [0, *(1 + possible.index(b) for b in bridges)]
        if query.trace:
            query.trace.on_bridges(bridges, tuple(asked[i - 1] for i in kept[1:]))
        chosen, words = yield from self._passages(
            query, [ranked[i] for i in kept], [worded[i] for i in kept] if texts else [],
            [bridge_rank(b, spreads, self.hub_passages) for b in bridges])
        return (yield from with_own_relations(query, [
            self._result(ranked, bridges, timings, words) for ranked in chosen]))

    def _candidates(self, query: QueryContext, hits: Sequence[RelationHit]
                    ) -> Plan[tuple[list[Bridge], dict[str, Spread]]]:
        """The distinct bridges of the relation ``hits``, then of the relations of the
        entities the question names ("David Morse was born in Walden" for "the place of
        birth of David Morse", when the relation search's best hits are his other
        relations), and the spreads read so far (see :func:`rank_bridges`).

        The named entities' relations only matter when the hits offer fewer specific
        bridges than ``max_bridges`` (a fallback bridge ranks after every specific bridge
        of the hits): then they are read beside the spreads of the hits' bridges; else
        they are not read at all, nor any spread yet."""
        candidates = distinct_bridges(query.text, hits)
        specific = sum(b.kind in SPECIFIC_KINDS for b in candidates)
        if specific >= self.max_bridges:
            return candidates, {}
        # the entities the question names: read at once, not counted first (served with a
        # vector index: one request and one round trip fewer when they have few relations,
        # as every such set of MuSiQue's questions had; for a hub, a bounded read wasted)
        fallback, spreads = yield from side_by_side(
            relations_of(query, named_entities(query.text, hits), self.named_relations,
                         [h.id for h in hits], read_first=True),
            bridge_spreads(query, reached_by(candidates), self.hub_passages + 1))
        return distinct_bridges(query.text, hits, fallback), spreads

    @staticmethod
    def _rankings(query: QueryContext, vectors: Sequence[Sequence[float]], texts: Sequence[str]
                  ) -> Plan[tuple[list[list[PassageHit]], list[list[PassageHit]]]]:
        """The passage lists by meaning of ``vectors``, and the BM25 lists of ``texts`` when
        given (empty lists when not), in one batch each, at the same time."""
        limit = query.similarity_top_k
        ranking = rank_passages(query, vectors, limit)
        if not texts:
            return (yield from ranking), [[] for _ in vectors]
        ranked, worded = yield from Together((ranking, RankWords(tuple(texts), limit,
                                                                 query.where)))
        return ranked, worded

    @staticmethod
    def _passages(query: QueryContext, ranked: Sequence[Sequence[PassageHit]],
                  worded: Sequence[Sequence[PassageHit]], ranks: Sequence[BridgeRank]
                  ) -> Plan[tuple[list[Ranked[BaseNode]], dict[tuple[int, str], float]]]:
        """The interleaved passages of the question's and the bridges' lists by meaning
        (``ranked``), then (in each round) their BM25 lists (``worded``, when given), the
        bridges' first passages closest first within a rank (``ranks``, the bridges'; see
        :func:`closest_bridge_first`); only the chosen ones are read when the rankings did
        not read them. Also each list's BM25 scores, by ``(list, passage id)``."""
        limit = query.similarity_top_k
        lists = [[(h.id, h.score) for h in hits] for hits in ranked]
        if query.trace:
            query.trace.on_lists(lists)
        # the words lists come after the meaning lists in each round: they add passages,
        # never displace the head of a ranking by meaning
        similarity = [dict(hits) for hits in lists]
        chosen = [replace(r, source=r.source % len(lists),
                          similarity=similarity[r.source % len(lists)].get(r.node))
                  for r in closest_bridge_first(interleave(
                      [*lists, *([(h.id, 0.0) for h in found] for found in worded)], limit,
                      str), ranks)]
        read = {h.id: h.node for hits in (*ranked, *worded) for h in hits if h.node is not None}
        read.update((yield from fetch_passages([r.node for r in chosen if r.node not in read],
                                               query.where)))
        words = {(source, h.id): h.score for source, found in enumerate(worded) for h in found}
        return [Ranked(read[r.node], r.similarity, r.source, r.round)
                for r in chosen if r.node in read], words

    @staticmethod
    def _result(ranked: Ranked[BaseNode], bridges: Sequence[Bridge],
                timings: dict[str, float], words: Mapping[tuple[int, str], float]) -> Result:
        bridge = bridges[ranked.source - 1] if ranked.source else None
        found_by: dict[str, Any] = {"query": "bridge" if bridge else "question",
                                    "similarity": None if ranked.similarity is None
                                    else round(ranked.similarity, 6),
                                    "round": ranked.round}
        matched = words.get((ranked.source, ranked.node.node_id))
        if matched is not None:
            found_by["words"] = round(matched, 6)  # its BM25 score for that list's text
        first: tuple[CandidateRelation, ...] = ()
        if bridge is not None:
            found_by["bridge"] = bridge.name
            relation = bridge.relation
            first = (CandidateRelation(relation.id, relation.score, 0, relation.text),)
        return Result(ranked.node, 1.0 / (1 + ranked.round), first,
                      metadata={FOUND_BY_KEY: found_by, TIMINGS_KEY: dict(timings)})

    def describe(self) -> dict[str, Any]:
        return {"passage_scoring": "bridge", "max_bridges": self.max_bridges,
                "bridge_query": str(self.bridge_query),
                "named_relations": self.named_relations,
                "hub_passages": self.hub_passages, "match_words": self.match_words}
