"""The Milvus side of an index: the only folder that imports pymilvus.

- :mod:`.store`: :class:`MilvusGraphStore`, the collections of one graph and their reads,
  searches and writes;
- :mod:`.filters`: LlamaIndex ``MetadataFilters`` as Milvus expressions, and the quoting of
  every value that goes into one.
"""

from llama_index_graphrag_milvus.milvus.filters import to_milvus_expression
from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore

__all__ = ["MilvusGraphStore", "to_milvus_expression"]
