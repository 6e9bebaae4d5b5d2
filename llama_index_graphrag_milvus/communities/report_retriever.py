"""The community reports most similar to a question, as nodes (for routers and fusion)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from llama_index_graphrag_milvus.communities.around import ServedCommunities, check_level
from llama_index_graphrag_milvus.embeddings import aembed_question, embed_question
from llama_index_graphrag_milvus.metadata import COMMUNITY_KEY, hide_from_models
from llama_index_graphrag_milvus.records import CommunityReport
from llama_index_graphrag_milvus.retrieval.steps import (
    CheckedQueryMixin,
    check_query,
    check_vector,
    given_vector,
)
from llama_index_graphrag_milvus.validation import check_int

if TYPE_CHECKING:
    from llama_index_graphrag_milvus.index import GraphRAGIndex


def report_node(report: CommunityReport, score: float | None) -> NodeWithScore:
    """A community report as a node: its markdown text (:meth:`CommunityReport.as_text`),
    its community id as node id, and ``metadata["graphrag_community"]`` (``id``, ``level``,
    ``title``, ``rating``, ``kind``), kept out of LLM and embedding text.

    >>> from llama_index_graphrag_milvus.records import Community
    >>> node = report_node(CommunityReport(Community("c1", 1, "c0", (), ("e1",)),
    ...     "Bernoulli family", "Mathematicians of Basel.", (), 7.0, "Central.", "llm"), 0.8)
    >>> node.node.node_id, node.score, node.node.metadata["graphrag_community"]["level"]
    ('c1', 0.8, 1)
    >>> node.node.get_content(metadata_mode="llm")
    '# Bernoulli family\\n\\nMathematicians of Basel.'
    """
    metadata = {COMMUNITY_KEY: {"id": report.id, "level": report.level, "title": report.title,
                                "rating": report.rating, "kind": report.kind}}
    node = TextNode(text=report.as_text(), id_=report.id, metadata=metadata)
    hide_from_models(node, COMMUNITY_KEY)
    return NodeWithScore(node=node, score=score)


class CommunityReportRetriever(CheckedQueryMixin, BaseRetriever):
    """The ``similarity_top_k`` community reports of ``level`` closest to the question
    (cosine of the report vectors: in memory with the graph in memory, one vector search of
    the community collection on a served index), as ``NodeWithScore`` whose
    ``metadata["graphrag_community"]`` holds the community's id, level, title, rating and
    report kind. Needs :meth:`GraphRAGIndex.build_communities`.

    Example::

        reports = index.as_report_retriever(level=0, similarity_top_k=3)
        for hit in reports.retrieve("Which families of mathematicians appear?"):
            print(hit.score, hit.node.metadata["graphrag_community"]["title"])
    """

    def __init__(self, index: GraphRAGIndex, level: int | None = None,
                 similarity_top_k: int = 5, **kwargs: Any) -> None:
        self._index = index
        self._level = level
        self._top_k = check_int("similarity_top_k", similarity_top_k)
        super().__init__(**kwargs)

    def _served(self) -> bool:
        return self._index.graph_mode == "milvus"

    def _checked(self, vector: list[float], given: bool) -> list[float]:
        """``vector`` checked: finite numbers, of the index's dimension (``given``: it is the
        caller's ``QueryBundle.embedding``, not the model's)."""
        query = check_vector(vector)
        self._index.store.check_dimension(len(query), "the embedding model", given=given)
        return query

    def _search(self, vector: list[float]) -> list[NodeWithScore]:
        """The served index's reports: one vector search of the community collection."""
        depth = check_level(self._index.cache.community_info().levels, self._level)
        found = ServedCommunities(self._index.store).search_reports(vector, depth, self._top_k)
        return [report_node(report, score) for report, score in found]

    async def _asearch(self, vector: list[float]) -> list[NodeWithScore]:
        """Async twin of :meth:`_search`."""
        info = await self._index.cache.aget_community_info()
        found = await ServedCommunities(self._index.store).asearch_reports(
            vector, check_level(info.levels, self._level), self._top_k)
        return [report_node(report, score) for report, score in found]

    def _rank(self, vector: list[float]) -> list[NodeWithScore]:
        communities = self._index.communities
        level = communities.check_level(self._level)
        wanted = {r.id for r in communities.at_level(level)}
        rows = np.asarray([i for i, cid in enumerate(communities.ids) if cid in wanted],
                          np.int64)
        query = np.asarray(vector, np.float32)
        query /= max(float(np.linalg.norm(query)), 1e-12)
        scores = communities.vectors[rows] @ query if rows.size else np.zeros(0)
        best = np.argsort(-scores, kind="stable")[: self._top_k]
        return [report_node(communities.reports[communities.ids[rows[i]]], float(scores[i]))
                for i in best.tolist()]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query, given = check_query(query_bundle), given_vector(query_bundle)
        model = self._index.embed_model
        vector = self._checked(given or embed_question(model, query, query_bundle),
                               given is not None)
        return self._search(vector) if self._served() else self._rank(vector)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query, given = check_query(query_bundle), given_vector(query_bundle)
        model = self._index.embed_model
        vector = self._checked(given or await aembed_question(model, query, query_bundle),
                               given is not None)
        if await self._index.aget_graph_mode() == "milvus":
            return await self._asearch(vector)
        await self._index.aget_communities()  # read without blocking the loop
        return self._rank(vector)
