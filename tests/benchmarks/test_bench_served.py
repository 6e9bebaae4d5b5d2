"""``python -m benchmarks.served`` on a small synthetic graph in Milvus Lite."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from benchmarks.served import METHODS, ServerCpu, cpu_per_query, main, questions
from benchmarks.synthetic import entity_name
from llama_index_graphrag_milvus.records import RelationHit, Triplet
from llama_index_graphrag_milvus.retrieval.bridge import distinct_bridges

pytestmark = pytest.mark.milvus  # the command writes a Milvus Lite file


def test_questions_name_entities_of_the_graph() -> None:
    asked = questions(5, 100)
    assert len(asked) == 5 and asked == questions(5, 100)
    assert all(q.startswith("What did the teacher of ") for q in asked)


def test_questions_name_their_entities_only_so_relations_offer_bridges() -> None:
    """The bridge method's path is the one timed: the question names its entity (by the
    word only it has), the other end of its relations is a bridge."""
    question = questions(1, 100)[0]
    named = int(question.split("teacher of ")[1].split()[0])
    t = Triplet(entity_name(named), "relation 7 to", entity_name(named + 1000))
    bridges = distinct_bridges(question, [RelationHit(t.id, t.text, 0.9, t.subject_id,
                                                      t.object_id)])
    assert [b.name for b in bridges] == [entity_name(named + 1000)]


def test_server_cpu_reads_a_process_cpu_time_and_none_without_one() -> None:
    """The reader of the server's CPU, pointed at this process: what it reads grows with
    the work done (at least the 50 ms of CPU this thread spends between two readings)."""
    reader = ServerCpu(os.getpid())
    before = reader.threads()
    assert before and str(threading.get_native_id()) in before
    deadline = time.process_time() + 0.05
    while time.process_time() < deadline:
        sum(range(1000))
    spent = reader.spent(before, reader.threads())
    assert spent is not None and 0.045 <= spent < 5
    missing = ServerCpu(None)
    assert missing.threads() is None and missing.idle_rate() == 0.0
    assert missing.spent(None, before) is None
    gone = ServerCpu(2 ** 22 + 7)  # beyond the largest pid Linux gives
    assert gone.threads() is None and gone.spent(gone.threads(), gone.threads()) is None


def test_server_cpu_is_not_read_per_query_while_the_background_stays_busy(capsys) -> None:
    """A server whose background work does not settle (here: this process, a thread kept
    busy) gets a reader that reads nothing, and says so; a settled one is read."""
    stop = threading.Event()

    def busy() -> None:
        while not stop.is_set():
            sum(range(1000))

    spinner = threading.Thread(target=busy)
    spinner.start()
    try:
        server = ServerCpu(os.getpid())
        rate, settled = server.settled_rate(below=0.05, window=0.2, timeout=0.5)
        assert rate > 0.05 and not settled
        server.settled_rate = lambda: (rate, False)  # type: ignore[method-assign]
        background, per_query = server.for_queries()
    finally:
        stop.set()
        spinner.join()
    assert background == rate and per_query.threads() is None
    assert "did not settle" in capsys.readouterr().out
    quiet = ServerCpu(os.getpid())
    quiet.settled_rate = lambda: (0.01, True)  # type: ignore[method-assign]
    assert quiet.for_queries() == (0.01, quiet)


def test_cpu_per_query_adds_the_server_median_and_bounds_throughput() -> None:
    naive = cpu_per_query([0.001, 0.002, 0.003], [0.003, 0.002, 0.010])
    assert (naive.worker_cpu_mean_ms, naive.server_cpu_p50_ms, naive.total) == (2.0, 3.0, 5.0)
    assert naive.server_cpu_mean_ms == 5.0  # a burst of background work moves the mean
    graph = cpu_per_query([0.004, 0.006], [0.014, 0.016])
    assert graph.total == 20.0 and graph.bound(naive) == 0.25
    lite = cpu_per_query([0.004], None)
    assert lite.total is None and lite.bound(naive) is None and lite.server_cpu_mean_ms is None


def test_served_command_reports_every_method_from_a_fresh_worker(tmp_path: Path,
                                                                  capsys) -> None:
    main(["--sizes", "600", "--queries", "3", "--out", str(tmp_path)])
    report = json.loads((tmp_path / "served.json").read_text())
    [row] = report["results"]
    worker = row["worker"]
    assert row["relations"] == 600 and row["build_s"] >= row["write_s"] > 0
    assert worker["graph_mode"] == "milvus" and worker["queries"] == 3
    assert worker["first_query_s"] > 0 and worker["rss_after_mb"] >= worker["idle_rss_mb"] > 0
    assert set(worker["methods"]) == set(METHODS)
    assert worker["methods"]["naive"]["ratio_p50"] == 1.0
    for name, measured in worker["methods"].items():
        # naive RAG is one passage search; every graph method asks Milvus more than once
        assert (measured["requests_per_query"] == 1.0) == (name == "naive")
        assert measured["cpu_p50_ms"] > 0  # the worker's own CPU per query
        assert measured["worker_cpu_mean_ms"] > 0
        # Milvus Lite runs in no server process of its own: no server share, no bound
        assert measured["server_cpu_p50_ms"] is None and measured["throughput_bound"] is None
    assert worker["methods"]["naive"]["cpu_ratio_p50"] == 1.0
    printed = capsys.readouterr().out
    assert "| 600 |" in printed and "served.json" in printed


def test_served_command_times_the_explorer_then_reuses_the_built_size(tmp_path: Path,
                                                                      capsys) -> None:
    """``--explorer``: the explorer timed in a fresh process; ``--reuse``: a second run
    reopens the size built by the first (no build), with the worker's pools resized."""
    uri = str(tmp_path / "served.db")
    args = ["--sizes", "400", "--queries", "1", "--methods", "bridge (default)", "--uri", uri,
            "--reuse"]
    main([*args, "--explorer", "5", "--out", str(tmp_path / "first")])
    [first] = json.loads((tmp_path / "first" / "served.json").read_text())["results"]
    explorer = first["explorer"]
    assert explorer["neighbourhood"]["calls"] == 5 and explorer["hub neighbourhood"]["calls"] == 20
    assert explorer["summary"]["calls"] == 1 and explorer["entity search"]["calls"] == 5
    assert explorer["neighbourhood"]["p95_ms"] > 0 and explorer["idle_rss_mb"] > 0
    assert "hub neighbourhood p50" in capsys.readouterr().out
    assert first["write_s"] > 0 and "reused" not in first
    main([*args, "--store-threads", "8", "--out", str(tmp_path / "second")])
    report = json.loads((tmp_path / "second" / "served.json").read_text())
    [second] = report["results"]
    assert second["reused"] is True and second["build_s"] == 0.0 and "explorer" not in second
    assert report["config"]["store_threads"] == 8
    assert second["worker"]["methods"]["bridge (default)"]["requests_per_query"] > 1
