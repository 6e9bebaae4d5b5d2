"""The graph served by Milvus under load: query workers and a writer at the same time.

One synthetic index (:mod:`.synthetic`, ``--relations``) in a Milvus server, then one phase
per method, the same load shape each time, naive RAG first:

- ``--workers`` query processes (fresh ``spawn`` processes, each its own
  ``GraphRAGIndex(graph="milvus", consistency_level="Strong")``, as web workers start), each
  asking questions back to back for ``--seconds`` (or ``--queries`` each). The last worker
  opens its index only once the phase has begun, while the writer writes (the edge "a
  worker that opens while another writes");
- one writer process that, during the phase, inserts new documents (passages with their
  triplets, ``insert_triplets``) and deletes the phase's *target* documents one by one
  (``delete_ref_doc``), recording when each delete was acknowledged (the call returned) and
  the passages it deleted.

Questions: a share (``--target-share``) name a target document (its passage's own text, so
that the passage is the best answer of every method while it exists); the others name
random entities of the graph (:func:`.served.questions`). Each worker asks about every newly
deleted target right after it sees the acknowledgement, then about recently deleted or
still present targets at random. Afterwards every answer is checked: no passage whose
delete was acknowledged before the query started may be returned (:mod:`.load_checks`).

Reported per method: queries, queries per second (all workers), p50/p95/p99 latency, errors
(type and message), violations, the check's coverage, and the throughput ratio to naive
RAG; the writer's inserts and deletes. ``--restart-at S`` adds one phase (the last method
again) in which the embedded server is restarted S seconds in: the errors during the outage
by type (the package's ``MilvusStoreError`` expected) and each worker's first success after
it.

Run (the long run is this command, not a test)::

    python -m benchmarks.load --relations 1000000 --embedded-server /tmp/milvus-load \\
        --index-type HNSW --index-params '{"M": 8, "efConstruction": 64}' \\
        --workers 4 --seconds 60 --out bench_out/load
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import platform
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks.load_checks import Outage, QueryRecord, WriteRecord, summarize_method
from benchmarks.load_workers import (
    PhaseConfig,
    open_index,
    query_worker,
    target_document,
    writer_worker,
)
from benchmarks.scale import wait_for_indexes, write_to_milvus
from benchmarks.served import METHODS, server_footprint
from benchmarks.synthetic import generate
from llama_index_graphrag_milvus import __version__
from llama_index_graphrag_milvus.ingestion.plan import plan_ingestion

DEFAULT_METHODS = ["naive", "bridge (default)"]
RESTART_RECOVERY_S = 150.0
"""The restart phase lasts at least this long past the restart: the server comes back
after its old ports leave TIME_WAIT (about a minute), and the workers need time after it."""
RESTART = " + restart"
"""Names the extra phase of ``--restart-at`` (the last method again, with the restart), so
that the measured phases have no restart in them."""


SERVER_PORTS = ("proxy_port", "etcd_port", "root_coord_port", "proxy_internal_port",
                "query_coord_port", "query_node_port", "index_coord_port", "index_node_port",
                "data_coord_port", "data_node_port")
"""The embedded server's listening ports (``milvus.yaml`` keys of the ``milvus`` package)."""


