"""Two-hop questions composed from a folder's triplets (benchmarks.multihop.composed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.multihop.composed import TEMPLATES, chains, compose, main
from benchmarks.multihop.data import fingerprint, load_dataset

PASSAGES = [
    ("p_euler", "Leonhard Euler", "Leonhard Euler was a student of Johann Bernoulli in Basel."),
    ("p_johann", "Johann Bernoulli", "Johann Bernoulli was the father of Daniel Bernoulli."),
    ("p_daniel", "Daniel Bernoulli (physicist)", "Daniel Bernoulli worked on fluid flow."),
    ("p_basel", "Basel", "Basel lies on the Rhine."),
    ("p_other", "Bernoulli family", "The family came from Antwerp."),
]
TRIPLETS: dict[str, list[Any]] = {
    "p_euler": [["Leonhard Euler", "was a student of", "Johann Bernoulli"],
                ["Leonhard Euler", "lived in", "Basel"],
                ["Leonhard Euler", "was a student of a man who taught many people in", "Basel"]],
    "p_johann": [["Johann Bernoulli", "was the father of", "Daniel Bernoulli"],
                 ["Johann Bernoulli", "taught in", "Basel"]],
    "p_daniel": [["Daniel Bernoulli", "worked on", "fluid flow"], ["not", "a triplet"]],
    "p_basel": [["Basel", "lies on", "the Rhine"]],
}


def _folder(root: Path, questions: list[dict[str, Any]] | None = None,
            triplets: bool = True) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "corpus.jsonl").write_text("".join(
        json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in PASSAGES))
    questions = questions or [{"id": "q0", "question": "Where did Euler live?",
                               "supporting_ids": ["p_euler"]}]
    (root / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    if triplets:
        (root / "triplets.jsonl").write_text("".join(
            json.dumps({"id": i, "triplets": t}) + "\n" for i, t in TRIPLETS.items()))
    return root


def test_a_chain_runs_from_a_page_through_another_page_to_an_answer_the_first_lacks(
        tmp_path: Path) -> None:
    found = {(c.first, c.second, c.p1, c.p2, c.z) for c in chains(load_dataset(_folder(tmp_path)))}
    # Euler's page -> Johann's page (its title) -> Daniel; "taught in Basel" is left out
    # because Euler's page already names Basel, and Daniel's page is "(physicist)"-qualified.
    assert found == {
        ("p_euler", "p_johann", "was a student of", "was the father of", "Daniel Bernoulli"),
        ("p_johann", "p_daniel", "was the father of", "worked on", "fluid flow"),
        ("p_euler", "p_basel", "lived in", "lies on", "the Rhine"),
        ("p_johann", "p_basel", "taught in", "lies on", "the Rhine"),
    }


def test_questions_name_the_first_entity_and_both_predicates_never_the_bridge_or_answer(
        tmp_path: Path) -> None:
    records = compose(load_dataset(_folder(tmp_path)), 10, seed=3)
    assert len(records) == 4
    for record in records:
        (x, p1, y), (_, p2, z) = record["composed_from"]
        text = str(record["question"])
        assert text in {t.format(x=x, p1=p1, p2=p2) for t in TEMPLATES}
        assert y not in text and z not in text
        assert record["answer"] == z
        assert str(record["id"]).startswith("2hop_composed__")
    assert compose(load_dataset(tmp_path), 10, seed=3) == records
    assert len(compose(load_dataset(tmp_path), 2, seed=3)) == 2


def test_pairs_already_gold_of_one_question_and_busy_passages_are_left_out(
        tmp_path: Path) -> None:
    tuned = [{"id": "q0", "question": "Who was the son of Euler's teacher?",
              "supporting_ids": ["p_euler", "p_johann", "p_daniel"]}]
    dataset = load_dataset(_folder(tmp_path, tuned))
    pairs = {tuple(r["supporting_ids"]) for r in compose(dataset, 10)}
    assert pairs == {("p_euler", "p_basel"), ("p_johann", "p_basel")}
    capped = compose(load_dataset(_folder(tmp_path / "b")), 10, per_passage=1)
    firsts = [r["supporting_ids"][0] for r in capped]
    assert len(firsts) == len(set(firsts))


def test_the_command_writes_a_folder_whose_index_the_source_s_is(tmp_path: Path,
                                                                   capsys: Any) -> None:
    source = _folder(tmp_path / "src" / "bernoulli")
    out = tmp_path / "composed" / "bernoulli"
    assert main([str(source), str(out), "--questions", "2"]) == 0
    assert "2 questions (of 2 asked)" in capsys.readouterr().out
    composed = load_dataset(out)
    assert len(composed.questions) == 2 and composed.name == "bernoulli"
    assert fingerprint(composed) == fingerprint(load_dataset(source))


@pytest.mark.parametrize("case", ["no triplets", "same folder", "no chain"])
def test_the_command_refuses_what_it_cannot_compose_from(tmp_path: Path, capsys: Any,
                                                         case: str) -> None:
    source = _folder(tmp_path / "src", triplets=case != "no triplets")
    if case == "no chain":
        (source / "triplets.jsonl").write_text(
            json.dumps({"id": "p_basel", "triplets": [["Basel", "lies on", "the Rhine"]]}))
    out = source if case == "same folder" else tmp_path / "out"
    assert main([str(source), str(out)]) == 2
    error = capsys.readouterr().err
    assert {"no triplets": "no triplets.jsonl", "same folder": "is the source folder",
            "no chain": "no two-hop chain"}[case] in error
    assert not (tmp_path / "out").exists()
