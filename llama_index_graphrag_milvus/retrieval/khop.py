"""k-hop expansion (the "Graph RAG with Milvus" method): seeds, bounded expansion, pruning,
and the pool's passages, ranked by their own similarity or by their best relation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from llama_index.core.schema import NodeWithScore

from llama_index_graphrag_milvus.graph import ExpansionConfig
from llama_index_graphrag_milvus.milvus.schema import MAX_PASSAGES_PER_RELATION
from llama_index_graphrag_milvus.records import CandidateRelation
from llama_index_graphrag_milvus.retrieval.method import QueryContext, RetrievalMethod, SeedConfig
from llama_index_graphrag_milvus.retrieval.neighbourhood import (
    expand_pool,
    expansion_of,
    expansion_settings,
)
from llama_index_graphrag_milvus.retrieval.passages import (
    by_own_similarity,
    read_relation_texts,
    search_passages,
)
from llama_index_graphrag_milvus.retrieval.requests import GetPassages, Plan, first
from llama_index_graphrag_milvus.retrieval.seeds import Seeds, find_seeds
from llama_index_graphrag_milvus.retrieval.settings import Choice
from llama_index_graphrag_milvus.retrieval.steps import (
    ScoredPassages,
    attached_relations,
    build_results,
    select_passages,
)


class PoolOrder(Choice):
    """How :class:`KHopRetrieval` ranks the passages of its pool."""

    PASSAGE = "passage"
    """Every passage of the pool by its own similarity to the query."""
    RELATION = "relation"
    """The passages in the order of their best candidate relation."""


def pool_results(query: QueryContext, seeds: Seeds, candidates: Sequence[CandidateRelation],
                 order_by: PoolOrder | str = PoolOrder.PASSAGE) -> Plan[list[NodeWithScore]]:
    """The passages of a candidate pool with the relations that reached them.

    ``order_by="passage"``: every passage of the pool ranked by its own similarity to the
    query (one filtered ranking); ``"relation"``: the first ``similarity_top_k`` passages in
    the order of their best candidate relation.
    """
    hits: ScoredPassages
    if order_by == PoolOrder.PASSAGE:
        pool = select_passages(candidates, len(candidates) * MAX_PASSAGES_PER_RELATION)
        hits = first((yield from search_passages(
            query, (query.vector,), min(query.similarity_top_k, len(pool)), tuple(pool))))
    else:
        pool = select_passages(candidates, query.similarity_top_k)
        nodes = yield from GetPassages(tuple(pool), query.where)
        hits = [(node, None) for node in nodes]
    texts = yield from read_relation_texts(attached_relations(hits, pool), seeds, candidates)
    return build_results(hits, pool, texts)


class KHopRetrieval(RetrievalMethod):
    """The candidate pool of the bounded k-hop expansion (the Milvus tutorial's method), and
    its passages. A query whose pool reaches no passage falls back to the passages' own
    similarity.

    Args:
        hops: expansion steps after the seed relations (0 = seeds only). Default 1.
        expansion: the other bounds of the pool (:class:`~llama_index_graphrag_milvus.
            graph.ExpansionConfig`: ``max_candidate_relations``, the per-hop caps...).
        order_by: :class:`PoolOrder`: ``"passage"`` (default) ranks every passage of the
            pool by its own similarity to the query; ``"relation"`` keeps the first
            ``similarity_top_k`` passages in the order of their best candidate relation.

    Example::

        retriever = index.as_retriever(method=KHopRetrieval(hops=2), llm=llm)
        engine = RetrieverQueryEngine.from_args(
            retriever, node_postprocessors=[GraphRelationRerank(llm=llm)])
    """

    name: ClassVar[str] = "khop"

    def __init__(self, hops: int | None = None, expansion: ExpansionConfig | None = None,
                 order_by: PoolOrder | str = PoolOrder.PASSAGE) -> None:
        self.expansion = expansion_of(hops, expansion)
        self.order_by = PoolOrder.of("order_by", order_by)

    def plan(self, query: QueryContext, seeds_config: SeedConfig) -> Plan[list[NodeWithScore]]:
        seeds, _ = yield from find_seeds(query, seeds_config)
        candidates = yield from expand_pool(query, seeds, self.expansion)
        if query.trace:
            query.trace.on_seeds(seeds, candidates)
        if not candidates:
            return (yield from by_own_similarity(query, "question (the seeds reach nothing)"))
        return (yield from pool_results(query, seeds, candidates, self.order_by))

    def describe(self) -> dict[str, Any]:
        return {"passage_scoring": str(self.order_by), **expansion_settings(self.expansion)}

