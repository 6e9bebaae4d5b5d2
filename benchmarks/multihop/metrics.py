"""Recall@k, pool coverage and latency percentiles of the results of one method."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from llama_index.core.evaluation.retrieval.metrics import Recall


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


def mean(values: Sequence[float]) -> float | None:
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
    timings: dict[str, float] | None = None
    pool_sizes: dict[str, float] | None = None
    """Size of the pool beyond its passages: distinct ``relations`` its passages carry and,
    for a subgraph method, its ``entities``."""


SECOND_QUERIES = "second_query_embedding"
"""The timing of the second queries' embedding (the bridge method), reported apart."""


VALIDATION, HELD_OUT = "validation", "held-out"
"""The two halves of ``--validation N``: the first N questions and the rest."""


def summarize(results: Sequence[QuestionResult], ks: Sequence[int], validation: int = 0
              ) -> dict[str, Any]:
    """Recall@k (overall, per group, and with ``validation`` > 0 on the first
    ``validation`` questions and on the rest), pool coverage and latency percentiles.

    Recalls and coverages are fractions in [0, 1]; latencies are seconds.
    """
    groups = sorted({r.group for r in results if r.group is not None})
    subsets: dict[str, list[QuestionResult]] = {"all": list(results)}
    subsets.update({g: [r for r in results if r.group == g] for g in groups})
    if validation:
        subsets.update({VALIDATION: list(results[:validation]),
                        HELD_OUT: list(results[validation:])})
    summary: dict[str, Any] = {"questions": {name: len(rs) for name, rs in subsets.items()}}
    for k in ks:
        summary[f"recall@{k}"] = {
            name: mean([recall_at_k(r.expected, r.retrieved, k) for r in rs])
            for name, rs in subsets.items()
        }
    if results and all(r.pool is not None for r in results):
        summary["pool_coverage"] = {
            name: mean([coverage(r.expected, r.pool or ()) for r in rs])
            for name, rs in subsets.items()
        }
        summary["pool_passages_mean"] = mean([float(len(r.pool or ())) for r in results])
    latencies = [r.latency_s for r in results if r.latency_s is not None]
    if latencies:
        summary["latency_s"] = {"p50": percentile(latencies, 50),
                                "p95": percentile(latencies, 95),
                                "mean": mean(latencies), "n": len(latencies)}
    own = [r.latency_s - (r.timings or {}).get(SECOND_QUERIES, 0.0)
           for r in results if r.latency_s is not None]
    if latencies and any(SECOND_QUERIES in (r.timings or {}) for r in results):
        summary["latency_without_second_queries_s"] = {
            "p50": percentile(own, 50), "p95": percentile(own, 95), "n": len(own)}
    timings = summarize_timings(results)
    if timings:
        summary["timings_s"] = timings
    sizes = _by_name([r.pool_sizes for r in results])
    if sizes:
        summary["pool_sizes"] = {name: {**_stats(values), "mean": mean(values)}
                                 for name, values in sizes.items()}
    return summary


def _by_name(measures: Sequence[dict[str, float] | None]) -> dict[str, list[float]]:
    """The values of each named measure across results (first seen first)."""
    by_name: dict[str, list[float]] = {}
    for measure in measures:
        for name, value in (measure or {}).items():
            by_name.setdefault(name, []).append(value)
    return by_name


def _stats(values: Sequence[float]) -> dict[str, Any]:
    return {"p50": percentile(values, 50), "p95": percentile(values, 95), "n": len(values)}


def summarize_timings(results: Sequence[QuestionResult]) -> dict[str, dict[str, Any]]:
    """p50, p95 and count of every timing the retriever reported, by name (first seen first).

    >>> summarize_timings([QuestionResult("q1", None, ("a",), (), timings={"ppr": 0.002}),
    ...                    QuestionResult("q2", None, ("a",), (), timings={"ppr": 0.004}),
    ...                    QuestionResult("q3", None, ("a",), ())])
    {'ppr': {'p50': 0.003, 'p95': 0.0039, 'n': 2}}
    """
    return {name: _stats(values)
            for name, values in _by_name([r.timings for r in results]).items()}

