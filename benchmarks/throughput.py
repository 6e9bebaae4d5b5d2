"""Queries per second of the graph and naive retrievers under concurrent ``aretrieve`` calls,
side by side in one run.

Run against a Milvus server::

    python -m benchmarks.throughput --uri http://localhost:19530

A synthetic index (the one of :mod:`~benchmarks.consistency`) is built
with ``--consistency`` (default ``Session``: the passage collection is created with it, so
both retrievers read at that level); then ``--queries`` queries (vectors computed beforehand)
go through each retriever (both returning ``--top-k`` passages, default 5) with
``--concurrency`` calls in flight, in one event loop, the two
retrievers taking turns over ``--rounds`` rounds. Reports queries per second and the graph's
share of naive's.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import QueryBundle

from benchmarks import command_parser
from benchmarks.consistency import WordHashEmbedding, synthetic_data
from llama_index_graphrag_milvus import GraphRAGIndex


async def queries_per_second(retriever: BaseRetriever, bundles: list[QueryBundle],
                             concurrency: int) -> float:
    """Every bundle through ``retriever.aretrieve``, ``concurrency`` at a time."""
    gate = asyncio.Semaphore(concurrency)

    async def one(bundle: QueryBundle) -> None:
        async with gate:
            await retriever.aretrieve(bundle)

    start = time.perf_counter()
    await asyncio.gather(*(one(b) for b in bundles))
    return len(bundles) / (time.perf_counter() - start)


async def compare(index: GraphRAGIndex, bundles: list[QueryBundle], concurrency: int,
                  rounds: int, top_k: int = 5) -> dict[str, Any]:
    retrievers = {"graph": index.as_retriever(similarity_top_k=top_k),
                  "naive": index.as_naive_retriever(top_k)}
    for retriever in retrievers.values():  # warm-up: graph load, clients, connections
        await queries_per_second(retriever, bundles[:concurrency], concurrency)
    samples: dict[str, list[float]] = {name: [] for name in retrievers}
    for _ in range(rounds):
        for name, retriever in retrievers.items():
            samples[name].append(await queries_per_second(retriever, bundles, concurrency))
    qps = {name: round(statistics.median(values), 1) for name, values in samples.items()}
    return {"concurrency": concurrency, "queries": len(bundles), "rounds": rounds,
            "top_k": top_k,
            "qps_median": qps, "qps_rounds": samples,
            "graph_share_of_naive": round(qps["graph"] / qps["naive"], 2)}


def main() -> None:
    parser = command_parser("benchmarks.throughput", __doc__)
    parser.add_argument("--uri", required=True, help="a Milvus server URL")
    parser.add_argument("--consistency", default="Session")
    parser.add_argument("--passages", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=320)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--top-k", type=int, default=5,
                        help="passages each retriever returns (the same for both)")
    args = parser.parse_args()
    model = WordHashEmbedding()
    prefix = f"throughput_{args.consistency.lower()}"
    with GraphRAGIndex(uri=args.uri, collection_prefix=prefix, embed_model=model,
                       consistency_level=args.consistency) as index:
        if index.store.dim is None:
            index.insert_triplets(synthetic_data(args.passages))
        bundles = [QueryBundle(query_str=q, embedding=model.get_query_embedding(q))
                   for q in (f"Who works with person {i * 13 % 997}?"
                             for i in range(args.queries))]
        report = asyncio.run(compare(index, bundles, args.concurrency, args.rounds,
                                     args.top_k))
    print(json.dumps({"consistency": args.consistency, **report}, indent=2))


if __name__ == "__main__":
    main()
