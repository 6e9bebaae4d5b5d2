"""``explain`` and ``aexplain``: one retrieval with its :class:`~.trace.Trace`, then naive
RAG's list and the graph's names, written once as a plan that the retriever runs
(:meth:`~llama_index_graphrag_milvus.retrieval.GraphRAGRetriever.run`).

Only the query's embedding differs between the two (a blocking call or an await); the rest
is the same plan, so the sync and async explanations are the same record. The relations'
ends and the entities' names are graph requests like the method's: the graph source answers
them from memory or from Milvus, so the explanation has no branch on where the graph lives.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from llama_index.core.schema import NodeWithScore, QueryBundle

from llama_index_graphrag_milvus.explain.assemble import build_explanation
from llama_index_graphrag_milvus.explain.explanation import Explanation
from llama_index_graphrag_milvus.explain.trace import Trace
from llama_index_graphrag_milvus.explain.view import Lookup
from llama_index_graphrag_milvus.retrieval.method import QueryContext, method_plan
from llama_index_graphrag_milvus.retrieval.passages import search_passages
from llama_index_graphrag_milvus.retrieval.requests import (
    EntityNames,
    GetRelations,
    MilvusRequests,
    Plan,
    Together,
    first,
)

if TYPE_CHECKING:
    from llama_index_graphrag_milvus.retrieval.retriever import GraphRAGRetriever

MAX_LOOKUP_ROUNDS = 3
"""Reads of the drawn relations' ends and entities' names per explanation: the relations'
ends, then the names of their entities (a third round only catches stragglers)."""


def explain_plan(retriever: GraphRAGRetriever, query: QueryContext) -> Plan[Explanation]:
    """The retrieval's own plan with a trace, then naive RAG's passages (the same number,
    the same filters and passage search) and the ends and names the drawing needs."""
    trace = query.trace if query.trace is not None else Trace()
    started = time.perf_counter()
    before = yield from MilvusRequests()
    planned = yield from method_plan(retriever.method, query, retriever.seed_config)
    by_id: dict[str, NodeWithScore] = {}  # what retrieve() returns: LlamaIndex keeps
    for hit in planned:                      # the first node of each id
        by_id.setdefault(hit.node.node_id, hit)
    nodes = list(by_id.values())
    trace.milvus_requests = (yield from MilvusRequests()) - before
    retrieved = time.perf_counter()
    naive = first((yield from search_passages(query, (query.vector,), query.similarity_top_k)))
    searched = time.perf_counter()
    timings = {"query_embedding": trace.query_embedding_s, "retrieval": retrieved - started,
               "naive": searched - retrieved}
    lookup = Lookup()
    explanation = build_explanation(trace, query.text, retriever.method.name,
                                    retriever.describe(), nodes, naive, lookup, timings)
    for _ in range(MAX_LOOKUP_ROUNDS):  # relations' ends, then their entities' names
        relations, entities = lookup.unknown()
        if not relations and not entities:
            break
        found, names = yield from Together((GetRelations(relations, query.vector),
                                            EntityNames(entities)))
        lookup.learn({r.id: (r.subject_id, r.object_id) for r in found if r.subject_id},
                     names)
        explanation = build_explanation(trace, query.text, retriever.method.name,
                                        retriever.describe(), nodes, naive, lookup, timings)
    timings["explanation"] = time.perf_counter() - searched
    return explanation


def explain(retriever: GraphRAGRetriever, query: str | QueryBundle) -> Explanation:
    """See :meth:`GraphRAGRetriever.explain`."""
    return retriever.run(query, lambda context: explain_plan(retriever, context), Trace())


async def aexplain(retriever: GraphRAGRetriever, query: str | QueryBundle) -> Explanation:
    """See :meth:`GraphRAGRetriever.aexplain`."""
    return await retriever.arun(query, lambda context: explain_plan(retriever, context),
                                Trace())
