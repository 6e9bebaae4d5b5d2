"""The indexes Milvus reports for a collection, by field (what the index tests compare):
the package's own reader."""

from llama_index_graphrag_milvus.milvus.schema import field_indexes

__all__ = ["field_indexes"]
