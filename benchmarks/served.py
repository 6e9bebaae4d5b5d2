"""The graph served by Milvus at scale: stateless query workers on synthetic graphs.

For each size (synthetic power-law graphs, see :mod:`.synthetic`, written to one Milvus):

- the build: writing the collections, and the server's index builds;
- in a fresh worker process (``GraphRAGIndex(graph="milvus")``, as a web worker starts):
  its resident memory once open (idle), the first query's time, then ``--queries`` rounds
  of every method side by side (naive RAG, the default second hop, k-hop, PageRank, PCST):
  p50/p95 per method and its ratio to naive RAG, the Milvus requests per query, the CPU a
  query takes in the worker and (on the embedded server) in the server, and the process's
  resident memory after them;
- the Milvus server's disk (its data folder) and resident memory.

Query embedding costs nothing here (:class:`~.scale.HashedRandomEmbedding`), so the times
are retrieval's; the bridge method's second queries are embedded the same way.

Run (the long run is this command, not a test)::

    python -m benchmarks.served --sizes 1000000 10000000 \\
        --embedded-server /tmp/milvus-served --out bench_out/served
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import platform
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.scale import (
    HashedRandomEmbedding,
    Percentiles,
    milvus_target,
    resident_mb,
    wait_for_indexes,
    write_to_milvus,
)
from benchmarks.synthetic import entity_name, entity_number, generate
from llama_index_graphrag_milvus import GraphRAGIndex, __version__
from llama_index_graphrag_milvus.ids import entity_id
from llama_index_graphrag_milvus.retrieval import BridgeRetrieval


class SpreadsFirst(BridgeRetrieval):
    """The default method with where its bridges lead read before their second queries are
    searched (one more round trip, the same passages): what the overlap saves."""

    OVERLAP_PER_BRIDGE = 0


class WideOverlap(BridgeRetrieval):
    """The default method searching the second queries of up to twice ``max_bridges``
    bridges beside the read of where they lead (more searched, one round trip less)."""

    OVERLAP_PER_BRIDGE = 2


METHODS: dict[str, dict[str, Any] | None] = {
    "naive": None,
    "bridge (default)": {"passage_scoring": "bridge"},
    "bridge, spreads first": {"method": SpreadsFirst()},
    "bridge, overlap x2": {"method": WideOverlap()},
    "bridge, passages from relations": {"passage_scoring": "bridge"},
    "bridge, no own relations": {"passage_scoring": "bridge", "own_relations": 0},
    "k-hop h1": {"passage_scoring": "passage", "hops": 1},
    "ppr h1": {"passage_scoring": "ppr", "hops": 1},
    "ppr h1, no own relations": {"passage_scoring": "ppr", "hops": 1, "own_relations": 0},
    "pcst h1": {"passage_scoring": "pcst", "hops": 1},
}
"""The methods timed side by side, and their retriever arguments (``None``: naive RAG)."""
FROM_RELATIONS = "bridge, passages from relations"
"""The default method reading where its bridges lead from the relations, as on an index
created before entity rows listed their passages (:class:`FromRelations`)."""


class FromRelations:
    """A retriever run as on an index whose entity rows do not list their passages."""

    def __init__(self, retriever: Any, index: GraphRAGIndex) -> None:
        self.retriever, self.index = retriever, index

    def retrieve(self, text: str) -> Any:
        store = self.index.store
        store.records_entity_passages = False
        try:
            return self.retriever.retrieve(text)
        finally:
            store.records_entity_passages = True
CALLS = ("search", "query", "get")
"""The Milvus client calls counted as requests."""
SERVER_PID = Path("/run/milvus/standalone.pid")
"""Where the embedded server records its process id."""


def embedded_pid() -> int | None:
    """The process id of the embedded server running here (``None`` when none is)."""
    try:
        return int(SERVER_PID.read_text().strip())
    except (OSError, ValueError):
        return None


Threads = dict[str, int]
"""CPU nanoseconds of each thread of a process, by thread id."""


class ServerCpu:
    """The CPU time of the embedded Milvus server's process, summed over its threads' own
    counters (``/proc/<pid>/task/*/schedstat``, nanoseconds): precise enough for one query,
    so that each method's median per query is free of the server's bursts of background
    work (a compaction starting mid-run). A thread that ends between two readings loses what
    it ran since the first (a query's window is milliseconds). ``None`` readings when there is
    no such process (Lite, a remote URL)."""

    def __init__(self, pid: int | None) -> None:
        self.tasks = Path(f"/proc/{pid}/task") if pid else None

    def threads(self) -> Threads | None:
        """Each thread's CPU so far (``None`` when the process is gone or unknown)."""
        if self.tasks is None:
            return None
        found: Threads = {}
        try:
            tids = [t.name for t in self.tasks.iterdir()]
        except OSError:
            return None
        for tid in tids:
            try:
                found[tid] = int((self.tasks / tid / "schedstat").read_text().split()[0])
            except (OSError, IndexError, ValueError):
                continue  # ended while read
        return found

    @staticmethod
    def spent(before: Threads | None, after: Threads | None) -> float | None:
        """CPU seconds the process ran between two readings.

        >>> ServerCpu.spent({"1": 10**9, "2": 5}, {"1": 3 * 10**9, "3": 10**9})
        3.0
        """
        if before is None or after is None:
            return None
        return sum(ns - before.get(tid, 0) for tid, ns in after.items()) / 1e9

    def idle_rate(self, seconds: float = 3.0) -> float:
        """The server's CPU seconds per second with no query (its background work; 0 without
        a server)."""
        if self.tasks is None:
            return 0.0
        start = self.threads()
        time.sleep(seconds)
        used = self.spent(start, self.threads())
        return used / seconds if used is not None else 0.0

    def settled_rate(self, below: float = 0.1, window: float = 2.0, timeout: float = 300.0
                     ) -> tuple[float, bool]:
        """The idle rate once the server's background work (loading, index builds,
        compaction after a start) has fallen under ``below`` cores, or after ``timeout``
        seconds: the last window's rate, and whether it fell under ``below``."""
        deadline = time.monotonic() + timeout
        rate = self.idle_rate(window)
        while rate >= below and time.monotonic() < deadline:
            rate = self.idle_rate(window)
        return rate, rate < below

    def for_queries(self) -> tuple[float, ServerCpu]:
        """The settled background rate, and what reads the server's CPU per query: this
        reader, or one that reads nothing (``None`` readings) when the background did not
        settle: a server still compacting or indexing spends most of a query's window on
        that work, and subtracting a core or two from a few milliseconds gives noise
        (negative CPU)."""
        background, settled = self.settled_rate()
        if settled or self.tasks is None:
            return background, self
        print(f"the server's background work did not settle ({background:.2f} cores busy "
              "with no query): its CPU per query is not reported, and the latencies share "
              "the cores with that work", flush=True)
        return background, ServerCpu(None)


def counting_calls(index: GraphRAGIndex) -> dict[str, int]:
    """A counter of the index's Milvus calls (:data:`CALLS` of its graph store's client and
    of its passage vector store's, naive RAG's search; sync): ``counter["n"]``."""
    counter = {"n": 0}
    for client in (index.store.client, index.store.passages.client):
        for call in CALLS:
            original = getattr(client, call)

            def counting(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
                counter["n"] += 1
                return _original(*args, **kwargs)

            setattr(client, call, counting)
    return counter


@dataclass(frozen=True)
class Reading:
    """One query's answer and costs (see :func:`read_query`)."""

    answer: Any
    seconds: float
    cpu_s: float
    """The worker's CPU (all its threads)."""
    server_s: float | None
    """The server's CPU, its idle background subtracted (``None`` without a server)."""
    requests: int


def read_query(retrieve: Callable[[], Any], counter: dict[str, int], server: ServerCpu,
               background: float) -> Reading:
    """``retrieve()`` timed: wall time, the worker's CPU, the server's CPU less
    ``background`` (cores) times the wall time, the Milvus calls ``counter`` counted."""
    counter["n"] = 0
    before = server.threads()
    start, cpu_start = time.perf_counter(), time.process_time()
    answer = retrieve()
    seconds = time.perf_counter() - start
    cpu_s = time.process_time() - cpu_start
    spent = server.spent(before, server.threads())
    return Reading(answer, seconds, cpu_s,
                   None if spent is None else spent - background * seconds, counter["n"])


def questions(count: int, entities: int, seed: int = 11) -> list[str]:
    """Questions that name random entities of the synthetic graph by their numbers: the
    entity "entity 12" is named by half its words (what the bridge method asks), the other
    entities are not (a question with the word "entity" would name every entity by half,
    and its relations would offer no bridge)."""
    rng = np.random.default_rng(seed)
    return [f"What did the teacher of {entity_number(int(a))} give to "
            f"{entity_number(int(b))}?" for a, b in rng.integers(0, entities, (count, 2))]



def worker(uri: str, prefix: str, dim: int, texts: list[str], methods: list[str],
           store_threads: int | None = None, server_pid: int | None = None) -> dict[str, Any]:
    """A fresh worker's measurements (the child of :func:`measure_worker`);
    ``store_threads``: the store's thread pools resized (an experiment: how much the
    concurrent requests of one step wait for a thread). Beside each method's latency, the
    CPU a query takes: the worker's own (all its threads) and, given the embedded server's
    process (``server_pid``), the server's (its background work while idle subtracted)."""
    index = GraphRAGIndex(uri=uri, collection_prefix=prefix, consistency_level="Bounded",
                          embed_model=HashedRandomEmbedding(dim=dim), graph="milvus")
    if store_threads:
        resize_pools(index, store_threads)
    retrievers: dict[str, Any] = {
        name: (index.as_naive_retriever(similarity_top_k=5) if METHODS[name] is None
               else index.as_retriever(similarity_top_k=5, **METHODS[name] or {}))
        for name in methods}
    if FROM_RELATIONS in retrievers and index.store.records_entity_passages:
        retrievers[FROM_RELATIONS] = FromRelations(retrievers[FROM_RELATIONS], index)
    counted = counting_calls(index)
    idle = resident_mb()["VmRSS"]
    start = time.perf_counter()
    retrievers[methods[1]].retrieve(texts[0])
    first = time.perf_counter() - start
    times: dict[str, list[float]] = {name: [] for name in methods}
    cpu: dict[str, list[float]] = {name: [] for name in methods}
    server_cpu: dict[str, list[float]] = {name: [] for name in methods}
    requests: dict[str, list[int]] = {name: [] for name in methods}
    server = ServerCpu(server_pid)
    background, per_query = server.for_queries()
    for text in texts[1:]:
        for name, retriever in retrievers.items():
            reading = read_query(partial(retriever.retrieve, text), counted, per_query,
                                 background)
            times[name].append(reading.seconds)
            cpu[name].append(reading.cpu_s)
            if reading.server_s is not None:
                server_cpu[name].append(reading.server_s)
            requests[name].append(reading.requests)
    after = resident_mb()
    naive = Percentiles.of(times["naive"])
    naive_cpu = Percentiles.of(cpu["naive"])
    totals = {name: cpu_per_query(cpu[name], server_cpu[name] or None) for name in methods}
    # the background rate again: when it moved, the means moved with it (not the medians)
    idle_cores = {"before": round(background, 3), "after": round(server.idle_rate(), 3),
                  "settled": per_query is server}
    result: dict[str, Any] = {
        "graph_mode": index.graph_mode, "idle_rss_mb": idle, "rss_after_mb": after["VmRSS"],
        "rss_growth_mb": after["VmRSS"] - idle, "peak_rss_mb": after["VmHWM"],
        "first_query_s": round(first, 3), "queries": len(texts) - 1,
        "server_idle_cores": idle_cores if server.tasks else None, "methods": {}}
    for name in methods:
        measured, used = Percentiles.of(times[name]), Percentiles.of(cpu[name])
        result["methods"][name] = {
            **measured.__dict__,
            "ratio_p50": round(measured.p50_ms / naive.p50_ms, 2),
            "ratio_p95": round(measured.p95_ms / naive.p95_ms, 2),
            "requests_per_query": round(float(np.mean(requests[name])), 2),
            # the worker's own CPU (all its threads): what it takes from the cores it shares
            # with the server under load
            "cpu_p50_ms": used.p50_ms,
            "cpu_ratio_p50": round(used.p50_ms / naive_cpu.p50_ms, 2) if naive_cpu.p50_ms
            else None,
            **totals[name].__dict__,
            "throughput_bound": totals[name].bound(totals["naive"])}
    index.close()
    return result


@dataclass(frozen=True)
class QueryCpu:
    """A method's CPU per query in milliseconds: the worker's mean, and the embedded
    server's median and mean (``None`` without one)."""

    worker_cpu_mean_ms: float
    server_cpu_p50_ms: float | None
    server_cpu_mean_ms: float | None

    @property
    def total(self) -> float | None:
        """The worker's mean and the server's median."""
        if self.server_cpu_p50_ms is None:
            return None
        return self.worker_cpu_mean_ms + self.server_cpu_p50_ms

    def bound(self, naive: QueryCpu) -> float | None:
        """The most of naive RAG's queries per second this method answers on a machine
        whose cores the server and the workers saturate (the ratio of their CPU per query;
        ``None`` without the server's).

        >>> QueryCpu(2.0, 6.0, 6.5).bound(QueryCpu(1.0, 3.0, 3.1))
        0.5
        """
        mine, theirs = self.total, naive.total
        return round(theirs / mine, 2) if mine and theirs else None


def cpu_per_query(worker_s: list[float], server_s: list[float] | None) -> QueryCpu:
    """The CPU per query of ``worker_s`` and ``server_s`` (one reading per query, seconds),
    in milliseconds."""
    worker = round(1000 * float(np.mean(worker_s)), 3) if worker_s else 0.0
    if not server_s:
        return QueryCpu(worker, None, None)
    return QueryCpu(worker, round(1000 * float(np.median(server_s)), 3),
                    round(1000 * float(np.mean(server_s)), 3))


def resize_pools(index: GraphRAGIndex, threads: int) -> None:
    """The store's two thread pools with ``threads`` workers each (they start idle)."""
    from concurrent.futures import ThreadPoolExecutor

    from llama_index_graphrag_milvus.milvus.store import WORKER_PREFIX

    store = index.store
    store._pool.shutdown()
    store._inner_pool.shutdown()
    store._pool = ThreadPoolExecutor(threads, thread_name_prefix=WORKER_PREFIX)
    store._inner_pool = ThreadPoolExecutor(threads, thread_name_prefix=f"{WORKER_PREFIX}-inner")


def measure_worker(uri: str, prefix: str, dim: int, texts: list[str], methods: list[str],
                   store_threads: int | None = None, server_pid: int | None = None
                   ) -> dict[str, Any]:
    """Run :func:`worker` in a new Python process (a worker that starts cold)."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        result: dict[str, Any] = pool.apply(worker, (uri, prefix, dim, texts, methods,
                                                     store_threads, server_pid))
    return result


def explorer_worker(uri: str, prefix: str, dim: int, entities: list[str], hubs: list[str],
                    searches: list[str]) -> dict[str, Any]:
    """The explorer on the served index in a fresh process: the summary, the first page
    (25 relations) of each entity's neighbourhood (the hubs apart), entity searches;
    p50/p95/max per kind and the process's resident memory (idle and after)."""
    from llama_index_graphrag_milvus.explore import ExplorerData

    index = GraphRAGIndex(uri=uri, collection_prefix=prefix, consistency_level="Bounded",
                          embed_model=HashedRandomEmbedding(dim=dim), graph="milvus")
    data = ExplorerData(index)
    idle = resident_mb()["VmRSS"]
    times: dict[str, list[float]] = {"summary": [], "neighbourhood": [],
                                     "hub neighbourhood": [], "entity search": []}
    calls: list[tuple[str, Any]] = [
        ("summary", data.summary),
        *(("neighbourhood", partial(data.neighbourhood, e, 0, 25)) for e in entities),
        *(("hub neighbourhood", partial(data.neighbourhood, e, 0, 25)) for e in hubs),
        *(("entity search", partial(data.search_entities, t, 20)) for t in searches)]
    for kind, call in calls:
        start = time.perf_counter()
        call()
        times[kind].append(time.perf_counter() - start)
    after = resident_mb()
    index.close()
    return {"idle_rss_mb": idle, "rss_after_mb": after["VmRSS"],
            "rss_growth_mb": after["VmRSS"] - idle,
            **{kind: {**Percentiles.of(seconds).__dict__, "max_ms": round(1000 * max(seconds), 1),
                      "calls": len(seconds)}
               for kind, seconds in times.items() if seconds}}


def measure_explorer(uri: str, prefix: str, dim: int, entities: list[str], hubs: list[str],
                     searches: list[str]) -> dict[str, Any]:
    """Run :func:`explorer_worker` in a new Python process."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        result: dict[str, Any] = pool.apply(explorer_worker,
                                            (uri, prefix, dim, entities, hubs, searches))
    return result


def explorer_inputs(degrees: np.ndarray, count: int, hubs: int, seed: int = 13
                    ) -> tuple[list[str], list[str], list[str]]:
    """Entity ids for the explorer phase: ``count`` drawn at random among the entities with
    a relation, the ``hubs`` most connected, and search texts (a word of a random entity's
    name).

    >>> entities, hubs, texts = explorer_inputs(np.array([0, 3, 1, 0, 9]), 5, 1)
    >>> len(entities), hubs == [entity_id(entity_name(4))], len(texts)
    (3, True, 3)
    """
    rng = np.random.default_rng(seed)
    linked = np.flatnonzero(degrees > 0)  # a number the draw never gave is no entity
    drawn = rng.choice(linked, min(count, linked.size), replace=False).tolist()
    top = np.argsort(-degrees, kind="stable")[:hubs].tolist()
    return ([entity_id(entity_name(int(e))) for e in drawn],
            [entity_id(entity_name(int(e))) for e in top],
            [entity_name(int(e)).split()[-1] for e in drawn[:20]])


def server_footprint(base_dir: str | None) -> dict[str, Any]:
    """The embedded server's data on disk and its resident memory (``None`` elsewhere)."""
    if not base_dir:
        return {}
    disk = subprocess.run(["du", "-sm", base_dir], capture_output=True, text=True, check=False)
    footprint: dict[str, Any] = {"milvus_disk_mb": int(disk.stdout.split()[0])
                                 if disk.stdout else None}
    try:
        pid = SERVER_PID.read_text().strip()
        status = Path(f"/proc/{pid}/status").read_text()
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        footprint["milvus_rss_mb"] = round(int(fields["VmRSS"].split()[0]) / 1024)
    except (OSError, KeyError, ValueError):
        footprint["milvus_rss_mb"] = None
    return footprint


def run(sizes: list[int], queries: int, uri: str | None, embedded_server: str | None,
        dim: int, index_type: str | None, methods: list[str], out: Path,
        index_params: dict[str, Any] | None = None, explorer_entities: int = 0,
        reuse: bool = False, store_threads: int | None = None) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, \
            milvus_target(uri, embedded_server, Path(tmp), keep=reuse) as (target, kind):
        for size in sizes:
            synthetic = generate(size, dim=dim)
            prefix = f"served_{size}"
            writer = GraphRAGIndex(uri=target, collection_prefix=prefix,
                                   consistency_level="Bounded",
                                   embed_model=HashedRandomEmbedding(dim=dim), graph="milvus",
                                   index_type=index_type or None,
                                   index_params=index_params if index_type else None)
            row: dict[str, Any] = {"relations": size, "entities": synthetic.num_entities,
                                   "passages": synthetic.num_passages,
                                   "top_hub_degrees": sorted(
                                       synthetic.entity_degrees().tolist())[-3:][::-1]}
            stored = (writer.store.count(writer.store.relation_collection)
                      if reuse and writer.store.dim is not None else 0)
            # a finished build may count more rows than it wrote (the 1M build counts
            # 1,000,414 on the embedded server: rows upserted twice, before compaction)
            if stored >= size:
                print(f"size {size:,}: reusing {prefix} ({kind})", flush=True)
                row.update(write_s=0.0, index_build_wait_s=0.0, build_s=0.0, reused=True)
            else:
                print(f"size {size:,}: generating and writing ({kind})", flush=True)
                row["write_s"] = round(write_to_milvus(synthetic, writer), 1)
                row["index_build_wait_s"] = round(wait_for_indexes(writer), 1)
                row["build_s"] = round(row["write_s"] + row["index_build_wait_s"], 1)
            writer.close()
            entities, hubs, searches = explorer_inputs(synthetic.entity_degrees(),
                                                       explorer_entities, 20)
            del synthetic
            row.update(server_footprint(embedded_server))
            print(json.dumps(row), flush=True)
            row["worker"] = measure_worker(target, prefix, dim,
                                           questions(queries + 1, row["entities"]), methods,
                                           store_threads,
                                           embedded_pid() if embedded_server else None)
            if explorer_entities:
                row["explorer"] = measure_explorer(target, prefix, dim, entities, hubs,
                                                   searches)
            print(json.dumps(row), flush=True)
            results.append(row)
    report = {"config": {"sizes": sizes, "queries": queries, "dim": dim, "milvus": kind,
                         "index_type": index_type or "AUTOINDEX",
                         "index_params": index_params or {}, "methods": methods,
                         "explorer_entities": explorer_entities, "reuse": reuse,
                         "store_threads": store_threads,
                         "package": __version__, "python": platform.python_version()},
              "results": results}
    out.mkdir(parents=True, exist_ok=True)
    (out / "served.json").write_text(json.dumps(report, indent=2))
    return report


def explorer_markdown(report: dict[str, Any]) -> str:
    """The explorer phase's table (empty when it was not timed)."""
    rows = [r for r in report["results"] if "explorer" in r]
    if not rows:
        return ""
    kinds = ("summary", "neighbourhood", "hub neighbourhood", "entity search")
    lines = ["| relations | explorer RSS idle / after (MB) | "
             + " | ".join(f"{k} p50 / p95 / max ms" for k in kinds) + " |",
             "|" + "---|" * (2 + len(kinds))]
    for row in rows:
        found = row["explorer"]
        cells = [f"{row['relations']:,}", f"{found['idle_rss_mb']} / {found['rss_after_mb']}"]
        cells += [f"{found[k]['p50_ms']} / {found[k]['p95_ms']} / {found[k]['max_ms']}"
                  if k in found else "-" for k in kinds]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown(report: dict[str, Any]) -> str:
    methods = report["config"]["methods"]
    lines = ["| relations | build (s): write + indexes | Milvus disk / RSS (MB) | worker idle "
             "RSS (MB) | RSS growth over the queries (MB) | first query (s) | "
             + " | ".join(f"{m} p50 ms (ratio) / p95 ratio / requests / worker CPU ms (ratio)"
                          " / server CPU p50 ms / CPU bound on QPS" for m in methods) + " |",
             "|" + "---|" * (6 + len(methods))]
    for row in report["results"]:
        worker_row = row["worker"]
        cells = [f"{row['relations']:,}", f"{row['build_s']} ({row['write_s']} + "
                 f"{row['index_build_wait_s']})",
                 f"{row.get('milvus_disk_mb', '-')} / {row.get('milvus_rss_mb', '-')}",
                 str(worker_row["idle_rss_mb"]), str(worker_row["rss_growth_mb"]),
                 str(worker_row["first_query_s"])]
        for name in methods:
            m = worker_row["methods"][name]
            cells.append(f"{m['p50_ms']} ({m['ratio_p50']}x) / {m['ratio_p95']}x / "
                         f"{m['requests_per_query']} / {m['cpu_p50_ms']} "
                         f"({m['cpu_ratio_p50']}x) / {m.get('server_cpu_p50_ms') or '-'} / "
                         + (f"{m['throughput_bound']}x" if m.get("throughput_bound") else "-"))
        lines.append("| " + " | ".join(cells) + " |")
    results = report["results"]
    if len(results) > 1:
        small, large = results[0]["worker"], results[-1]["worker"]
        lines.append(f"\nWorker RSS after the queries, {results[-1]['relations']:,} versus "
                     f"{results[0]['relations']:,} relations: "
                     f"{large['rss_after_mb'] / small['rss_after_mb']:.2f}x")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="The graph served by Milvus at scale: "
                                                 "stateless workers on synthetic graphs.")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--queries", type=int, default=1000,
                        help="rounds of every method (after the first query)")
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--uri", help="a Milvus server URL (default: a Lite path)")
    parser.add_argument("--embedded-server", metavar="DIR",
                        help="start the embedded Milvus server with its data in DIR (wiped)")
    parser.add_argument("--index-type", help="the vector index of the collections (default: "
                                             "the store's, AUTOINDEX on a server)")
    parser.add_argument("--index-params", type=json.loads, default=None, metavar="JSON",
                        help="its build parameters, e.g. '{\"M\": 8, \"efConstruction\": 64}'")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--explorer", type=int, default=0, metavar="N",
                        help="also time the explorer in a fresh process: the summary, the "
                             "neighbourhood of N random entities and of the 20 largest hubs, "
                             "20 entity searches (default 0: not timed)")
    parser.add_argument("--reuse", action="store_true",
                        help="keep the embedded server's data folder and reuse a size's "
                             "collections when they hold its relations (no build)")
    parser.add_argument("--store-threads", type=int, default=None, metavar="N",
                        help="an experiment: the worker's store thread pools with N threads "
                             "each (the package's default is 4)")
    parser.add_argument("--out", type=Path, default=Path("bench_out/served"))
    args = parser.parse_args(argv)
    methods = ["naive", *(m for m in args.methods if m != "naive")]
    report = run(args.sizes, args.queries, args.uri, args.embedded_server, args.dim,
                 args.index_type, methods, args.out, args.index_params, args.explorer,
                 args.reuse, args.store_threads)
    print()
    print(markdown(report))
    print(explorer_markdown(report))
    print(f"\nJSON: {args.out / 'served.json'}")


if __name__ == "__main__":
    main()
