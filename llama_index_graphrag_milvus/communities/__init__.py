"""Microsoft GraphRAG's communities on the same index: build, reports, local and global search.

- :mod:`.build`: hierarchical Leiden (:mod:`~llama_index_graphrag_milvus.graph.leiden`) on
  the in-memory graph, a report per community, the ``{prefix}_communities`` collection and
  :class:`CommunitySet`, what the searches read;
- :mod:`.descriptions`: entity and relation descriptions merged over the passages;
- :mod:`.report_writer`: report contexts, LLM and extractive reports (:class:`CommunityReporter`);
- :mod:`.local_search`: :class:`LocalSearchRetriever`;
- :mod:`.report_retriever`: :class:`CommunityReportRetriever`, the reports as nodes;
- :mod:`.global_search`: :class:`GlobalSearchQueryEngine`, map-reduce over the reports;
  its pure steps (batches, points, analyst blocks) are in :mod:`.map_reduce`.
"""

from llama_index_graphrag_milvus.communities.around import (
    CommunityInfo,
    LocalCommunities,
    ServedCommunities,
)
from llama_index_graphrag_milvus.communities.build import CommunityBuildStats, CommunitySet
from llama_index_graphrag_milvus.communities.global_search import GlobalSearchQueryEngine
from llama_index_graphrag_milvus.communities.local_search import (
    LocalSearchConfig,
    LocalSearchRetrieval,
    LocalSearchRetriever,
)
from llama_index_graphrag_milvus.communities.map_reduce import GlobalSearchStats
from llama_index_graphrag_milvus.communities.report_retriever import CommunityReportRetriever
from llama_index_graphrag_milvus.communities.report_writer import CommunityReporter

__all__ = [
    "CommunityBuildStats",
    "CommunityInfo",
    "CommunityReportRetriever",
    "CommunityReporter",
    "CommunitySet",
    "GlobalSearchQueryEngine",
    "GlobalSearchStats",
    "LocalCommunities",
    "LocalSearchConfig",
    "LocalSearchRetrieval",
    "LocalSearchRetriever",
    "ServedCommunities",
]
