"""Graph algorithms over the in-memory graph: pure numpy/scipy, no Milvus, no LlamaIndex.

- :mod:`.entity_relation`: the entity-relation-passage graph and its bounded k-hop expansion
  (:mod:`.hubs`: the clusters of hub entities' relations it probes);
- :mod:`.tables`: ids, packed texts, exact nearest rows, the entity and passage tables
  (the seed searches in memory); :mod:`.word_table`: the passages' BM25 term weights (BM25
  in memory);
- :mod:`.personalized_pagerank`: personalized PageRank on one query's entity-passage neighbourhood;
- :mod:`.steiner_tree`: the prize-collecting Steiner tree of a neighbourhood (G-Retriever; the
  solver is the ``pcst`` extra, imported only when called);
- :mod:`.leiden`: hierarchical Leiden communities of the entity graph (Microsoft GraphRAG;
  needs graspologic-native, the ``communities`` extra, imported only when called).
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
from llama_index_graphrag_milvus.graph.personalized_pagerank import (
    Neighbourhood,
    PageRankConfig,
    PageRankResult,
    neighbourhood_graph,
    personalized_pagerank,
)
from llama_index_graphrag_milvus.graph.tables import (
    EntityTable,
    PassageTable,
    TextTable,
    nearest_rows,
)
from llama_index_graphrag_milvus.graph.word_table import WordTable

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
    "Neighbourhood",
    "PageRankConfig",
    "PageRankResult",
    "PassageTable",
    "TextTable",
    "WordTable",
    "hierarchical_communities",
    "modularity",
    "nearest_rows",
    "neighbourhood_graph",
    "personalized_pagerank",
    "relation_weights",
]
