"""The I/O of a retrieval, as typed requests.

A retrieval method is written once, as a *plan*: a generator that yields requests and
receives their answers. Everything between the requests is pure; a driver
(:mod:`.drivers`) answers the requests, with blocking calls or with awaits, so that
``_retrieve`` and ``_aretrieve`` share every line but the I/O ones.

Each request class is generic in its answer: ``RelationSeeds`` is a
``Request[list[RelationHit]]``. A plan asks with ``yield from``, which is typed::

    def plan(query: QueryContext) -> Plan[int]:
        hits = yield from RelationSeeds(query.vector, 5, None)  # list[RelationHit]
        return len(hits)

(``answer = yield request`` works too, untyped.) :class:`Together` asks several at once.

Requests come in four kinds, by what answers them (see :mod:`.drivers`):

- **the graph** (what a method asks): :class:`RelationSeeds`, :class:`EntitySeeds`,
  :class:`RankPassages`, :class:`RankWords`, :class:`ExpandPool`, :class:`RelationsAround`,
  :class:`GetRelations`, :class:`OwnRelations`, :class:`EntityPassages`,
  :class:`EntityDegrees`, :class:`RelationTexts`, :class:`EntityNames`, and for local
  search :class:`CommunitiesBuilt`, :class:`CommunitiesOf`, :class:`DescriptionsOf`. The
  *graph source*
  of the query answers them: the graph held in memory, or served by Milvus
  (:mod:`.sources`). Both answer with the same records, so a method never knows where the
  graph lives;
- **the models**: :class:`Ner`, :class:`EmbedTexts`;
- **the Milvus collections**, one request one call: :class:`SearchEntities`,
  :class:`SearchRelations`, :class:`SearchPassages`, :class:`MatchWords`, :class:`GetPassages`,
  :class:`MatchPassages`, :class:`GetRelationTexts`, :class:`GetEntityNames`;
- **the in-memory copies** of the index, which the in-memory source reads:
  :class:`LoadGraph`, :class:`LoadEntities`, :class:`LoadPassages`, :class:`LoadScope`,
  :class:`LoadWords`, and
  :class:`LoadCommunities` (every community: what the in-memory source's community requests
  read). :class:`Known` is an answer that needs no I/O,
  :class:`MilvusRequests` the count of the query's Milvus requests so far.

>>> def plan() -> Plan[int]:
...     vectors = yield from EmbedTexts(("a question",))
...     return len(vectors[0])
>>> steps = plan()
>>> next(steps)
EmbedTexts(texts=('a question',))
>>> try:
...     steps.send([[0.1, 0.2, 0.3]])
... except StopIteration as done:
...     print(done.value)
3
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from llama_index.core.schema import BaseNode

from llama_index_graphrag_milvus.graph import EntityRelationGraph, ExpansionConfig
from llama_index_graphrag_milvus.graph.tables import EntityTable, PassageScope, PassageTable
from llama_index_graphrag_milvus.graph.word_table import WordTable
from llama_index_graphrag_milvus.records import (
    CandidateRelation,
    EntityHit,
    PassageHit,
    RelationHit,
    Spread,
)

if TYPE_CHECKING:  # the communities import the retrievers
    from llama_index_graphrag_milvus.communities.around import (  # noqa: F401
        CommunityInfo,
        LocalCommunities,
    )
    from llama_index_graphrag_milvus.communities.build import CommunitySet  # noqa: F401
    from llama_index_graphrag_milvus.communities.descriptions import (  # noqa: F401
        DescriptionTable,
    )

A = TypeVar("A")
T = TypeVar("T")


class Request(Generic[A]):
    """A request whose answer is an ``A``; ``answer = yield from request`` in a plan."""

    def __iter__(self) -> Generator[Request[Any], Any, A]:
        answer: A = yield self
        return answer


Plan = Generator[Request[Any], Any, T]
"""A retrieval step: yields requests, receives their answers, returns a ``T``."""

PassageRef = BaseNode | str
"""A passage a request names: its node when the plan has read it, else its id."""


# ---------------------------------------------------------------------------- the graph


@dataclass(frozen=True)
class RelationSeeds(Request[list[RelationHit]]):
    """The ``top_k`` relations most similar to ``vector`` (those below ``threshold`` left
    out), best first, with their texts, ends, kinds and passages."""

    vector: Sequence[float]
    top_k: int
    threshold: float | None = None


@dataclass(frozen=True)
class EntitySeeds(Request[list[list[EntityHit]]]):
    """One batched entity search: per searched name (one vector each), the ``top_k`` most
    similar entities (among the stored ones of ``among`` when given: which of those entities
    exist, with their similarities; among those whose name's key is one of ``keys`` instead,
    where the index records the keys, see :func:`~llama_index_graphrag_milvus.words.
    name_key`)."""

    vectors: Sequence[Sequence[float]]
    names: tuple[str, ...]
    top_k: int
    threshold: float | None = None
    among: tuple[str, ...] | None = None
    keys: tuple[str, ...] | None = None


@dataclass(frozen=True)
class RankPassages(Request[list[list[PassageHit]]]):
    """One batched passage ranking: per vector, the ``limit`` passages most similar to it
    (among ``ids`` when given, matching the ``where`` filter expression), best first. A hit
    carries its node when the ranking read it (a Milvus search), else only its id (a ranking
    in memory): read the missing ones with :class:`GetPassages`."""

    vectors: tuple[Sequence[float], ...]
    limit: int
    ids: tuple[str, ...] | None = None
    where: str = ""


@dataclass(frozen=True)
class RankWords(Request[list[list[PassageHit]]]):
    """One batched BM25 ranking (Milvus's full-text search, or its equivalent in memory):
    per text, the ``limit`` passages whose words match it best, best first and ties by id,
    matching the ``where`` filter expression; empty lists when the index has no full-text
    search. Hits carry their nodes when the ranking read them (Milvus), else only ids."""

    texts: tuple[str, ...]
    limit: int
    where: str = ""


@dataclass(frozen=True)
class ExpandPool(Request[list[CandidateRelation]]):
    """The bounded k-hop candidate pool of the seeds (see
    :class:`~llama_index_graphrag_milvus.graph.ExpansionConfig`), best first, each relation
    with its ends, kinds and passages (its text may be empty: :class:`RelationTexts`)."""

    vector: Sequence[float]
    entity_ids: tuple[str, ...]
    relation_ids: tuple[str, ...]
    config: ExpansionConfig
    relations: tuple[RelationHit, ...] = ()
    """The seed relations as a relation search returned them (text, ends, kinds, passages,
    similarity to ``vector``), when the plan has them: a served graph takes those of
    ``relation_ids`` from here instead of reading them again (one Milvus request fewer)."""


@dataclass(frozen=True)
class RelationsAround(Request[list[CandidateRelation]]):
    """The ``limit`` relations of ``entity_ids`` most similar to ``vector``, best first (ties
    by id), with their ends, kinds, passages and texts. ``read_first``: where a graph served
    by Milvus would count the entities' relations before reading them (a vector index), it
    reads them at once and searches only when the read fills the exact read's budget: the
    same answer, one request and one round trip fewer for entities of few relations, a read
    of at most that budget spent for nothing when a hub is among them."""

    vector: Sequence[float]
    entity_ids: tuple[str, ...]
    limit: int
    read_first: bool = False


@dataclass(frozen=True)
class GetRelations(Request[list[CandidateRelation]]):
    """Relations by id, scored against ``vector``, with their ends, kinds, passages and
    texts (unknown ids are left out). ``ends=False``: their texts and scores are all the
    asker needs, so a graph served by Milvus may leave out the rest (the ends, kinds and
    passage lists, the costliest fields of a row)."""

    ids: tuple[str, ...]
    vector: Sequence[float]
    ends: bool = True


@dataclass(frozen=True)
class OwnRelations(Request[list[list[CandidateRelation]]]):
    """Per passage, the relations of its own triplets (with ends, kinds, all their passages
    and texts, ``hop=1``), most similar to ``vector`` first (ties by id), at most ``limit``
    (``None``: all). ``ends=False``: as :class:`GetRelations`'s (what a result's
    ``metadata["graphrag_relations"]`` shows: ids, texts, scores)."""

    passages: tuple[PassageRef, ...]
    vector: Sequence[float]
    limit: int | None = None
    ends: bool = True


@dataclass(frozen=True)
class EntityPassages(Request[dict[str, list[str]]]):
    """For each entity, at most ``cap`` of the distinct passages its relations come from
    (the served graph: the first ``cap`` its entity row lists; in memory: its relations read
    until ``cap`` passages are found; on an index written before entity rows listed them:
    those of at most ``cap`` of its relations)."""

    entity_ids: tuple[str, ...]
    cap: int


@dataclass(frozen=True)
class BridgeSpreads(Request[dict[str, Spread]]):
    """Where candidate bridges lead: for each ``(entity id, the relation hit that reached
    it)``, the entity's :class:`~llama_index_graphrag_milvus.records.Spread` with at most
    ``cap`` passages. A graph served by Milvus tells it from the relation rows where they
    record it (:data:`~llama_index_graphrag_milvus.milvus.schema.SPREAD_FIELDS`: no
    request), else from :class:`EntityPassages`."""

    reached: tuple[tuple[str, RelationHit], ...]
    cap: int


@dataclass(frozen=True)
class EntityDegrees(Request[dict[str, int]]):
    """The number of relations of each entity (its degree)."""

    entity_ids: tuple[str, ...]


@dataclass(frozen=True)
class RelationTexts(Request[dict[str, str]]):
    """Relation texts by id (ids not stored are left out)."""

    ids: tuple[str, ...]


@dataclass(frozen=True)
class EntityNames(Request[dict[str, str]]):
    """Entity names by id (ids not stored are left out)."""

    ids: tuple[str, ...]


@dataclass(frozen=True)
class CommunitiesBuilt(Request["CommunityInfo"]):
    """The communities' levels and whether descriptions are stored;
    :class:`~llama_index_graphrag_milvus.errors.CommunitiesNotBuiltError` when
    ``build_communities`` never ran (or did not finish)."""


@dataclass(frozen=True)
class CommunitiesOf(Request["LocalCommunities"]):
    """The communities of ``entity_ids`` at level ``depth`` (or the deepest above it) and
    their reports, without reading the other communities on a served index."""

    entity_ids: tuple[str, ...]
    depth: int


@dataclass(frozen=True)
class DescriptionsOf(Request["DescriptionTable"]):
    """The merged descriptions of the entities and relations ``ids`` (an empty table
    without described extraction)."""

    ids: tuple[str, ...]


GRAPH_REQUESTS: tuple[type[Request[Any]], ...] = (
    RelationSeeds, EntitySeeds, RankPassages, RankWords, ExpandPool, RelationsAround,
    GetRelations, OwnRelations, EntityPassages, BridgeSpreads, EntityDegrees, RelationTexts,
    EntityNames, CommunitiesBuilt, CommunitiesOf, DescriptionsOf)
"""What a graph source must answer (:mod:`.sources` checks its tables against it)."""


# ---------------------------------------------------------------------------- the models


@dataclass(frozen=True)
class Ner(Request[list[str]]):
    """Entity names in the query, by the LLM (an empty list without one, or on failure)."""

    query: str


@dataclass(frozen=True)
class EmbedTexts(Request[list[list[float]]]):
    """Embeddings of ``texts``, in one batch of the index's embedding model (passage side:
    names matched to the stored entity names)."""

    texts: tuple[str, ...]


@dataclass(frozen=True)
class EmbedQueries(Request[list[list[float]]]):
    """Embeddings of ``texts`` as queries (questions searched against the passages), in one
    batch when the model embeds queries as passages (see :mod:`~.embeddings`)."""

    texts: tuple[str, ...]


# ---------------------------------------------------------------------------- Milvus


@dataclass(frozen=True)
class SearchEntities(Request[list[list[EntityHit]]]):
    """One batched search of the entity collection: hits per searched name (among the rows
    matching ``where``, a filter on entity rows, and among the ids ``among`` or the name
    keys ``keys``, when given: see :class:`EntitySeeds`)."""

    vectors: Sequence[Sequence[float]]
    names: tuple[str, ...]
    top_k: int
    threshold: float | None
    where: str = ""
    among: tuple[str, ...] | None = None
    keys: tuple[str, ...] | None = None


@dataclass(frozen=True)
class SearchRelations(Request[list[RelationHit]]):
    """A search of the relation collection: the relations most similar to ``vector``
    (among the rows matching ``where``, a filter on relation rows, when given)."""

    vector: Sequence[float]
    top_k: int
    threshold: float | None
    where: str = ""


@dataclass(frozen=True)
class SearchPassages(Request[list[list[tuple[BaseNode, float]]]]):
    """One batched search of the passage collection: ``(node, similarity)`` lists, one per
    vector, among ``ids`` when given, matching the ``where`` filter expression."""

    vectors: tuple[Sequence[float], ...]
    limit: int
    ids: tuple[str, ...] | None = None
    where: str = ""


@dataclass(frozen=True)
class MatchWords(Request[list[list[tuple[BaseNode, float]]]]):
    """One batched BM25 search of the passages (Milvus full-text search): per text, the
    ``limit`` passages whose words match it best, ``(node, BM25 score)``, best first and
    ties by id, matching the ``where`` filter expression; empty lists when the index has no
    full-text search."""

    texts: tuple[str, ...]
    limit: int
    where: str = ""


@dataclass(frozen=True)
class GetPassages(Request[list[BaseNode]]):
    """Passage nodes by id (matching ``where``), in the order of ``ids``."""

    ids: tuple[str, ...]
    where: str = ""


@dataclass(frozen=True)
class MatchPassages(Request[list[str]]):
    """Those of ``ids`` whose passage matches the filter expression ``where`` (a read of ids
    only): which passages a filtered retrieval may use."""

    ids: tuple[str, ...]
    where: str


@dataclass(frozen=True)
class GetRelationTexts(Request[dict[str, str]]):
    """Relation texts by id, read from the relation collection."""

    ids: tuple[str, ...]


@dataclass(frozen=True)
class GetEntityNames(Request[dict[str, str]]):
    """Entity names by id, read from the entity collection (ids not stored are left out)."""

    ids: tuple[str, ...]


# ---------------------------------------------------------------------------- in memory


@dataclass(frozen=True)
class LoadGraph(Request[EntityRelationGraph]):
    """The index's in-memory graph (built from Milvus on first use)."""


