"""The filtered-retrieval benchmark end to end on a small Milvus Lite index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.filtered import FILTERS, build, main

pytestmark = pytest.mark.milvus  # opens Milvus Lite files


def test_every_filter_and_method_is_timed_side_by_side(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["--passages", "120", "--tenants", "6", "--queries", "4", "--out", str(tmp_path)])
    rows = json.loads((tmp_path / "results.json").read_text())
    assert {(r["filter"], r["method"]) for r in rows} == {
        (f, m) for f in FILTERS for m in ("default", "ppr", "naive")}
    for row in rows:
        assert 0 < row["p50_ms"] <= row["p95_ms"]
        if row["filter"] == "none":
            assert row["ratio_to_unfiltered"] == 1.0
    assert "| 120 | tenant == | default |" in capsys.readouterr().out


def test_the_index_spreads_passages_over_tenants(tmp_path: Path) -> None:
    index = build(str(tmp_path / "f.db"), 60, 6)
    filters = FILTERS["tenant =="]
    hits = index.as_retriever(filters=filters, similarity_top_k=20).retrieve(
        "Who was the son of Person3?")
    assert hits and {h.node.metadata["tenant_id"] for h in hits} == {"t3"}
    index.close()