class EmbeddedServer:
    """The embedded Milvus server (PyPI package ``milvus``) with its data in ``base_dir``;
    ``settings`` are ``milvus.yaml`` keys (``"proxy.timeTickInterval": 20``)."""

    def __init__(self, base_dir: str, settings: dict[str, Any], wipe: bool) -> None:
        from milvus import default_server

        if wipe:
            shutil.rmtree(base_dir, ignore_errors=True)
        self.server = default_server
        self.server.set_base_dir(base_dir)
        for key, value in settings.items():
            self.server.config.set(key, value)
        self.base_dir = base_dir

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.server.listen_port}"

    def start(self) -> None:
        self.server.start()  # returns once the server answers

    def stop(self) -> None:
        self.server.stop()

    def restart(self) -> Outage:
        """Stop the server and start it again on the same port; the outage's times
        (``time.monotonic()``). The ``milvus`` package binds its ports without
        ``SO_REUSEADDR`` and moves to the next free port when one is taken (a port in
        ``TIME_WAIT`` after the stop counts as taken): the workers, which know the old port,
        would never reach it again. So the start waits until the old ports (those of
        :data:`SERVER_PORTS`) can be bound."""
        port = self.server.listen_port
        ports = [int(self.server.config.get(key)) for key in SERVER_PORTS
                 if self.server.config.get(key)]
        down = time.monotonic()
        self.stop()
        for taken in ports:
            wait_until_bindable(taken)
        self.start()
        if self.server.listen_port != port:
            raise RuntimeError(f"the embedded server came back on port "
                               f"{self.server.listen_port}, not {port}")
        return Outage(down, time.monotonic())


def wait_until_bindable(port: int, timeout: float = 300.0) -> None:
    """Wait (polling every second) until ``port`` on 127.0.0.1 can be bound as the
    embedded server binds it (no ``SO_REUSEADDR``)."""
    deadline = time.monotonic() + timeout
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("127.0.0.1", port))
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
        time.sleep(1.0)


@contextmanager
def milvus(uri: str | None, embedded_server: str | None, settings: dict[str, Any],
           reuse: bool) -> Iterator[tuple[str, EmbeddedServer | None]]:
    """``(uri, server)``: the embedded server started in ``embedded_server`` (wiped unless
    ``reuse``), or the server at ``uri`` (``server`` is then ``None``)."""
    if embedded_server:
        server = EmbeddedServer(embedded_server, settings, wipe=not reuse)
        server.start()
        try:
            yield server.uri, server
        finally:
            server.stop()
    elif uri and "://" in uri:
        yield uri, None
    else:
        raise SystemExit("a Milvus server is needed (--uri http://... or --embedded-server "
                         "DIR): Milvus Lite is opened by one process at a time")


def build(target: str, prefix: str, relations: int, dim: int, reuse: bool,
          index_type: str | None, index_params: dict[str, Any] | None) -> dict[str, Any]:
    """Write the synthetic graph (collections created with ``Strong`` consistency, so that
    naive RAG's searches, which use the collection's level, read at ``Strong`` as the graph
    reads do), or reopen it with ``reuse`` when its collections hold every relation."""
    index = open_index(target, prefix, dim, index_type=index_type,
                       index_params=index_params if index_type else None)
    try:
        store = index.store
        if reuse and store.open_if_created():
            found = store.count(store.relation_collection)
            if found >= relations:
                level = store.client.describe_collection(store.passage_collection).get(
                    "consistency_level")
                return {"reused": True, "relations_found": found,
                        "passage_consistency_level": level}
            raise SystemExit(f"--reuse: {prefix} holds {found} relations, fewer than "
                             f"{relations}; run without --reuse to build it")
        synthetic = generate(relations, dim=dim)
        row: dict[str, Any] = {"reused": False, "entities": synthetic.num_entities,
                               "passages": synthetic.num_passages}
        print(f"writing {relations:,} relations", flush=True)
        row["write_s"] = round(write_to_milvus(synthetic, index), 1)
        row["index_build_wait_s"] = round(wait_for_indexes(index), 1)
        return row
    finally:
        index.close()


def seed_targets(target: str, prefix: str, dim: int, phase: str, count: int,
                 entities: int) -> dict[int, list[str]]:
    """Insert the phase's target documents (before the phase, not timed); their passage ids
    by target number."""
    documents = [target_document(phase, number, entities) for number in range(count)]
    index = open_index(target, prefix, dim)
    try:
        index.insert_triplets(documents)
        plan = plan_ingestion(documents, index.passage_identity_keys)
    finally:
        index.close()
    ids = [node.node_id for node in plan.passages]
    return {number: [ids[number]] for number in range(count)}


