"""The communities of a few entities, their reports and descriptions: what local search
reads of the communities, without reading them all.

Local search needs, for the entities around a question, the community of each at one level
and those communities' reports, and the merged descriptions of the entities and relations
it shows. Where the graph lives decides how they are read (the graph sources of
:mod:`llama_index_graphrag_milvus.retrieval.sources` answer the requests
:class:`~..retrieval.requests.CommunitiesBuilt`, :class:`~..retrieval.requests.CommunitiesOf`
and :class:`~..retrieval.requests.DescriptionsOf`):

- the graph in memory: from the loaded :class:`~.build.CommunitySet` (every community, read
  once, as the graph is);
- the graph served by Milvus (:class:`ServedCommunities`): bounded reads whatever the number
  of communities: one filtered query per entity on the community collection for the ids and
  levels of its communities (``array_contains(entity_ids, ...)``, no member lists read),
  then the chosen communities' report rows by primary key; the descriptions by primary key.
  The report retriever (``index.as_report_retriever()``) is one vector search of the
  community collection there (:meth:`ServedCommunities.search_reports`).

Both give the same records, so local search returns the same nodes in both modes.

Example::

    info = index.cache.community_info()           # levels; raises when never built
    found = ServedCommunities(index.store).around(["e1", "e2"], depth=info.levels - 1)
    found.community["e1"], found.reports[found.community["e1"]].title
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from llama_index_graphrag_milvus.communities.descriptions import (
    DescriptionTable,
    read_description_table,
)
from llama_index_graphrag_milvus.limits import MILVUS_MAX_TOP_K
from llama_index_graphrag_milvus.milvus.filters import quote
from llama_index_graphrag_milvus.milvus.rows import search_kwargs, similarity
from llama_index_graphrag_milvus.milvus.schema import milvus_errors
from llama_index_graphrag_milvus.records import Community, CommunityReport, Finding
from llama_index_graphrag_milvus.validation import check_int

if TYPE_CHECKING:
    from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore

REPORT_FIELDS = ["community_id", "level", "parent", "num_relations", "num_passages", "title",
                 "summary", "findings", "rating", "rating_explanation", "kind"]
"""What a report is read with (its first part's row; no member lists, no vector)."""
DESCRIPTION_READ_FIELDS = ["kind", "type", "description", "strength"]
"""What a description is read with."""


def check_level(levels: int, level: int | None) -> int:
    """``level`` itself (the deepest level for ``None``) among ``levels`` levels;
    :class:`~llama_index_graphrag_milvus.errors.InvalidInputError` when there is no such
    level.

    >>> check_level(3, None), check_level(3, 0)
    (2, 0)
    """
    if level is None:
        return levels - 1
    return check_int("level", level, minimum=0, maximum=levels - 1,
                     hint="0: the most general communities of this index, "
                     f"{levels - 1}: the most specific")


@dataclass(frozen=True)
class CommunityInfo:
    """What an index's community build recorded that local search needs first."""

    levels: int
    """Levels of the hierarchy (0: the most general)."""
    described: bool
    """Whether merged entity and relation descriptions are stored."""
    count: int = 0
    """Communities stored (all levels)."""


@dataclass(frozen=True)
class LocalCommunities:
    """The communities of some entities at one level, with their reports.

    A report read this way from a served index carries no member lists
    (``report.community.entity_ids`` and ``children`` are empty): local search shows the
    report, not its members.
    """

    community: Mapping[str, str] = field(default_factory=dict)
    """Entity id to the id of its community at the level (or the deepest above it, when
    its community is not split that far); entities in no community are absent."""
    reports: Mapping[str, CommunityReport] = field(default_factory=dict)
    """The reports of those communities, by community id."""


def deepest(memberships: Sequence[Mapping[str, Any]], depth: int) -> str | None:
    """Among an entity's community rows (``community_id``, ``level``), the id of the one at
    ``depth`` or, when the entity's communities stop above it, the deepest.

    >>> deepest([{"community_id": "a", "level": 0}, {"community_id": "b", "level": 1}], 5)
    'b'
    >>> deepest([{"community_id": "a", "level": 0}, {"community_id": "b", "level": 1}], 0)
    'a'
    """
    within = [(int(r["level"]), str(r["community_id"])) for r in memberships
              if int(r["level"]) <= depth]
    return max(within)[1] if within else None


def report_of(row: Mapping[str, Any], children: tuple[str, ...] = (),
              entity_ids: tuple[str, ...] = ()) -> CommunityReport:
    """A report from its first part's row, with the member lists given (none by default:
    a served read does not read them)."""
    cid = str(row["community_id"])
    community = Community(cid, int(row["level"]), str(row["parent"]), children, entity_ids,
                          int(row["num_relations"]), int(row["num_passages"]))
    findings = tuple(Finding(str(f.get("summary", "")), str(f.get("explanation", "")))
                     for f in json.loads(row["findings"] or "[]") if isinstance(f, dict))
    return CommunityReport(community, str(row["title"]), str(row["summary"]), findings,
                           float(row["rating"]), str(row["rating_explanation"]),
                           str(row["kind"]))


class ServedCommunities:
    """The communities of a served index, read by bounded queries (see the module
    docstring); blocking and awaitable (each pair builds the same requests and parses the
    same answers)."""

    def __init__(self, store: MilvusGraphStore) -> None:
        self.store = store

    def _membership_kwargs(self, entity_id: str, depth: int) -> dict[str, Any]:
        return {"collection_name": self.store.community_collection,
                "filter": f"array_contains(entity_ids, {quote(entity_id)}) and level <= {depth}",
                "output_fields": ["community_id", "level"], "limit": MILVUS_MAX_TOP_K,
                **self.store.read_options}

    def _reports_kwargs(self, community_ids: Sequence[str]) -> dict[str, Any]:
        return {"collection_name": self.store.community_collection, "ids": list(community_ids),
                "output_fields": REPORT_FIELDS, **self.store.read_options}

    def around(self, entity_ids: Sequence[str], depth: int) -> LocalCommunities:
        """The communities of ``entity_ids`` at level ``depth`` and their reports: the
        entities' memberships at the same time, then the reports in one read."""
        def one(entity_id: str) -> list[dict[str, Any]]:
            with milvus_errors(f"read {self.store.community_collection}"):
                return self.store.client.query(**self._membership_kwargs(entity_id, depth))

        wanted = list(dict.fromkeys(entity_ids))
        rows = self.store.concurrently_all([partial(one, e) for e in wanted]) if wanted else ()
        community = _chosen(wanted, rows, depth)
        if not community:
            return LocalCommunities()
        with milvus_errors(f"read {self.store.community_collection}"):
            heads = self.store.client.get(**self._reports_kwargs(sorted(set(community.values()))))
        return _local(community, heads)

    async def aaround(self, entity_ids: Sequence[str], depth: int) -> LocalCommunities:
        """Async twin of :meth:`around`."""
        async def one(entity_id: str) -> list[dict[str, Any]]:
            with milvus_errors(f"read {self.store.community_collection}"):
                return await self.store.aclient().query(
                    **self._membership_kwargs(entity_id, depth))

        wanted = list(dict.fromkeys(entity_ids))
        rows = await asyncio.gather(*(one(e) for e in wanted))
        community = _chosen(wanted, rows, depth)
        if not community:
            return LocalCommunities()
        with milvus_errors(f"read {self.store.community_collection}"):
            heads = await self.store.aclient().get(
                **self._reports_kwargs(sorted(set(community.values()))))
        return _local(community, heads)

    def _reports_search_kwargs(self, vector: Sequence[float], depth: int, limit: int
                               ) -> dict[str, Any]:
        return search_kwargs(self.store.community_collection, [vector], limit, REPORT_FIELDS,
                             where=at_level_filter(depth))

    def search_reports(self, vector: Sequence[float], depth: int, limit: int
                       ) -> list[tuple[CommunityReport, float]]:
        """The ``limit`` reports of level ``depth`` (see :func:`at_level_filter`) most
        similar to ``vector`` (cosine), best first, ties by id: one vector search of the
        community collection."""
        hits = self.store.ranked_search(self._reports_search_kwargs(vector, depth, limit),
                                        limit)
        return _reports(hits)

    async def asearch_reports(self, vector: Sequence[float], depth: int, limit: int
                              ) -> list[tuple[CommunityReport, float]]:
        """Async twin of :meth:`search_reports`."""
        hits = await self.store.aranked_search(
            self._reports_search_kwargs(vector, depth, limit), limit)
        return _reports(hits)

    def _descriptions_kwargs(self, ids: Sequence[str]) -> dict[str, Any]:
        return {"collection_name": self.store.descriptions.name, "ids": list(ids),
                "output_fields": DESCRIPTION_READ_FIELDS, **self.store.read_options}

    def descriptions(self, ids: Sequence[str]) -> DescriptionTable:
        """The stored descriptions of the entities and relations ``ids`` (by primary key;
        ids without one are absent)."""
        if not ids:
            return DescriptionTable({}, {})
        with milvus_errors(f"read {self.store.descriptions.name}"):
            return read_description_table(self.store.client.get(
                **self._descriptions_kwargs(ids)))

    async def adescriptions(self, ids: Sequence[str]) -> DescriptionTable:
        """Async twin of :meth:`descriptions`."""
        if not ids:
            return DescriptionTable({}, {})
        with milvus_errors(f"read {self.store.descriptions.name}"):
            return read_description_table(await self.store.aclient().get(
                **self._descriptions_kwargs(ids)))


def at_level_filter(depth: int) -> str:
    """The reports that cover the graph at level ``depth`` (as
    :meth:`~.build.CommunitySet.at_level`): that level's communities and those of the levels
    above that are not split further, one row each (the first part).

    >>> at_level_filter(1)
    'part == 0 and (level == 1 or (level < 1 and array_length(children) == 0))'
    """
    return (f"part == 0 and (level == {depth} or (level < {depth} and "
            "array_length(children) == 0))")


def _reports(hits: Sequence[Sequence[dict[str, Any]]]) -> list[tuple[CommunityReport, float]]:
    return [(report_of({**hit["entity"], "community_id": hit["id"]}), similarity(hit))
            for hit in (hits[0] if hits else ())]


def _chosen(entity_ids: Sequence[str], rows: Sequence[Sequence[Mapping[str, Any]]],
            depth: int) -> dict[str, str]:
    found = {e: deepest(r, depth) for e, r in zip(entity_ids, rows, strict=True)}
    return {e: cid for e, cid in found.items() if cid is not None}


def _local(community: dict[str, str], heads: Sequence[Mapping[str, Any]]) -> LocalCommunities:
    reports = {str(row["community_id"]): report_of(row) for row in heads}
    # a community deleted between the two reads (a rebuild) is left out with its entities
    return LocalCommunities({e: c for e, c in community.items() if c in reports}, reports)


def descriptions_of(table: DescriptionTable, ids: Sequence[str]) -> DescriptionTable:
    """The part of ``table`` about ``ids``.

    >>> t = DescriptionTable({"e1": ("PERSON", "A man."), "e2": ("", "")}, {"r1": ("x", 1.0)})
    >>> descriptions_of(t, ["e1", "r1", "r9"])
    DescriptionTable(entities={'e1': ('PERSON', 'A man.')}, relations={'r1': ('x', 1.0)})
    """
    return DescriptionTable({i: table.entities[i] for i in ids if i in table.entities},
                            {i: table.relations[i] for i in ids if i in table.relations})
