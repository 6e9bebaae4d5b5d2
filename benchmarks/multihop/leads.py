"""How far each graph method is ahead of the strongest simple baseline, with the noise of the
questions it was measured on: a paired bootstrap over the questions.

On 100 questions a Recall@5 moves by about 2.5 points (one standard error) with the questions
drawn, so "+14.3 against a target of +15" cannot tell the two apart. Each graph method's
lead over the strongest of dense, BM25 and hybrid search (on all questions, for each k) is
reported with its 95% interval: the questions resampled with replacement, the same draw for
both methods (the difference of each question's recalls is resampled, which keeps their
correlation). The share of one run's lead in another's (another embedder on the same
questions) is resampled the same way, question by question across both runs.

Every report holds its ``leads`` (and its Markdown a table of them); on saved reports, and for
the share of two runs' leads, see :mod:`benchmarks.multihop.compare`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from benchmarks.multihop.methods import BASELINE_KINDS, GRAPH
from benchmarks.multihop.metrics import recall_at_k

RESAMPLES = 10_000
LEVEL = 0.95
SEED = 0
"""The bootstrap's draws are seeded: the same report always gives the same intervals."""


@dataclass(frozen=True)
class Interval:
    """A statistic over the questions (``value``) and its bootstrap interval, in points (%)."""

    value: float
    low: float
    high: float

    def __str__(self) -> str:
        return f"{self.value:+.1f} [{self.low:+.1f}, {self.high:+.1f}]"


def bootstrap(differences: Sequence[float] | np.ndarray, resamples: int = RESAMPLES,
              level: float = LEVEL, seed: int = SEED) -> Interval:
    """The mean of per-question ``differences`` and its percentile interval over
    ``resamples`` draws of the questions with replacement, in points (x100).

    >>> bootstrap([0.0, 0.5, 1.0, 0.5]).value
    50.0
    >>> i = bootstrap([1.0] * 10); (i.low, i.high)
    (100.0, 100.0)
    """
    values = np.asarray(differences, dtype=np.float64)
    if values.ndim != 1 or len(values) == 0:
        raise ValueError("bootstrap needs one difference per question, and at least one")
    means = values[_draws(len(values), resamples, seed)].mean(axis=1)
    return _interval_of(float(values.mean()), means, level)


def _draws(questions: int, resamples: int, seed: int) -> np.ndarray:
    """``resamples`` draws of ``questions`` question indexes with replacement (seeded)."""
    return np.random.default_rng(seed).integers(0, questions, (resamples, questions))


def _interval_of(value: float, samples: np.ndarray, level: float) -> Interval:
    """``value`` and the central ``level`` percentile interval of ``samples``, x100."""
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(samples, [tail, 100 - tail])
    return Interval(100 * value, 100 * float(low), 100 * float(high))


def _recalls(report: Mapping[str, Any], name: str, k: int) -> np.ndarray:
    return np.array([recall_at_k(q["expected"], q["retrieved"], k)
                     for q in report["per_question"][name]])


def strongest_baseline(report: Mapping[str, Any], k: int) -> str | None:
    """The name of the baseline row (dense, BM25, hybrid) with the highest Recall@k over
    all questions of ``report`` (the first in the report's order on a tie); ``None`` when
    the run has none."""
    names = [m["name"] for m in report["methods"] if m["kind"] in BASELINE_KINDS]
    if not names:
        return None
    return max(names, key=lambda name: float(_recalls(report, name, k).mean()))


def leads(report: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each graph method's Recall@k lead over :func:`strongest_baseline` for every k of the
    run, with its paired bootstrap interval: ``{method: {"recall@5": {"baseline", "value",
    "low", "high", "held_out"}, ...}}`` (points). ``held_out`` is the same lead on the
    questions after the run's ``--validation`` half (``{"value", "low", "high"}``; ``None``
    without a validation half). Empty when the run has no baseline."""
    found: dict[str, dict[str, Any]] = {}
    validation = int(report["config"].get("validation") or 0)
    for k in report["config"]["ks"]:
        baseline = strongest_baseline(report, k)
        if baseline is None:
            return {}
        base = _recalls(report, baseline, k)
        for method in report["methods"]:
            if method["kind"] != GRAPH:
                continue
            differences = _recalls(report, method["name"], k) - base
            held_out = differences[validation:] if 0 < validation < len(differences) else None
            found.setdefault(method["name"], {})[f"recall@{k}"] = {
                "baseline": baseline, **asdict(bootstrap(differences)),
                "held_out": None if held_out is None else asdict(bootstrap(held_out))}
    return found


def _interval(entry: Mapping[str, Any] | None) -> str:
    return "-" if entry is None else str(
        Interval(entry["value"], entry["low"], entry["high"]))


def leads_table(report: Mapping[str, Any]) -> list[str]:
    """The Markdown rows of :func:`leads` (from the report's ``leads`` when it has them),
    with the held-out questions' columns when the run has a validation half."""
    found = report.get("leads") or leads(report)
    if not found:
        return []
    ks = report["config"]["ks"]
    split = any(by_k[f"recall@{k}"].get("held_out") for by_k in found.values() for k in ks)
    header = ["method", *[f"R@{k} lead (95% interval)" for k in ks], "over",
              *([f"R@{k} held-out" for k in ks] if split else [])]
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---|" * (len(header) - 1)]
    for name, by_k in found.items():
        baselines = dict.fromkeys(by_k[f"recall@{k}"]["baseline"] for k in ks)
        cells = [_interval(by_k[f"recall@{k}"]) for k in ks]
        cells.append(" / ".join(baselines))
        if split:
            cells += [_interval(by_k[f"recall@{k}"].get("held_out")) for k in ks]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def share(first: Mapping[str, Any], second: Mapping[str, Any], method: str, k: int,
          resamples: int = RESAMPLES, level: float = LEVEL, seed: int = SEED) -> Interval:
    """The share (in %) of ``first``'s lead of ``method`` over its strongest baseline that
    ``second`` keeps over its own, on the same questions: ``lead(second) / lead(first)``,
    with the questions drawn alike for both runs (each draw's ratio of mean leads; a draw
    whose first lead is 0 is left out).

    Raises:
        ValueError: the runs do not hold the same questions in the same order, one lacks
            ``method`` or a baseline, or the first run's lead is not positive.
    """
    ids = [[q["question_id"] for q in r["per_question"].get(method, [])] for r in (first, second)]
    if not ids[0] or ids[0] != ids[1]:
        raise ValueError(f"both reports need {method!r} on the same questions in the same "
                         "order (run them on the same dataset)")
    differences = []
    for report in (first, second):
        baseline = strongest_baseline(report, k)
        if baseline is None:
            raise ValueError("a report without a baseline row (dense, BM25 or hybrid search)")
        differences.append(_recalls(report, method, k) - _recalls(report, baseline, k))
    a, b = differences
    if a.mean() <= 0:
        raise ValueError(f"the first report's lead of {method!r} is {100 * a.mean():.1f}: "
                         "no share of it can be taken")
    draws = _draws(len(a), resamples, seed)
    first_means, second_means = a[draws].mean(axis=1), b[draws].mean(axis=1)
    kept = first_means > 0
    return _interval_of(float(b.mean() / a.mean()), second_means[kept] / first_means[kept],
                        level)