@dataclass(frozen=True)
class LoadEntities(Request[EntityTable]):
    """The index's in-memory entity table (read from Milvus on first use)."""


@dataclass(frozen=True)
class LoadPassages(Request[PassageTable | None]):
    """The index's in-memory passage table, or ``None`` when it would hold more than
    ``max_floats`` floats (``None``: no limit)."""

    max_floats: int | None


@dataclass(frozen=True)
class LoadScope(Request[PassageScope | None]):
    """The passages the filter expression ``where`` keeps, over the in-memory passage table
    (one read of ids, remembered until the next write), or ``None`` when the table would
    hold more than ``max_floats`` floats."""

    where: str
    max_floats: int | None


@dataclass(frozen=True)
class LoadWords(Request[WordTable | None]):
    """The passages' BM25 term weights in memory, or ``None`` (no full-text search, an
    analyzer other than the standard one, or a passage table above ``max_floats``)."""

    max_floats: int | None


@dataclass(frozen=True)
class LoadCommunities(Request["CommunitySet"]):
    """The index's communities and reports (read from Milvus on first use)."""


# ---------------------------------------------------------------------------- composition


@dataclass(frozen=True)
class Known(Request[A]):
    """An answer found without I/O: ``value`` comes back, so that a plan keeps one shape
    whether a step needs I/O or not."""

    value: A


