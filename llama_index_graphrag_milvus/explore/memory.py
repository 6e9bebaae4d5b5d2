"""The explorer's graph read from the index's in-memory graph and entity table (built on
first use, as a retriever builds them): :class:`MemoryGraphView`.

It serves an index whose graph is in memory (``graph="memory"``) and every filtered explorer
(what a tenant's passages support is a mask over the whole graph, :mod:`.scope`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from llama_index_graphrag_milvus.explore.scope import Visible
from llama_index_graphrag_milvus.explore.view import (
    HUBS,
    Degrees,
    Hit,
    degree_histogram,
    name_fold,
    no_entity,
    rank_hits,
    relation_item,
)

if TYPE_CHECKING:
    from llama_index_graphrag_milvus.graph import EntityRelationGraph
    from llama_index_graphrag_milvus.index import GraphRAGIndex


class MemoryGraphView:
    """The :class:`~.view.GraphView` of the in-memory graph, scoped by ``where`` (a Milvus
    expression on passage metadata; ``""``: the whole index). Thread-safe; it caches what
    it computed (the visible part of the graph, the folded entity names) for the graph and
    entity table it computed them from: a write through the index (which rebuilds them)
    is seen by the next call."""

    def __init__(self, index: GraphRAGIndex, where: str = "") -> None:
        self.index = index
        self.where = where
        self._lock = threading.Lock()
        self._folded: tuple[object, object, list[str]] | None = None
        self._visible: tuple[EntityRelationGraph, Visible] | None = None

    def scoped(self) -> tuple[EntityRelationGraph, Visible]:
        """The graph and what the explorer shows of it (all of it without a filter; with
        one, what the matching passages support), read again when the graph was."""
        graph = self.index.graph
        with self._lock:
            if self._visible is None or self._visible[0] is not graph:
                self._visible = graph, (
                    Visible.everything(graph) if not self.where else Visible.of(
                        graph, self.index.store.passage_ids_where(self.where)))
            return self._visible

    @property
    def visible(self) -> Visible:
        """What the explorer shows of the graph now (see :meth:`scoped`)."""
        return self.scoped()[1]

    def counts(self) -> dict[str, int]:
        visible = self.visible
        store = self.index.store
        passages = (len(visible.passages) if visible.passages is not None
                    else store.count(store.passage_collection))
        return {"passages": passages, "entities": int(np.count_nonzero(visible.entities)),
                "relations": int(np.count_nonzero(visible.relations))}

    def degrees(self) -> Degrees:
        graph, visible = self.scoped()
        degrees = visible.degrees
        top = np.argsort(-degrees, kind="stable")[:HUBS]
        top = top[degrees[top] > 0] if visible.filtered else top
        ids = graph.entity_ids.ids(top)
        return Degrees(degree_histogram(degrees[visible.entities]),
                       [(eid, int(degrees[row])) for eid, row in zip(ids, top.tolist(),
                                                                      strict=True)])

    def names(self, entity_ids: Sequence[str]) -> dict[str, str]:
        table = self.index.entity_table
        rows = table.ids.rows_of(list(entity_ids)).tolist() if entity_ids else []
        return {eid: table.names[row] if row >= 0 else eid
                for eid, row in zip(entity_ids, rows, strict=True)}

    def search(self, text: str, limit: int) -> list[dict[str, Any]]:
        fold = name_fold(self.index.store)
        needle = fold(text)
        table = self.index.entity_table
        with self._lock:
            if self._folded is None or self._folded[:2] != (table, fold):
                self._folded = table, fold, [fold(table.names[row])
                                             for row in range(len(table))]
            folded = self._folded[2]
        hits = [row for row, name in enumerate(folded) if needle in name]
        graph, visible = self.scoped()
        ids = table.ids.ids(np.asarray(hits, np.int64)) if hits else []
        graph_rows = graph.entity_ids.rows_of(ids) if ids else np.zeros(0, np.int64)
        if visible.filtered:  # only the entities the filter's passages name
            shown = [i for i, row in enumerate(graph_rows.tolist())
                     if row >= 0 and visible.entities[row]]
            hits, ids = [hits[i] for i in shown], [ids[i] for i in shown]
            graph_rows = graph_rows[shown]
        degrees = np.where(graph_rows >= 0, visible.degrees[np.maximum(graph_rows, 0)], 0)
        return rank_hits([Hit(ids[i], table.names[hits[i]], int(degrees[i]))
                          for i in range(len(hits))], needle, limit, fold)

    def neighbourhood(self, entity_id: str, offset: int, limit: int) -> dict[str, Any]:
        """Relations to the most connected neighbours first (then by relation row)."""
        graph, visible = self.scoped()
        [row] = graph.entity_ids.rows_of([entity_id]).tolist()
        if row < 0 or not visible.entities[row]:
            raise no_entity(entity_id)
        incidence = graph.incidence
        relations = incidence.indices[incidence.indptr[row]:incidence.indptr[row + 1]].astype(
            np.int64)
        relations = relations[visible.relations[relations]]
        ends = graph.endpoints[relations].astype(np.int64)
        other = np.where(ends[:, 0] == row, ends[:, 1], ends[:, 0])
        order = np.lexsort((relations, -visible.degrees[other]))
        page = relations[order[offset:offset + limit]]
        ids = graph.relation_ids.ids(page)
        texts = (dict(zip(ids, graph.texts.get(page), strict=True)) if graph.texts is not None
                 else self.index.store.get_relation_texts(ids))
        page_ends = [(graph.entity_ids[int(s)], graph.entity_ids[int(o)])
                     for s, o in graph.endpoints[page].tolist()]
        names = self.names([entity_id, *(e for pair in page_ends for e in pair)])
        items = [relation_item(rid, texts.get(rid, ""), pair, visible.passage_list(linked),
                               names)
                 for rid, pair, linked in zip(ids, page_ends, graph.passages_of(page),
                                              strict=True)]
        return {"entity": {"id": entity_id, "name": names[entity_id],
                           "degree": int(relations.size)},
                "offset": offset, "limit": limit, "total": int(relations.size),
                "relations": items}

    def passage_page(self, offset: int, limit: int) -> tuple[int, list[str]]:
        visible = self.visible
        if visible.passages is not None:
            ordered = sorted(visible.passages)
            return len(ordered), ordered[offset:offset + limit]
        table = self.index.passage_table(None)
        total = 0 if table is None else len(table)
        ids = [] if table is None or offset >= total else table.ids.ids(
            np.arange(offset, min(offset + limit, total)))
        return total, list(ids)
