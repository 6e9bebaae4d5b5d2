"""The passage steps the methods share: passage searches (ranked in memory and read by
primary key, or one Milvus search), the texts of relations, and the results with the
relations that reached each passage (``metadata["graphrag_relations"]``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from llama_index.core.schema import BaseNode, NodeWithScore

from llama_index_graphrag_milvus.records import FOUND_BY_KEY, MILVUS_MAX_TOP_K, CandidateRelation
from llama_index_graphrag_milvus.retrieval.method import QueryContext
from llama_index_graphrag_milvus.retrieval.neighbourhood import own_relation_lists
from llama_index_graphrag_milvus.retrieval.requests import (
    GetPassages,
    GetRelationTexts,
    LoadGraph,
    LoadPassages,
    Plan,
    SearchPassages,
    first,
)
from llama_index_graphrag_milvus.retrieval.steps import Seeds, as_result

OWN_RELATIONS_PER_PASSAGE = 5
"""A passage found by its own similarity carries its best own relations, at most this many."""


def rank_in_memory(query: QueryContext, vectors: Sequence[Sequence[float]], limit: int,
                   ids: Sequence[str] | None = None
                   ) -> Plan[list[list[tuple[str, float]]] | None]:
    """Per vector, the ``limit`` passages (among ``ids`` when given) most similar to it, as
    ``(id, similarity)``, ranked by the index's passage table; ``None`` when the search
    belongs to Milvus: ``query.passage_search`` is ``"milvus"``, a filter applies (filters
    are Milvus expressions), the graph is served by Milvus, or, with ``"auto"``, the passage
    vectors exceed the query's ``memory_search_max_floats``."""
    if query.where or query.passage_search == "milvus" or query.graph_served:
        return None
    table = yield from LoadPassages(
        None if query.passage_search == "memory" else query.memory_search_max_floats)
    # the limit a Milvus search accepts, so that both paths return the same passages
    return None if table is None else table.search(vectors, min(limit, MILVUS_MAX_TOP_K), ids)


def fetch_passages(ids: Sequence[str]) -> Plan[dict[str, BaseNode]]:
    """The passages of ``ids`` by primary key (one Milvus read); a passage deleted by
    another writer since the passage table was read is left out."""
    wanted = tuple(dict.fromkeys(ids))
    return {n.node_id: n for n in (yield from GetPassages(wanted))} if wanted else {}


def search_passages(query: QueryContext, vectors: Sequence[Sequence[float]], limit: int,
                    ids: Sequence[str] | None = None
                    ) -> Plan[list[list[tuple[BaseNode, float]]]]:
    """One batched passage search: per vector, the ``limit`` most similar passages (among
    ``ids`` when given), best first: ranked in memory and read by primary key (a read is
    cheaper than a search), or one Milvus search (see :func:`rank_in_memory`)."""
    ranked = yield from rank_in_memory(query, vectors, limit, ids)
    if ranked is None:
        return (yield from SearchPassages(tuple(list(v) for v in vectors), limit,
                                          None if ids is None else tuple(ids), query.where))
    nodes = yield from fetch_passages([pid for hits in ranked for pid, _ in hits])
    return [[(nodes[pid], score) for pid, score in hits if pid in nodes] for hits in ranked]


def read_relation_texts(query: QueryContext, ids: Sequence[str], seeds: Seeds | None = None
                        ) -> Plan[dict[str, str]]:
    """Texts of relation ``ids``: those of the relation seeds, then the in-memory graph's
    (not when the graph is served), and one Milvus read for the rest (none when the graph
    holds every text)."""
    wanted = list(dict.fromkeys(ids))
    texts = {h.id: h.text for h in (seeds.relations if seeds else ()) if h.text}
    if not query.graph_served:
        graph = yield from LoadGraph()
        texts.update(graph.relation_texts(rid for rid in wanted if rid not in texts))
    missing = tuple(rid for rid in wanted if rid not in texts)
    if missing:
        texts.update((yield from GetRelationTexts(missing)))
    return texts


def by_own_similarity(query: QueryContext, reason: str) -> Plan[list[NodeWithScore]]:
    """Passages ranked by their own similarity to the query (naive vector search, filters
    applied), each with its best own relations: the result when the graph gives nothing."""
    hits = first((yield from search_passages(query, (query.vector,), query.similarity_top_k)))
    return (yield from with_own_relations(query, [
        Result(node, score, metadata={FOUND_BY_KEY: {"query": reason, "similarity": score}})
        for node, score in hits]))


@dataclass(frozen=True)
class Result:
    """A passage a method returns: its score, the relations that reached it (first in its
    relation list) and the metadata it adds."""

    node: BaseNode
    score: float | None
    first_relations: Sequence[CandidateRelation] = ()
    metadata: dict[str, Any] | None = None


def with_own_relations(query: QueryContext, results: Sequence[Result]
                       ) -> Plan[list[NodeWithScore]]:
    """The results, each with ``first_relations`` then its passage's own best relations
    (by similarity to the query, at most :data:`OWN_RELATIONS_PER_PASSAGE`; see
    :func:`~.neighbourhood.own_relation_lists`)."""
    limit = OWN_RELATIONS_PER_PASSAGE + max((len(r.first_relations) for r in results),
                                            default=0)
    owns = yield from own_relation_lists(query, [r.node for r in results], limit)
    nodes = []
    for result, own in zip(results, owns, strict=True):
        taken = {c.id for c in result.first_relations}
        kept = [c for c in own if c.id not in taken][:OWN_RELATIONS_PER_PASSAGE]
        nodes.append(as_result(result.node, result.score, [*result.first_relations, *kept],
                               **(result.metadata or {})))
    return nodes
