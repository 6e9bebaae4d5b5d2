"""The explorer: a local, read-only web app on one index.

Counts and the degree distribution; entity search and an entity's neighbourhood (expand on
click, a hub's relations a page at a time); a question run by any method beside naive RAG,
with its explanation (:mod:`llama_index_graphrag_milvus.explain`); the communities by level
with their reports; passages with their triplets.

- :func:`serve` starts it on an index (a notebook, an app): ``serve(index).url``;
- ``python -m llama_index_graphrag_milvus.explore --uri ./graphrag.db [--embed-model
  MODULE:CALLABLE]`` opens an index and serves it (:mod:`.cli`; all-MiniLM-L6-v2 without
  the flag);
- :func:`~.app.create_app` is the ASGI app, to mount in a server of your own.

Needs the ``[explorer]`` extra (Starlette and uvicorn); importing this module does not
import them, :func:`serve` says how to install them when they are missing. Safe by default:
127.0.0.1 only, ``GET`` only, every text of the index shown as text, bounded pages.

>>> from llama_index_graphrag_milvus.explore import serve
"""

from llama_index_graphrag_milvus.explore.data import ExplorerData, NotFoundError
from llama_index_graphrag_milvus.explore.server import ExplorerServer, serve

__all__ = ["ExplorerData", "ExplorerServer", "NotFoundError", "serve"]
