"""What the explorer reads of the graph, behind one interface with two implementations:

- :class:`~.memory.MemoryGraphView`: the index's in-memory graph and entity table (an
  index with ``graph="memory"``, and any filtered explorer: see :mod:`.scope`);
- :class:`~.served.ServedGraphView`: bounded Milvus reads, nothing held that grows with the
  index (an index with ``graph="milvus"``, unfiltered).

:class:`~.data.ExplorerData` picks one and asks it for the graph parts of its answers:
counts, the degree distribution and hubs, entity search, an entity's neighbourhood, the
passage ids of a page, entity names. The shared pieces (the histogram, the order of search
hits, the not-found error) live here, so that both views answer alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from llama_index_graphrag_milvus.cli.common import shorten
from llama_index_graphrag_milvus.errors import NotFoundError
from llama_index_graphrag_milvus.explain.view import predicate
from llama_index_graphrag_milvus.words import name_key

if TYPE_CHECKING:
    from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore

MAX_SHOWN_ID = 80
"""Characters of a requested id an error repeats at most."""
PASSAGES_PER_RELATION = 5
"""Passage ids listed per relation of a neighbourhood."""
HUBS = 10
"""Entities the summary lists as the most connected."""


def degree_histogram(degrees: np.ndarray) -> list[dict[str, int]]:
    """Entities per degree bucket: 1, 2, 3-4, 5-8, 9-16... (powers of two).

    >>> degree_histogram(np.array([1, 1, 2, 3, 9]))
    [{'low': 1, 'high': 1, 'entities': 2}, {'low': 2, 'high': 2, 'entities': 1}, \
{'low': 3, 'high': 4, 'entities': 1}, {'low': 5, 'high': 8, 'entities': 0}, \
{'low': 9, 'high': 16, 'entities': 1}]
    """
    if degrees.size == 0:
        return []
    buckets = [(1, 1)]
    while buckets[-1][1] < int(degrees.max()):
        high = buckets[-1][1]
        buckets.append((high + 1, high * 2))
    return [{"low": low, "high": high,
             "entities": int(np.count_nonzero((degrees >= low) & (degrees <= high)))}
            for low, high in buckets]


def no_entity(entity_id: object) -> NotFoundError:
    """The error of an entity the graph does not hold (the id repeated, shortened)."""
    return NotFoundError(f"no entity {shorten(repr(entity_id), MAX_SHOWN_ID)} in this "
                         "index's graph")


@dataclass(frozen=True)
class Hit:
    """An entity whose name holds the searched text."""

    id: str
    name: str
    degree: int


def name_fold(store: MilvusGraphStore) -> Callable[[str], str]:
    """How the entity search compares a name with the searched text, in both views: by
    their :func:`~llama_index_graphrag_milvus.words.name_key` (accents, case and width
    aside: "zurich" finds "Zürich") where the index records the keys, else case aside
    (an index made before 0.3, until ``index.upgrade()``)."""
    return name_key if store.records_name_keys else str.casefold


def rank_hits(hits: Sequence[Hit], needle: str, limit: int,
              fold: Callable[[str], str] = str.casefold) -> list[dict[str, Any]]:
    """The ``limit`` best of ``hits`` for the text ``needle`` (folded by ``fold``): exact
    names first, then names that start with it, then the others; the most connected first
    within each, then by folded name.

    >>> [h["name"] for h in rank_hits([Hit("b", "Ba", 9), Hit("a", "A", 1), Hit("c", "ax", 1),
    ...                                  Hit("d", "Ay", 2)], "a", 5)]
    ['A', 'Ay', 'ax', 'Ba']
    """
    def key(hit: Hit) -> tuple[bool, bool, int, str]:
        folded = fold(hit.name)
        return folded != needle, not folded.startswith(needle), -hit.degree, folded

    return [{"id": h.id, "name": h.name, "degree": h.degree}
            for h in sorted(hits, key=key)[:limit]]


@dataclass(frozen=True)
class Degrees:
    """The degree distribution the summary shows: its histogram, the most connected
    entities (``(id, degree)``, most first) and, when it was read from a sample, the sample's
    size and the number of entities it was drawn from (``None``: every entity)."""

    histogram: list[dict[str, int]]
    hubs: list[tuple[str, int]]
    sample: dict[str, int] | None = None


class GraphView(Protocol):
    """The graph parts of the explorer's answers (see the module docstring)."""

    def counts(self) -> dict[str, int]:
        """``passages``, ``entities`` and ``relations`` shown."""

    def degrees(self) -> Degrees:
        """The degree distribution and the hubs."""

    def names(self, entity_ids: Sequence[str]) -> dict[str, str]:
        """Each entity's name (its id when the index does not hold it)."""

    def search(self, text: str, limit: int) -> list[dict[str, Any]]:
        """Entities whose name holds ``text`` (case aside: both folded), ranked by
        :func:`rank_hits`."""

    def neighbourhood(self, entity_id: str, offset: int, limit: int) -> dict[str, Any]:
        """One page of an entity's relations (:class:`NotFoundError` for an unknown one)."""

    def passage_page(self, offset: int, limit: int) -> tuple[int, list[str]]:
        """The number of passages shown, and the ids of one page of them in id order."""


def relation_item(relation_id: str, text: str, ends: tuple[str, str],
                  passages: Sequence[str], names: dict[str, str]) -> dict[str, Any]:
    """A relation of a neighbourhood page as the page receives it."""
    subject, obj = ends
    return {"id": relation_id, "text": text,
            "label": predicate(text, names[subject], names[obj]),
            "subject": {"id": subject, "name": names[subject]},
            "object": {"id": obj, "name": names[obj]},
            "passages": list(passages[:PASSAGES_PER_RELATION]),
            "more_passages": max(0, len(passages) - PASSAGES_PER_RELATION)}
