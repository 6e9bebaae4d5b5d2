"""``python -m benchmarks.graph_options`` on a small synthetic graph in Milvus Lite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.graph_options import main

pytestmark = pytest.mark.milvus  # the command writes a Milvus Lite file


def test_every_option_returns_the_relations_of_the_entities_asked(tmp_path: Path) -> None:
    main(["--relations", "1000", "--queries", "3", "--limit", "20", "--out", str(tmp_path)])
    report = json.loads((tmp_path / "graph_options_lite.json").read_text())
    assert report["config"]["milvus"] == "lite" and report["config"]["build_s"] > 0
    assert report["degrees"]["largest hub"] > report["degrees"]["small entity"] >= 3
    for kind in ("small entity", "largest hub", "8 seeds"):
        options = report[kind]
        assert set(options) == {"filtered search", "filtered query", "adjacency rows"}
        assert options["adjacency rows"]["requests"] == 2
        # below the ARRAY capacity and the query cap, the two exact options miss nothing
        assert options["filtered query"]["recall"] == 1.0
        assert options["adjacency rows"]["recall"] == 1.0
        assert 0.0 < options["filtered search"]["recall"] <= 1.0
    # a small entity's few relations are all found by every option
    assert report["small entity"]["filtered search"]["recall"] == 1.0


def test_the_filtered_search_with_other_ef_values_and_a_chosen_option(tmp_path: Path) -> None:
    main(["--relations", "1000", "--queries", "2", "--limit", "20", "--ef", "40", "80",
          "--only", "filtered search", "filtered search ef=80", "--out", str(tmp_path)])
    report = json.loads((tmp_path / "graph_options_lite.json").read_text())
    assert report["config"]["ef"] == [40, 80]
    for kind in ("small entity", "largest hub", "8 seeds"):
        assert set(report[kind]) == {"filtered search", "filtered search ef=80"}
        assert report[kind]["filtered search ef=80"]["recall"] > 0
