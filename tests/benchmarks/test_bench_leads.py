"""The leads over the strongest simple baseline, their bootstrap intervals, and the share of
one run's lead another keeps (benchmarks.multihop.leads, benchmarks.multihop.compare)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks.multihop.compare import main
from benchmarks.multihop.leads import bootstrap, leads, leads_table, share, strongest_baseline


def _report(rows: dict[str, tuple[str, list[list[str]]]], gold: list[list[str]],
            ids: list[str] | None = None) -> dict[str, Any]:
    """A saved report of the methods ``rows`` ({name: (kind, retrieved lists)}) on the
    questions whose gold passages are ``gold``."""
    ids = ids or [f"q{i}" for i in range(len(gold))]
    return {
        "benchmark": "multihop",
        "config": {"ks": [1, 2]},
        "methods": [{"name": name, "kind": kind} for name, (kind, _) in rows.items()],
        "per_question": {name: [{"question_id": qid, "expected": g, "retrieved": r}
                                for qid, g, r in zip(ids, gold, lists, strict=True)]
                         for name, (_, lists) in rows.items()},
    }


GOLD = [["a", "b"]] * 4
NAIVE_LISTS = [["x", "a"], ["x", "b"], ["x", "a"], ["y", "x"]]   # R@1 0, R@2 37.5
BM25_LISTS = [["a", "x"], ["b", "y"], ["x", "y"], ["x", "y"]]    # R@1 25, R@2 25
GRAPH_LISTS = [["a", "b"], ["b", "a"], ["a", "x"], ["x", "b"]]   # R@1 37.5, R@2 75


def test_the_baseline_is_the_strongest_at_each_k_and_the_lead_is_paired() -> None:
    report = _report({"naive RAG": ("naive", NAIVE_LISTS), "BM25": ("bm25", BM25_LISTS),
                      "graph": ("graph", GRAPH_LISTS)}, GOLD)
    assert strongest_baseline(report, 1) == "BM25"
    assert strongest_baseline(report, 2) == "naive RAG"
    found = leads(report)
    assert set(found) == {"graph"}  # baselines get no lead of their own
    at1, at2 = found["graph"]["recall@1"], found["graph"]["recall@2"]
    assert at1["baseline"] == "BM25" and at1["value"] == pytest.approx(12.5)
    assert at2["baseline"] == "naive RAG" and at2["value"] == pytest.approx(37.5)
    assert at1["low"] <= at1["value"] <= at1["high"]
    assert at1["held_out"] is None  # no validation half
    table = leads_table(report)
    assert table[0] == "| method | R@1 lead (95% interval) | R@2 lead (95% interval) | over |"
    assert table[2].startswith("| graph | +12.5 [") and table[2].endswith("| BM25 / naive RAG |")

    report["config"]["validation"] = 2  # the last two questions are held out
    held = leads(report)["graph"]["recall@2"]["held_out"]
    assert held["value"] == pytest.approx(100 * ((0.5 - 0.5) + (0.5 - 0.0)) / 2)
    assert leads_table(report)[0].endswith("| R@1 held-out | R@2 held-out |")


def test_a_run_without_a_baseline_has_no_leads() -> None:
    report = _report({"graph": ("graph", GRAPH_LISTS)}, GOLD)
    assert strongest_baseline(report, 2) is None
    assert leads(report) == {} and leads_table(report) == []


def test_the_interval_is_seeded_and_as_wide_as_the_questions_noise() -> None:
    rng = np.random.default_rng(7)
    differences = rng.choice([-0.5, 0.0, 0.5, 1.0], size=100)
    first, again = bootstrap(differences), bootstrap(differences)
    assert first == again  # the same report, the same interval
    assert first.value == pytest.approx(100 * differences.mean())
    standard_error = 100 * differences.std() / np.sqrt(len(differences))
    # a normal 95% interval is about 2 x 1.96 standard errors wide
    assert (first.high - first.low) == pytest.approx(2 * 1.96 * standard_error, rel=0.15)
    assert bootstrap([0.25] * 50).low == bootstrap([0.25] * 50).high == pytest.approx(25.0)
    with pytest.raises(ValueError, match="one difference per question"):
        bootstrap([])


def test_the_share_pairs_the_questions_of_both_runs() -> None:
    first = _report({"naive RAG": ("naive", NAIVE_LISTS), "graph": ("graph", GRAPH_LISTS)},
                    GOLD)
    half = [["a", "b"], ["b", "x"], ["a", "x"], ["x", "y"]]  # R@2 50: naive's 37.5 + 12.5
    second = _report({"naive RAG": ("naive", NAIVE_LISTS), "graph": ("graph", half)}, GOLD)
    kept = share(first, second, "graph", 2)
    assert kept.value == pytest.approx(100 * 12.5 / 37.5)
    assert kept.low <= kept.value <= kept.high
    assert share(first, first, "graph", 2).value == pytest.approx(100.0)

    reordered = _report({"naive RAG": ("naive", NAIVE_LISTS), "graph": ("graph", half)}, GOLD,
                        ids=["q1", "q0", "q2", "q3"])
    with pytest.raises(ValueError, match="same questions in the same order"):
        share(first, reordered, "graph", 2)
    with pytest.raises(ValueError, match="'other' on the same questions"):
        share(first, second, "other", 2)
    behind = _report({"naive RAG": ("naive", GRAPH_LISTS), "graph": ("graph", NAIVE_LISTS)},
                     GOLD)
    with pytest.raises(ValueError, match="no share of it can be taken"):
        share(behind, second, "graph", 2)
    with pytest.raises(ValueError, match="without a baseline row"):
        share(first, _report({"graph": ("graph", half)}, GOLD), "graph", 2)


def test_compare_prints_the_leads_and_the_share(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    first = _report({"naive RAG": ("naive", NAIVE_LISTS), "graph": ("graph", GRAPH_LISTS)},
                    GOLD)
    second = _report({"naive RAG": ("naive", NAIVE_LISTS), "graph": ("graph", NAIVE_LISTS)},
                     GOLD)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(first))
    b.write_text(json.dumps(second))
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "with a 95% paired bootstrap interval" in capsys.readouterr().out
    assert main([str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "| graph | +37.5 [" in out  # R@1: 37.5 against naive RAG's 0
    assert "graph, R@2: the second keeps 0% of the first's lead" in out

    assert main([str(b), str(a)]) == 2  # the first run has no lead to share
    assert "no share of it can be taken" in capsys.readouterr().err
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(SystemExit) as exit_info:
        main([str(tmp_path / "broken.json")])
    assert exit_info.value.code == 2
    assert "cannot read a report" in capsys.readouterr().err
    (tmp_path / "served.json").write_text(json.dumps({"config": {}, "results": []}))
    with pytest.raises(SystemExit):
        main([str(tmp_path / "served.json")])
    assert "is not a report of python -m benchmarks.multihop" in capsys.readouterr().err
