"""``python -m llama_index_graphrag_milvus.cli FOLDER``: the ``graphrag-milvus`` command."""

from llama_index_graphrag_milvus.cli.main import run

run()
