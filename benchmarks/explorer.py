"""Explorer response times on a benchmark index: ``python -m benchmarks.explorer --help``.

The index is built as :mod:`benchmarks.multihop` builds it (the same folder, embedding model
and path under ``--out``; ``--reuse-index`` reopens ``<out>/index/<dataset>.db``). The
explorer is started on it (:func:`~llama_index_graphrag_milvus.explore.serve`, a real HTTP
server on 127.0.0.1) and timed through HTTP, as a browser asks it:

- **neighbourhood**: ``GET /api/entity/{id}?limit=25`` for the most connected entities (the
  hubs) and a fixed random sample of the others; p50/p95/max (target: p95 under 200 ms);
- **question**: for each question, the retriever's own ``retrieve`` (same method and
  ``top_k``), then ``GET /api/ask`` (the same retrieval, traced, plus naive RAG's list, the
  names of the drawing and the JSON); the ratio of the two (target: under 2x);
- **entity search**: ``GET /api/entities?q=`` with a word of each question.

Example (the MuSiQue sample, after ``python -m benchmarks.multihop`` built its index)::

    python -m benchmarks.explorer ../shared/benchmarks/musique_train100 --out bench_out \\
        --reuse-index
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import command_parser
from benchmarks.multihop.build import build_index, default_embed_model, load_object
from benchmarks.multihop.data import guarded, load_dataset
from benchmarks.multihop.run import DEFAULT_OUT


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (linear interpolation), 0.0 for no values.

    >>> percentile([1.0, 2.0, 3.0, 4.0], 50), percentile([], 95)
    (2.5, 0.0)
    """
    return float(np.percentile(values, q)) if values else 0.0


def timed(call: Callable[..., Any], *args: Any) -> float:
    """Seconds ``call(*args)`` took."""
    started = time.perf_counter()
    call(*args)
    return time.perf_counter() - started


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=300) as response:
        body: bytes = response.read()
        return body


def stats(seconds: Sequence[float]) -> dict[str, float]:
    """Milliseconds: p50, p95, max, and the count."""
    return {"n": len(seconds), "p50_ms": 1000 * percentile(seconds, 50),
            "p95_ms": 1000 * percentile(seconds, 95),
            "max_ms": 1000 * max(seconds, default=0.0)}


def sample_entities(degrees: np.ndarray, ids: Sequence[str], count: int, hubs: int,
                    seed: int = 0) -> list[str]:
    """The ``hubs`` most connected entities, then a fixed random sample of the others."""
    order = np.argsort(-degrees, kind="stable")
    chosen = [ids[i] for i in order[:hubs].tolist()]
    rest = [ids[i] for i in order[hubs:].tolist()]
    chosen += random.Random(seed).sample(rest, min(len(rest), max(0, count - len(chosen))))
    return chosen


