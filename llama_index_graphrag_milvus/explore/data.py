"""What the explorer shows, read from one :class:`GraphRAGIndex`, with no web framework.

Every method reads; none writes, deletes or builds anything. Each answer is bounded: pages of
at most :data:`MAX_PAGE` items, questions of at most :data:`MAX_QUESTION_CHARS` characters,
at most :data:`MAX_TOP_K` passages. Answers are plain dicts, lists, strings and numbers
(JSON); the texts in them are the index's texts as they are, for the page to show as text.

With ``filters`` (one tenant's), it shows only what the matching passages support: their
relations and entities, counts and degrees of those, the passages themselves, and questions
answered by filtered retrievers; communities span tenants and are not shown (see
:mod:`.scope`).

The graph parts read the index's in-memory graph and entity table (built on first use, as a
retriever builds them); passages and texts the graph does not hold are read from Milvus by
primary key. The explorer is a tool for one machine: it holds the graph in memory also when
the index serves it from Milvus (``graph="milvus"``; its questions are then answered from the
served graph, as the index's retrievers answer them, and a warning says what the
degree distribution and neighbourhoods cost).

Example::

    data = ExplorerData(index)
    data.summary()["counts"]                      # passages, entities, relations...
    [hit] = data.search_entities("johann", limit=1)
    data.neighbourhood(hit["id"], offset=0, limit=25)["relations"]
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from llama_index_graphrag_milvus.cli.common import shorten
from llama_index_graphrag_milvus.errors import (
    CommunitiesNotBuiltError,
    InvalidInputError,
    NotFoundError,
)
from llama_index_graphrag_milvus.explain.view import predicate
from llama_index_graphrag_milvus.explore.scope import Visible
from llama_index_graphrag_milvus.metadata import TRIPLETS_KEY
from llama_index_graphrag_milvus.milvus.filters import to_milvus_expression
from llama_index_graphrag_milvus.retrieval.methods import PASSAGE_SCORINGS
from llama_index_graphrag_milvus.validation import check_int

if TYPE_CHECKING:
    from llama_index.core.vector_stores import MetadataFilters

    from llama_index_graphrag_milvus.index import GraphRAGIndex
    from llama_index_graphrag_milvus.retrieval.retriever import GraphRAGRetriever

logger = logging.getLogger(__name__)

MAX_PAGE = 100
"""Items per page at most (relations of an entity, passages, reports, search hits)."""
DEFAULT_PAGE = 25
"""Items per page unless asked otherwise."""
MAX_QUESTION_CHARS = 1000
"""Longest question the explorer runs."""
MAX_TOP_K = 50
"""Most passages a question returns in the explorer."""
DEFAULT_TOP_K = 5
"""Passages a question returns unless asked otherwise."""
MAX_SEARCH_CHARS = 200
"""Longest entity search text."""
PASSAGES_PER_RELATION = 5
"""Passage ids listed per relation of a neighbourhood."""
MAX_SHOWN_ID = 80
"""Characters of a requested id an error repeats at most."""
FILTERED_COMMUNITIES = (
    "communities and their reports span every tenant of an index, so a filtered explorer "
    "does not show them (give each tenant its own collection_prefix to have its own)")
"""Why a filtered explorer shows no community."""
METHODS = (*PASSAGE_SCORINGS, "local")
"""The methods a question can run: the retriever's, and local search when the index has
communities."""


def _page(offset: int, limit: int) -> tuple[int, int]:
    return (check_int("offset", offset, minimum=0),
            check_int("limit", limit, maximum=MAX_PAGE))


def _check_text(name: str, text: str, limit: int) -> str:
    if not isinstance(text, str) or not text.strip():
        raise InvalidInputError(f"{name} is empty; type some text.")
    if len(text) > limit:
        raise InvalidInputError(f"{name} has {len(text)} characters; the explorer takes at "
                                f"most {limit}.")
    return text.strip()


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


class ExplorerData:
    """The explorer's read-only queries on one index (see the module docstring).

    Thread-safe: the web app calls it from a pool of threads. It keeps no state but caches
    of what it read (the retrievers of each method, the entity names folded for search).
    """

    def __init__(self, index: GraphRAGIndex, filters: MetadataFilters | None = None) -> None:
        self.index = index
        self.filters = filters
        self.where = to_milvus_expression(filters) if filters is not None else ""
        """The filter as a Milvus expression (``""``: the whole index)."""
        self._lock = threading.Lock()
        self._retrievers: dict[tuple[str, int], GraphRAGRetriever] = {}
        self._folded: list[str] | None = None
        self._visible: Visible | None = None
        if index.graph_mode == "milvus":
            logger.warning(
                "the explorer reads the whole graph into this process for its counts, degree "
                "distribution and neighbourhoods, although the index serves it from Milvus "
                "(graph='milvus'); questions are answered from the served graph")

    # ------------------------------------------------------------------ the index

    @property
    def visible(self) -> Visible:
        """What this explorer shows of the graph (all of it without a filter; with one, what
        the matching passages support: read once)."""
        with self._lock:
            if self._visible is None:
                graph = self.index.graph
                self._visible = Visible.everything(graph) if not self.where else Visible.of(
                    graph, self.index.store.passage_ids_where(self.where))
            return self._visible

    def _communities_built(self) -> bool:
        if self.where:  # communities span every tenant: never shown under a filter
            return False
        try:
            self.index.communities  # noqa: B018 (reads them once; cached by the index)
        except CommunitiesNotBuiltError:
            return False
        return True

    def summary(self) -> dict[str, Any]:
        """Counts, the degree distribution, the biggest hubs and the methods available (of
        what the filter's passages support, with a filter)."""
        graph = self.index.graph
        store = self.index.store
        visible = self.visible
        degrees = visible.degrees
        top = np.argsort(-degrees, kind="stable")[:10]
        top = top[degrees[top] > 0] if visible.filtered else top
        names = self._names(graph.entity_ids.ids(top))
        built = self._communities_built()
        communities = self.index.communities if built else None
        passages = (len(visible.passages) if visible.passages is not None
                    else store.count(store.passage_collection))
        return {
            "uri": store.uri, "collection_prefix": store.prefix, "filter": self.where,
            "counts": {"passages": passages,
                       "entities": int(np.count_nonzero(visible.entities)),
                       "relations": int(np.count_nonzero(visible.relations)),
                       "communities": len(communities) if communities is not None else None,
                       "community_levels": (communities.num_levels
                                            if communities is not None else None)},
            "degrees": degree_histogram(degrees[visible.entities]),
            "hubs": [{"id": eid, "name": names[eid], "degree": int(degrees[row])}
                     for eid, row in zip(graph.entity_ids.ids(top), top.tolist(), strict=True)],
            "methods": [m for m in METHODS if m != "local" or built],
            "limits": {"page": MAX_PAGE, "question_chars": MAX_QUESTION_CHARS,
                       "top_k": MAX_TOP_K},
        }

    def _names(self, entity_ids: Sequence[str]) -> dict[str, str]:
        table = self.index.entity_table
        rows = table.ids.rows_of(list(entity_ids)).tolist() if entity_ids else []
        return {eid: table.names[row] if row >= 0 else eid
                for eid, row in zip(entity_ids, rows, strict=True)}

    # ------------------------------------------------------------------ entities

    def search_entities(self, text: str, limit: int = 20) -> list[dict[str, Any]]:
        """Entities whose name holds ``text`` (case aside): exact names first, then names
        that start with it, then the others; the most connected first within each."""
        needle = _check_text("the entity search", text, MAX_SEARCH_CHARS).casefold()
        check_int("limit", limit, maximum=MAX_PAGE)
        table = self.index.entity_table
        with self._lock:
            if self._folded is None:
                self._folded = [table.names[row].casefold() for row in range(len(table))]
            folded = self._folded
        hits = [row for row, name in enumerate(folded) if needle in name]
        graph = self.index.graph
        visible = self.visible
        ids = table.ids.ids(np.asarray(hits, np.int64)) if hits else []
        graph_rows = graph.entity_ids.rows_of(ids) if ids else np.zeros(0, np.int64)
        if visible.filtered:  # only the entities the filter's passages name
            shown = [i for i, row in enumerate(graph_rows.tolist())
                     if row >= 0 and visible.entities[row]]
            hits, ids = [hits[i] for i in shown], [ids[i] for i in shown]
            graph_rows = graph_rows[shown]
        degrees = np.where(graph_rows >= 0, visible.degrees[np.maximum(graph_rows, 0)], 0)
        ranked = sorted(range(len(hits)), key=lambda i: (
            folded[hits[i]] != needle, not folded[hits[i]].startswith(needle),
            -int(degrees[i]), folded[hits[i]]))[:limit]
        return [{"id": ids[i], "name": table.names[hits[i]], "degree": int(degrees[i])}
                for i in ranked]

    def neighbourhood(self, entity_id: str, offset: int = 0, limit: int = DEFAULT_PAGE
                      ) -> dict[str, Any]:
        """One page of an entity's relations, those to the most connected neighbours
        first: a hub's relations come ``limit`` at a time (``total`` says how many)."""
        offset, limit = _page(offset, limit)
        graph = self.index.graph
        visible = self.visible
        [row] = graph.entity_ids.rows_of([entity_id]).tolist()
        if row < 0 or not visible.entities[row]:
            raise NotFoundError(f"no entity {shorten(repr(entity_id), MAX_SHOWN_ID)} in "
                                "this index's graph")
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
        page_ends = graph.endpoints[page].tolist()
        entity_ids = [graph.entity_ids[int(e)] for pair in page_ends for e in pair]
        names = self._names([entity_id, *entity_ids])
        items = []
        for rid, (subject, obj), linked in zip(ids, page_ends, graph.passages_of(page),
                                               strict=True):
            passages = visible.passage_list(linked)
            s, o = graph.entity_ids[int(subject)], graph.entity_ids[int(obj)]
            text = texts.get(rid, "")
            items.append({"id": rid, "text": text,
                          "label": predicate(text, names[s], names[o]),
                          "subject": {"id": s, "name": names[s]},
                          "object": {"id": o, "name": names[o]},
                          "passages": list(passages[:PASSAGES_PER_RELATION]),
                          "more_passages": max(0, len(passages) - PASSAGES_PER_RELATION)})
        return {"entity": {"id": entity_id, "name": names[entity_id],
                           "degree": int(relations.size)},
                "offset": offset, "limit": limit, "total": int(relations.size),
                "relations": items}

    # ------------------------------------------------------------------ passages

    @staticmethod
    def _passage(node: Any) -> dict[str, Any]:
        triplets = [list(t) for t in node.metadata.get(TRIPLETS_KEY) or ()
                    if isinstance(t, (list, tuple)) and len(t) == 3]
        return {"id": node.node_id, "text": node.get_content(), "document": node.ref_doc_id,
                "triplets": [[str(part) for part in t] for t in triplets]}

    def passages(self, offset: int = 0, limit: int = DEFAULT_PAGE) -> dict[str, Any]:
        """One page of the passages (in id order; those of the filter, with one), each with
        its triplets."""
        offset, limit = _page(offset, limit)
        visible = self.visible
        if visible.passages is not None:
            ordered = sorted(visible.passages)
            total, ids = len(ordered), ordered[offset:offset + limit]
        else:
            table = self.index.passage_table(None)
            total = 0 if table is None else len(table)
            ids = [] if table is None or offset >= total else table.ids.ids(
                np.arange(offset, min(offset + limit, total)))
        nodes = self.index.store.get_passages(ids, self.where) if ids else []
        return {"offset": offset, "limit": limit, "total": total,
                "passages": [self._passage(node) for node in nodes]}

    def passage(self, passage_id: str) -> dict[str, Any]:
        """One passage with its triplets (not found unless it matches the filter)."""
        nodes = self.index.store.get_passages([passage_id], self.where)
        if not nodes:
            raise NotFoundError(f"no passage {shorten(repr(passage_id), MAX_SHOWN_ID)} in "
                                "this index")
        return self._passage(nodes[0])

    # ------------------------------------------------------------------ communities

    def communities(self, level: int | None = None, offset: int = 0,
                    limit: int = DEFAULT_PAGE) -> dict[str, Any]:
        """The community reports covering the graph at ``level`` (``None``: the most
        specific), the best rated first; ``built`` is false when the index has none."""
        offset, limit = _page(offset, limit)
        if self.where:
            return {"built": False, "message": FILTERED_COMMUNITIES}
        try:
            communities = self.index.communities
        except CommunitiesNotBuiltError as exc:
            return {"built": False, "message": str(exc)}
        level = communities.check_level(level)
        reports = sorted(communities.at_level(level), key=lambda r: (-r.rating, r.id))
        page = reports[offset:offset + limit]
        names = self._names([e for r in page for e in r.community.entity_ids[:30]])
        return {"built": True, "levels": communities.num_levels, "level": level,
                "offset": offset, "limit": limit, "total": len(reports),
                "reports": [{"id": r.id, "level": r.level, "title": r.title,
                             "rating": r.rating, "kind": r.kind, "summary": r.summary,
                             "findings": [[f.summary, f.explanation] for f in r.findings],
                             "size": len(r.community.entity_ids),
                             "entities": [{"id": e, "name": names[e]}
                                          for e in r.community.entity_ids[:30]]}
                            for r in page]}

    # ------------------------------------------------------------------ questions

    def retriever(self, method: str, top_k: int = DEFAULT_TOP_K) -> GraphRAGRetriever:
        """The retriever of ``method`` (one of :data:`METHODS`) returning ``top_k``
        passages, built once and reused."""
        self.check_method(method)
        check_int("top_k", top_k, maximum=MAX_TOP_K)
        with self._lock:
            found = self._retrievers.get((method, top_k))
            if found is None:
                found = (self.index.as_local_retriever(similarity_top_k=top_k)
                         if method == "local" else
                         self.index.as_retriever(method=method, similarity_top_k=top_k,
                                                 filters=self.filters))
                self._retrievers[(method, top_k)] = found
        return found

    def check_method(self, method: str) -> str:
        """``method`` when the index can run it: :class:`InvalidInputError` for an unknown
        one, and for ``"local"`` on an index without communities (it says how to build
        them)."""
        if method not in METHODS:
            raise InvalidInputError(f"unknown method {shorten(repr(method), MAX_SHOWN_ID)}; "
                                    f"expected one of {METHODS}")
        if method == "local" and self.where:
            raise InvalidInputError(f"the method 'local' is not available under a filter: "
                                    f"{FILTERED_COMMUNITIES}")
        if method == "local":
            try:
                self.index.communities  # noqa: B018 (reads them once; cached by the index)
            except CommunitiesNotBuiltError as exc:
                raise InvalidInputError(f"the method 'local' searches communities: {exc}"
                                        ) from exc
        return method

    def check_question(self, question: str, method: str = "bridge",
                       top_k: int = DEFAULT_TOP_K) -> str:
        """The arguments of :meth:`ask` checked, nothing run: the stripped question."""
        self.check_method(method)
        check_int("top_k", top_k, maximum=MAX_TOP_K)
        return _check_text("the question", question, MAX_QUESTION_CHARS)

    def ask(self, question: str, method: str = "bridge", top_k: int = DEFAULT_TOP_K
            ) -> dict[str, Any]:
        """The explanation of ``method`` on ``question`` (with naive RAG's list), as
        :meth:`~llama_index_graphrag_milvus.explain.explanation.Explanation.to_dict` gives it.

        Raises:
            InvalidInputError: see :meth:`check_question` (``"local"`` without communities
                included).
        """
        question = self.check_question(question, method, top_k)
        return self.retriever(method, top_k).explain(question).to_dict()
