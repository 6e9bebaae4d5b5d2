"""``python -m benchmarks.load`` end to end on a tiny graph in the session's Milvus server,
and the checks it makes, on records built by hand (the checks can fail)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.load import main, parser
from benchmarks.load_checks import (
    Outage,
    QueryRecord,
    WriteRecord,
    delete_coverage,
    restart_report,
    summarize_method,
    violations,
)
from benchmarks.load_workers import PhaseConfig, Questions, target_text
from tests.support.indexes import field_indexes

DELETE = WriteRecord("delete", "load-target-t-3", started=9.0, acknowledged=10.0,
                     passages=("p3",), target=3)
INSERT = WriteRecord("insert", "load-insert-t-3", started=8.0, acknowledged=8.5,
                     passages=("n3",))


def test_a_deleted_passage_returned_after_the_acknowledgement_is_a_violation() -> None:
    queries = [QueryRecord(0, 9.5, 1.0, 3, ("p3", "x")),   # started before the ack: allowed
               QueryRecord(1, 10.2, 0.1, 3, ("x", "p3")),  # started after: a violation
               QueryRecord(1, 10.4, 0.1, 3, ("x",)),       # after, without it: fine
               QueryRecord(2, 11.0, 0.1, None, ("p3",))]   # any question counts
    found = violations(queries, [INSERT, DELETE])
    assert [(v.worker, v.passage, v.late_by_s) for v in found] == [(1, "p3", 0.2), (2, "p3", 1.0)]
    summary = summarize_method(queries, [INSERT, DELETE], 2.0, {3: ["p3"]})
    assert summary["violations"] == 2 and summary["violation_examples"][0]["document"] == (
        "load-target-t-3")
    assert summary["checked"] == 2 and summary["deleted_checked"] == 1
    # the query that ended before the delete began found the target: the check can catch one
    assert (summary["alive_asked"], summary["alive_returned"]) == (0, 0)
    early = QueryRecord(0, 8.0, 0.5, 3, ("p3",))
    assert delete_coverage([early], [DELETE], {3: ["p3"]})["alive_returned"] == 1
    assert violations([early], [DELETE]) == []


def test_a_failed_delete_deletes_nothing_and_errors_are_counted_by_kind() -> None:
    failed = WriteRecord("delete", "d", 9.0, None, ("p3",), target=3, error="E: down")
    queries = [QueryRecord(0, 11.0, 0.1, 3, ("p3",)),
               QueryRecord(0, 11.2, 0.1, None, (), "pymilvus.MilvusException: code 2"),
               QueryRecord(1, 11.3, 0.1, None, (), "pymilvus.MilvusException: code 7")]
    summary = summarize_method(queries, [failed], 1.0, {3: ["p3"]})
    assert summary["violations"] == 0 and summary["checked"] == 0
    assert summary["errors"] == 2
    assert summary["error_kinds"] == {"pymilvus.MilvusException: code N": 2}
    assert summary["qps"] == 3.0 and summary["p50_ms"] == 100.0


def test_errors_of_a_restart_are_reported_apart_with_their_type() -> None:
    store_error = "llama_index_graphrag_milvus.errors.MilvusUnavailableError: down"
    queries = [QueryRecord(0, 1.0, 0.1, None, ("a",)),
               QueryRecord(0, 2.0, 0.5, None, (), store_error),   # during the outage
               QueryRecord(0, 5.0, 0.1, None, ("a",)),            # first success after it
               QueryRecord(0, 6.0, 0.1, None, (), "builtins.KeyError: x"),  # after: an error
               QueryRecord(1, 3.0, 0.2, None, (), "builtins.RuntimeError: odd")]
    outage = Outage(down=2.2, back=4.5)
    report = restart_report(queries, outage)
    assert report.errors_during_outage == 2 and not report.package_errors_only
    assert report.first_success_after_back_s == {"0": 0.6, "1": None}
    assert report.failed_after_first_success == 1
    summary = summarize_method(queries, [], 6.0, {}, outage)
    assert summary["errors"] == 1 and summary["restart"]["errors_during_outage"] == 2
    assert restart_report(queries[:3], outage).package_errors_only


def test_workers_ask_about_each_delete_as_soon_as_they_see_it() -> None:
    config = PhaseConfig(uri="http://x", prefix="p", dim=8, phase="t", method="naive",
                         method_kwargs=None, workers=1, seconds=1.0, queries=None,
                         target_share=1.0, targets=20, entities=100, write_interval=0.0,
                         min_deletes=0, timeout=1.0)
    questions = Questions(config, 0)
    assert questions.next(0)[1] in range(10)
    assert questions.next(3) == (target_text("t", 2), 2)
    assert questions.next(3)[1] in range(13)
    assert questions.next(20)[1] == 19 and 10 <= questions.next(20)[1] < 20


def test_help_names_the_load_and_the_targets(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parser().parse_args(["--help"])
    printed = capsys.readouterr().out
    for option in ("--workers", "--seconds", "--methods", "--reuse", "--restart-at",
                   "--embedded-server", "--uri"):
        assert option in printed


def test_load_command_on_a_tiny_graph(milvus_server, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    milvus_server.drop_all_collections()
    try:
        report = main(["--uri", milvus_server.uri, "--relations", "300", "--workers", "2",
                       "--seconds", "1", "--min-deletes", "1", "--write-interval", "0",
                       "--targets", "3", "--tag", "t", "--out", str(tmp_path),
                       "--index-type", "HNSW", "--index-params",
                       '{"M": 8, "efConstruction": 64}'])
        # every collection the build created got the index asked for, passages included
        client = milvus_server.client
        built = {name: field_indexes(client, name)["embedding"]["index_type"]
                 for name in client.list_collections() if name.startswith("load_300")}
        assert len(built) == 3 and set(built.values()) == {"HNSW"}, built
    finally:
        milvus_server.drop_all_collections()
    assert json.loads((tmp_path / "load.json").read_text()) == report
    assert list(report["methods"]) == ["naive", "bridge (default)"]
    for name, measured in report["methods"].items():
        assert measured["errors"] == 0, (name, measured["error_kinds"])
        assert measured["violations"] == 0, measured["violation_examples"]
        # the writer wrote and deleted, and answers after an acknowledged delete were checked
        assert measured["writer"]["inserts"] >= 1 and measured["writer"]["deletes"] >= 1
        assert measured["checked"] >= 1 and measured["deleted_checked"] >= 1
        # the targets' questions reach their passages while they exist
        assert measured["alive_returned"] == measured["alive_asked"]
        assert measured["queries"] > 0 and measured["p99_ms"] >= measured["p50_ms"] > 0
        # the last worker opened its index after the phase began
        assert measured["workers"]["1"]["late"] and measured["workers"]["1"]["open_s"] > 0
    assert report["methods"]["naive"]["qps_ratio"] == 1.0
    assert "| bridge (default) |" in capsys.readouterr().out
