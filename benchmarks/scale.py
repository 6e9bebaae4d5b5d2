"""Scale benchmark: graph build, memory and expansion latency versus graph size, in one run.

For each size (synthetic power-law graphs, see :mod:`.synthetic`) it reports:

- the time to build the in-memory graph from relation rows, and its memory per relation,
- expansion + pruning latency (p50, p95) for 1 and 2 hops from seeds that include a hub,
  with the number of relations each query touched,
- for the sizes written to Milvus (``--milvus-max-size``): the time to rebuild the graph
  from the relation collection (what reopening an index costs), and end-to-end ``retrieve``
  latency of the graph retriever versus naive vector RAG, measured side by side.

Run::

    python -m benchmarks.scale --sizes 10000 100000 1000000 \\
        --embedded-server /tmp/milvus-bench --out bench_out/scale
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import multiprocessing
import platform
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import TextNode

from benchmarks.synthetic import (
    SyntheticGraph,
    entity_id,
    entity_name,
    generate,
    passage_id,
    unit_vectors,
)
from llama_index_graphrag_milvus import GraphRAGIndex, __version__
from llama_index_graphrag_milvus.graph import (
    DEFAULT_HUB_DEGREE,
    EntityRelationGraph,
    ExpansionConfig,
)
from llama_index_graphrag_milvus.graph.steiner_tree import PCSTConfig
from llama_index_graphrag_milvus.graph.tables import EntityTable
from llama_index_graphrag_milvus.metadata import TRIPLETS_KEY
from llama_index_graphrag_milvus.milvus.schema import MAX_PASSAGES_PER_RELATION, SPREAD_CAP
from llama_index_graphrag_milvus.records import EntityColumns, EntityHit
from llama_index_graphrag_milvus.retrieval.pcst import choose_subgraph
from llama_index_graphrag_milvus.retrieval.seeds import Seeds
from llama_index_graphrag_milvus.retrieval.steps import DEFAULT_SIMILARITY_TOP_K


class HashedRandomEmbedding(BaseEmbedding):
    """A random unit vector per text (seeded by its hash): embedding costs nothing, so the
    end-to-end latencies measure retrieval, not the model."""

    dim: int = 64

    @classmethod
    def class_name(cls) -> str:
        return "HashedRandomEmbedding"

    def _vector(self, text: str) -> list[float]:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        return unit_vectors(np.random.default_rng(seed), 1, self.dim)[0].tolist()

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vector(text)


class ProjectedEmbedding(BaseEmbedding):
    """A real model's query cost on a synthetic graph: ``inner`` embeds the query and a fixed
    random projection maps its vector to ``dim`` dimensions (the graph's vectors are random,
    so the projected vector is as good a query as any; what is measured is the model's time).
    """

    inner: BaseEmbedding
    dim: int = 64
    _projection: np.ndarray | None = PrivateAttr(default=None)

    @classmethod
    def class_name(cls) -> str:
        return "ProjectedEmbedding"

    def _project(self, vector: list[float]) -> list[float]:
        if self._projection is None:
            self._projection = unit_vectors(np.random.default_rng(0), self.dim, len(vector))
        projected = self._projection @ np.asarray(vector, np.float32)
        return (projected / max(float(np.linalg.norm(projected)), 1e-12)).tolist()

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._project(self.inner.get_query_embedding(query))

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._project(await self.inner.aget_query_embedding(query))

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._project(self.inner.get_text_embedding(text))


@dataclass(frozen=True)
class Percentiles:
    p50_ms: float
    p95_ms: float

    @classmethod
    def of(cls, seconds: list[float]) -> Percentiles:
        values = np.asarray(seconds) * 1000
        return cls(round(float(np.percentile(values, 50)), 3),
                   round(float(np.percentile(values, 95)), 3))


@dataclass(frozen=True)
class ExpansionTimes:
    """One size's expansion measurements at one hop count."""

    expand: Percentiles
    touched: float
    """Mean relations probed per query."""
    pcst: Percentiles
    """The PCST subgraph of the candidate pool (prizes and solve), after ``expand``."""
    subgraph_relations: float
    """Mean relations in the PCST subgraph."""


def expansion_latency(graph: EntityRelationGraph, synthetic: SyntheticGraph, hops: int,
                      queries: int, seed: int = 7) -> ExpansionTimes:
    """Latency of ``expand`` and the mean relations touched, seeds = a hub + 2 random
    entities + 3 random relations per query; then the PCST subgraph of each candidate pool
    (the seed entities prized by rank), timed on its own."""
    rng = np.random.default_rng(seed)
    hubs = synthetic.hubs(3)
    touched: list[int] = []
    original = graph.relations_of_entities

    def counting(rows: np.ndarray, query: np.ndarray, *args: Any) -> np.ndarray:
        result = original(rows, query, *args)
        touched[-1] += int(result.size)
        return result

    graph.relations_of_entities = counting  # type: ignore[method-assign,assignment]
    config = ExpansionConfig(hops=hops)
    times: list[float] = []
    solves: list[float] = []
    sizes: list[int] = []
    try:
        for number in range(queries):
            query = unit_vectors(rng, 1, synthetic.dim)[0]
            entities = [entity_id(hubs[number % len(hubs)])] + [
                entity_id(int(e)) for e in rng.integers(0, synthetic.num_entities, 2)]
            relations = [synthetic.relation_id(int(r)) for r in
                         rng.integers(0, synthetic.num_relations, 3)]
            touched.append(0)
            start = time.perf_counter()
            candidates = graph.expand(query, entities, relations, config)
            times.append(time.perf_counter() - start)
            seeds = Seeds(tuple(EntityHit(e, e, 1.0 - 0.1 * i, "query")
                                for i, e in enumerate(entities)), ())
            start = time.perf_counter()
            chosen = choose_subgraph(seeds, candidates, PCSTConfig())
            solves.append(time.perf_counter() - start)
            sizes.append(len(chosen.relations))
    finally:
        del graph.relations_of_entities
    return ExpansionTimes(Percentiles.of(times), float(np.mean(touched)),
                          Percentiles.of(solves), float(np.mean(sizes)))


def write_to_milvus(synthetic: SyntheticGraph, index: GraphRAGIndex, batch_size: int = 10_000
                    ) -> float:
    """Write the synthetic graph's three collections directly (vectors are given)."""
    store = index.store
    start = time.perf_counter()
    store.create(synthetic.dim)
    rng = np.random.default_rng(synthetic.seed + 2)
    offsets, passages = synthetic.entity_passages()
    for first in range(0, synthetic.num_entities, batch_size):
        numbers = range(first, min(first + batch_size, synthetic.num_entities))
        vectors = unit_vectors(rng, len(numbers), synthetic.dim)
        store.upsert_rows(store.entity_collection, [
            {"id": entity_id(n), "name": entity_name(n), "embedding": v.tolist(),
             "passage_ids": [passage_id(p) for p in passages[
                 offsets[n]:min(offsets[n + 1], offsets[n] + MAX_PASSAGES_PER_RELATION)]]}
            for n, v in zip(numbers, vectors, strict=True)])
    # where each end leads, as ingestion records it (the passages an entity row lists)
    spreads = np.minimum(np.diff(offsets), SPREAD_CAP)
    for batch in synthetic.relation_batches(batch_size, spreads):
        for row in batch:
            row["embedding"] = row["embedding"].tolist()
        store.upsert_rows(store.relation_collection, batch)
    for first in range(0, synthetic.num_passages, batch_size):
        numbers = range(first, min(first + batch_size, synthetic.num_passages))
        vectors = unit_vectors(rng, len(numbers), synthetic.dim)
        store.upsert_passages([
            TextNode(id_=passage_id(n), text=f"passage {n}", embedding=v.tolist(),
                     metadata={TRIPLETS_KEY: synthetic.passage_triplets(n)},
                     excluded_embed_metadata_keys=[TRIPLETS_KEY],
                     excluded_llm_metadata_keys=[TRIPLETS_KEY])
            for n, v in zip(numbers, vectors, strict=True)])
    store.flush()
    return time.perf_counter() - start


def retrieve_latency(index: GraphRAGIndex, queries: int) -> dict[str, Any]:
    """Graph versus naive ``retrieve`` latency, alternating per query, one warm-up each; both
    return the same number of passages (the graph retriever's default, 20)."""
    graph = index.as_retriever()
    naive = index.as_naive_retriever(similarity_top_k=DEFAULT_SIMILARITY_TOP_K)
    texts = [f"What did the son of the teacher of entity {i} contribute to its field?"
             for i in range(queries + 1)]
    graph.retrieve(texts[-1])
    naive.retrieve(texts[-1])
    graph_times, naive_times = [], []
    for text in texts[:-1]:
        start = time.perf_counter()
        graph.retrieve(text)
        graph_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        naive.retrieve(text)
        naive_times.append(time.perf_counter() - start)
    graph_p, naive_p = Percentiles.of(graph_times), Percentiles.of(naive_times)
    return {"graph": graph_p.__dict__, "naive": naive_p.__dict__,
            "ratio_p50": round(graph_p.p50_ms / naive_p.p50_ms, 2)}


def milvus_measurements(synthetic: SyntheticGraph, target: str, kind: str, prefix: str,
                        dim: int, queries: int, query_model: BaseEmbedding | None = None
                        ) -> dict[str, Any]:
    """Write the graph, time its rebuild from Milvus, then time graph versus naive retrieve.

    The collections are created with ``Bounded`` consistency, the level a serving deployment
    uses: a ``Strong`` read waits for the server's time tick (200 ms by default on every
    read). The rebuild reads with ``Strong`` so that it sees every row just written. With a
    ``query_model``, retrieve latency is measured a second time with that model embedding
    the queries (see :class:`ProjectedEmbedding`): what a user of a real model sees.
    """
    def open_index(consistency: str, embed_model: BaseEmbedding | None = None
                   ) -> GraphRAGIndex:
        return GraphRAGIndex(uri=target, collection_prefix=prefix, consistency_level=consistency,
                             embed_model=embed_model or HashedRandomEmbedding(dim=dim),
                             graph="memory")

    print(f"size {synthetic.num_relations:,}: writing to Milvus ({kind})", flush=True)
    writer = open_index("Bounded")
    measured: dict[str, Any] = {"milvus_write_s": round(write_to_milvus(synthetic, writer), 1)}
    # a server builds vector indexes in the background after the flush: measuring while it
    # does would time the index build (on the same 2 cores), not the reads
    measured["index_build_wait_s"] = round(wait_for_indexes(writer), 1)
    writer.close()  # a Lite file is opened by one process at a time
    measured.update(rebuild_in_fresh_process(target, prefix, dim))
    serving = open_index("Bounded")
    serving.refresh()
    measured["retrieve"] = retrieve_latency(serving, min(queries, 100))
    if query_model is not None:
        with_model = open_index("Bounded", ProjectedEmbedding(inner=query_model, dim=dim))
        with_model.refresh()
        measured["retrieve_with_query_model"] = retrieve_latency(with_model,
                                                                 min(queries, 100))
        with_model.close()
    for collection in (serving.store.entity_collection, serving.store.relation_collection,
                       serving.store.passage_collection):
        serving.store.client.drop_collection(collection)  # no background work for later sizes
    serving.close()
    return measured


def rebuild_in_fresh_process(target: str, prefix: str, dim: int) -> dict[str, Any]:
    """Reopen the index in a new Python process and rebuild its graph, as a restarted
    application does: the seconds, and that process's resident memory (peak RSS) before the
    rebuild and at its peak. On Milvus Lite the engine runs inside the process, so its memory
    (the collections it holds) is part of both figures."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        result: dict[str, Any] = pool.apply(_rebuild_probe, (target, prefix, dim))
    return result


def _rebuild_probe(target: str, prefix: str, dim: int) -> dict[str, Any]:
    """The child of :func:`rebuild_in_fresh_process`. The rebuild reads with ``Strong``
    consistency, so that it sees every row just written."""
    index = GraphRAGIndex(uri=target, collection_prefix=prefix, consistency_level="Strong",
                          embed_model=HashedRandomEmbedding(dim=dim), graph="memory")
    with index:
        index.store.count(index.store.relation_collection)  # connected, collection loaded
        before = resident_mb()["VmRSS"]
        start = time.perf_counter()
        index.refresh()  # the graph is rebuilt
        seconds = time.perf_counter() - start
        graph = index.graph
        return {"rebuild_from_milvus_s": round(seconds, 2),
                "rebuilt_relations": graph.num_relations,
                "rebuild_rss_before_mb": before,
                "rebuild_peak_rss_mb": resident_mb()["VmHWM"],
                "graph_mb": round(sum(graph.memory().values()) / 2**20, 1)}


def resident_mb() -> dict[str, int]:
    """This process's resident memory now (``VmRSS``) and at its peak (``VmHWM``), in MB,
    from ``/proc/self/status`` (Linux). Not ``getrusage``: its peak survives ``exec``, so a
    spawned child would report its parent's."""
    with open("/proc/self/status") as status:
        fields = dict(line.split(":", 1) for line in status if line.startswith("Vm"))
    return {key: round(int(fields[key].split()[0]) / 1024) for key in ("VmRSS", "VmHWM")}


def wait_for_indexes(index: GraphRAGIndex, timeout: float = 1800.0) -> float:
    """Seconds until every vector index of the three collections covers all rows.

    Every row indexed is the criterion, not nothing pending: after a large write (10M
    relations on Milvus 2.3.5) the server keeps compacting segments and indexing the
    compacted ones for a long time, ``pending_index_rows`` staying non-zero while searches
    already use an index over every row (docs/benchmarks.md, "Ten million relations")."""
    store = index.store
    start = time.perf_counter()
    for collection in (store.entity_collection, store.relation_collection,
                       store.passage_collection):
        while True:
            names = store.client.list_indexes(collection)
            states = [store.client.describe_index(collection, name) for name in names]
            if all(s.get("indexed_rows", 0) >= s.get("total_rows", 0) for s in states):
                break
            if time.perf_counter() - start > timeout:
                raise TimeoutError(f"indexes of {collection} not built after {timeout} s")
            time.sleep(1.0)  # polling the server's index state, not waiting for a result
    return time.perf_counter() - start


def in_memory_measurements(synthetic: SyntheticGraph, queries: int) -> dict[str, Any]:
    """Build time from rows, memory, and expansion latency of one synthetic graph."""
    size = synthetic.num_relations
    degrees = synthetic.entity_degrees()
    row: dict[str, Any] = {"relations": size, "entities": synthetic.num_entities,
                           "passages": synthetic.num_passages,
                           "top_hub_degrees": sorted(degrees.tolist())[-3:][::-1]}
    batches = list(synthetic.relation_batches())
    start = time.perf_counter()
    graph = EntityRelationGraph.from_rows(batches, dim=synthetic.dim)
    row["build_from_rows_s"] = round(time.perf_counter() - start, 2)
    del batches
    memory = graph.memory()
    row["structure_bytes_per_relation"] = round(memory["structure"] / size, 1)
    row["vector_bytes_per_relation"] = round(memory["vectors"] / size, 1)
    row["text_bytes_per_relation"] = round(memory["texts"] / size, 1)
    names = [entity_name(i) for i in range(synthetic.num_entities)]
    entities = EntityTable.from_columns([EntityColumns(
        [entity_id(i) for i in range(synthetic.num_entities)], names,
        np.zeros((len(names), synthetic.dim), np.float32))], synthetic.dim)
    row["entity_table_bytes_per_entity"] = round(entities.nbytes / len(entities), 1)
    del entities, names
    row["hubs"] = int(graph.hubs.hub_rows.size)
    for hops in (1, 2):
        measured = expansion_latency(graph, synthetic, hops, queries)
        row[f"expand_{hops}hop"] = measured.expand.__dict__
        row[f"touched_{hops}hop"] = round(measured.touched)
        row[f"pcst_{hops}hop"] = measured.pcst.__dict__
        row[f"pcst_relations_{hops}hop"] = round(measured.subgraph_relations, 1)
    return row


@contextlib.contextmanager
def milvus_target(uri: str | None, embedded_server: str | None,
                  workdir: Path, keep: bool = False) -> Iterator[tuple[str, str]]:
    """``(uri, kind)``: an embedded server (its data folder wiped first unless ``keep``), a
    given URI, or a Lite path in ``workdir``."""
    if embedded_server:
        from milvus import default_server

        if not keep:
            shutil.rmtree(embedded_server, ignore_errors=True)
        default_server.set_base_dir(embedded_server)
        default_server.start()
        try:
            yield f"http://127.0.0.1:{default_server.listen_port}", "server (embedded 2.3.5)"
        finally:
            default_server.stop()
    elif uri:
        yield uri, "server" if "://" in uri else "lite"
    else:
        yield str(workdir / "scale.db"), "lite"


def run(sizes: list[int], queries: int, milvus_max_size: int, uri: str | None,
        embedded_server: str | None, dim: int, out: Path,
        query_model: BaseEmbedding | None = None) -> dict[str, Any]:
    # Two phases, so that the in-memory timings never share the 2 cores with a server busy
    # with background work (index builds, compaction): first every size without Milvus, then
    # the Milvus measurements, each size's collections dropped before the next is written.
    results: list[dict[str, Any]] = []
    for size in sizes:
        print(f"size {size:,}: generating, in-memory measurements", flush=True)
        results.append(in_memory_measurements(generate(size, dim=dim), queries))
        print(json.dumps(results[-1]), flush=True)
    kind = "none"
    if any(size <= milvus_max_size for size in sizes):
        with tempfile.TemporaryDirectory() as tmp, \
                milvus_target(uri, embedded_server, Path(tmp)) as (target, kind):
            for row in results:
                size = row["relations"]
                if size <= milvus_max_size:
                    row.update(milvus_measurements(generate(size, dim=dim), target, kind,
                                                   f"scale_{size}", dim, queries, query_model))
                    print(json.dumps(row), flush=True)
    report = {
        "config": {"sizes": sizes, "queries": queries, "dim": dim, "milvus": kind,
                   "milvus_max_size": milvus_max_size, "hub_degree": DEFAULT_HUB_DEGREE,
                   "query_model": type(query_model).__name__ if query_model else None,
                   "expansion": ExpansionConfig().__dict__, "package": __version__,
                   "python": platform.python_version(), "machine": platform.machine()},
        "results": results,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "scale.json").write_text(json.dumps(report, indent=2))
    return report


def markdown(report: dict[str, Any]) -> str:
    lines = [
        "| relations | build from rows (s) | structure B/rel | vectors B/rel | texts B/rel "
        "| entity table B/entity "
        "| expand 1 hop p50/p95 (ms) | expand 2 hops p50/p95 (ms) | touched 1/2 hops "
        "| rebuild from Milvus (s) | rebuild peak RSS (MB) | retrieve graph p50 (ms) "
        "| naive p50 (ms) | graph/naive |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in report["results"]:
        retrieve = row.get("retrieve")
        one, two = row["expand_1hop"], row["expand_2hop"]
        lines.append(
            f"| {row['relations']:,} | {row['build_from_rows_s']} | "
            f"{row['structure_bytes_per_relation']} | {row['vector_bytes_per_relation']} | "
            f"{row['text_bytes_per_relation']} | {row['entity_table_bytes_per_entity']} | "
            f"{one['p50_ms']} / {one['p95_ms']} | {two['p50_ms']} / {two['p95_ms']} | "
            f"{row['touched_1hop']:,} / {row['touched_2hop']:,} | "
            f"{row.get('rebuild_from_milvus_s', '-')} | {_rss(row)} | "
            f"{retrieve['graph']['p50_ms'] if retrieve else '-'} | "
            f"{retrieve['naive']['p50_ms'] if retrieve else '-'} | "
            f"{retrieve['ratio_p50'] if retrieve else '-'} |")
    for row in report["results"]:
        if "retrieve_with_query_model" in row:
            timed = row["retrieve_with_query_model"]
            lines.append(f"\nWith the query model embedding each query, {row['relations']:,} "
                         f"relations: graph {timed['graph']['p50_ms']} ms, naive "
                         f"{timed['naive']['p50_ms']} ms at p50 ({timed['ratio_p50']}x)")
    for row in report["results"]:
        if "pcst_1hop" in row:
            lines.append(
                f"\nPCST subgraph (prizes and solve, after the expansion), "
                f"{row['relations']:,} relations: 1 hop p50/p95 {row['pcst_1hop']['p50_ms']} / "
                f"{row['pcst_1hop']['p95_ms']} ms ({row['pcst_relations_1hop']} relations), "
                f"2 hops {row['pcst_2hop']['p50_ms']} / {row['pcst_2hop']['p95_ms']} ms "
                f"({row['pcst_relations_2hop']} relations)")
    results = report["results"]
    if len(results) > 1:
        small, large = results[0], results[-1]
        for hops in (1, 2):
            ratio = large[f"expand_{hops}hop"]["p50_ms"] / small[f"expand_{hops}hop"]["p50_ms"]
            lines.append(f"\n{hops}-hop expansion p50, {large['relations']:,} relations versus "
                         f"{small['relations']:,}: {ratio:.1f}x")
    return "\n".join(lines)


def _rss(row: dict[str, Any]) -> str:
    """Peak RSS of the rebuilding process, with its RSS before the rebuild."""
    if "rebuild_peak_rss_mb" not in row:
        return "-"
    return f"{row['rebuild_peak_rss_mb']:,} (from {row['rebuild_rss_before_mb']:,})"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Graph size versus build time, memory and "
                                                 "expansion latency (synthetic graphs).")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=200, help="queries per measurement")
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--milvus-max-size", type=int, default=100_000,
                        help="largest size written to Milvus (rebuild and retrieve timings)")
    parser.add_argument("--uri", help="Milvus Lite path or server URL (default: a Lite "
                                      "path in a temporary directory)")
    parser.add_argument("--embedded-server", metavar="DIR",
                        help="start the embedded Milvus server (PyPI package 'milvus') with "
                             "its data in DIR (wiped first), and use it")
    parser.add_argument("--query-model", choices=["none", "minilm"], default="none",
                        help="also time retrieve with all-MiniLM-L6-v2 embedding each query "
                             "(the 'bench' extra), as a user of a real model sees it")
    parser.add_argument("--out", type=Path, default=Path("bench_out/scale"))
    args = parser.parse_args(argv)
    query_model = None
    if args.query_model == "minilm":
        from benchmarks.multihop import default_embed_model

        query_model = default_embed_model()
    report = run(args.sizes, args.queries, args.milvus_max_size, args.uri,
                 args.embedded_server, args.dim, args.out, query_model)
    print()
    print(markdown(report))
    print(f"\nJSON: {args.out / 'scale.json'}")


if __name__ == "__main__":
    main()