@dataclass(frozen=True)
class MilvusRequests(Request[int]):
    """The number of Milvus requests the query has sent so far (searches, reads by id,
    queries; the reads that build the in-memory copies on first use are not counted): ask
    it before and after a step to count the step's."""


@dataclass(frozen=True)
class Together(Request[tuple[Any, ...]]):
    """Several requests at the same time; the answers come back as a tuple, in order."""

    requests: tuple[Request[Any], ...]


def advance(plan: Plan[T], answer: Any) -> tuple[Request[Any] | None, T | None]:
    """Send ``answer`` to ``plan``: its next request, or ``None`` and what it returned."""
    try:
        return plan.send(answer), None
    except StopIteration as stop:
        return None, stop.value


def side_by_side(*plans: Plan[Any]) -> Plan[tuple[Any, ...]]:
    """Run independent ``plans`` at the same time: in each round, the next request of every
    plan not finished yet goes out in one :class:`Together` (alone, as itself); what each
    plan returned comes back in order. The query then waits for the longest of the plans'
    chains of requests, not for their sum.

    >>> def one(x: int) -> Plan[int]:
    ...     return (yield from Known(x)) + 1
    >>> steps = side_by_side(one(1), one(10))
    >>> next(steps)
    Together(requests=(Known(value=1), Known(value=10)))
    >>> try:
    ...     steps.send((1, 10))
    ... except StopIteration as done:
    ...     print(done.value)
    (2, 11)
    """
    results: list[Any] = [None] * len(plans)
    pending: dict[int, Request[Any]] = {}
    for i, plan in enumerate(plans):
        request, results[i] = advance(plan, None)
        if request is not None:
            pending[i] = request
    while pending:
        order = list(pending)
        asked = tuple(pending[i] for i in order)
        answers = (yield Together(asked)) if len(asked) > 1 else ((yield asked[0]),)
        for i, answer in zip(order, answers, strict=True):
            request, results[i] = advance(plans[i], answer)
            if request is None:
                del pending[i]
            else:
                pending[i] = request
    return tuple(results)


def first(lists: Sequence[Sequence[T]]) -> list[T]:
    """The first list of a batched answer (empty when there is none).

    >>> first([[1, 2], [3]]), first([])
    ([1, 2], [])
    """
    return list(lists[0]) if lists else []