def run_phase(config: PhaseConfig, server: EmbeddedServer | None, restart_at: float | None,
              workdir: Path) -> tuple[list[QueryRecord], list[WriteRecord], dict[str, Any]]:
    """One method's phase: the workers and the writer, started together; their records."""
    context = multiprocessing.get_context("spawn")
    deleted = context.Value("i", 0)
    go, stop, writer_done = context.Event(), context.Event(), context.Event()
    ready = context.Queue()
    go_time = context.Value("d", 0.0)
    files = [workdir / f"{config.phase}_worker{n}.json" for n in range(config.workers)]
    writer_file = workdir / f"{config.phase}_writer.json"
    workers = [context.Process(target=query_worker, args=(
        config, number, number == config.workers - 1 and config.workers > 1, str(files[number]),
        deleted, go, go_time, writer_done, ready)) for number in range(config.workers)]
    writer = context.Process(target=writer_worker, args=(
        config, str(writer_file), deleted, go, stop, writer_done, ready))
    spawned = time.monotonic()
    for process in [*workers, writer]:
        process.start()
    early = config.workers if config.workers == 1 else config.workers - 1
    for _ in range(early + 1):  # the workers that open before the phase, and the writer
        ready.get(timeout=600)
    go_time.value = time.monotonic()
    go.set()
    outage = None
    if restart_at is not None and server is not None:
        stop.wait(restart_at)  # the phase runs this long before the restart
        outage = server.restart()
        print(f"server restarted ({outage.back - outage.down:.1f} s down)", flush=True)
    for process in workers:
        process.join()
    stop.set()
    writer.join()
    failed = [p.exitcode for p in [*workers, writer] if p.exitcode != 0]
    if failed:
        raise RuntimeError(f"phase {config.phase}: processes exited with {failed}")
    queries: list[QueryRecord] = []
    extra: dict[str, Any] = {"workers": {}, "start_s": round(go_time.value - spawned, 1)}
    for number, path in enumerate(files):
        data = json.loads(path.read_text())
        queries += [QueryRecord.of(row) for row in data["queries"]]
        extra["workers"][str(number)] = {k: v for k, v in data.items() if k != "queries"}
    written = json.loads(writer_file.read_text())
    writes = [WriteRecord.of(row) for row in written["writes"]]
    ends = [q.started + q.seconds for q in queries]
    extra["seconds"] = (max(ends) if ends else go_time.value) - go_time.value
    if outage is not None:
        extra["outage"] = Outage(outage.down - go_time.value, outage.back - go_time.value)
        extra["outage_abs"] = outage
    return queries, writes, extra


