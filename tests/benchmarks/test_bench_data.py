"""The benchmark folder loader on data it was not written for: every fault is one line naming
the file, the line and the fix (exit code 2 from the commands), never wrong numbers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.multihop.build import BuiltFrom, build_index, dataset_slug
from benchmarks.multihop.data import InputError, check_split, fingerprint, load_dataset
from tests.benchmarks.test_bench_multihop import CORPUS, QUESTIONS, TRIPLETS, write_dataset
from tests.support.fakes import HashEmbedding

REPO = Path(__file__).resolve().parents[2]


def rewrite(folder: Path, name: str, rows: list[Any]) -> None:
    (folder / name).write_text("".join(json.dumps(row) + "\n" for row in rows),
                               encoding="utf-8")


CORPUS_ROWS = [{"id": i, "title": t, "text": x} for i, t, x in CORPUS]
TRIPLET_ROWS = [{"id": i, "triplets": t} for i, t in TRIPLETS.items()]


@pytest.mark.parametrize(("name", "rows", "message"), [
    ("questions.jsonl", [*QUESTIONS, QUESTIONS[0]],
     "questions.jsonl:3: question id '2hop__1_2' is also on line 1"),
    ("corpus.jsonl", [*CORPUS_ROWS, {"id": "c0", "title": "x", "text": "an impostor"}],
     "corpus.jsonl:7: passage id 'c0' is also on line 1"),
    ("questions.jsonl", [{**QUESTIONS[0], "supporting_ids": "c0"}],
     "'supporting_ids' of question '2hop__1_2' must be a list of corpus ids, got 'c0'"),
    ("questions.jsonl", [{k: v for k, v in QUESTIONS[0].items() if k != "question"}],
     "questions.jsonl:1: 'question' must be a non-empty string, got None"),
    ("questions.jsonl", [], "questions.jsonl holds no question"),
    ("corpus.jsonl", [{"id": "c0", "title": "x", "text": "  "}],
     "corpus.jsonl:1: 'text' must be a non-empty string"),
    ("corpus.jsonl", [["c0", "x", "text"]], "corpus.jsonl:1 is a JSON list, not an object"),
    ("corpus.jsonl", [*CORPUS_ROWS, {"id": "big", "text": "word " * 14_000}],
     "corpus.jsonl:7: passage 'big' holds more than the 65,535 bytes"),
    ("triplets.jsonl", [*TRIPLET_ROWS, {"id": "nowhere", "triplets": []}],
     "triplets.jsonl:6: triplets of 'nowhere', which is not a corpus id"),
    ("triplets.jsonl", [{"id": "c0", "triplets": "A B C"}],
     "'triplets' must be a list of [subject, predicate, object] lists"),
])
def test_faults_are_named_with_file_and_line(tmp_path: Path, name: str, rows: list[Any],
                                             message: str) -> None:
    folder = write_dataset(tmp_path / "data")
    rewrite(folder, name, rows)
    with pytest.raises(InputError) as caught:
        load_dataset(folder)
    assert message in str(caught.value)


def test_blank_lines_are_skipped_and_ids_may_be_numbers(tmp_path: Path) -> None:
    folder = write_dataset(tmp_path / "data")
    with (folder / "corpus.jsonl").open("a", encoding="utf-8") as corpus:
        corpus.write('\n{"id": 7, "text": "Seven is a number."}\n\n')
    dataset = load_dataset(folder)
    assert dataset.passages[-1].id == "7" and dataset.passages[-1].title == ""


def test_the_validation_split_must_leave_questions_held_out(tmp_path: Path) -> None:
    dataset = load_dataset(write_dataset(tmp_path / "data"))
    assert check_split(1, dataset) == 1 and check_split(0, dataset) == 0
    for bad in (2, 50, -5):
        with pytest.raises(InputError, match=r"give 0 \(no split\) or fewer than the 2 questions"):
            check_split(bad, dataset)


@pytest.mark.parametrize("command", ["benchmarks.multihop", "benchmarks.extraction",
                                     "benchmarks.ingest"])
def test_the_commands_say_it_in_one_line_with_exit_code_2(tmp_path: Path,
                                                          command: str) -> None:
    folder = write_dataset(tmp_path / "data")
    rewrite(folder, "questions.jsonl", [*QUESTIONS, QUESTIONS[1]])
    done = subprocess.run([sys.executable, "-m", command, str(folder)], cwd=REPO,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    assert "question id '3hop__3_4_5' is also on line 2" in done.stderr


def test_dataset_names_are_file_names_that_do_not_collide() -> None:
    assert dataset_slug("musique_train100") == "musique_train100"
    assert dataset_slug("データ") != dataset_slug("資料")
    assert dataset_slug("データ").startswith("x_")


@pytest.mark.milvus
def test_an_index_is_reused_only_for_the_data_it_was_built_from(tmp_path: Path) -> None:
    """Two folders of the same name (a/data, b/data): the second is built, not handed the
    first one's passages."""
    first, second = (write_dataset(tmp_path / side / "data") for side in ("a", "b"))
    rewrite(second, "corpus.jsonl", [{**row, "text": row["text"].replace("Acme", "Zenith")}
                                     for row in CORPUS_ROWS])
    out, embed_model = tmp_path / "out", HashEmbedding(dim=32)
    datasets = [load_dataset(first), load_dataset(second)]
    assert fingerprint(datasets[0]) != fingerprint(datasets[1])
    for dataset, reused in ((datasets[0], False), (datasets[1], False), (datasets[1], True)):
        index, build = build_index(dataset, out, embed_model, None, reuse=True,
                                   show_progress=False)
        try:
            assert build.reused is reused
            texts = {node.get_content() for node in index.store.all_passages()}
            assert texts == {p.text for p in dataset.passages}
        finally:
            index.close()
    record = BuiltFrom(Path(build.uri), "")
    assert json.loads(record.record.read_text()) and record.read() is None


@pytest.mark.milvus
def test_ingest_takes_an_embedding_factory(tmp_path: Path) -> None:
    """``--embed-model MODULE:CALLABLE`` was called twice (the factory's result called
    again): every factory failed with a TypeError."""
    folder = write_dataset(tmp_path / "data")
    done = subprocess.run([sys.executable, "-m", "benchmarks.ingest", str(folder),
                           "--embed-model", "tests.support.fakes:HashEmbedding",
                           "--uri", str(tmp_path / "ingest.db")], cwd=REPO,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["passages"] == len(CORPUS)
