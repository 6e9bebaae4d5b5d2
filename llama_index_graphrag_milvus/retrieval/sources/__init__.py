"""Where the graph lives: the two graph sources that answer the graph requests.

A method's plan asks the graph requests of :mod:`..requests` (:class:`~..requests.
RelationSeeds`, :class:`~..requests.ExpandPool`, :class:`~..requests.RelationsAround`,
...). The driver of a query answers them from one of two tables, chosen once per query from
where the index reads its graph (``GraphRAGIndex(graph=...)``):

- :mod:`.memory` (:data:`MEMORY_SOURCE`): the graph held in the process, with the seed
  searches and passage rankings in memory where the retriever's settings allow;
- :mod:`.served` (:data:`SERVED_SOURCE`): the graph served by Milvus, a bounded number of
  Milvus requests per graph request.

Both answer with the same records, so the methods, the explanations and local search contain
no branch on the mode, and a method of your own runs unchanged in both. A filtered retrieval
answers through :mod:`.scoped`, which narrows either source's answers to what the filter's
passages support.

>>> from llama_index_graphrag_milvus.retrieval.requests import GRAPH_REQUESTS
>>> all(set(GRAPH_REQUESTS) <= set(source_handlers(mode, scoped))
...     for mode in ("memory", "milvus") for scoped in (False, True))
True
"""

from __future__ import annotations

from llama_index_graphrag_milvus.retrieval.drivers import Handlers
from llama_index_graphrag_milvus.retrieval.settings import GraphMode
from llama_index_graphrag_milvus.retrieval.sources.memory import MEMORY_SOURCE
from llama_index_graphrag_milvus.retrieval.sources.scoped import scoped
from llama_index_graphrag_milvus.retrieval.sources.served import SERVED_SOURCE

__all__ = ["MEMORY_SOURCE", "SCOPED_MEMORY_SOURCE", "SCOPED_SERVED_SOURCE", "SERVED_SOURCE",
           "source_handlers"]

SCOPED_MEMORY_SOURCE: Handlers = scoped(MEMORY_SOURCE)
"""The graph in memory, within a filtered retrieval's scope (:mod:`.scoped`)."""
SCOPED_SERVED_SOURCE: Handlers = scoped(SERVED_SOURCE)
"""The graph served by Milvus, within a filtered retrieval's scope (:mod:`.scoped`)."""


def source_handlers(graph: GraphMode | str, scoped: bool = False) -> Handlers:
    """The table of the graph source for ``graph`` (``"memory"`` or ``"milvus"``), within a
    filtered retrieval's scope when ``scoped``."""
    mode = GraphMode.of("graph", graph)
    if mode == GraphMode.AUTO:
        raise ValueError("the graph mode of a query is 'memory' or 'milvus': resolve 'auto' "
                         "first (GraphRAGIndex.graph_mode)")
    if mode == GraphMode.MEMORY:
        return SCOPED_MEMORY_SOURCE if scoped else MEMORY_SOURCE
    return SCOPED_SERVED_SOURCE if scoped else SERVED_SOURCE
