"""``--sweep``: a grid of LLM-free graph retriever configurations, each with its pool
coverage and the recall of its fusion with naive RAG."""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from llama_index.core.schema import QueryBundle
from tqdm.auto import tqdm

from benchmarks.multihop.data import Question
from benchmarks.multihop.methods import (
    UNLIMITED_PASSAGES,
    GraphConfig,
    ReplayRetriever,
    corpus_ids,
    fusion_retriever,
    graph_retriever,
)
from benchmarks.multihop.metrics import QuestionResult, summarize
from llama_index_graphrag_milvus.index import GraphRAGIndex


@dataclass(frozen=True)
class SweepGrid:
    """The grid of ``--sweep``: every combination is evaluated without an LLM.

    ``graph_kwargs`` is one more dimension: variants of further retriever arguments, each a
    sorted tuple of ``(name, value)`` pairs (``()`` is the retriever's defaults), e.g.
    ``((), (("max_relations_per_passage", 1),))``.
    """

    hops: tuple[int, ...] = (1, 2)
    entity_top_k: tuple[int, ...] = (3, 10, 30)
    relation_top_k: tuple[int, ...] = (3, 10, 30)
    max_candidate_relations: tuple[int, ...] = (50, 100, 200)
    graph_kwargs: tuple[tuple[tuple[str, Any], ...], ...] = ((),)

    def configs(self, extra: tuple[tuple[str, Any], ...] = ()) -> list[GraphConfig]:
        """Every combination, in grid order, each with the ``extra`` retriever arguments
        updated by the variant of ``graph_kwargs``."""
        return [GraphConfig(*values, extra=tuple(sorted({**dict(extra),
                                                         **dict(variant)}.items())))
                for variant in self.graph_kwargs
                for values in itertools.product(self.hops, self.entity_top_k,
                                                self.relation_top_k,
                                                self.max_candidate_relations)]



def run_sweep(index: GraphRAGIndex, questions: Sequence[Question], grid: SweepGrid,
              ks: Sequence[int], show_progress: bool,
              extra: tuple[tuple[str, Any], ...] = ()) -> list[dict[str, Any]]:
    """Every grid configuration without an LLM: Recall@k, pool coverage, latency, and the
    Recall@k of its fusion with naive RAG.

    The query vectors are computed once, so the latencies here exclude the query embedding
    (the timed comparison includes it). A retriever with no passage cap returns the whole
    candidate pool; its first ``k`` passages are exactly what a capped retriever returns.
    The fusion is core's ``QueryFusionRetriever`` over the first ``max(ks)`` graph nodes and
    naive RAG's ``max(ks)`` nodes, replayed (not retrieved again).
    """
    top_k = max(ks)
    vectors = [index.embed_model.get_query_embedding(q.question) for q in questions]
    naive = index.as_naive_retriever(similarity_top_k=top_k)
    graph_replay, naive_replay = ReplayRetriever(), ReplayRetriever()
    for question, vector in zip(questions, vectors, strict=True):
        naive_replay.hits[question.question] = naive.retrieve(
            QueryBundle(question.question, embedding=vector))
    fusion = fusion_retriever(graph_replay, naive_replay, top_k)
    rows = []
    configs = grid.configs(extra)
    progress = tqdm(configs, desc="Sweep", disable=not show_progress)
    for graph_config in progress:
        retriever = graph_retriever(index, UNLIMITED_PASSAGES, graph_config)
        results, fused = [], []
        for question, vector in zip(questions, vectors, strict=True):
            start = time.perf_counter()
            hits = retriever.retrieve(QueryBundle(question.question, embedding=vector))
            elapsed = time.perf_counter() - start
            pool = corpus_ids(hits)
            results.append(QuestionResult(question.id, question.group, question.supporting_ids,
                                          pool[:top_k], elapsed, pool))
            graph_replay.hits[question.question] = hits[:top_k]
            fused.append(QuestionResult(question.id, question.group, question.supporting_ids,
                                        corpus_ids(fusion.retrieve(question.question))[:top_k]))
        rows.append({"config": graph_config.retriever_kwargs(), "label": graph_config.label,
                     "retriever": {**retriever.describe(), "similarity_top_k": top_k},
                     "summary": summarize(results, ks), "fusion": summarize(fused, ks)})
    return rows


def best_sweep_row(rows: Sequence[dict[str, Any]], ks: Sequence[int],
                   part: str = "summary") -> dict[str, Any]:
    """The row with the best Recall@max(k), then Recall@min(k) (of ``part``: ``"summary"``
    for the graph retriever alone, ``"fusion"`` for its fusion with naive RAG), then pool
    coverage; among equals, the cheapest configuration (fewest hops, smallest top-k and
    pool)."""
    high, low = f"recall@{max(ks)}", f"recall@{min(ks)}"

    def key(row: dict[str, Any]) -> tuple[float, ...]:
        config = row["config"]
        scores = [row[part][high]["all"], row[part][low]["all"],
                  row["summary"]["pool_coverage"]["all"]]
        quality = tuple(round(score or 0.0, 9) for score in scores)
        cost = tuple(-float(config[name]) for name in
                     ("hops", "max_candidate_relations", "entity_top_k", "relation_top_k"))
        return quality + cost

    return max(rows, key=key)

