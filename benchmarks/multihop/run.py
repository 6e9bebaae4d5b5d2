"""One benchmark run: build the index, evaluate every method on every question (methods
taking turns), write the report."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms.llm import LLM
from llama_index.core.schema import QueryBundle
from tqdm.auto import tqdm

from benchmarks.multihop.build import (
    DATASET_EXTRACTOR,
    EXTRACTORS,
    Extractor,
    build_index,
    dataset_slug,
    slug,
)
from benchmarks.multihop.data import Question, check_split, load_dataset
from benchmarks.multihop.methods import (
    UNLIMITED_PASSAGES,
    GraphConfig,
    GraphMethodSpec,
    GraphRow,
    Method,
    corpus_ids,
    graph_retriever,
    graph_rows,
    make_methods,
    node_timings,
    pool_sizes,
    retriever_default,
)
from benchmarks.multihop.metrics import QuestionResult
from benchmarks.multihop.report import (
    make_report,
    source_hashes,
    write_report,
)
from benchmarks.multihop.sweep import (
    SweepGrid,
    best_sweep_row,
    run_sweep,
)
from llama_index_graphrag_milvus.index import GraphRAGIndex

DEFAULT_OUT = "bench_out"


@dataclass(frozen=True)
class BenchmarkConfig:
    """Everything one run needs besides the models.

    Args:
        dataset: the benchmark folder.
        out_dir: where the index, the JSON, the Markdown and the PNG are written.
        ks: the k of Recall@k; naive RAG and the LLM-free graph retriever return ``max(ks)``
            passages.
        hops: one LLM-free graph method (and one rerank method) per value, unless
            ``graph_methods`` is given.
        entity_top_k, relation_top_k, max_candidate_relations: the graph retriever's knobs.
        rerank_candidates: passages the graph retriever hands to the LLM reranker.
        graph_kwargs: further ``GraphRAGRetriever`` arguments for every graph method and
            every sweep configuration, as sorted ``(name, value)`` pairs.
        warmup: questions run untimed by every method before the timed pass.
        fusion: also evaluate every LLM-free graph configuration fused with naive RAG by
            core's ``QueryFusionRetriever`` (reciprocal rank fusion, ``num_queries=1``), and
            the diagnostic fusion of one of them whose graph nodes lose their
            ``graphrag_relations`` metadata (see :class:`RelationMetadataStripper`).
        sweep: run :class:`SweepGrid` first and add its best configuration (and the best
            configuration fused with naive RAG) to the comparison.
        graph_methods: the LLM-free graph methods, one per row (``--graph-methods``); the
            arguments a row leaves out take ``entity_top_k``, ``relation_top_k``,
            ``max_candidate_relations``, ``graph_kwargs`` and the retriever's defaults.
            ``None``: one row per ``hops`` value.
        extractor: where the graph comes from: ``"dataset"`` (``triplets.jsonl``, else the
            LLM's extraction, else no graph) or a key of :data:`EXTRACTORS` (``"spacy"``),
            which replaces the dataset's triplets and gets its own index under ``out_dir``.
        reuse_index: reopen the index under ``out_dir`` if a previous run built it.
        tag: appended to the output file names (``multihop_<dataset>_<tag>.json``).
        validation: when positive, Recall@k is also reported on the first ``validation``
            questions (the split where knobs were chosen) and on the rest (held out).
        graph: the index's ``graph`` setting: ``"memory"``, ``"milvus"`` (the graph served
            by Milvus) or ``"auto"``.
        show_progress: progress bars while building and evaluating.
        chart: write the PNG chart (needs matplotlib).
    """

    dataset: Path
    out_dir: Path = Path(DEFAULT_OUT)
    ks: tuple[int, ...] = (2, 5)
    hops: tuple[int, ...] = (1, 2)
    entity_top_k: int = retriever_default("entity_top_k")
    relation_top_k: int = retriever_default("relation_top_k")
    max_candidate_relations: int = retriever_default("max_candidate_relations")
    rerank_candidates: int = 20
    graph_kwargs: tuple[tuple[str, Any], ...] = ()
    warmup: int = 3
    query_vectors: bool = False
    fusion: bool = True
    sweep: bool = False
    grid: SweepGrid = field(default_factory=SweepGrid)
    graph_methods: tuple[GraphMethodSpec, ...] | None = None
    extractor: str = DATASET_EXTRACTOR
    reuse_index: bool = False
    tag: str = ""
    show_progress: bool = True
    chart: bool = True
    validation: int = 0
    graph: str = "auto"

    def __post_init__(self) -> None:
        if not self.ks or min(self.ks) < 1:
            raise ValueError(f"ks must be positive integers, got {self.ks}")
        if not self.hops or min(self.hops) < 0:
            raise ValueError(f"hops must be integers >= 0, got {self.hops}")
        self.graph_rows()  # distinct labels

    def graph_rows(self) -> list[GraphRow]:
        """The LLM-free graph methods: one per ``graph_methods`` row, else a k-hop row per
        ``hops`` (the default method is a ``graph_methods`` row: see the CLI's help)."""
        base = GraphConfig(retriever_default("hops"), self.entity_top_k, self.relation_top_k,
                           self.max_candidate_relations, self.graph_kwargs)
        specs = (self.graph_methods if self.graph_methods is not None
                 else [GraphMethodSpec((("hops", hops),)) for hops in self.hops])
        return graph_rows(specs, base)


Pools = dict[str, dict[str, tuple[tuple[str, ...], dict[str, float]]]]
"""Method name -> question id -> the passages of the method's whole candidate pool, and its
other sizes (:func:`~.methods.pool_sizes`)."""


def evaluate(methods: Sequence[Method], questions: Sequence[Question], warmup: int,
             show_progress: bool, embed_model: BaseEmbedding | None = None,
             query_vectors: bool = False) -> list[str]:
    """Timed pass (query embedding included, unless ``query_vectors``: each question is then
    embedded once beforehand and given as ``QueryBundle.embedding``), then the untimed
    pool-coverage pass (see :func:`pool_passages`; skipped without ``embed_model``).
    Returns notes for the report.

    Methods take turns on every question, in an order that rotates from one question to the
    next, so that no method always runs on a warm or a cold cache. The timings a retriever
    reports in ``metadata["graphrag_timings"]`` are kept with the latency.
    """
    if query_vectors and embed_model is None:
        raise ValueError("query_vectors needs the embed_model")
    vectors = {q.id: embed_model.get_query_embedding(q.question)
               for q in questions} if query_vectors and embed_model is not None else {}

    def bundle(question: Question) -> QueryBundle:
        return QueryBundle(question.question, embedding=vectors.get(question.id))

    for question in questions[:warmup]:
        for method in methods:
            method.run(bundle(question))
    timed: dict[str, dict[str, tuple[tuple[str, ...], float, dict[str, float] | None]]] = {
        m.name: {} for m in methods}
    progress = tqdm(questions, desc="Evaluating (timed)", disable=not show_progress)
    for position, question in enumerate(progress):
        shift = position % len(methods)
        for method in [*methods[shift:], *methods[:shift]]:
            query = bundle(question)
            start = time.perf_counter()
            nodes = method.run(query)
            elapsed = time.perf_counter() - start
            timed[method.name][question.id] = (corpus_ids(nodes)[: method.top_k], elapsed,
                                               node_timings(nodes))
    pools, notes = (pool_passages(methods, questions, embed_model, show_progress)
                    if embed_model is not None else ({}, []))
    for method in methods:
        results = []
        for q in questions:
            retrieved, latency, timings = timed[method.name][q.id]
            pool, sizes = pools[method.name][q.id] if method.name in pools else (None, None)
            results.append(QuestionResult(q.id, q.group, q.supporting_ids, retrieved, latency,
                                          pool, timings, sizes))
        method.results = results
    return notes


def pool_passages(methods: Sequence[Method], questions: Sequence[Question],
                  embed_model: BaseEmbedding, show_progress: bool) -> tuple[Pools, list[str]]:
    """Every method's coverage retriever (no passage cap) on every question, the questions
    embedded once with ``embed_model`` (the index's).

    A retriever that fails here (a retrieval mode that cannot return its whole pool) loses
    its pool coverage, and a note says why: the timed results are kept.
    """
    covered = {m.name: m.coverage_retriever for m in methods
               if m.coverage_retriever is not None}
    pools: Pools = {name: {} for name in covered}
    notes: list[str] = []
    if not covered:
        return pools, notes
    vectors = [embed_model.get_query_embedding(q.question) for q in questions]
    progress = tqdm(list(zip(questions, vectors, strict=True)), desc="Pool coverage",
                    disable=not show_progress)
    for question, vector in progress:
        bundle = QueryBundle(question.question, embedding=vector)
        for name, retriever in list(covered.items()):
            try:
                nodes = retriever.retrieve(bundle)
                pools[name][question.id] = (corpus_ids(nodes), pool_sizes(nodes))
            except Exception as exc:  # reported, and the other methods' results are kept
                del covered[name], pools[name]
                notes.append(f"pool coverage of {name!r} not measured: its retriever with "
                             f"similarity_top_k={UNLIMITED_PASSAGES} raised "
                             f"{type(exc).__name__}: {exc} (a --graph-methods row skips it "
                             "with \"coverage\": false)")
    return pools, notes


def run_benchmark(config: BenchmarkConfig, embed_model: BaseEmbedding, llm: LLM | None = None,
                  embed_spec: str | None = None, llm_spec: str | None = None,
                  extractors: Mapping[str, Extractor] = EXTRACTORS) -> dict[str, Any]:
    """Build, evaluate, and write ``multihop_<dataset>.{json,md,png}``; return the report.

    ``extractors`` are the graph extractors ``config.extractor`` may name (a test passes its
    own).
    """
    dataset = load_dataset(config.dataset)
    check_split(config.validation, dataset)
    sources = source_hashes()
    config.out_dir.mkdir(parents=True, exist_ok=True)
    started = time.time()
    index, build = build_index(dataset, config.out_dir, embed_model, llm,
                               config.reuse_index, config.show_progress,
                               extractor=config.extractor, extractors=extractors,
                               graph=config.graph)
    has_graph = build.relations > 0
    notes = [build.note] if build.note else []
    rows = config.graph_rows()
    sweep = SweepOutcome()
    if has_graph:
        for row in rows:  # a bad retriever argument fails here, before the sweep
            graph_retriever(index, max(config.ks), row.config)
    if config.sweep and has_graph:
        sweep = add_sweep_rows(index, dataset.questions, config, rows)
    elif config.sweep:
        notes.append("--sweep skipped: there is no graph to sweep.")
    methods = make_methods(index, rows, llm, has_graph, top_k=max(config.ks),
                           fusion=config.fusion, rerank_candidates=config.rerank_candidates,
                           aligned=sweep.aligned)
    if has_graph and config.fusion and any(row.fusion for row in rows):
        notes.append(FUSION_NOTE)
    if not has_graph and llm is None:
        notes.append("graph methods skipped: no relations in the index.")
    elif llm is None:
        notes.append("graph+rerank skipped: no LLM configured (set OPENAI_API_KEY or pass "
                     "--llm module:callable).")
    notes += evaluate(methods, dataset.questions, config.warmup, config.show_progress,
                      index.embed_model, config.query_vectors)
    if config.query_vectors:
        notes.append("latency excludes the question's embedding (--query-vectors: each "
                     "question embedded once beforehand and passed as QueryBundle.embedding)"
                     "; the bridge method's second queries are still embedded and timed.")
    report = make_report(config, dataset, build, methods, sweep.rows, sweep.best, notes,
                         embed_model, llm, embed_spec, llm_spec, time.time() - started)
    report["sweep_best_fusion"] = sweep.best_fusion
    report["sources"] = sources
    write_report(report, config.out_dir / "_".join(
        ["multihop", dataset_slug(dataset.name), *([slug(config.tag)] if config.tag else [])]),
        config.chart)
    return report


FUSION_NOTE = (
    "fusion = core's QueryFusionRetriever([graph, naive], mode='reciprocal_rerank', "
    "num_queries=1, use_async=False, similarity_top_k=2k) with an LLM that raises if "
    "called; its latency includes both retrievals and both query embeddings. Core's "
    "RRF matches nodes by node.hash (text + metadata); the graph retriever's own "
    "metadata keys (graphrag_relations, graphrag_found_by, graphrag_timings) are left "
    "out of that hash, so a passage both retrievers find adds both reciprocal ranks. "
    "The '(diagnostic)' row strips those keys from copies of the graph nodes: it must "
    "equal its fusion row, and a difference would mean the hashes diverge again.")


@dataclass(frozen=True)
class SweepOutcome:
    """What ``--sweep`` found: its rows, the best one alone and fused, and the row whose
    fusion gets the diagnostic twin (``None``: the last fused row)."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    best: dict[str, Any] | None = None
    best_fusion: dict[str, Any] | None = None
    aligned: GraphRow | None = None


def add_sweep_rows(index: GraphRAGIndex, questions: Sequence[Question],
                   config: BenchmarkConfig, rows: list[GraphRow]) -> SweepOutcome:
    """Run the sweep; append to ``rows`` its best configuration (unless a row has it) and,
    with fusion, its best fused configuration (as a fusion-only row, unless a fused row has
    it)."""
    sweep_rows = run_sweep(index, questions, config.grid, config.ks, config.show_progress,
                           config.graph_kwargs)
    grid_configs = {c.label: c for c in config.grid.configs(config.graph_kwargs)}
    best = best_sweep_row(sweep_rows, config.ks)
    best_config = grid_configs[best["label"]]
    if best_config not in [row.config for row in rows if row.alone]:
        rows.append(GraphRow(f"{best_config.label} (sweep best)", best_config))
    if not config.fusion:
        return SweepOutcome(sweep_rows, best)
    best_fusion = best_sweep_row(sweep_rows, config.ks, part="fusion")
    fusion_config = grid_configs[best_fusion["label"]]
    aligned = next((row for row in rows if row.fusion and row.config == fusion_config), None)
    if aligned is None:
        aligned = GraphRow(f"{fusion_config.label} (sweep best fusion)", fusion_config,
                           alone=False)
        rows.append(aligned)
    return SweepOutcome(sweep_rows, best, best_fusion, aligned)
