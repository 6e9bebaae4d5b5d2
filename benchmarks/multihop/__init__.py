"""Multi-hop retrieval benchmark: graph retrieval versus naive RAG, Recall@k and latency.

One run on one dataset folder (``corpus.jsonl``, ``questions.jsonl`` with ``supporting_ids``,
optional ``triplets.jsonl``, the format of ``shared/benchmarks``):

1. builds one Milvus Lite index: the passages (title in metadata, so the embedding text is
   ``"title: <title>\\n\\n<text>"``) plus the pre-extracted triplets when the folder has them,
   else triplets extracted by the configured LLM, else passages only; ``--extractor spacy``
   extracts the graph without an LLM instead (its own index, so both can be compared);
2. evaluates on that store and those embeddings: naive RAG (``index.as_naive_retriever``), the
   graph retriever without an LLM for each ``--hops`` value (or each ``--graph-methods``
   row: any retriever arguments, such as a ``passage_scoring`` mode), each of those fused
   with naive RAG by core's ``QueryFusionRetriever`` (reciprocal rank fusion, one query, no
   LLM call), and, when an LLM is configured, the graph retriever plus
   :class:`~llama_index_graphrag_milvus.GraphRelationRerank`;
3. reports Recall@k (core's ``Recall`` metric on the top k, averaged over questions; overall
   and per hop count, read from MuSiQue ids ``2hop``/``3hop``/``4hop``, or per HotpotQA
   ``type``), the pool coverage of the graph retriever (gold passages reachable from the full
   pool of candidate relations), retrieve latency p50/p95 per method measured in the same
   run with the query embedding included, the graph/naive latency ratio, the p50 of the
   per-query timings a retriever reports (``metadata["graphrag_timings"]``), the index build
   (and extraction) time and the peak memory;
4. writes a Markdown table to stdout and ``multihop_<dataset>.{md,json,png}`` to ``--out``.

``--sweep`` first runs a small grid (hops, entity/relation top-k, pool size, and optional
variants of further retriever arguments) without an LLM, reports every configuration with its
pool coverage and the recall of its fusion with naive RAG, and adds the best graph
configuration (by Recall@5, then Recall@2) and the best fused one to the timed comparison.

Example::

    python -m benchmarks.multihop \\
        /work/shared/benchmarks/musique_train100 --out bench_out --sweep \\
        --sweep-graph-kwargs '{}' '{"max_relations_per_passage": 1}'
    python -m benchmarks.multihop \\
        /work/shared/benchmarks/musique_train100 --out bench_out --graph-methods \\
        '{"label": "passage h1", "passage_scoring": "passage"}' \\
        '{"label": "relation h2", "passage_scoring": "relation", "hops": 2}'

Modules, in the order of a run:

- :mod:`.data`: the dataset folder (passages, questions and their groups, triplets);
- :mod:`.build`: the embedding model and LLM from the flags, the graph extractors
  (:data:`EXTRACTORS`), the Milvus Lite index and what building it cost
  (:class:`BuildReport`);
- :mod:`.methods`: the retrieval methods under test: the graph rows
  (:class:`GraphMethodSpec` from ``--graph-methods``, :class:`GraphConfig`, :class:`GraphRow`),
  :class:`Method`, :func:`make_methods`, the fusion with naive RAG and its helper retrievers;
- :mod:`.sweep`: the ``--sweep`` grid;
- :mod:`.metrics`: Recall@k, pool coverage, latency percentiles (:func:`summarize`);
- :mod:`.run`: :class:`BenchmarkConfig`, the interleaved evaluation, :func:`run_benchmark`;
- :mod:`.report`: the JSON report, its Markdown tables and the chart;
- :mod:`.cli`: the flags and :func:`main` (``__main__`` runs it).
"""

from __future__ import annotations

from benchmarks.multihop.build import (
    DATASET_EXTRACTOR,
    DEFAULT_EMBED_SPEC,
    EXTRACTORS,
    BuildReport,
    Extractor,
    Ingestion,
    build_index,
    current_rss_mb,
    default_embed_model,
    describe_model,
    ingest,
    load_object,
    openai_llm,
    peak_rss_mb,
    spacy_extractor,
)
from benchmarks.multihop.cli import (
    benchmark_config,
    main,
    parse_args,
    resolve_llm,
)
from benchmarks.multihop.data import (
    CORPUS_ID_KEY,
    TITLE_KEY,
    Dataset,
    Passage,
    Question,
    load_dataset,
    passage_nodes,
    question_group,
)
from benchmarks.multihop.methods import (
    FUSION,
    FUSION_ALIGNED,
    GRAPH,
    GRAPH_RERANK,
    NAIVE,
    RRF_MODE,
    TIMINGS_KEY,
    UNLIMITED_PASSAGES,
    GraphConfig,
    GraphMethodSpec,
    GraphRow,
    Method,
    NeverCalledLLM,
    RelationMetadataStripper,
    ReplayRetriever,
    check_retriever_kwargs,
    corpus_ids,
    describe_fusion,
    fusion_retriever,
    graph_retriever,
    graph_rows,
    make_methods,
    node_timings,
    retriever_arguments,
    retriever_default,
)
from benchmarks.multihop.metrics import (
    QuestionResult,
    coverage,
    percentile,
    recall_at_k,
    summarize,
    summarize_timings,
)
from benchmarks.multihop.report import (
    PACKAGES,
    make_report,
    render_markdown,
    source_hashes,
    versions,
    write_chart,
    write_report,
)
from benchmarks.multihop.run import (
    DEFAULT_OUT,
    BenchmarkConfig,
    evaluate,
    pool_passages,
    run_benchmark,
)
from benchmarks.multihop.sweep import (
    SweepGrid,
    best_sweep_row,
    run_sweep,
)

__all__ = [
    "CORPUS_ID_KEY", "DATASET_EXTRACTOR", "DEFAULT_EMBED_SPEC", "DEFAULT_OUT", "EXTRACTORS",
    "FUSION", "FUSION_ALIGNED", "GRAPH", "GRAPH_RERANK", "NAIVE", "PACKAGES", "RRF_MODE",
    "TIMINGS_KEY", "TITLE_KEY", "UNLIMITED_PASSAGES", "BenchmarkConfig", "BuildReport",
    "Dataset", "Extractor", "GraphConfig", "GraphMethodSpec", "GraphRow", "Ingestion", "Method",
    "NeverCalledLLM", "Passage", "Question", "QuestionResult", "RelationMetadataStripper",
    "ReplayRetriever", "SweepGrid", "benchmark_config", "best_sweep_row", "build_index",
    "check_retriever_kwargs", "corpus_ids", "coverage", "current_rss_mb", "default_embed_model",
    "describe_fusion", "describe_model", "evaluate", "fusion_retriever", "graph_retriever",
    "graph_rows", "ingest", "load_dataset", "load_object", "main", "make_methods",
    "make_report", "node_timings", "openai_llm", "parse_args", "passage_nodes", "peak_rss_mb",
    "percentile", "pool_passages", "question_group", "recall_at_k", "render_markdown",
    "resolve_llm", "retriever_arguments", "retriever_default", "run_benchmark", "run_sweep",
    "source_hashes", "spacy_extractor", "summarize", "summarize_timings", "versions",
    "write_chart", "write_report",
]
