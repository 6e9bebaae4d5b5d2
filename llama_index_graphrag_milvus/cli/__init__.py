"""The package's commands and what they share.

- ``graphrag-milvus FOLDER`` (:mod:`.main`, also ``python -m llama_index_graphrag_milvus.cli``):
  index a folder of files, resumable, then ask questions beside hybrid search or open the
  explorer; :mod:`.folder` reads and stores the folder, :mod:`.compare` prints the lists,
  :mod:`.models` loads the offline defaults;
- :mod:`.common`: ``MODULE:CALLABLE`` arguments, Milvus Lite paths checked before they are
  opened, one-line errors (also for ``python -m llama_index_graphrag_milvus.explore``).

Importing this package imports no model, spaCy nor web framework.

>>> from llama_index_graphrag_milvus.cli.main import main
"""
