"""``python -m benchmarks.served_questions`` on the tiny multi-hop dataset, on Milvus Lite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.served_questions import main, markdown, run
from tests.benchmarks.test_bench_multihop import QUESTIONS, write_dataset
from tests.support.fakes import HashEmbedding

pytestmark = pytest.mark.milvus  # the command writes a Milvus Lite file


def test_every_question_is_asked_of_each_method_on_the_served_graph(tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "tiny")
    uri = str(tmp_path / "served.db")
    report = run(dataset, uri, None, ["naive", "bridge (default)", "k-hop h1"],
                 tmp_path / "out", HashEmbedding(dim=64))
    assert report["questions"] == len(QUESTIONS) and report["ingest_s"] > 0
    naive, default = report["methods"]["naive"], report["methods"]["bridge (default)"]
    assert naive["ratio_p50"] == 1.0 and naive["requests"] == {1: len(QUESTIONS)}
    assert naive["second_query_embedding_mean_ms"] == 0.0  # only the bridge method has them
    for measured in (default, report["methods"]["k-hop h1"]):
        # a graph method asks Milvus more than once; each question counted once
        assert measured["requests_per_query"] > 1
        assert sum(measured["requests"].values()) == len(QUESTIONS)
        assert measured["p50_ms"] > 0 and measured["worker_cpu_mean_ms"] > 0
        # Lite: no server process, no server share
        assert measured["server_cpu_p50_ms"] is None and measured["throughput_bound"] is None
    assert report["server_idle_cores"] is None
    saved = json.loads((tmp_path / "out" / "served_questions.json").read_text())
    assert saved["methods"].keys() == report["methods"].keys()
    assert "| bridge (default) |" in markdown(report)
    # the written collections are queried again with --reuse, refused without it
    main([str(dataset), "--uri", uri, "--reuse", "--out", str(tmp_path / "again"),
          "--embed-model", "tests.support.fakes:HashEmbedding"])
    again = json.loads((tmp_path / "again" / "served_questions.json").read_text())
    assert again["ingest_s"] == 0.0 and set(again["methods"]) == {"naive", "bridge (default)"}
    with pytest.raises(SystemExit, match="pass --reuse"):
        run(dataset, uri, None, ["naive"], tmp_path / "third", HashEmbedding(dim=64))
    other = write_dataset(tmp_path / "other")
    with (other / "corpus.jsonl").open("a", encoding="utf-8") as corpus:
        corpus.write(json.dumps({"id": "c9", "title": "Extra", "text": "One more."}) + "\n")
    with pytest.raises(SystemExit, match="another dataset"):
        run(other, uri, None, ["naive"], tmp_path / "fourth", HashEmbedding(dim=64), reuse=True)


def test_a_dataset_without_triplets_is_refused(tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "bare", triplets=False)
    with pytest.raises(SystemExit, match="no triplets"):
        run(dataset, str(tmp_path / "bare.db"), None, ["naive"], tmp_path / "out",
            HashEmbedding(dim=64))
