"""The scale benchmark end to end on small synthetic graphs and Milvus Lite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.scale import (
    HashedRandomEmbedding,
    main,
    markdown,
    run,
    write_to_milvus,
)
from benchmarks.synthetic import generate
from llama_index_graphrag_milvus import GraphRAGIndex
from llama_index_graphrag_milvus.metadata import RELATIONS_KEY, TRIPLETS_KEY
from llama_index_graphrag_milvus.records import Triplet

pytestmark = pytest.mark.milvus  # every test here opens a Milvus Lite file


def test_synthetic_graph_is_stored_as_ingestion_would_store_it(tmp_path: Path) -> None:
    synthetic = generate(300, dim=16, seed=3)
    index = GraphRAGIndex(uri=str(tmp_path / "s.db"), embed_model=HashedRandomEmbedding(dim=16))
    write_to_milvus(synthetic, index, batch_size=128)
    store = index.store
    assert store.count(store.relation_collection) == 300
    assert store.count(store.passage_collection) == synthetic.num_passages == 30
    assert index.graph.num_relations == 300

    # k-hop: every attached relation is one of the passage's own (a bridge relation is not)
    hits = index.as_retriever(passage_scoring="passage", hops=1).retrieve("synthetic question")
    assert hits
    for hit in hits:
        own = {Triplet(*t).id: Triplet(*t).text for t in hit.node.metadata[TRIPLETS_KEY]}
        assert len(own) == 10  # a passage holds 10 consecutive relations
        for relation in hit.node.metadata[RELATIONS_KEY]:
            assert relation["text"] == own[relation["id"]]


def test_scale_command_writes_a_report_with_every_measurement(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    main(["--sizes", "1000", "3000", "--milvus-max-size", "1000", "--queries", "5",
          "--dim", "16", "--uri", str(tmp_path / "scale.db"), "--out", str(out)])
    report = json.loads((out / "scale.json").read_text())
    small, large = report["results"]
    assert (small["relations"], large["relations"]) == (1000, 3000)
    for row in (small, large):
        assert row["structure_bytes_per_relation"] < 64
        assert 8 < row["text_bytes_per_relation"] < 64  # "entity 12 relation 3 entity 45"
        assert row["entity_table_bytes_per_entity"] >= 4 * 16 + 16 + 8
        assert row["touched_1hop"] > 0 and row["expand_1hop"]["p50_ms"] > 0
        assert row["pcst_1hop"]["p95_ms"] >= row["pcst_1hop"]["p50_ms"] > 0
        assert 1 <= row["pcst_relations_2hop"] <= 100  # within the candidate pool
    assert small["rebuilt_relations"] == 1000  # in a fresh process, which reports its memory
    assert small["rebuild_peak_rss_mb"] >= small["rebuild_rss_before_mb"] > 0
    assert 0 < small["graph_mb"] < 1
    assert small["retrieve"]["ratio_p50"] > 0
    assert "retrieve" not in large  # above --milvus-max-size: in-memory measurements only
    printed = capsys.readouterr().out
    assert markdown(report) in printed
    assert "1-hop expansion p50, 3,000 relations versus 1,000" in printed
    assert "PCST subgraph (prizes and solve, after the expansion), 3,000 relations" in printed


def test_retrieve_is_timed_again_with_a_query_model(tmp_path: Path) -> None:
    report = run([1000], queries=3, milvus_max_size=1000, uri=str(tmp_path / "m.db"),
                 embedded_server=None, dim=16, out=tmp_path / "out",
                 query_model=HashedRandomEmbedding(dim=48))
    row = report["results"][0]
    assert row["retrieve_with_query_model"]["graph"]["p50_ms"] > 0
    assert report["config"]["query_model"] == "HashedRandomEmbedding"
    assert "With the query model embedding each query, 1,000 relations" in markdown(report)
