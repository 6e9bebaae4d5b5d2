"""The multi-hop benchmark on a tiny generated dataset, with a hashing embedding.

The recall arithmetic is checked against values computed by hand from rankings that the test
derives independently (brute-force cosine over the fake embedding, not through Milvus).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import (
    BaseNode,
    NodeWithScore,
    QueryBundle,
    TextNode,
    TransformComponent,
)

from benchmarks.multihop import (
    GRAPH,
    NAIVE,
    BenchmarkConfig,
    Extractor,
    GraphConfig,
    Method,
    NeverCalledLLM,
    QuestionResult,
    SweepGrid,
    evaluate,
    load_dataset,
    main,
    parse_args,
    passage_nodes,
    question_group,
    recall_at_k,
    render_markdown,
    run_benchmark,
    summarize,
)
from benchmarks.multihop.agreement import agreement
from llama_index_graphrag_milvus import GraphRAGIndex, GraphRAGRetriever
from llama_index_graphrag_milvus.graph import ExpansionConfig
from tests.support.fakes import HashEmbedding, ScriptedLLM

CORPUS = [
    ("c0", "Acme", "Acme Corporation was founded by Bob Stone in Springfield."),
    ("c1", "Bob Stone", "Bob Stone was born in Riverdale and studied chemistry."),
    ("c2", "Riverdale", "Riverdale is a town on the Green River."),
    ("c3", "Zeta Records", "Zeta Records signed the band Moonlight Echo."),
    ("c4", "Moonlight Echo", "Moonlight Echo released the album Silver Dawn in 1999."),
    ("c5", "Silver Dawn", "Silver Dawn was recorded in an old barn near Lakeside Lake."),
]
TRIPLETS = {
    "c0": [["Acme Corporation", "founded by", "Bob Stone"],
           ["Acme Corporation", "located in", "Springfield"]],
    "c1": [["Bob Stone", "born in", "Riverdale"], ["Bob Stone", "studied", "chemistry"]],
    "c2": [["Riverdale", "is on", "Green River"]],
    "c3": [["Zeta Records", "signed", "Moonlight Echo"]],
    "c4": [["Moonlight Echo", "released", "Silver Dawn"]],
    # c5 has no triplets: no relation reaches it, so the graph pool can never cover it.
}
QUESTIONS = [
    {"id": "2hop__1_2", "question": "Where was the founder of Acme Corporation born?",
     "supporting_ids": ["c0", "c1"]},
    {"id": "3hop__3_4_5",
     "question": "Where was the album of the band that Zeta Records signed recorded?",
     "supporting_ids": ["c3", "c4", "c5"]},
]
# Naive RAG order (the embedding text is "title: <title>\n\n<text>"), checked below against
# brute-force cosine over HashEmbedding(dim=256):
NAIVE_ORDER = {
    "2hop__1_2": ["c0", "c3", "c1", "c2", "c4", "c5"],
    "3hop__3_4_5": ["c3", "c4", "c2", "c1", "c5", "c0"],
}
# By hand from NAIVE_ORDER:
#   2hop: top 2 = {c0, c3} holds 1 of the 2 gold {c0, c1} -> R@2 = 1/2;  top 5 -> R@5 = 1
#   3hop: top 2 = {c3, c4} holds 2 of the 3 gold {c3, c4, c5} -> R@2 = 2/3; top 5 -> R@5 = 1
BASELINES = ["naive", "bm25", "hybrid"]
"""The kinds of the baseline rows every run starts with: dense, BM25 and hybrid search."""
NAIVE_RECALL = {2: {"all": (1 / 2 + 2 / 3) / 2, "2hop": 1 / 2, "3hop": 2 / 3},
                5: {"all": 1.0, "2hop": 1.0, "3hop": 1.0}}
# Every entity is a seed (entity_top_k >= number of entities) and the pool (100) is larger
# than the 7 relations, so the pool reaches c0..c4 but never c5:
#   2hop: {c0, c1} both reachable -> 1;  3hop: c3, c4 of {c3, c4, c5} -> 2/3
POOL_COVERAGE = {"all": (1 + 2 / 3) / 2, "2hop": 1.0, "3hop": 2 / 3}


def write_dataset(folder: Path, triplets: bool = True) -> Path:
    """The tiny dataset as the three JSONL files of ``shared/benchmarks``."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"id": i, "title": t, "text": x}) for i, t, x in CORPUS]
    (folder / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    (folder / "questions.jsonl").write_text("\n".join(json.dumps(q) for q in QUESTIONS) + "\n")
    if triplets:
        (folder / "triplets.jsonl").write_text("\n".join(
            json.dumps({"id": i, "triplets": t}) for i, t in TRIPLETS.items()) + "\n")
    return folder


def config(dataset: Path, out: Path, **kwargs: Any) -> BenchmarkConfig:
    kwargs.setdefault("hops", (1,))
    return BenchmarkConfig(dataset=dataset, out_dir=out, ks=(2, 5), entity_top_k=20,
                           relation_top_k=20, warmup=1, show_progress=False,
                           chart=kwargs.pop("chart", False), **kwargs)


def method(report: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(m for m in report["methods"] if m["kind"] == kind)


@pytest.fixture
def embed_model() -> HashEmbedding:
    return HashEmbedding(dim=256)


def test_recall_arithmetic_on_hand_made_lists() -> None:
    assert recall_at_k(["a", "b"], ["a", "x", "b"], 2) == pytest.approx(0.5)
    assert recall_at_k(["a", "b"], ["a", "x", "b"], 5) == pytest.approx(1.0)
    assert recall_at_k(["a", "b", "c"], [], 5) == 0.0
    results = [
        QuestionResult("2hop__a", "2hop", ("a", "b"), ("a", "x", "y", "z", "b"), 0.010,
                       ("a", "b", "q")),
        QuestionResult("3hop__b", "3hop", ("c", "d", "e"), ("x", "c", "d", "y", "z"), 0.030,
                       ("c",)),
    ]
    summary = summarize(results, (2, 5))
    assert summary["recall@2"] == pytest.approx({"all": (0.5 + 1 / 3) / 2, "2hop": 0.5,
                                                 "3hop": 1 / 3})
    assert summary["recall@5"] == pytest.approx({"all": (1 + 2 / 3) / 2, "2hop": 1.0,
                                                 "3hop": 2 / 3})
    assert summary["pool_coverage"] == pytest.approx({"all": (1 + 1 / 3) / 2, "2hop": 1.0,
                                                      "3hop": 1 / 3})
    assert summary["latency_s"]["p50"] == pytest.approx(0.020)
    assert summary["latency_s"]["p95"] == pytest.approx(0.029)
    assert question_group({"id": "4hop3__1"}) == "4hop"
    assert question_group({"id": "5a7", "type": "comparison"}) == "comparison"


def test_naive_order_precondition(tmp_path: Path, embed_model: HashEmbedding) -> None:
    """The hand-computed naive recalls rest on this order; check it without Milvus."""
    from llama_index.core.schema import MetadataMode

    nodes = passage_nodes(load_dataset(write_dataset(tmp_path / "tiny")))
    texts = [n.get_content(metadata_mode=MetadataMode.EMBED) for n in nodes]
    assert texts[0].startswith("title: Acme\n\n")
    passages = np.asarray(embed_model.get_text_embedding_batch(texts))
    for question in QUESTIONS:
        scores = passages @ np.asarray(embed_model.get_query_embedding(question["question"]))
        order = [CORPUS[i][0] for i in np.argsort(-scores, kind="stable")]
        assert order == NAIVE_ORDER[str(question["id"])]
        assert len(set(np.round(scores, 6))) == len(scores)  # no ties: the order is exact


@pytest.mark.milvus
def test_benchmark_end_to_end(tmp_path: Path, embed_model: HashEmbedding) -> None:
    dataset = write_dataset(tmp_path / "tiny")
    grid = SweepGrid(hops=(1, 2), entity_top_k=(1, 20), relation_top_k=(20,),
                     max_candidate_relations=(2, 100))
    report = run_benchmark(config(dataset, tmp_path / "out", hops=(1, 2), sweep=True,
                                  grid=grid, chart=True), embed_model)

    naive = method(report, "naive")
    assert naive["summary"]["recall@2"] == pytest.approx(NAIVE_RECALL[2])
    assert naive["summary"]["recall@5"] == pytest.approx(NAIVE_RECALL[5])
    assert [r["retrieved"] for r in report["per_question"]["naive RAG"]] == [
        NAIVE_ORDER[str(q["id"])][:5] for q in QUESTIONS]

    graphs = [m for m in report["methods"] if m["kind"] == "graph"]
    assert [m["config"]["hops"] for m in graphs[:2]] == [1, 2]
    for graph in graphs:
        assert graph["summary"]["pool_coverage"] == pytest.approx(POOL_COVERAGE)
        per_question = report["per_question"][graph["name"]]
        assert all("c5" not in r["retrieved"] for r in per_question)
        # Recall@k as defined: the gold share of the top k, averaged over the questions.
        for k in (2, 5):
            expected = np.mean([len(set(r["retrieved"][:k]) & set(r["expected"]))
                                / len(r["expected"]) for r in per_question])
            assert graph["summary"][f"recall@{k}"]["all"] == pytest.approx(expected)
        assert graph["summary"]["latency_ratio_vs_naive"]["p50"] > 0

    # The sweep: 8 configurations, each with its pool coverage; a pool of 2 relations
    # cannot cover more than the full pool does.
    assert len(report["sweep"]) == 8
    by_label = {row["label"]: row["summary"] for row in report["sweep"]}
    assert by_label["h1 e20 r20 pool100"]["pool_coverage"] == pytest.approx(POOL_COVERAGE)
    assert by_label["h1 e20 r20 pool2"]["pool_coverage"]["all"] <= POOL_COVERAGE["all"]
    assert report["sweep_best"]["label"] in by_label
    # Every sweep row also has the recall of its fusion with naive RAG; the best fused
    # configuration is reported and its fusion is timed.
    assert all(set(row["fusion"]) >= {"recall@2", "recall@5"} for row in report["sweep"])
    assert report["sweep_best_fusion"]["label"] in by_label
    fused_labels = [m["name"] for m in report["methods"] if m["kind"] == "fusion"]
    assert fused_labels[:2] == ["fusion h1 e20 r20 pool100", "fusion h2 e20 r20 pool100"]
    assert any(report["sweep_best_fusion"]["label"] in name for name in fused_labels)

    assert report["build"]["relations"] == 7 and report["build"]["passages"] == 6
    assert report["build"]["peak_rss_mb"] > 0 and report["build"]["total_s"] > 0
    assert report["config"]["embed_model"]["class"] == "HashEmbedding"
    assert "llama-index-core" in report["versions"]
    files = report["files"]
    assert json.loads(Path(files["json"]).read_text())["methods"] == report["methods"]
    assert Path(files["chart"]).read_bytes()[:4] == b"\x89PNG"
    table = render_markdown(report)
    assert "| naive RAG | 58.3 | 100.0 |" in table and "pool cov." in table
    assert "| fusion h1 e20 r20 pool100 |" in table and "**best fusion**" in table
    # each graph row's lead over the strongest baseline, with its bootstrap interval
    graph_rows = [m["name"] for m in report["methods"] if m["kind"] == "graph"]
    assert graph_rows and list(report["leads"]) == graph_rows
    lead = report["leads"][graph_rows[0]]["recall@5"]
    assert lead["low"] <= lead["value"] <= lead["high"]
    assert "Lead over the strongest simple baseline" in table


def _rrf(lists: list[list[str]], merge: bool) -> list[str]:
    """Reciprocal rank fusion (k = 60) written out: ``merge`` adds the ranks of one passage
    across lists (matching hashes); without it each list's entry stays on its own. Ties keep
    the first list first (a stable sort over the insertion order)."""
    scores: dict[Any, float] = {}
    for which, ids in enumerate(lists):
        for rank, pid in enumerate(ids):
            key = pid if merge else (which, pid)
            scores[key] = scores.get(key, 0.0) + 1.0 / (rank + 60.0)
    order = sorted(scores, key=lambda key: scores[key], reverse=True)
    return [key if merge else key[1] for key in order]


@pytest.mark.milvus
def test_fusion_is_core_rrf_of_graph_and_naive(tmp_path: Path,
                                               embed_model: HashEmbedding) -> None:
    dataset = write_dataset(tmp_path / "tiny")
    report = run_benchmark(config(dataset, tmp_path / "out"), embed_model)
    assert [m["kind"] for m in report["methods"]] == [*BASELINES, "graph", "fusion",
                                                      "fusion-aligned"]
    fusion, aligned = method(report, "fusion"), method(report, "fusion-aligned")
    assert fusion["name"] == "fusion h1 e20 r20 pool100"
    assert fusion["config"]["mode"] == "reciprocal_rerank"
    assert fusion["config"]["num_queries"] == 1 and fusion["config"]["llm"] is None
    assert fusion["config"]["graph"]["passage_scoring"] == "passage"
    per_question = report["per_question"]
    naive_lists = [r["retrieved"] for r in per_question["naive RAG"]]
    graph_lists = [r["retrieved"] for r in per_question["graph h1 e20 r20 pool100"]]
    # The graph nodes carry their relations in the metadata, so core's fusion (which matches
    # node.hash = text + metadata) cannot add the ranks of a passage that both lists hold:
    # the plain fusion is RRF without merging (then deduplicated), the diagnostic one merges.
    for name, merge in ((fusion["name"], False), (aligned["name"], True)):
        for row, graph, naive in zip(per_question[name], graph_lists, naive_lists,
                                     strict=True):
            assert row["retrieved"] == list(dict.fromkeys(_rrf([graph, naive], merge)))[:5]
        summary = next(m["summary"] for m in report["methods"] if m["name"] == name)
        for k in (2, 5):
            expected = np.mean([len(set(r["retrieved"][:k]) & set(r["expected"]))
                                / len(r["expected"]) for r in per_question[name]])
            assert summary[f"recall@{k}"]["all"] == pytest.approx(expected)
        assert summary["latency_ratio_vs_naive"]["p50"] > 0
        # By hand: with passage scoring the graph list is naive RAG's order without c5 (no
        # relation reaches it). 2hop: both lists are c0 c3 c1 c2 c4 -> R@2 1/2, R@5 1.
        # 3hop: graph c3 c4 c2 c1 c0, naive c3 c4 c2 c1 c5; c0 and c5 tie at 1/64 and the
        # graph list comes first -> top 5 = c3 c4 c2 c1 c0: R@2 2/3, R@5 2/3.
        assert summary["recall@2"] == pytest.approx(NAIVE_RECALL[2])
        assert summary["recall@5"] == pytest.approx({"all": (1 + 2 / 3) / 2, "2hop": 1.0,
                                                     "3hop": 2 / 3})
    assert "fusion h1 e20 r20 pool100 |" in render_markdown(report)


def test_never_called_llm_raises() -> None:
    with pytest.raises(RuntimeError, match="must not call an LLM"):
        NeverCalledLLM().complete("hello")


@pytest.mark.milvus
def test_defaults_follow_the_retriever_and_describe_is_recorded(tmp_path: Path,
                                                                embed_model: HashEmbedding
                                                                ) -> None:
    import inspect

    from benchmarks.multihop.methods import retriever_default

    defaults = {name: p.default for name, p in
                inspect.signature(GraphRAGRetriever.__init__).parameters.items()
                if p.kind is not p.VAR_KEYWORD}
    # the benchmark's knob rows run the k-hop method (the retriever's default is the bridge);
    # its pool settings are the method's own defaults
    assert GraphConfig().retriever_kwargs() == {"passage_scoring": "passage", **{
        name: retriever_default(name) for name in ("hops", "entity_top_k", "relation_top_k",
                                                   "max_candidate_relations")}}
    assert (retriever_default("hops"), retriever_default("max_candidate_relations")) == (
        ExpansionConfig().hops, ExpansionConfig().max_candidate_relations)
    args = parse_args(["folder"])
    assert (args.entity_top_k, args.relation_top_k, args.pool_size) == (
        defaults["entity_top_k"], defaults["relation_top_k"],
        retriever_default("max_candidate_relations"))
    assert retriever_default("hops") in args.hops
    report = run_benchmark(config(write_dataset(tmp_path / "tiny"), tmp_path / "out",
                                  fusion=False), embed_model)
    assert [m["kind"] for m in report["methods"]] == [*BASELINES, "graph"]
    recorded = method(report, "graph")["config"]
    # Every retriever argument with a default is in the record (describe()), and the
    # method's own settings.
    assert set(defaults) - {"self", "index", "llm", "ner_prompt", "callback_manager",
                            "verbose", "method"} <= set(recorded)
    assert recorded["per_hop_max_entities"] == ExpansionConfig().per_hop_max_entities


def test_sweep_graph_kwargs_variants_are_a_dimension() -> None:
    grid = SweepGrid(hops=(1,), entity_top_k=(3,), relation_top_k=(3,),
                     max_candidate_relations=(100,),
                     graph_kwargs=((), (("max_relations_per_passage", 1),)))
    labels = [c.label for c in grid.configs((("per_hop_max_relations", 500),))]
    assert labels == [
        "h1 e3 r3 pool100 per_hop_max_relations=500",
        "h1 e3 r3 pool100 max_relations_per_passage=1 per_hop_max_relations=500"]
    args = parse_args(["folder", "--sweep-graph-kwargs", "{}",
                       '{"max_relations_per_passage": 1}'])
    assert args.sweep_graph_kwargs == [{}, {"max_relations_per_passage": 1}]


@pytest.mark.milvus
def test_no_triplets_no_llm_reports_naive_and_says_why(tmp_path: Path,
                                                       embed_model: HashEmbedding) -> None:
    dataset = write_dataset(tmp_path / "tiny", triplets=False)
    report = run_benchmark(config(dataset, tmp_path / "out", sweep=True), embed_model)
    assert [m["kind"] for m in report["methods"]] == BASELINES
    assert method(report, "naive")["summary"]["recall@2"] == pytest.approx(NAIVE_RECALL[2])
    assert any("needs an extractor" in note for note in report["notes"])
    assert "needs an extractor" in render_markdown(report)


def _scripted_answer(prompt: str) -> str:
    """Extraction answers from TRIPLETS; NER and rerank answers that pick nothing usable."""
    if "Extract knowledge-graph triplets" in prompt:
        for corpus_id, _title, text in CORPUS:
            if text in prompt:
                return json.dumps({"triplets": TRIPLETS.get(corpus_id, [])})
        return '{"triplets": []}'
    return "no JSON here"


@pytest.mark.milvus
def test_llm_extracts_the_graph_and_reranks(tmp_path: Path,
                                            embed_model: HashEmbedding) -> None:
    dataset = write_dataset(tmp_path / "tiny", triplets=False)
    llm = ScriptedLLM(_scripted_answer)
    report = run_benchmark(config(dataset, tmp_path / "out"), embed_model, llm=llm)
    assert report["build"]["relations"] == 7
    assert report["build"]["extract_s"] is not None
    graph, rerank = method(report, "graph"), method(report, "graph+rerank")
    assert graph["summary"]["pool_coverage"] == pytest.approx(POOL_COVERAGE)
    # An LLM whose answers are unusable leaves the retriever order: same recall as graph.
    for k in (2, 5):
        assert rerank["summary"][f"recall@{k}"] == pytest.approx(
            graph["summary"][f"recall@{k}"])


@pytest.mark.milvus
def test_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dataset = write_dataset(tmp_path / "tiny")
    out = tmp_path / "out"
    code = main([str(dataset), "--out", str(out), "--embed-model",
                 "tests.support.fakes:HashEmbedding", "--no-llm", "--hops", "1",
                 "--no-progress", "--no-chart", "--warmup", "0",
                 "--graph-kwargs", '{"per_hop_max_relations": 500}'])
    assert code == 0
    table = capsys.readouterr().out
    assert "| naive RAG |" in table
    assert "| graph h1 e3 r3 pool100 per_hop_max_relations=500 |" in table
    assert (out / "multihop_tiny.json").is_file() and (out / "multihop_tiny.md").is_file()


# ---------------------------------------------------------------------------- graph methods

PASSAGE_SCORING = (("passage_scoring", "passage"),)
CLI = ["--embed-model", "tests.support.fakes:HashEmbedding", "--no-llm", "--no-progress",
       "--no-chart", "--warmup", "0", "--entity-top-k", "20", "--relation-top-k", "20"]


@pytest.mark.milvus
def test_graph_methods_are_rows_each_with_its_fusion(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    dataset = write_dataset(tmp_path / "tiny")
    out = tmp_path / "out"
    code = main([str(dataset), "--out", str(out), *CLI, "--graph-methods",
                 '{"label": "rel h2", "passage_scoring": "relation", "hops": 2}',
                 '{"passage_scoring": "passage", "fusion": false}'])
    assert code == 0
    report = json.loads((out / "multihop_tiny.json").read_text())
    names = [(m["kind"], m["name"]) for m in report["methods"]]
    # One graph method per row, then the fusion of every row that keeps it, then the
    # diagnostic twin of the last fused row; no row for the fusion the second one declined.
    assert names == [
        ("naive", "naive RAG"),
        ("bm25", "BM25 (Milvus full-text search)"),
        ("hybrid", "hybrid RAG (dense + BM25, RRF k=60)"),
        ("graph", "graph rel h2"),
        ("graph", "graph h1 e20 r20 pool100 passage_scoring=passage"),
        ("fusion", "fusion rel h2"),
        ("fusion-aligned", "fusion rel h2, relations metadata stripped (diagnostic)"),
    ]
    relation, passage = report["methods"][3:5]
    assert (relation["config"]["passage_scoring"], relation["config"]["hops"]) == ("relation", 2)
    assert (passage["config"]["passage_scoring"], passage["config"]["hops"]) == ("passage", 1)
    # A left-out knob takes the flag's value; the row's retriever gets it.
    assert relation["config"]["entity_top_k"] == passage["config"]["entity_top_k"] == 20
    fusion = report["methods"][5]
    assert fusion["config"]["graph"]["passage_scoring"] == "relation"
    hybrid_p50 = report["methods"][2]["summary"]["latency_s"]["p50"]
    for entry in report["methods"][1:]:
        summary = entry["summary"]
        assert set(summary["recall@2"]) == {"all", "2hop", "3hop"}
        assert summary["latency_ratio_vs_naive"]["p50"] > 0
        # every row but the baselines against hybrid search too, side by side in the run
        if entry["kind"] in ("bm25", "hybrid"):
            assert "latency_ratio_vs_hybrid" not in summary
        else:
            assert summary["latency_ratio_vs_hybrid"]["p50"] == pytest.approx(
                summary["latency_s"]["p50"] / hybrid_p50)
    for graph in (relation, passage):  # the same pool either way: only the order differs
        assert graph["summary"]["pool_coverage"] == pytest.approx(POOL_COVERAGE)
    assert "pool_coverage" not in fusion["summary"]
    assert report["config"]["graph_methods"] == [
        {"label": "rel h2", "kwargs": {"hops": 2, "passage_scoring": "relation"},
         "fusion": True, "coverage": True},
        {"label": None, "kwargs": {"passage_scoring": "passage"}, "fusion": False,
         "coverage": True}]
    table = capsys.readouterr().out
    assert "| graph rel h2 |" in table and "| fusion rel h2 |" in table
    assert "| R@2 2hop | R@2 3hop |" in table  # the per-hop breakdown covers the rows


@pytest.mark.milvus
def test_graph_method_without_coverage(tmp_path: Path, embed_model: HashEmbedding) -> None:
    from benchmarks.multihop import GraphMethodSpec

    rows = (GraphMethodSpec.from_json({"label": "plain", "passage_scoring": "passage",
                                       "coverage": False, "fusion": False}),)
    report = run_benchmark(config(write_dataset(tmp_path / "tiny"), tmp_path / "out",
                                  graph_methods=rows), embed_model)
    assert [m["name"] for m in report["methods"]] == [
        "naive RAG", "BM25 (Milvus full-text search)", "hybrid RAG (dense + BM25, RRF k=60)",
        "graph plain"]
    assert "pool_coverage" not in report["methods"][3]["summary"]
    assert report["methods"][1]["summary"]["recall@5"]["all"] > 0


@pytest.mark.parametrize(("argv", "message"), [
    (["--graph-methods", "{not json"], "expected a JSON object, got '{not json'"),
    (["--graph-methods", "[1, 2]"], "expected a JSON object"),
    (["--graph-methods", '{"passage_scorng": "relation"}'],
     r"unknown GraphRAGRetriever argument\(s\) passage_scorng; expected .*passage_scoring"),
    (["--graph-methods", '{"similarity_top_k": 3}'],
     r"unknown GraphRAGRetriever argument\(s\) similarity_top_k"),
    (["--graph-methods", '{"fusion": "no"}'], "'fusion' must be true or false, got 'no'"),
    (["--graph-methods", '{"label": ""}'], "'label' must be a non-empty string"),
    (["--graph-methods", '{"label": "a"}', '{"label": "a", "hops": 2}'],
     r"distinct labels; \['a'\]"),
    (["--hops", "1", "--graph-methods", "{}"], "--hops and --graph-methods do not combine"),
    (["--graph-kwargs", '{"hopz": 2}'], r"unknown GraphRAGRetriever argument\(s\) hopz"),
])
def test_graph_methods_flag_errors(argv: list[str], message: str,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parse_args(["folder", *argv])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert "error:" in error
    assert re.search(message, error), error


def test_graph_methods_flag_parses() -> None:
    args = parse_args(["folder", "--graph-methods", '{"label": "ppr-like", "hops": 2}',
                       '{"passage_scoring": "relation", "fusion": false}'])
    specs = args.graph_methods
    assert [(s.label, s.kwargs, s.fusion, s.coverage) for s in specs] == [
        ("ppr-like", (("hops", 2),), True, True),
        (None, (("passage_scoring", "relation"),), False, True)]
    assert parse_args(["folder"]).graph_methods is None


# ---------------------------------------------------------------------------- timings


class TimedRetriever(BaseRetriever):
    """Returns one passage per query with ``graphrag_timings`` scripted per call (or none)."""

    def __init__(self, timings: list[dict[str, float]] | None) -> None:
        super().__init__()
        self.timings = timings
        self.calls = 0

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        metadata: dict[str, Any] = {"corpus_id": "c0"}
        if self.timings is not None:
            metadata["graphrag_timings"] = self.timings[self.calls]
        self.calls += 1
        return [NodeWithScore(node=TextNode(text="x", metadata=metadata), score=1.0)]


@pytest.mark.milvus
def test_retriever_timings_are_aggregated_per_method(tmp_path: Path,
                                                     embed_model: HashEmbedding) -> None:
    questions = load_dataset(write_dataset(tmp_path / "tiny")).questions
    timed = TimedRetriever([{"ppr": 0.002, "seeds": 0.010}, {"ppr": 0.004}])
    methods = [Method("naive RAG", NAIVE, TimedRetriever(None), {}),
               Method("graph ppr", GRAPH, timed, {})]
    assert evaluate(methods, questions, warmup=0, show_progress=False) == []
    assert [r.timings for r in methods[0].results] == [None, None]
    assert [r.timings for r in methods[1].results] == [{"ppr": 0.002, "seeds": 0.010},
                                                       {"ppr": 0.004}]
    naive, graph = (summarize(m.results, (2, 5)) for m in methods)
    assert "timings_s" not in naive
    assert list(graph["timings_s"]) == ["ppr", "seeds"]
    assert graph["timings_s"]["ppr"] == pytest.approx({"p50": 0.003, "p95": 0.0039, "n": 2})
    assert graph["timings_s"]["seeds"] == pytest.approx({"p50": 0.010, "p95": 0.010, "n": 1})
    # In the report: a column per timing name (p50), "-" where a method reports none; the
    # per-question rows carry the timings only where there are some (never naive RAG's).
    report = run_benchmark(config(write_dataset(tmp_path / "tiny"), tmp_path / "out",
                                  fusion=False, graph_kwargs=PASSAGE_SCORING), embed_model)
    assert all("timings" not in row for row in report["per_question"]["naive RAG"])
    for entry in report["methods"]:
        entry["summary"].pop("timings_s", None)
    assert "| p95 ratio | p50 vs hybrid |\n" in render_markdown(report)
    report["methods"][len(BASELINES)]["summary"]["timings_s"] = graph["timings_s"]
    table = render_markdown(report)
    assert "| p50 ratio | p95 ratio | p50 vs hybrid | ppr ms | seeds ms |" in table
    assert re.search(r"\| naive RAG \|.* \| - \| - \|\n", table)
    # p50 in ms; "seeds" came with one question of two, and says so.
    assert re.search(r"\| graph h1 .*passage_scoring=passage \|.* \| 3\.0 \| 10\.0 \(n=1\) \|\n",
                     table)


# ---------------------------------------------------------------------------- extractor


class FakeExtractor(TransformComponent):
    """Writes the triplets of ``TRIPLETS`` (the first ``keep`` of each passage) where
    ``SpacyTripletExtractor`` writes them, as an LLM-free extractor does."""

    keep: int = 10

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        by_text = {text: corpus_id for corpus_id, _title, text in CORPUS}
        for node in nodes:
            triplets = TRIPLETS.get(by_text[node.get_content()], [])[: self.keep]
            node.metadata["graphrag_triplets"] = [list(t) for t in triplets]
        return nodes


def fake_extractors(keep: int = 10) -> dict[str, Extractor]:
    return {"spacy": Extractor("FakeExtractor", lambda show_progress: FakeExtractor(keep=keep))}


@pytest.mark.milvus
def test_extractor_flag_builds_the_graph_of_a_dataset_without_triplets(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dataset = write_dataset(tmp_path / "tiny", triplets=False)
    out = tmp_path / "out"
    code = main([str(dataset), "--out", str(out), *CLI, "--hops", "1", "--no-fusion",
                 "--graph-kwargs", '{"passage_scoring": "passage"}', "--extractor", "spacy"],
                extractors=fake_extractors())
    assert code == 0
    report = json.loads((out / "multihop_tiny.json").read_text())
    build = report["build"]
    assert (build["extractor"], build["graph_source"]) == ("spacy", "FakeExtractor")
    assert build["uri"].endswith("tiny_spacy.db") and Path(build["uri"]).exists()
    assert (build["relations"], build["passages"]) == (7, 6)
    assert build["triplets_per_passage"] == pytest.approx(7 / 6)
    assert build["extract_s"] > 0 and build["extract_passages_per_s"] > 0
    assert report["config"]["extractor"] == "spacy"
    # The extracted graph is the dataset's own here, so the graph method covers as much.
    graph = method(report, "graph")
    assert graph["summary"]["pool_coverage"] == pytest.approx(POOL_COVERAGE)
    table = capsys.readouterr().out
    assert "graph from FakeExtractor" in table and "of which extraction" in table
    assert "triplets per passage" in table


@pytest.mark.milvus
def test_extractor_replaces_the_dataset_triplets_in_its_own_index(
        tmp_path: Path, embed_model: HashEmbedding) -> None:
    dataset = write_dataset(tmp_path / "tiny")
    out = tmp_path / "out"
    from_dataset = run_benchmark(config(dataset, out, fusion=False), embed_model)
    extracted = run_benchmark(config(dataset, out, fusion=False, extractor="spacy",
                                     reuse_index=True),
                              embed_model, extractors=fake_extractors(keep=1))
    assert from_dataset["build"]["relations"] == 7
    assert extracted["build"]["relations"] == 5  # one triplet per passage c0..c4
    assert extracted["build"]["triplets_per_passage"] == pytest.approx(5 / 6)
    assert from_dataset["build"]["extractor"] == "dataset"
    assert from_dataset["build"]["extract_s"] is None
    # Two indexes side by side: the dataset's is still there to be reused.
    assert from_dataset["build"]["uri"] != extracted["build"]["uri"]
    again = run_benchmark(config(dataset, out, fusion=False, reuse_index=True), embed_model)
    assert again["build"]["reused"] and again["build"]["relations"] == 7
    with pytest.raises(ValueError, match="unknown extractor 'regex'; expected 'dataset'"):
        run_benchmark(config(dataset, out, extractor="regex"), embed_model)


@pytest.mark.milvus
def test_a_second_embedder_leaves_the_first_ones_index_reusable(
        tmp_path: Path, embed_model: HashEmbedding) -> None:
    dataset = write_dataset(tmp_path / "tiny")
    out = tmp_path / "out"
    first = run_benchmark(config(dataset, out, fusion=False), embed_model)
    other = HashEmbedding(dim=32, model_name="another-embedder")
    second = run_benchmark(config(dataset, out, fusion=False, reuse_index=True), other)
    assert not second["build"]["reused"] and second["build"]["uri"] == first["build"]["uri"]
    again = run_benchmark(config(dataset, out, fusion=False, reuse_index=True), embed_model)
    assert again["build"]["reused"] and again["build"]["relations"] == 7
    naive = [q["retrieved"] for q in again["per_question"]["naive RAG"]]
    assert naive == [q["retrieved"] for q in first["per_question"]["naive RAG"]]


@pytest.mark.milvus
def test_a_pcst_row_reports_its_subgraph_size_beside_the_khop_pool(
        tmp_path: Path, embed_model: HashEmbedding) -> None:
    from benchmarks.multihop import GraphMethodSpec

    rows = tuple(GraphMethodSpec.from_json(row) for row in (
        {"label": "k-hop", "passage_scoring": "passage", "fusion": False},
        {"label": "pcst", "passage_scoring": "pcst", "fusion": False}))
    report = run_benchmark(config(write_dataset(tmp_path / "tiny"), tmp_path / "out",
                                  graph_methods=rows), embed_model)
    khop, pcst = (m["summary"] for m in report["methods"][len(BASELINES):])
    assert "entities" not in khop["pool_sizes"]
    assert pcst["pool_sizes"]["entities"]["mean"] >= 2
    relations = (pcst["pool_sizes"]["relations"]["mean"], khop["pool_sizes"]["relations"]["mean"])
    assert 1 <= relations[0] <= relations[1]
    assert pcst["pool_passages_mean"] <= khop["pool_passages_mean"]
    assert pcst["timings_s"]["pcst"]["n"] == khop["questions"]["all"]
    table = (tmp_path / "out" / "multihop_tiny.md").read_text()
    assert "| method | passages | relations | entities |" in table
    assert "| graph pcst |" in table and " pcst ms |" in table


@pytest.mark.milvus
def test_ingest_benchmark_reports_the_build_beside_embedding_only(
        tmp_path: Path, embed_model: HashEmbedding) -> None:
    from benchmarks.ingest import run

    report = run(str(write_dataset(tmp_path)), embed_model, str(tmp_path / "ingest.db"))
    stages = report["build_stages_s"]
    assert {"embed_passages", "embed_entities", "embed_relations", "create", "write_passages",
            "write_entities", "write_relations", "flush"} <= set(stages)
    assert all(seconds >= 0 for seconds in stages.values())
    # every figure is rounded to 0.01 s: the stages may add up to half a step more each
    assert sum(stages.values()) <= report["build_s"] + 0.005 * (len(stages) + 1)
    assert set(report["embedding_only_stages_s"]) == {"passages", "entities", "relations"}
    assert report["passages"] > 0 and report["relations"] > 0
    assert report["build_over_embedding"] > 0


@pytest.mark.milvus
def test_consistency_benchmark_measures_latency_and_own_writes(tmp_path: Path) -> None:
    from benchmarks.consistency import (
        WordHashEmbedding,
        measure,
        synthetic_data,
    )

    uri, model = str(tmp_path / "consistency.db"), WordHashEmbedding()
    with GraphRAGIndex(uri=uri, collection_prefix="consistency", embed_model=model) as index:
        index.insert_triplets(synthetic_data(40))
    report = measure(uri, "Session", queries=3, writes=2, model=model)
    assert report["level"] == "Session" and report["read_own_writes"] == "2/2"
    assert 0 < report["graph"]["p50_ms"] <= report["graph"]["p95_ms"]
    assert report["graph_over_naive_p50"] > 0


@pytest.mark.milvus
async def test_throughput_benchmark_runs_both_retrievers_concurrently(tmp_path: Path) -> None:
    from llama_index.core.schema import QueryBundle

    from benchmarks.consistency import WordHashEmbedding, synthetic_data
    from benchmarks.throughput import compare

    model = WordHashEmbedding()
    with GraphRAGIndex(uri=str(tmp_path / "tp.db"), embed_model=model) as index:
        index.insert_triplets(synthetic_data(40))
        bundles = [QueryBundle(query_str=f"Who works with person {i}?",
                               embedding=model.get_query_embedding(f"person {i}"))
                   for i in range(8)]
        report = await compare(index, bundles, concurrency=4, rounds=2)
    assert set(report["qps_median"]) == {"graph", "naive"}
    assert all(len(rounds) == 2 and min(rounds) > 0 for rounds in report["qps_rounds"].values())
    assert report["graph_share_of_naive"] > 0


def test_validation_split_reports_both_halves() -> None:
    results = [QuestionResult("q1", "2hop", ("a",), ("a", "b")),
               QuestionResult("q2", "2hop", ("c",), ("a", "b"))]
    summary = summarize(results, (1,), validation=1)
    assert summary["recall@1"]["validation"] == 1.0
    assert summary["recall@1"]["held-out"] == 0.0
    assert summary["questions"]["validation"] == summary["questions"]["held-out"] == 1
    assert "validation" not in summarize(results, (1,))["recall@1"]


def test_agreement_counts_entities_found_and_relations_linked() -> None:
    llm = {"p1": [["Leonhard Euler", "was a student of", "Johann Bernoulli"],
                  ["Euler", "was born in", "Basel"]],
           "p2": [["Daniel Bernoulli", "wrote", "Hydrodynamica"]]}
    offline = {"p1": [["Leonhard Euler", "study under", "Johann Bernoulli"],
                      ["the Basel", "co-occurs with", "Riehen"]]}
    measured = agreement(llm, offline)
    # p1's four entities are found: two by the same name, "Basel" but for the article,
    # "Euler" in "Leonhard Euler"; none of p2's
    assert measured.llm_entities_found == round(100 * 4 / 6, 1)
    assert measured.llm_entities_found_exact == round(100 * 3 / 6, 1)
    assert measured.llm_relations_linked == round(100 * 1 / 3, 1)
    assert measured.offline_triplets_per_passage == 1.0
