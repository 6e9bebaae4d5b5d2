"""Graph algorithms over the in-memory graph: pure numpy/scipy, no Milvus, no LlamaIndex.

- :mod:`.entity_relation`: the entity-relation-passage graph and its bounded k-hop expansion;
- :mod:`.pagerank`: personalized PageRank on a local entity-passage neighbourhood;
- :mod:`.communities`: hierarchical Leiden communities of the entity graph (Microsoft
  GraphRAG; needs graspologic-native, the ``communities`` extra, imported only when called).
"""

from llama_index_graphrag_milvus.graph.communities import (
    Cluster,
    CommunityHierarchy,
    LeidenConfig,
    hierarchical_communities,
    modularity,
    relation_weights,
)
from llama_index_graphrag_milvus.graph.entity_relation import (
    DEFAULT_HUB_DEGREE,
    EntityRelationGraph,
    ExpansionConfig,
    HubIndex,
    IdTable,
)
from llama_index_graphrag_milvus.graph.pagerank import (
    LocalGraph,
    PageRankConfig,
    PageRankResult,
    local_graph,
    personalized_pagerank,
)

__all__ = [
    "DEFAULT_HUB_DEGREE",
    "Cluster",
    "CommunityHierarchy",
    "EntityRelationGraph",
    "ExpansionConfig",
    "HubIndex",
    "IdTable",
    "LeidenConfig",
    "LocalGraph",
    "PageRankConfig",
    "PageRankResult",
    "hierarchical_communities",
    "local_graph",
    "modularity",
    "personalized_pagerank",
    "relation_weights",
]
