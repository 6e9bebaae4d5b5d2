"""Filtered retrieval latency on Milvus Lite: the same questions with and without a metadata
filter, for the default method, PageRank and naive RAG, side by side in one run.

A synthetic index of ``--passages`` passages spread over ``--tenants`` tenants (metadata
``tenant_id``), each passage one family fact; the embedding is a seeded random vector per
text (free), so what is timed is retrieval. Each configuration is warmed up once (its first
query reads the in-memory copies, and with a filter the filter's passages) and then timed
over the questions; reported: p50 and p95 in milliseconds, and the ratio of each filtered
p50 to the same method's unfiltered p50.

Run::

    python -m benchmarks.filtered --passages 3000 20000 --out bench_out/filtered
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores import FilterOperator, MetadataFilter, MetadataFilters

from benchmarks.scale import HashedRandomEmbedding
from llama_index_graphrag_milvus import GraphRAGIndex

FILTERS: dict[str, MetadataFilters | None] = {
    "none": None,
    "tenant ==": MetadataFilters(filters=[MetadataFilter(key="tenant_id", value="t3")]),
    "tenant !=": MetadataFilters(filters=[MetadataFilter(
        key="tenant_id", value="t3", operator=FilterOperator.NE)]),
    "tenant in 10": MetadataFilters(filters=[MetadataFilter(
        key="tenant_id", value=[f"t{i}" for i in range(10)], operator=FilterOperator.IN)]),
}
METHODS = {"default": {}, "ppr": {"method": "ppr"}}


def build(path: str, passages: int, tenants: int) -> GraphRAGIndex:
    people = [f"Person{i}" for i in range(max(passages // 3, 2))]
    data = [(TextNode(text=f"{people[i % len(people)]} was the son of "
                           f"{people[(i * 7 + 1) % len(people)]}, passage {i}.",
                      metadata={"tenant_id": f"t{i % tenants}"}),
             [(people[i % len(people)], "was the son of", people[(i * 7 + 1) % len(people)]),
              (people[i % len(people)], "knew", "Johann Bernoulli")])
            for i in range(passages)]
    return GraphRAGIndex.from_triplets(data, uri=path, embed_model=HashedRandomEmbedding())


def timed(retriever: Any, questions: list[str]) -> dict[str, float]:
    retriever.retrieve(questions[0])  # warm-up: the copies (and the filter's passages)
    seconds = []
    for question in questions:
        started = time.perf_counter()
        retriever.retrieve(question)
        seconds.append(time.perf_counter() - started)
    seconds.sort()
    return {"p50_ms": statistics.median(seconds) * 1000,
            "p95_ms": seconds[int(0.95 * (len(seconds) - 1))] * 1000}


def run(passages: int, tenants: int, queries: int, folder: str) -> list[dict[str, Any]]:
    index = build(str(Path(folder) / f"filtered_{passages}.db"), passages, tenants)
    rng = random.Random(0)
    questions = [f"Who was the son of Person{rng.randrange(passages // 3)}?"
                 for _ in range(queries)]
    rows: list[dict[str, Any]] = []
    for name, filters in FILTERS.items():
        retrievers: dict[str, BaseRetriever] = {
            label: index.as_retriever(filters=filters, **kw) for label, kw in METHODS.items()}
        retrievers["naive"] = index.as_naive_retriever(filters=filters)
        for label, retriever in retrievers.items():
            rows.append({"passages": passages, "filter": name, "method": label,
                         **timed(retriever, questions)})
    index.close()
    plain = {(r["passages"], r["method"]): float(r["p50_ms"])
             for r in rows if r["filter"] == "none"}
    for row in rows:
        row["ratio_to_unfiltered"] = row["p50_ms"] / plain[(row["passages"], row["method"])]
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passages", type=int, nargs="+", default=[3000])
    parser.add_argument("--tenants", type=int, default=50)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--out", type=Path, default=None, help="a folder for results.json")
    args = parser.parse_args(argv)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as folder:
        for size in args.passages:
            rows += run(size, args.tenants, args.queries, folder)
    print("| passages | filter | method | p50 ms | p95 ms | p50 / unfiltered |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['passages']} | {row['filter']} | {row['method']} | {row['p50_ms']:.1f} "
              f"| {row['p95_ms']:.1f} | {row['ratio_to_unfiltered']:.2f} |")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
