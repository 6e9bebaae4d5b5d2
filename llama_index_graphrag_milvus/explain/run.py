"""``explain`` and ``aexplain``: one retrieval with its :class:`~.trace.Trace`, then naive
RAG's list and the graph's names, written once as a plan that both drivers run.

Only the query's embedding differs between the two (a blocking call or an await); the rest
is the same plan, so the sync and async explanations are the same record.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from llama_index.core.schema import QueryBundle

from llama_index_graphrag_milvus.explain.build import build_explanation
from llama_index_graphrag_milvus.explain.records import Explanation
from llama_index_graphrag_milvus.explain.trace import Trace
from llama_index_graphrag_milvus.explain.view import Lookup
from llama_index_graphrag_milvus.retrieval.drivers import AsyncDriver, SyncDriver
from llama_index_graphrag_milvus.retrieval.passages import search_passages
from llama_index_graphrag_milvus.retrieval.requests import (
    GetEntityNames,
    GetRelations,
    LoadEntities,
    LoadGraph,
    Plan,
    Together,
    first,
)
from llama_index_graphrag_milvus.retrieval.steps import check_query, given_vector, query_input

if TYPE_CHECKING:
    from llama_index_graphrag_milvus.retrieval.retriever import GraphRAGRetriever

MAX_LOOKUP_ROUNDS = 3
"""Reads of a served graph's ends and names per explanation: the drawn relations' ends,
then the names of their entities (a third round only catches stragglers)."""


def _checked(retriever: GraphRAGRetriever, query: str | QueryBundle
             ) -> tuple[QueryBundle, str]:
    given = query_input(query)
    bundle = given if isinstance(given, QueryBundle) else QueryBundle(given)
    text = check_query(bundle)
    retriever._check_not_empty()
    return bundle, text


def explain_plan(retriever: GraphRAGRetriever, bundle: QueryBundle, text: str,
                 vector: list[float], embedding_s: float, graph_mode: str
                 ) -> Plan[Explanation]:
    """The retrieval's own plan with a trace, then naive RAG's passages (the same number,
    the same filters and passage search) and the names the drawing needs."""
    trace = Trace()
    query = retriever._context(text, vector, bundle, graph_mode, trace)
    started = time.perf_counter()
    nodes = yield from retriever.method.plan(query, retriever._seeds)
    retrieved = time.perf_counter()
    naive = first((yield from search_passages(query, (query.vector,), query.similarity_top_k)))
    searched = time.perf_counter()
    timings = {"query_embedding": embedding_s, "retrieval": retrieved - started,
               "naive": searched - retrieved}
    if query.graph_served:  # ends and names by id, as the drawing asks for them
        lookup = Lookup()
    else:
        lookup = Lookup((yield from LoadGraph()), (yield from LoadEntities()))
    explanation = build_explanation(trace, text, retriever.method.name, retriever.describe(),
                                    nodes, naive, lookup, timings)
    for _ in range(MAX_LOOKUP_ROUNDS):  # relations' ends, then their entities' names
        relations, entities = lookup.unknown()
        if not relations and not entities:
            break
        found, names = yield from Together((GetRelations(relations, tuple(query.vector)),
                                            GetEntityNames(entities)))
        lookup.learn({r.id: (r.subject_id, r.object_id) for r in found if r.subject_id},
                     names)
        explanation = build_explanation(trace, text, retriever.method.name,
                                        retriever.describe(), nodes, naive, lookup, timings)
    timings["explanation"] = time.perf_counter() - searched
    return explanation


def explain(retriever: GraphRAGRetriever, query: str | QueryBundle) -> Explanation:
    """See :meth:`GraphRAGRetriever.explain`."""
    bundle, text = _checked(retriever, query)
    started = time.perf_counter()
    vector = given_vector(bundle) or retriever._index.embed_model.get_query_embedding(text)
    plan = explain_plan(retriever, bundle, text, vector, time.perf_counter() - started,
                        retriever._index.graph_mode)
    return SyncDriver(retriever._driver_context()).run(plan)


async def aexplain(retriever: GraphRAGRetriever, query: str | QueryBundle) -> Explanation:
    """See :meth:`GraphRAGRetriever.aexplain`."""
    bundle, text = _checked(retriever, query)
    started = time.perf_counter()
    vector = (given_vector(bundle)
              or await retriever._index.embed_model.aget_query_embedding(text))
    embedding_s = time.perf_counter() - started
    plan = explain_plan(retriever, bundle, text, vector, embedding_s,
                        await retriever._index.aget_graph_mode())
    return await AsyncDriver(retriever._driver_context()).run(plan)
