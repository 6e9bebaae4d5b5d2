"""Graph algorithms over the in-memory graph: pure numpy/scipy, no Milvus, no LlamaIndex.

- :mod:`.entity_relation`: the entity-relation-passage graph and its bounded k-hop expansion
  (:mod:`.hubs`: the clusters of hub entities' relations it probes);
- :mod:`.tables` and :mod:`.seeds`: packed texts, exact nearest rows, the entity table
  (the seed searches in memory);
- :mod:`.pagerank`: personalized PageRank on a local entity-passage neighbourhood;
- :mod:`.communities`: hierarchical Leiden communities of the entity graph (Microsoft
  GraphRAG; needs graspologic-native, the ``communities`` extra, imported only when called).
"""

from llama_index_graphrag_milvus.graph.entity_relation import (
    DEFAULT_HUB_DEGREE,
    EntityRelationGraph,
    ExpansionConfig,
    IdTable,
)
from llama_index_graphrag_milvus.graph.hubs import HubIndex
from llama_index_graphrag_milvus.graph.leiden import (
    Cluster,
    CommunityHierarchy,
    LeidenConfig,
    hierarchical_communities,
    modularity,
    relation_weights,
)
from llama_index_graphrag_milvus.graph.pagerank import (
    LocalGraph,
    PageRankConfig,
    PageRankResult,
    local_graph,
    personalized_pagerank,
)
from llama_index_graphrag_milvus.graph.seeds import EntityTable
from llama_index_graphrag_milvus.graph.tables import TextTable, nearest_rows

__all__ = [
    "DEFAULT_HUB_DEGREE",
    "Cluster",
    "CommunityHierarchy",
    "EntityRelationGraph",
    "EntityTable",
    "ExpansionConfig",
    "HubIndex",
    "IdTable",
    "LeidenConfig",
    "LocalGraph",
    "PageRankConfig",
    "PageRankResult",
    "TextTable",
    "hierarchical_communities",
    "local_graph",
    "modularity",
    "nearest_rows",
    "personalized_pagerank",
    "relation_weights",
]
