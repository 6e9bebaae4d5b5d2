"""A benchmark's own questions on a graph served by Milvus: what the synthetic questions of
:mod:`.served` understate (a question that names its entities, relation hits that offer too
few bridges, the named entities' relations read).

The dataset's passages and triplets are written to the server by the package's ingestion
(``GraphRAGIndex(graph="milvus")``, collections at ``Bounded`` consistency, so that naive
RAG's searches do not wait for the time tick either), then every question is asked of each
method in turn, side by side, the question's vector given (its embedding excluded) and the
bridge method's second queries' embedding timed apart (its ``graphrag_timings``). Per
method: p50 / p95 and their ratios to naive RAG, the Milvus requests per query (and how
many questions sent each count), the worker's CPU per query (the second queries'
embedding included: a local embedder runs on the cores the worker shares) and, on the
embedded server, the server's (see :class:`~.served.ServerCpu`). Run::

    python -m benchmarks.served_questions ../shared/benchmarks/musique_train100 \\
        --embedded-server /tmp/milvus-questions --out bench_out/served_questions
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import NodeWithScore, QueryBundle

from benchmarks.multihop.build import default_embed_model, ingest, load_object
from benchmarks.multihop.data import Dataset, load_dataset
from benchmarks.multihop.methods import node_timings
from benchmarks.multihop.metrics import SECOND_QUERIES
from benchmarks.scale import Percentiles, milvus_target
from benchmarks.served import (
    METHODS,
    ServerCpu,
    counting_calls,
    cpu_per_query,
    embedded_pid,
    read_query,
)
from llama_index_graphrag_milvus import GraphRAGIndex, __version__

PREFIX = "questions"
"""The collections' prefix on the server."""


def open_index(uri: str, dataset: Dataset, embed_model: BaseEmbedding, reuse: bool
               ) -> tuple[GraphRAGIndex, float]:
    """The dataset's served index (written unless ``reuse`` finds every passage) and the
    seconds its ingestion took (0 when reused)."""
    index = GraphRAGIndex(uri=uri, collection_prefix=PREFIX, embed_model=embed_model,
                          graph="milvus", consistency_level="Bounded")
    store = index.store
    if store.dim is not None:
        stored = store.count(store.passage_collection)
        if reuse and stored == len(dataset.passages):
            return index, 0.0
        index.close()
        raise SystemExit(
            f"{uri} already holds collections with the prefix {PREFIX!r} ({stored} passages; "
            f"{dataset.name} has {len(dataset.passages)}): "
            + ("they hold another dataset, " if reuse else "pass --reuse to query them, or ")
            + "use a fresh --embedded-server folder")
    if dataset.triplets is None:
        raise SystemExit(f"{dataset.path} has no triplets.jsonl: this benchmark serves the "
                         "dataset's own graph")
    start = time.perf_counter()
    ingest(index, dataset, None, False)
    return index, time.perf_counter() - start


def measure(index: GraphRAGIndex, dataset: Dataset, methods: list[str],
            server_pid: int | None) -> dict[str, Any]:
    """Every question asked of each method in turn (see the module docstring)."""
    retrievers = {name: (index.as_naive_retriever(similarity_top_k=5) if METHODS[name] is None
                         else index.as_retriever(similarity_top_k=5, **METHODS[name] or {}))
                  for name in methods}
    model = index.embed_model
    bundles = [QueryBundle(q.question, embedding=model.get_query_embedding(q.question))
               for q in dataset.questions]
    for retriever in retrievers.values():  # the first query of each opens what it reads
        retriever.retrieve(bundles[0])
    counter = counting_calls(index)
    server = ServerCpu(server_pid)
    background, per_query = server.for_queries()
    times: dict[str, list[float]] = {name: [] for name in methods}
    cpu: dict[str, list[float]] = {name: [] for name in methods}
    server_cpu: dict[str, list[float]] = {name: [] for name in methods}
    requests: dict[str, list[int]] = {name: [] for name in methods}
    embedding: dict[str, list[float]] = {name: [] for name in methods}
    for bundle in bundles:
        for name, retriever in retrievers.items():
            reading = read_query(partial(retriever.retrieve, bundle), counter, per_query,
                                 background)
            found: list[NodeWithScore] = reading.answer
            cpu[name].append(reading.cpu_s)
            if reading.server_s is not None:
                server_cpu[name].append(reading.server_s)
            embedding[name].append((node_timings(found) or {}).get(SECOND_QUERIES, 0.0))
            times[name].append(reading.seconds - embedding[name][-1])
            requests[name].append(reading.requests)
    naive = Percentiles.of(times["naive"])
    totals = {name: cpu_per_query(cpu[name], server_cpu[name] or None) for name in methods}
    rows: dict[str, Any] = {}
    for name in methods:
        measured = Percentiles.of(times[name])
        rows[name] = {**measured.__dict__,
                      "ratio_p50": round(measured.p50_ms / naive.p50_ms, 2),
                      "ratio_p95": round(measured.p95_ms / naive.p95_ms, 2),
                      "requests_per_query": round(float(np.mean(requests[name])), 2),
                      "requests": dict(sorted(Counter(requests[name]).items())),
                      # timed apart from the latency, but in the worker's CPU
                      "second_query_embedding_mean_ms": round(
                          1000 * float(np.mean(embedding[name])), 3),
                      **totals[name].__dict__,
                      "throughput_bound": totals[name].bound(totals["naive"])}
    return {"questions": len(bundles), "server_idle_cores": round(background, 3)
            if server.tasks else None, "methods": rows}


