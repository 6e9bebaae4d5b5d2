"""The I/O of a retrieval, as typed requests.

A retrieval method is written once, as a *plan*: a generator that yields requests and
receives their answers. Everything between the requests is pure; a driver
(:mod:`.drivers`) answers the requests, with blocking calls or with awaits, so that
``_retrieve`` and ``_aretrieve`` share every line but the I/O ones.

Each request class is generic in its answer: ``SearchRelations`` is a
``Request[list[RelationHit]]``. A plan asks with ``yield from``, which is typed::

    def plan(query: QueryContext) -> Plan[int]:
        hits = yield from SearchRelations(query.vector, 5, None)  # list[RelationHit]
        return len(hits)

(``answer = yield request`` works too, untyped.) :class:`Together` asks several at once.

Requests come in three kinds, by what answers them (see the tables of :mod:`.drivers`):
the models (:class:`Ner`, :class:`EmbedTexts`), the Milvus collections
(:class:`SearchEntities`, :class:`SearchRelations`, :class:`SearchPassages`,
:class:`GetPassages`, :class:`GetRelationTexts`, :class:`GetEntityNames`, and the served graph's
:class:`RelationsAround`, :class:`GetRelations`, :class:`EntityPassages`) and the in-memory
copies of the index
(:class:`LoadGraph`, :class:`LoadEntities`, :class:`LoadPassages`,
:class:`LoadCommunities`). :class:`Known` is an answer that needs no I/O.

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

from llama_index_graphrag_milvus.graph import EntityRelationGraph
from llama_index_graphrag_milvus.graph.seeds import EntityTable, PassageTable
from llama_index_graphrag_milvus.records import CandidateRelation, EntityHit, RelationHit

if TYPE_CHECKING:  # the communities import the retrievers
    from llama_index_graphrag_milvus.communities.build import CommunitySet  # noqa: F401

A = TypeVar("A")
T = TypeVar("T")


class Request(Generic[A]):
    """A request whose answer is an ``A``; ``answer = yield from request`` in a plan."""

    def __iter__(self) -> Generator[Request[Any], Any, A]:
        answer: A = yield self
        return answer


Plan = Generator[Request[Any], Any, T]
"""A retrieval step: yields requests, receives their answers, returns a ``T``."""


# ---------------------------------------------------------------------------- the models


@dataclass(frozen=True)
class Ner(Request[list[str]]):
    """Entity names in the query, by the LLM (an empty list without one, or on failure)."""

    query: str


@dataclass(frozen=True)
class EmbedTexts(Request[list[list[float]]]):
    """Embeddings of ``texts``, in one batch of the index's embedding model."""

    texts: tuple[str, ...]


# ---------------------------------------------------------------------------- Milvus


@dataclass(frozen=True)
class SearchEntities(Request[list[list[EntityHit]]]):
    """One batched entity search: hits per searched name."""

    vectors: Sequence[Sequence[float]]
    names: tuple[str, ...]
    top_k: int
    threshold: float | None


@dataclass(frozen=True)
class SearchRelations(Request[list[RelationHit]]):
    """The relations most similar to ``vector``."""

    vector: list[float]
    top_k: int
    threshold: float | None


@dataclass(frozen=True)
class SearchPassages(Request[list[list[tuple[BaseNode, float]]]]):
    """One batched passage search: ``(node, similarity)`` lists, one per vector, among
    ``ids`` when given, matching the ``where`` filter expression."""

    vectors: tuple[list[float], ...]
    limit: int
    ids: tuple[str, ...] | None = None
    where: str = ""


@dataclass(frozen=True)
class GetPassages(Request[list[BaseNode]]):
    """Passage nodes by id (matching ``where``), in the order of ``ids``."""

    ids: tuple[str, ...]
    where: str = ""


@dataclass(frozen=True)
class GetRelationTexts(Request[dict[str, str]]):
    """Relation texts by id."""

    ids: tuple[str, ...]


@dataclass(frozen=True)
class GetEntityNames(Request[dict[str, str]]):
    """Entity names by id (ids not stored are left out)."""

    ids: tuple[str, ...]


@dataclass(frozen=True)
class RelationsAround(Request[list[CandidateRelation]]):
    """The served graph: the ``limit`` relations of ``entity_ids`` most similar to
    ``vector``, best first, with their ends, kinds, passages and texts (one filtered
    search)."""

    vector: tuple[float, ...]
    entity_ids: tuple[str, ...]
    limit: int


@dataclass(frozen=True)
class GetRelations(Request[list[CandidateRelation]]):
    """The served graph: relations by id, scored against ``vector`` (one read by primary
    key; unknown ids are left out)."""

    ids: tuple[str, ...]
    vector: tuple[float, ...]


@dataclass(frozen=True)
class EntityPassages(Request[dict[str, list[str]]]):
    """The served graph: for each entity, the passages its relations come from (those of at
    most ``cap`` of its relations)."""

    entity_ids: tuple[str, ...]
    cap: int


# ---------------------------------------------------------------------------- in memory


@dataclass(frozen=True)
class LoadGraph(Request[EntityRelationGraph]):
    """The index's in-memory graph (built from Milvus on first use)."""


@dataclass(frozen=True)
class LoadEntities(Request[EntityTable]):
    """The index's in-memory entity table (read from Milvus on first use)."""


@dataclass(frozen=True)
class LoadPassages(Request[PassageTable | None]):
    """The index's in-memory passage table, or ``None`` when it holds more than
    ``max_floats`` floats (``None``: no limit)."""

    max_floats: int | None


@dataclass(frozen=True)
class LoadCommunities(Request["CommunitySet"]):
    """The index's communities and reports (read from Milvus on first use)."""


# ---------------------------------------------------------------------------- composition


@dataclass(frozen=True)
class Known(Request[A]):
    """An answer found without I/O (a seed search done in memory): ``value`` comes back, so
    that a plan keeps one shape whether a step runs in Milvus or in memory."""

    value: A


@dataclass(frozen=True)
class Together(Request[tuple[Any, ...]]):
    """Several requests at the same time; the answers come back as a tuple, in order."""

    requests: tuple[Request[Any], ...]


def first(lists: Sequence[Sequence[T]]) -> list[T]:
    """The first list of a batched answer (empty when there is none).

    >>> first([[1, 2], [3]]), first([])
    ([1, 2], [])
    """
    return list(lists[0]) if lists else []
