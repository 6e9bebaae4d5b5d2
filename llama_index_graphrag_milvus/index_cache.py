"""The in-memory copies an index reads from Milvus on first use, and their invalidation.

A copy (the graph, the entity table, the passage table, the communities) is built by the
first query that needs it and dropped by every write. Builds take seconds to minutes on a
large index, and writes must not wait for them, so a build and a write can overlap: the
write ends while the build still holds the rows it read before. Such a build must not be
kept, or it would hide the write until the next write or ``refresh()``. Each copy has a
generation, bumped by every drop; a build stores its copy only when the generation it
started from is still current (the query that built it still uses it: it started before
the write finished).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

GRAPH = "graph"
ENTITIES = "entities"
PASSAGES = "passages"
PASSAGES_TOO_LARGE = "passages_too_large"
COMMUNITIES = "communities"
COPIES = (GRAPH, ENTITIES, PASSAGES, PASSAGES_TOO_LARGE, COMMUNITIES)
"""The names of the copies an index keeps."""


class IndexCache:
    """Named in-memory copies, built on first use, dropped on writes.

    One build runs at a time (two queries on a cold index build the graph once); a drop
    never waits for a build.

    >>> cache = IndexCache()
    >>> cache.get(GRAPH, lambda: "built")
    'built'
    >>> cache.get(GRAPH, lambda: "built again")  # kept until dropped
    'built'
    >>> cache.drop()
    >>> cache.peek(GRAPH) is None
    True
    """

    def __init__(self) -> None:
        self._build = threading.Lock()
        self._state = threading.Lock()
        self._copies: dict[str, Any] = {}
        self._generations: dict[str, int] = dict.fromkeys(COPIES, 0)

    def peek(self, name: str) -> Any | None:
        """The copy if it is built, else ``None``; never waits."""
        return self._copies.get(name)

    def get(self, name: str, build: Callable[[], T]) -> T:
        """The copy ``name``, built by ``build()`` when there is none (``None`` is not
        kept: the next call builds again). A drop of ``name`` while ``build()`` runs makes
        this call return what it built without keeping it."""
        with self._build:
            with self._state:
                found = self._copies.get(name)
                generation = self._generations[name]
            if found is not None:
                return found
            value = build()
            with self._state:
                if value is not None and self._generations[name] == generation:
                    self._copies[name] = value
            return value

    def drop(self, *names: str) -> None:
        """Forget the copies ``names`` (all when none is named); builds in progress of
        those copies are not kept."""
        with self._state:
            for name in names or COPIES:
                self._generations[name] += 1
                self._copies.pop(name, None)
