"""What a retriever does while its Milvus server restarts: errors, how long they take to
come, and when queries succeed again.

Run (starts and restarts the embedded Milvus server of the ``milvus`` package, in the
``test`` extra)::

    python -m benchmarks.restart --timeout 5

A small synthetic index (the one of :mod:`~benchmarks.consistency`)
is written to the server; then a thread sends queries back to back (the graph retriever and
naive RAG in turn, query vectors computed beforehand) while the server is stopped and
started again. Reported: every failed query's exception type and how long it took to fail
(the client ``timeout`` bounds it), and the seconds from the server answering again to the
first successful query of each retriever.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import QueryBundle

from benchmarks import command_parser
from benchmarks.consistency import WordHashEmbedding, synthetic_data
from llama_index_graphrag_milvus import GraphRAGIndex


@dataclass(frozen=True)
class Attempt:
    retriever: str
    started: float
    seconds: float
    error: str | None


def hammer(retrievers: dict[str, BaseRetriever], bundle: QueryBundle, stop: threading.Event,
           attempts: list[Attempt]) -> None:
    """Queries back to back, the retrievers in turn, until ``stop``."""
    while not stop.is_set():
        for name, retriever in retrievers.items():
            started = time.perf_counter()
            try:
                retriever.retrieve(bundle)
                error = None
            except Exception as exc:  # the point: which exceptions a restart gives
                error = f"{type(exc).__module__}.{type(exc).__name__}: {str(exc)[:160]}"
            attempts.append(Attempt(name, started, time.perf_counter() - started, error))


def summarize(attempts: list[Attempt], back: float) -> dict[str, Any]:
    failures = [a for a in attempts if a.error]
    kinds: dict[str, int] = {}
    messages: dict[str, int] = {}
    for attempt in failures:
        kind = attempt.error.split(":", 1)[0] if attempt.error else ""
        kinds[kind] = kinds.get(kind, 0) + 1
        message = re.sub(r"\d+", "N", attempt.error or "")[:200]
        messages[message] = messages.get(message, 0) + 1
    recovered = {}
    for name in sorted({a.retriever for a in attempts}):
        after = [a for a in attempts if a.retriever == name and a.started >= back]
        first_ok = next((a for a in after if a.error is None), None)
        recovered[name] = (None if first_ok is None
                           else round(first_ok.started + first_ok.seconds - back, 2))
    return {"queries": len(attempts), "failed": len(failures), "error_types": kinds,
            "slowest_failure_s": round(max((a.seconds for a in failures), default=0.0), 2),
            "errors": messages,
            "first_success_after_server_back_s": recovered}


def main(argv: list[str] | None = None) -> None:
    parser = command_parser("benchmarks.restart", __doc__)
    parser.add_argument("--timeout", type=float, default=5.0,
                        help="the client timeout (MilvusClient timeout=...), seconds")
    parser.add_argument("--down", type=float, default=3.0,
                        help="seconds the server stays stopped")
    parser.add_argument("--after", type=float, default=60.0,
                        help="seconds of queries after the server is back")
    parser.add_argument("--passages", type=int, default=500)
    args = parser.parse_args(argv)
    from milvus import default_server

    base = tempfile.mkdtemp(prefix="graphrag-restart-")
    default_server.set_base_dir(base)
    default_server.start()
    uri = f"http://127.0.0.1:{default_server.listen_port}"
    model = WordHashEmbedding()
    try:
        with GraphRAGIndex(uri=uri, embed_model=model, collection_prefix="restart",
                           milvus_client_kwargs={"timeout": args.timeout}) as index:
            index.insert_triplets(synthetic_data(args.passages))
            question = "Who works with person 13?"
            bundle = QueryBundle(question, embedding=model.get_query_embedding(question))
            retrievers = {"graph": index.as_retriever(), "naive": index.as_naive_retriever(5)}
            for retriever in retrievers.values():
                retriever.retrieve(bundle)  # warm: graph, entity table, connections
            attempts: list[Attempt] = []
            stop = threading.Event()
            worker = threading.Thread(target=hammer, args=(retrievers, bundle, stop, attempts))
            worker.start()
            time.sleep(1.0)  # queries succeed before the restart (the load is the point)
            down = time.perf_counter()
            default_server.stop()
            time.sleep(args.down)
            default_server.start()
            back = time.perf_counter()
            time.sleep(args.after)
            stop.set()
            worker.join()
            report = {"timeout_s": args.timeout, "down_s": round(back - down, 1),
                      **summarize([a for a in attempts if a.started >= down], back)}
    finally:
        default_server.stop()
        shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
