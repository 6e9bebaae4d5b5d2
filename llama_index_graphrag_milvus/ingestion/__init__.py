"""Writing passages and their triplets to Milvus, and removing them.

- :mod:`.plan`: validation and grouping of the input (pure);
- :mod:`.write`: the embeddings and the writes of a plan;
- :mod:`.deletion`: a document's delete and the links a re-ingested passage no longer has;
- :mod:`.identity`: what makes two passages the same passage, and the embedding model an
  index is bound to.
"""

from llama_index_graphrag_milvus.ingestion.deletion import DeletionStats
from llama_index_graphrag_milvus.ingestion.write import IngestionStats

__all__ = ["DeletionStats", "IngestionStats"]