def writer_summary(writes: list[WriteRecord]) -> dict[str, Any]:
    done = [w for w in writes if w.acknowledged is not None]

    def seconds(kind: str) -> float | None:
        times = sorted(w.acknowledged - w.started for w in done
                       if w.kind == kind and w.acknowledged is not None)
        return round(times[len(times) // 2], 2) if times else None

    return {"inserts": sum(w.kind == "insert" for w in done),
            "deletes": sum(w.kind == "delete" for w in done),
            "insert_p50_s": seconds("insert"), "delete_p50_s": seconds("delete"),
            "errors": [w.error for w in writes if w.error is not None][:20]}


def run(args: argparse.Namespace) -> dict[str, Any]:
    prefix = args.prefix or f"load_{args.relations}"
    tag = args.tag or time.strftime("%H%M%S")
    methods = ["naive", *(m for m in args.methods if m != "naive")]
    entities = max(2, int(args.relations * 0.25))
    report: dict[str, Any] = {"config": {
        "relations": args.relations, "workers": args.workers, "seconds": args.seconds,
        "queries_per_worker": args.queries, "target_share": args.target_share,
        "targets": args.targets, "write_interval_s": args.write_interval,
        "methods": methods, "restart_at_s": args.restart_at, "server_settings": args.set,
        "index_type": args.index_type, "index_params": args.index_params, "dim": args.dim,
        "package": __version__, "python": platform.python_version(),
        "cpus": multiprocessing.cpu_count()}, "methods": {}}
    settings = dict(args.set or {})
    with tempfile.TemporaryDirectory() as tmp, \
            milvus(args.uri, args.embedded_server, settings, args.reuse) as (target, server):
        began = time.monotonic()
        report["build"] = build(target, prefix, args.relations, args.dim, args.reuse,
                                args.index_type, args.index_params)
        report["build"]["seconds"] = round(time.monotonic() - began, 1)
        report["build"].update(server_footprint(args.embedded_server))
        print(json.dumps(report["build"]), flush=True)
        phases = methods + ([f"{methods[-1]}{RESTART}"] if args.restart_at is not None else [])
        for position, method in enumerate(phases):
            phase = f"{tag}-{position}"
            began = time.monotonic()
            passages = seed_targets(target, prefix, args.dim, phase, args.targets, entities)
            seeded = time.monotonic()
            config = PhaseConfig(
                uri=target, prefix=prefix, dim=args.dim, phase=phase, method=method,
                method_kwargs=METHODS[method.removesuffix(RESTART)], workers=args.workers,
                seconds=(max(args.seconds, args.restart_at + RESTART_RECOVERY_S)
                         if method.endswith(RESTART) and args.seconds is not None
                         and args.restart_at is not None else args.seconds),
                queries=args.queries, target_share=args.target_share, targets=args.targets,
                entities=entities, write_interval=args.write_interval,
                min_deletes=args.min_deletes, timeout=args.timeout)
            restart = args.restart_at if method.endswith(RESTART) else None
            print(f"phase {method}: {args.workers} workers + writer", flush=True)
            queries, writes, extra = run_phase(config, server, restart, Path(tmp))
            outage = extra.pop("outage_abs", None)
            summary = summarize_method(queries, writes, extra.pop("seconds"), passages, outage)
            summary["writer"] = writer_summary(writes)
            summary["workers"] = extra["workers"]
            summary["processes_start_s"] = extra["start_s"]
            summary["seed_s"] = round(seeded - began, 1)
            if "outage" in extra:
                summary["outage_s_into_phase"] = asdict(extra["outage"])
            report["methods"][method] = summary
            print(json.dumps({method: {k: v for k, v in summary.items() if k != "workers"}}),
                  flush=True)
            save(report, args.out)  # each phase as it ends: a failed later phase keeps it
        report["after"] = server_footprint(args.embedded_server)
    save(report, args.out)
    return report


def save(report: dict[str, Any], out: Path) -> None:
    """Write ``load.json`` (with each method's throughput ratio to naive RAG)."""
    naive_qps = report["methods"].get("naive", {}).get("qps")
    for summary in report["methods"].values():
        summary["qps_ratio"] = (round(summary["qps"] / naive_qps, 2)
                                if naive_qps and summary["qps"] else None)
    out.mkdir(parents=True, exist_ok=True)
    (out / "load.json").write_text(json.dumps(report, indent=2))


def markdown(report: dict[str, Any]) -> str:
    """The table of one run (one row per method)."""
    lines = ["| method | queries | QPS (all workers) | QPS / naive | p50 / p95 / p99 ms | errors "
             "| violations (checked queries, deleted docs asked) | target found while present "
             "| writer inserts / deletes |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, m in report["methods"].items():
        writer = m["writer"]
        lines.append(
            f"| {name} | {m['queries']:,} | {m['qps']} | {m['qps_ratio']}x | "
            f"{m['p50_ms']} / {m['p95_ms']} / {m['p99_ms']} | {m['errors']} | "
            f"{m['violations']} ({m['checked']}, {m['deleted_checked']}) | "
            f"{m['alive_returned']} / {m['alive_asked']} | "
            f"{writer['inserts']} / {writer['deletes']} |")
    for name, m in report["methods"].items():
        if m["error_kinds"]:
            lines.append(f"\n{name} errors: {json.dumps(m['error_kinds'])}")
        if "restart" in m:
            lines.append(f"\n{name}, server restart: {json.dumps(m['restart'])}")
    return "\n".join(lines)


def key_value(text: str) -> tuple[str, Any]:
    key, _, value = text.partition("=")
    if not key or not value:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, json.loads(value) if value[0].isdigit() or value[0] in "[{" else value


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.load",
        description="Query workers and a writer against the graph served by Milvus at the "
                    "same time: throughput, latency, errors, and no deleted passage returned "
                    "after its delete was acknowledged (Strong consistency).")
    parser.add_argument("--relations", type=int, default=1_000_000,
                        help="size of the synthetic graph (default 1,000,000)")
    parser.add_argument("--workers", type=int, default=4, help="query processes (default 4)")
    limit = parser.add_mutually_exclusive_group()
    limit.add_argument("--seconds", type=float, default=60.0,
                       help="length of each method's phase (default 60)")
    limit.add_argument("--queries", type=int, help="queries per worker instead of --seconds")
    parser.add_argument("--methods", nargs="+", default=DEFAULT_METHODS, choices=list(METHODS),
                        help="methods, one phase each (naive RAG always, first)")
    parser.add_argument("--target-share", type=float, default=0.5,
                        help="share of questions that name a target document (default 0.5)")
    parser.add_argument("--targets", type=int, default=100,
                        help="target documents inserted before each phase; the writer "
                             "deletes them in order (default 100)")
    parser.add_argument("--write-interval", type=float, default=1.0,
                        help="seconds between the writer's insert+delete rounds (default 1)")
    parser.add_argument("--min-deletes", type=int, default=0,
                        help="workers go on past --seconds until this many deletes are "
                             "acknowledged (or the writer stops): the check then has deletes "
                             "to check")
    parser.add_argument("--timeout", type=float, default=10.0,
                        help="the Milvus client timeout of workers and writer, seconds")
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--uri", help="a Milvus server URL")
    parser.add_argument("--embedded-server", metavar="DIR",
                        help="start the embedded Milvus server (PyPI 'milvus') with its data "
                             "in DIR (wiped first unless --reuse)")
    parser.add_argument("--set", type=key_value, nargs="*", metavar="KEY=VALUE", default=[],
                        help="milvus.yaml settings of the embedded server, e.g. "
                             "proxy.timeTickInterval=20")
    parser.add_argument("--reuse", action="store_true",
                        help="reopen the collections of --prefix instead of building them")
    parser.add_argument("--prefix", help="collection prefix (default load_<relations>)")
    parser.add_argument("--tag", help="names this run's target documents (default the time)")
    parser.add_argument("--index-type", help="vector index of a new index (default AUTOINDEX)")
    parser.add_argument("--index-params", type=json.loads, default=None, metavar="JSON",
                        help="its build parameters, e.g. '{\"M\": 8, \"efConstruction\": 64}'")
    parser.add_argument("--restart-at", type=float, metavar="SECONDS",
                        help="add a phase of the last method in which the embedded server "
                             "restarts this long after the start")
    parser.add_argument("--out", type=Path, default=Path("bench_out/load"))
    return parser


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parser().parse_args(argv)
    if args.queries is not None:
        args.seconds = None
    if args.restart_at is not None and not args.embedded_server:
        raise SystemExit("--restart-at restarts the embedded server: give --embedded-server")
    args.set = dict(args.set)
    report = run(args)
    print()
    print(markdown(report))
    print(f"\nJSON: {args.out / 'load.json'}")
    return report


if __name__ == "__main__":
    main()
