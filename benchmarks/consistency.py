"""Retrieve latency and read-your-own-writes per Milvus consistency level, on one server, in
one run.

Run against a Milvus server (not Lite: Lite has no time tick to wait for)::

    python -m benchmarks.consistency --uri http://localhost:19530

For each level (``Strong``, ``Session``, ``Bounded``, ``Eventually``) the same small
synthetic index is opened with ``consistency_level=level``; the graph retriever (default
method) and the naive retriever answer the same queries in turns (p50/p95 in ms, query vectors
computed beforehand), then ``--writes`` times a new passage is inserted and looked up at once
by its own vector: the share found is read-your-own-writes.
"""

from __future__ import annotations

import hashlib
import json
import re
import statistics
import time
from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import QueryBundle

from benchmarks import command_parser
from benchmarks.scale import HashedRandomEmbedding
from llama_index_graphrag_milvus import GraphRAGIndex

LEVELS = ("Strong", "Session", "Bounded", "Eventually")


class WordHashEmbedding(HashedRandomEmbedding):
    """Words hashed into 64 buckets, L2-normalized: texts that share words are similar, so
    the synthetic queries find their passages. Deterministic, no model files."""

    @classmethod
    def class_name(cls) -> str:
        return "WordHashEmbedding"

    def _vector(self, text: str) -> list[float]:
        vector = np.zeros(self.dim)
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim] += 1.0
        return (vector / (np.linalg.norm(vector) or 1.0)).tolist()


def synthetic_data(passages: int) -> list[tuple[str, list[tuple[str, str, str]]]]:
    """Passages about people, each with two relations to others (a connected graph)."""
    return [(f"Person {i} works with person {(i * 7 + 3) % passages} on project {i % 50}.",
             [(f"person {i}", "works with", f"person {(i * 7 + 3) % passages}"),
              (f"person {i}", "works on", f"project {i % 50}")]) for i in range(passages)]


def _ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50_ms": round(statistics.median(ordered) * 1000, 2),
            "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 2)}


def measure(uri: str, level: str, queries: int, writes: int, model: BaseEmbedding
            ) -> dict[str, Any]:
    """Latency and read-your-own-writes of one consistency level."""
    index = GraphRAGIndex(uri=uri, collection_prefix="consistency", embed_model=model,
                          consistency_level=level)
    try:
        graph, naive = index.as_retriever(), index.as_naive_retriever(similarity_top_k=5)
        bundles = [QueryBundle(query_str=q, embedding=model.get_query_embedding(q))
                   for q in (f"Who works with person {i * 13 % 997}?" for i in range(queries))]
        graph.retrieve(bundles[0])  # loads the graph
        timings: dict[str, list[float]] = {"graph": [], "naive": []}
        for bundle in bundles:
            for name, retriever in (("graph", graph), ("naive", naive)):
                start = time.perf_counter()
                retriever.retrieve(bundle)
                timings[name].append(time.perf_counter() - start)
        found = 0
        for n in range(writes):
            text = f"New passage {level} {n}: person {n} joined project {n + 1000}."
            index.insert_triplets([(text, [(f"person {n}", "joined", f"project {n + 1000}")])])
            hits = index.as_naive_retriever(similarity_top_k=1).retrieve(
                QueryBundle(query_str=text, embedding=model.get_query_embedding(text)))
            found += bool(hits) and hits[0].node.get_content() == text
        graph_p50 = statistics.median(timings["graph"])
        return {"level": level, "graph": _ms(timings["graph"]), "naive": _ms(timings["naive"]),
                "graph_over_naive_p50": round(graph_p50 / statistics.median(timings["naive"]),
                                              2),
                "read_own_writes": f"{found}/{writes}"}
    finally:
        index.close()


def main() -> None:
    parser = command_parser("benchmarks.consistency", __doc__)
    parser.add_argument("--uri", required=True, help="a Milvus server URL")
    parser.add_argument("--passages", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--writes", type=int, default=10)
    args = parser.parse_args()
    model = WordHashEmbedding()
    with GraphRAGIndex(uri=args.uri, collection_prefix="consistency", embed_model=model,
                       consistency_level="Strong") as index:
        if index.store.dim is None:
            index.insert_triplets(synthetic_data(args.passages))
    report = [measure(args.uri, level, args.queries, args.writes, model) for level in LEVELS]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
