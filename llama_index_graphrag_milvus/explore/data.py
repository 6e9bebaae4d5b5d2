"""What the explorer shows, read from one :class:`GraphRAGIndex`, with no web framework.

Every method reads; none writes, deletes or builds anything. Each answer is bounded: pages of
at most :data:`MAX_PAGE` items, questions of at most :data:`MAX_QUESTION_CHARS` characters,
at most :data:`MAX_TOP_K` passages. Answers are plain dicts, lists, strings and numbers
(JSON); the texts in them are the index's texts as they are, for the page to show as text.

With ``filters`` (one tenant's), it shows only what the matching passages support: their
relations and entities, counts and degrees of those, the passages themselves, and questions
answered by filtered retrievers; communities span tenants and are not shown (see
:mod:`.scope`).

The graph parts are read by a :class:`~.view.GraphView`: from the index's in-memory graph
and entity table (:class:`~.memory.MemoryGraphView`) when the index holds its graph in the
process (``graph="memory"``), and from Milvus by bounded requests
(:class:`~.served.ServedGraphView`: row counts, a sampled degree distribution, pages of an
entity's relations read by primary key) when Milvus serves it (``graph="milvus"``), so that
the explorer of a served index holds nothing that grows with the index. A filtered explorer
reads the graph whole in either mode (what a tenant's passages support is a mask over the
whole graph, :mod:`.scope`). Passages and texts the graph does not hold are read from Milvus
by primary key.

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

from llama_index_graphrag_milvus.cli.common import shorten
from llama_index_graphrag_milvus.communities.around import CommunityInfo
from llama_index_graphrag_milvus.errors import (
    CommunitiesNotBuiltError,
    EmptyIndexError,
    InvalidInputError,
    NotFoundError,
)
from llama_index_graphrag_milvus.explore.memory import MemoryGraphView
from llama_index_graphrag_milvus.explore.served import ServedGraphView
from llama_index_graphrag_milvus.explore.view import MAX_SHOWN_ID, GraphView
from llama_index_graphrag_milvus.explore.view import (  # re-exported: they lived here
    PASSAGES_PER_RELATION as PASSAGES_PER_RELATION,
)
from llama_index_graphrag_milvus.explore.view import degree_histogram as degree_histogram
from llama_index_graphrag_milvus.metadata import TRIPLETS_KEY
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


class ExplorerData:
    """The explorer's read-only queries on one index (see the module docstring).

    Thread-safe: the web app calls it from a pool of threads. It keeps no state but caches
    of what it read (the retrievers of each method; in memory, the visible part of the graph
    and the entity names folded for search).
    """

    def __init__(self, index: GraphRAGIndex, filters: MetadataFilters | None = None) -> None:
        """Raises :class:`~llama_index_graphrag_milvus.errors.EmptyIndexError` when nothing
        was ever written to ``index`` (an index emptied by deletes is shown empty)."""
        if not index.store.open_if_created():
            raise EmptyIndexError(
                f"the index {index.store.prefix!r} at {index.store.uri!r} holds nothing yet "
                "(no collection): ingest passages first (index.insert_triplets(...), "
                "from_documents(...)), or check the uri and collection_prefix; then serve "
                "it.")
        self.index = index
        self.filters = filters
        self.where = index.store.filter_expression(filters)
        """The filter as a Milvus expression (``""``: the whole index)."""
        self._lock = threading.Lock()
        self._retrievers: dict[tuple[str, int], GraphRAGRetriever] = {}
        served = index.graph_mode == "milvus"
        self.graph: GraphView = (ServedGraphView(index) if served and not self.where
                                 else MemoryGraphView(index, self.where))
        """Where the graph parts of the answers come from (see the module docstring)."""
        if served and self.where:
            logger.warning(
                "a filtered explorer reads the whole graph into this process (what the "
                "filter's passages support), although the index serves it from Milvus "
                "(graph='milvus'); questions are answered from the served graph")

    # ------------------------------------------------------------------ the index

    def _community_info(self) -> CommunityInfo | None:
        """The communities' levels and count (what their build recorded: no community is
        read), ``None`` when they are not built or under a filter."""
        if self.where:  # communities span every tenant: never shown under a filter
            return None
        try:
            return self.index.cache.community_info()
        except CommunitiesNotBuiltError:
            return None

    def summary(self) -> dict[str, Any]:
        """Counts, the degree distribution, the biggest hubs and the methods available (of
        what the filter's passages support, with a filter). ``sample`` is ``None`` when
        the distribution and the hubs are of every entity, else ``{"entities": n, "of":
        total}``: they are of a sample of ``n`` entities (a served graph)."""
        store = self.index.store
        counts = self.graph.counts()
        degrees = self.graph.degrees()
        names = self._names([eid for eid, _ in degrees.hubs])
        info = self._community_info()
        built = info is not None
        return {
            "uri": store.uri, "collection_prefix": store.prefix, "filter": self.where,
            "counts": {**counts,
                       "communities": info.count if info is not None else None,
                       "community_levels": info.levels if info is not None else None},
            "degrees": degrees.histogram,
            "hubs": [{"id": eid, "name": names[eid], "degree": degree}
                     for eid, degree in degrees.hubs],
            "sample": degrees.sample,
            "methods": [m for m in METHODS if m != "local" or built],
            "limits": {"page": MAX_PAGE, "question_chars": MAX_QUESTION_CHARS,
                       "top_k": MAX_TOP_K},
        }

    def _names(self, entity_ids: Sequence[str]) -> dict[str, str]:
        return self.graph.names(entity_ids)

    # ------------------------------------------------------------------ entities

    def search_entities(self, text: str, limit: int = 20) -> list[dict[str, Any]]:
        """Entities whose name holds ``text`` (case aside): exact names first, then names
        that start with it, then the others; the most connected first within each. (On a
        served graph, among the names a bounded ``like`` query finds: see
        :meth:`.served.ServedGraphView.search`.)"""
        text = _check_text("the entity search", text, MAX_SEARCH_CHARS)
        check_int("limit", limit, maximum=MAX_PAGE)
        return self.graph.search(text, limit)

    def neighbourhood(self, entity_id: str, offset: int = 0, limit: int = DEFAULT_PAGE
                      ) -> dict[str, Any]:
        """One page of an entity's relations: a hub's relations come ``limit`` at a time
        (``total`` says how many). In memory, those to the most connected neighbours first;
        on a served graph, in relation id order."""
        offset, limit = _page(offset, limit)
        return self.graph.neighbourhood(entity_id, offset, limit)

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
        total, ids = self.graph.passage_page(offset, limit)
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
                self.index.cache.community_info()  # what the build recorded, read once
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