def run(dataset_path: Path, uri: str | None, embedded_server: str | None, methods: list[str],
        out: Path, embed_model: BaseEmbedding | None = None, reuse: bool = False
        ) -> dict[str, Any]:
    dataset = load_dataset(dataset_path)
    model = embed_model or default_embed_model()
    with tempfile.TemporaryDirectory() as tmp, \
            milvus_target(uri, embedded_server, Path(tmp), keep=reuse) as (target, kind):
        index, ingest_s = open_index(target, dataset, model, reuse)
        try:
            measured = measure(index, dataset, methods,
                               embedded_pid() if embedded_server else None)
        finally:
            index.close()
    report = {"config": {"dataset": dataset.name, "milvus": kind, "methods": methods,
                         "embed_model": type(model).__name__, "package": __version__},
              "ingest_s": round(ingest_s, 1), **measured}
    out.mkdir(parents=True, exist_ok=True)
    (out / "served_questions.json").write_text(json.dumps(report, indent=2))
    return report


def markdown(report: dict[str, Any]) -> str:
    lines = ["| method | p50 ms (ratio) | p95 ratio | requests per query (questions per "
             "count) | second queries' embedding ms | worker CPU ms | server CPU p50 ms | "
             "CPU bound on QPS |",
             "|---|---|---|---|---|---|---|---|"]
    for name, m in report["methods"].items():
        spread = ", ".join(f"{count}: {n}" for count, n in m["requests"].items())
        lines.append(f"| {name} | {m['p50_ms']} ({m['ratio_p50']}x) | {m['ratio_p95']}x | "
                     f"{m['requests_per_query']} ({spread}) | "
                     f"{m['second_query_embedding_mean_ms']} | {m['worker_cpu_mean_ms']} | "
                     f"{m['server_cpu_p50_ms'] or '-'} | "
                     + (f"{m['throughput_bound']}x |" if m["throughput_bound"] else "- |"))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="A benchmark's own questions on a graph "
                                                 "served by Milvus.")
    parser.add_argument("dataset", type=Path, help="a folder of ../shared/benchmarks")
    parser.add_argument("--uri", help="a Milvus server URL (default: a Lite path)")
    parser.add_argument("--embedded-server", metavar="DIR",
                        help="start the embedded Milvus server with its data in DIR (wiped "
                             "unless --reuse)")
    parser.add_argument("--reuse", action="store_true",
                        help="query the collections a previous run wrote")
    parser.add_argument("--methods", nargs="+", default=["naive", "bridge (default)"],
                        choices=list(METHODS))
    parser.add_argument("--embed-model", metavar="MODULE:CALLABLE", default=None,
                        help="the embedding model (default: all-MiniLM-L6-v2 offline)")
    parser.add_argument("--out", type=Path, default=Path("bench_out/served_questions"))
    args = parser.parse_args(argv)
    methods = ["naive", *(m for m in args.methods if m != "naive")]
    model = load_object(args.embed_model) if args.embed_model else None
    report = run(args.dataset, args.uri, args.embedded_server, methods, args.out, model,
                 args.reuse)
    print(markdown(report))
    print(f"\nJSON: {args.out / 'served_questions.json'}")


if __name__ == "__main__":
    main()
