"""The top-k lists of every retrieval method in both graph modes, saved and compared: the check
that a change of structure changes no answer.

Save the lists of one checkout (the index is built under ``--out`` once, then reused)::

    python -m benchmarks.lists save ../shared/benchmarks/musique_train100 --out bench_out \\
        --file lists_before.json
    python -m benchmarks.lists save ../shared/benchmarks/hotpotqa_train100 --extractor spacy \\
        --out bench_out --file hotpot_before.json

then, after the change, the same command with ``--file lists_after.json``, and::

    python -m benchmarks.lists compare lists_before.json lists_after.json

``compare`` prints, per graph mode and method, how many questions got the same top-k list
(ids in order) and the same set, and each method's p50 latency ratio to naive RAG in both
files (each measured side by side in its own run, the question's embedding excluded). It
exits 1 when a list differs.

Methods are named by ``passage_scoring`` (``bridge``, ``ppr``, ``pcst``, ``passage``,
``relation``), so the same command runs on checkouts before and after a change.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.multihop.data import guarded

METHODS = ("bridge", "ppr", "pcst", "passage", "relation")
"""The built-in methods, by their ``passage_scoring`` name."""
MODES = ("memory", "milvus")
"""The graph modes (``GraphRAGIndex(graph=...)``)."""


def filter_all() -> Any:
    """A filter every benchmark passage matches (its corpus id is not empty): a filtered
    retrieval, scoped, that keeps every passage."""
    from llama_index.core.vector_stores import FilterOperator, MetadataFilter, MetadataFilters

    from benchmarks.multihop.data import CORPUS_ID_KEY

    return MetadataFilters(filters=[MetadataFilter(key=CORPUS_ID_KEY, value="",
                                                   operator=FilterOperator.NE)])


def save(args: argparse.Namespace) -> int:
    """Build or reuse the index, run every method in every mode, write the lists."""
    from llama_index.core.schema import QueryBundle

    from benchmarks.multihop.build import build_index, default_embed_model, load_object
    from benchmarks.multihop.data import CORPUS_ID_KEY, load_dataset
    from llama_index_graphrag_milvus import GraphRAGIndex

    dataset = load_dataset(args.dataset)
    embed_model = load_object(args.embed_model) if args.embed_model else default_embed_model()
    index, build = build_index(dataset, args.out, embed_model, None, reuse=True,
                               show_progress=False, extractor=args.extractor)
    uri, prefix = index.store.uri, index.store.prefix
    index.close()
    questions = dataset.questions[:args.questions] if args.questions else dataset.questions
    vectors = {q.id: embed_model.get_query_embedding(q.question) for q in questions}
    report: dict[str, Any] = {"dataset": str(args.dataset), "extractor": args.extractor,
                              "filter_all": args.filter_all,
                              "k": args.k, "relations": build.relations, "lists": {},
                              "p50_ms": {}}
    for mode in args.modes:
        with GraphRAGIndex(uri=uri, collection_prefix=prefix, embed_model=embed_model,
                           graph=mode) as opened:
            scope = filter_all() if args.filter_all else None
            retrievers: dict[str, Any] = {
                "naive": opened.as_naive_retriever(similarity_top_k=args.k, filters=scope)}
            for method in args.methods:
                retrievers[method] = opened.as_retriever(
                    method=method, similarity_top_k=args.k,
                    **({"filters": scope} if scope is not None else {}))
            lists: dict[str, dict[str, list[str]]] = {name: {} for name in retrievers}
            seconds: dict[str, list[float]] = {name: [] for name in retrievers}
            for position, question in enumerate(questions):
                names = list(retrievers)
                shift = position % len(names)  # no method always first (warm caches)
                for name in names[shift:] + names[:shift]:
                    bundle = QueryBundle(question.question, embedding=vectors[question.id])
                    started = time.perf_counter()
                    nodes = retrievers[name].retrieve(bundle)
                    seconds[name].append(time.perf_counter() - started)
                    lists[name][question.id] = [
                        str(n.node.metadata.get(CORPUS_ID_KEY, n.node.node_id))
                        for n in nodes[:args.k]]
            report["lists"][mode] = lists
            report["p50_ms"][mode] = {name: 1000 * statistics.median(s[args.warmup:] or s)
                                      for name, s in seconds.items()}
    Path(args.file).write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(f"wrote {args.file}: {len(questions)} questions, modes {args.modes}, "
          f"methods {args.methods}")
    for mode, p50 in report["p50_ms"].items():
        print(f"  {mode}: " + ", ".join(f"{name} {ms:.1f} ms ({ms / p50['naive']:.2f}x)"
                                        for name, ms in p50.items()))
    return 0


def compare(args: argparse.Namespace) -> int:
    """Print the agreement of two saved files; 1 when a list differs."""
    before = json.loads(Path(args.before).read_text(encoding="utf-8"))
    after = json.loads(Path(args.after).read_text(encoding="utf-8"))
    differs = False
    print(f"{args.before} -> {args.after}")
    print("| mode | method | same list | same set | p50/naive before | p50/naive after |")
    print("|---|---|---|---|---|---|")
    for mode, methods in before["lists"].items():
        for method, lists in methods.items():
            other = after["lists"].get(mode, {}).get(method)
            if other is None:
                print(f"| {mode} | {method} | missing after | | | |")
                differs = True
                continue
            same = sum(lists[q] == other.get(q) for q in lists)
            same_set = sum(set(lists[q]) == set(other.get(q) or ()) for q in lists)
            differs |= same != len(lists)
            ratio = [f"{run['p50_ms'][mode][method] / run['p50_ms'][mode]['naive']:.2f}"
                     for run in (before, after)]
            print(f"| {mode} | {method} | {same}/{len(lists)} | {same_set}/{len(lists)} | "
                  f"{ratio[0]} | {ratio[1]} |")
            if args.show:
                for q in lists:
                    if lists[q] != other.get(q):
                        print(f"    {q}: {lists[q]} -> {other.get(q)}")
    return 1 if differs else 0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.lists", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("save", help="run every method in every mode, save the lists")
    run.add_argument("dataset", type=Path)
    run.add_argument("--out", type=Path, default=Path("bench_out"))
    run.add_argument("--file", required=True)
    run.add_argument("--extractor", default="dataset", help="'dataset' or 'spacy'")
    run.add_argument("--embed-model", default=None, metavar="MODULE:CALLABLE")
    run.add_argument("--k", type=int, default=5)
    run.add_argument("--questions", type=int, default=0, help="the first N only (0: all)")
    run.add_argument("--warmup", type=int, default=3, help="questions left out of p50")
    run.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    run.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    run.add_argument("--filter-all", action="store_true",
                     help="retrieve with a filter that every passage matches (a scoped "
                          "retrieval that must change no answer)")
    diff = commands.add_parser("compare", help="compare two saved files")
    diff.add_argument("before")
    diff.add_argument("after")
    diff.add_argument("--show", action="store_true", help="print every differing list")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    return save(args) if args.command == "save" else compare(args)


if __name__ == "__main__":
    sys.exit(guarded(main))