def run(args: argparse.Namespace) -> dict[str, Any]:
    from llama_index_graphrag_milvus.explore import serve

    dataset = load_dataset(args.dataset)
    embed_model = load_object(args.embed_model) if args.embed_model else default_embed_model()
    index, build = build_index(dataset, args.out, embed_model, None, reuse=args.reuse_index,
                               show_progress=not args.no_progress)
    graph = index.graph
    retriever = index.as_retriever(method=args.method, similarity_top_k=args.top_k)
    questions = [q.question for q in dataset.questions[:args.questions]]
    result: dict[str, Any] = {"dataset": str(dataset.path), "index": build.uri,
                              "passages": build.passages, "relations": graph.num_relations,
                              "entities": graph.num_entities, "method": args.method,
                              "top_k": args.top_k,
                              "max_degree": int(graph.entity_degrees.max(initial=0))}
    with serve(index, port=0) as server:
        base = server.url
        get(base + "api/summary")  # loads the graph and the entity table, as a page does
        retriever.retrieve(questions[0])  # warm: the model, the passage table
        get(base + "api/ask?" + urllib.parse.urlencode(
            {"q": questions[0], "method": args.method, "top_k": args.top_k}))
        entities = sample_entities(graph.entity_degrees, graph.entity_ids.ids(
            np.arange(graph.num_entities)), args.entities, args.hubs)
        neighbourhood = [timed(get, f"{base}api/entity/{e}?limit=25") for e in entities]
        own, asked = [], []
        for question in questions:
            own.append(timed(retriever.retrieve, question))
            asked.append(timed(get, base + "api/ask?" + urllib.parse.urlencode(
                {"q": question, "method": args.method, "top_k": args.top_k})))
        words = [max(q.split(), key=len).strip("?,.'\"") for q in questions]
        search = [timed(get, base + "api/entities?" + urllib.parse.urlencode(
            {"q": w, "limit": 20})) for w in words if w]
    index.close()
    ratios = [a / o for a, o in zip(asked, own, strict=True) if o > 0]
    result.update({
        "neighbourhood": stats(neighbourhood), "hubs_timed": min(args.hubs, len(entities)),
        "question_retrieve": stats(own), "question_explorer": stats(asked),
        "question_ratio": {"median": statistics.median(ratios) if ratios else 0.0,
                           "p95": percentile(ratios, 95),
                           "of_p50s": (percentile(asked, 50) / percentile(own, 50)
                                       if own else 0.0)},
        "entity_search": stats(search),
    })
    return result


def render(result: dict[str, Any]) -> str:
    """The result as a Markdown table."""
    lines = [f"Explorer on {result['index']}: {result['passages']} passages, "
             f"{result['entities']} entities, {result['relations']} relations (largest degree "
             f"{result['max_degree']}); method {result['method']}, top_k {result['top_k']}",
             "", "| request | n | p50 ms | p95 ms | max ms |", "|---|---|---|---|---|"]
    for key, label in (("neighbourhood", "entity neighbourhood (25 relations)"),
                       ("question_retrieve", "question: retriever.retrieve"),
                       ("question_explorer", "question: explorer /api/ask"),
                       ("entity_search", "entity search")):
        s = result[key]
        lines.append(f"| {label} | {s['n']} | {s['p50_ms']:.1f} | {s['p95_ms']:.1f} | "
                     f"{s['max_ms']:.1f} |")
    ratio = result["question_ratio"]
    lines += ["", f"/api/ask over retrieve, per question: median {ratio['median']:.2f}x, p95 "
              f"{ratio['p95']:.2f}x (targets: neighbourhood p95 < 200 ms, question < 2x)"]
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    result = command_parser("benchmarks.explorer", __doc__)
    result.add_argument("dataset", type=Path, help="folder with corpus.jsonl, questions.jsonl"
                                                   " [, triplets.jsonl]")
    result.add_argument("--out", type=Path, default=Path(DEFAULT_OUT),
                        help="output folder, as benchmarks.multihop's (default bench_out)")
    result.add_argument("--reuse-index", action="store_true",
                        help="reopen the index a benchmarks.multihop run built under --out")
    result.add_argument("--embed-model", default=None, metavar="MODULE:CALLABLE",
                        help="default all-MiniLM-L6-v2, as benchmarks.multihop's")
    result.add_argument("--method", default="bridge", help="retrieval method (default bridge)")
    result.add_argument("--top-k", type=int, default=5, help="passages per question (5)")
    result.add_argument("--questions", type=int, default=50, help="questions timed (50)")
    result.add_argument("--entities", type=int, default=200,
                        help="entity neighbourhoods timed (200)")
    result.add_argument("--hubs", type=int, default=20,
                        help="of them, the most connected entities (20)")
    result.add_argument("--no-progress", action="store_true", help="no progress bars")
    return result


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    result = run(args)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"explorer_{result['method']}.json"
    path.write_text(json.dumps(result, indent=2))
    print(render(result))
    print(f"Wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(guarded(main))
