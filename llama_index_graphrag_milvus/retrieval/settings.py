"""The closed sets of choices of the retrieval settings, as ``str`` enums (a plain string of
the same value is accepted everywhere, as core's ``FUSION_MODES`` are), and where the
searches of a query run (:class:`SearchSettings`).

>>> SearchPlace("memory") is SearchPlace.MEMORY, SearchPlace.MEMORY == "memory"
(True, True)
>>> str(GraphMode.MILVUS)
'milvus'
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar

from llama_index_graphrag_milvus.errors import InvalidInputError
from llama_index_graphrag_milvus.validation import check_int

E = TypeVar("E", bound="Choice")


class Choice(str, Enum):
    """A closed set of string choices: compares equal to its value, prints as its value."""

    def __str__(self) -> str:
        return str(self.value)

    @classmethod
    def of(cls: type[E], name: str, value: Any) -> E:
        """``value`` (a member or its string) as a member; :class:`InvalidInputError`
        naming the choices otherwise.

        >>> SearchPlace.of("relation_search", "gpu")
        Traceback (most recent call last):
        ...
        llama_index_graphrag_milvus.errors.InvalidInputError: relation_search must be one of auto, memory, milvus, got 'gpu'
        """  # noqa: E501
        try:
            return cls(value)
        except ValueError:
            choices = ", ".join(member.value for member in cls)
            raise InvalidInputError(f"{name} must be one of {choices}, got {value!r}") from None


class SearchPlace(Choice):
    """Where a seed or passage search runs (``relation_search``, ``entity_search``,
    ``passage_search``)."""

    AUTO = "auto"
    """Memory while the vectors searched fit the retriever's ``memory_search_max_floats``
    (and, for the relation seeds, always on Milvus Lite), Milvus above."""
    MEMORY = "memory"
    """The index's in-memory copy, searched exactly (read from Milvus on first use)."""
    MILVUS = "milvus"
    """A search of the Milvus collection."""


class NaiveSearch(Choice):
    """How :meth:`~llama_index_graphrag_milvus.GraphRAGIndex.as_naive_retriever` searches
    the passages (``search=``); BM25 and hybrid need an index with full-text search (the
    default of a new index where Milvus has BM25, see ``GraphRAGIndex``)."""

    DENSE = "dense"
    """Vector search with the embedding model (naive RAG)."""
    BM25 = "bm25"
    """Milvus's BM25 full-text search alone (the query's words, no embedding)."""
    HYBRID = "hybrid"
    """Both, fused by reciprocal rank (k = 60), as Milvus's hybrid search does."""


class GraphMode(Choice):
    """Where queries read the graph (``GraphRAGIndex(graph=...)``)."""

    AUTO = "auto"
    """Memory while the graph's estimated size fits ``graph_memory_budget``, else Milvus."""
    MEMORY = "memory"
    """The process holds the graph (built from the relation collection on first use)."""
    MILVUS = "milvus"
    """Milvus serves the graph: each query reads a bounded number of rows."""


MEMORY_SEARCH_MAX_FLOATS = 20_000_000
"""``"auto"`` searches in memory while ``rows * dim`` (relations for the relation search,
entities for the entity search, passages for the passage searches) is at most this: about
52,000 rows of 384 dimensions, 5 to 10 ms per query on one core; Milvus above it. The
default of ``memory_search_max_floats`` (a retriever argument)."""


@dataclass(frozen=True)
class SearchSettings:
    """Where one retriever's seed and passage searches run when the graph is held in memory
    (a graph served by Milvus searches Milvus always: its workers hold no copy).

    Args:
        relation_search: the relation seeds (:class:`SearchPlace`).
        entity_search: the entity seeds.
        passage_search: the passage searches (a filtered retrieval searches Milvus always:
            filters are Milvus expressions).
        memory_search_max_floats: the budget of ``"auto"``: ``rows * dim`` floats.

    >>> settings = SearchSettings(memory_search_max_floats=100)
    >>> settings.in_memory("auto", 10, 10), settings.in_memory("auto", 11, 10)
    (True, False)
    >>> settings.in_memory("milvus", 1, 1), settings.in_memory("memory", 10**9, 10**3)
    (False, True)
    """

    relation_search: SearchPlace | str = SearchPlace.AUTO
    entity_search: SearchPlace | str = SearchPlace.AUTO
    passage_search: SearchPlace | str = SearchPlace.AUTO
    memory_search_max_floats: int = MEMORY_SEARCH_MAX_FLOATS

    def __post_init__(self) -> None:
        for name in ("relation_search", "entity_search", "passage_search"):
            object.__setattr__(self, name, SearchPlace.of(name, getattr(self, name)))
        check_int("memory_search_max_floats", self.memory_search_max_floats, minimum=0)

    def in_memory(self, setting: str, rows: int, dim: int) -> bool:
        """Whether a search with this ``setting`` runs in memory for ``rows`` vectors of
        ``dim`` floats."""
        return setting == SearchPlace.MEMORY or (
            setting == SearchPlace.AUTO and rows * dim <= self.memory_search_max_floats)

    def passage_budget(self) -> int | None:
        """The floats the passage table may hold for this retriever (``None``: any)."""
        return None if self.passage_search == SearchPlace.MEMORY else \
            self.memory_search_max_floats
