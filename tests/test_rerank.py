"""Tests of GraphRelationRerank on hand-made nodes (no Milvus)."""

from __future__ import annotations

import contextvars
import json
import logging
import time
from typing import Any

import pytest
from llama_index.core.bridge.pydantic import Field
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
from llama_index.core.prompts import PromptTemplate
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from llama_index_graphrag_milvus import GraphRelationRerank, InvalidInputError
from llama_index_graphrag_milvus.rerank import (
    DEFAULT_RERANK_PROMPT,
    RERANK_THREADS,
    parse_selection,
)
from tests.support.fakes import HangingLLM, ScriptedLLM

QUERY = "Who taught the teacher of Euler?"
RERANK_LOGGER = "llama_index_graphrag_milvus.rerank"

# Candidate relations, numbered in the prompt by first appearance over the incoming nodes:
# r1 -> [1], r2 -> [2], r3 -> [3], r4 -> [4].
R1 = ("r1", "Euler was born in Basel")
R2 = ("r2", "Euler was a student of Johann Bernoulli")
R3 = ("r3", "Johann Bernoulli was taught by Jacob Bernoulli")
R4 = ("r4", "Jacob Bernoulli lived in Basel")


def rel(relation: tuple[str, str], score: float = 0.5, hop: int = 0) -> dict[str, Any]:
    return {"id": relation[0], "text": relation[1], "score": score, "hop": hop}


def make_node(name: str, relations: list[tuple[str, str]] | None, score: float
              ) -> NodeWithScore:
    metadata: dict[str, Any] = {}
    if relations is not None:
        metadata["graphrag_relations"] = [rel(r) for r in relations]
    return NodeWithScore(node=TextNode(id_=name, text=f"passage {name}", metadata=metadata),
                         score=score)


def make_nodes() -> list[NodeWithScore]:
    """A (r1, r2), B (r3), C (r2, r4), D (no relations): retriever order A, B, C, D."""
    return [
        make_node("A", [R1, R2], 0.9),
        make_node("B", [R3], 0.8),
        make_node("C", [R2, R4], 0.7),
        make_node("D", None, 0.6),
    ]


def answer(*items: Any) -> str:
    return json.dumps({"thought_process": "First the teacher, then his teacher.",
                       "useful_relationships": list(items)})


def ids(nodes: list[NodeWithScore]) -> list[str]:
    return [n.node.node_id for n in nodes]


def rerank_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == RERANK_LOGGER and r.levelno == logging.WARNING]


# ---------------------------------------------------------------------------- parse_selection


def test_parse_selection_tutorial_format() -> None:
    raw = answer("[3] Johann Bernoulli was taught by Jacob Bernoulli", "[2] Euler was ...")
    assert parse_selection(raw, 4) == [3, 2]


def test_parse_selection_bare_ints_and_number_strings() -> None:
    assert parse_selection(answer(4, "1", " [2]"), 4) == [4, 1, 2]


def test_parse_selection_bare_list() -> None:
    assert parse_selection('["[2] x", 1]', 3) == [2, 1]


def test_parse_selection_drops_invented_and_duplicates() -> None:
    raw = answer("[9] made up", 0, -1, "made up text", True, None, 2.5, {"id": 1}, "[2] a",
                 "[2] a again", 2)
    assert parse_selection(raw, 3) == [2]


def test_parse_selection_reads_quoted_texts_and_not_a_text_s_leading_digits() -> None:
    texts = ["3M acquired Ceradyne", "Euler was born in Basel", "2 Euler studied in Basel"]
    raw = answer("3m acquired  CERADYNE", "Euler was born in Basel.", "[1]")
    # a text that begins with digits is that text, not the number
    assert parse_selection(raw, 3, texts) == [1, 2]
    assert parse_selection(answer("2 Euler studied in Basel", "2. Euler was born", "1)"),
                           3, texts) == [3, 2, 1]  # "2." and "1)" number a list
    assert parse_selection(answer("3M acquired Ceradyne"), 3) == []  # no texts: not id 3
    assert parse_selection(answer("1" * 5000, "[" + "2" * 5000 + "]", "1"), 3) == [1]


def test_parse_selection_reads_a_quoted_text_before_a_list_number_and_whole_floats() -> None:
    texts = ["Hennes Weisweiler coached 1. FC Köln", "x", "2. Bundesliga is the second "
             "division", "1. FC Köln won the Bundesliga"]
    raw = answer("1. FC Köln won the Bundesliga", "2. Bundesliga is the second division")
    assert parse_selection(raw, 4, texts) == [4, 3]
    assert parse_selection(answer(2.0, 1.0, 1.5, float("inf")), 4) == [2, 1]
    assert parse_selection(answer("[2] 1. FC Köln won the Bundesliga"), 4, texts) == [2]


def test_parse_selection_never_reads_an_aside_of_a_broken_answer() -> None:
    cut = '{"thought_process": "Relation [3] is irrelevant", "useful_relationships": ["[1] a", '
    assert parse_selection(cut + '"[2', 4) == [1]  # the complete items of the list
    assert parse_selection(cut[:cut.index("[1]")], 4) is None  # no item: no selection
    broken = '{"thought_process": "[3] no", "useful_relationships": [2, 1]'  # no closing }
    assert parse_selection(broken, 4) == [2, 1]


def test_parse_selection_without_json_list() -> None:
    assert parse_selection("I think relation 2 is best.", 3) is None
    assert parse_selection('{"thought_process": "no list"}', 3) is None
    assert parse_selection('{"useful_relationships": "[1] a"}', 3) is None


def test_parse_selection_prefers_the_answer_object_over_bracketed_prose() -> None:
    raw = ("Relation [4] looks irrelevant, so I keep the others.\n"
           + answer("[3] c", "[1] a"))
    assert parse_selection(raw, 4) == [3, 1]


# ---------------------------------------------------------------------------- good answers


def test_reorders_by_best_chosen_relation_then_retriever_order() -> None:
    llm = ScriptedLLM([answer("[3] Johann Bernoulli was taught by Jacob Bernoulli",
                              "[4] Jacob Bernoulli lived in Basel",
                              "[1] Euler was born in Basel")])
    rerank = GraphRelationRerank(llm=llm, top_n=3)
    result = rerank.postprocess_nodes(make_nodes(), query_str=QUERY)
    assert ids(result) == ["B", "C", "A"]
    assert [n.score for n in result] == pytest.approx([1.0, 0.5, 1 / 3])
    assert [n.node.metadata["graphrag_rerank"] for n in result] == [
        {"relation_rank": 0, "retrieval_score": 0.8},
        {"relation_rank": 1, "retrieval_score": 0.7},
        {"relation_rank": 2, "retrieval_score": 0.9},
    ]
    for n in result:
        assert "graphrag_rerank" in n.node.excluded_llm_metadata_keys
        assert "graphrag_rerank" in n.node.excluded_embed_metadata_keys
    assert len(llm.prompts) == 1


def test_unchosen_and_relationless_nodes_follow_in_retriever_order() -> None:
    llm = ScriptedLLM([answer("[3] c")])
    rerank = GraphRelationRerank(llm=llm, top_n=10)
    result = rerank.postprocess_nodes(make_nodes(), query_str=QUERY)
    assert ids(result) == ["B", "A", "C", "D"]
    assert [n.score for n in result] == [1.0, 0.0, 0.0, 0.0]
    assert result[1].node.metadata["graphrag_rerank"] == {"relation_rank": None,
                                                         "retrieval_score": 0.9}
    assert result[3].node.metadata["graphrag_rerank"]["relation_rank"] is None


def test_shared_relation_ties_keep_retriever_order() -> None:
    # r2 is on A and C: both get rank 0, A stays before C.
    llm = ScriptedLLM([answer("[2] Euler was a student of Johann Bernoulli")])
    result = GraphRelationRerank(llm=llm, top_n=4).postprocess_nodes(
        make_nodes(), query_str=QUERY)
    assert ids(result) == ["A", "C", "B", "D"]
    assert [n.node.metadata["graphrag_rerank"]["relation_rank"] for n in result] == [
        0, 0, None, None]


@pytest.mark.parametrize("top_n", [1, 2, 4, 7])
def test_top_n_respected(top_n: int) -> None:
    llm = ScriptedLLM([answer("[4] d", "[3] c")])
    result = GraphRelationRerank(llm=llm, top_n=top_n).postprocess_nodes(
        make_nodes(), query_str=QUERY)
    assert ids(result) == ["C", "B", "A", "D"][:top_n]


def test_default_top_n_is_two() -> None:
    llm = ScriptedLLM([answer("[4] d")])
    result = GraphRelationRerank(llm=llm).postprocess_nodes(make_nodes(), query_str=QUERY)
    assert ids(result) == ["C", "A"]


@pytest.mark.parametrize(
    "raw",
    [
        "```json\n" + answer("[3] c", "[1] a") + "\n```",
        "```\n" + answer("[3] c", "[1] a") + "\n```\nI hope this helps!",
        "Sure, here is my answer: " + answer("[3] c", "[1] a") + " Let me know if [2] matters.",
        answer(3, 1),
        answer("3", "1"),
        '["[3] c", "[1] a"]',
    ],
    ids=["fenced", "fenced-prose", "prose-around", "ints", "number-strings", "bare-list"],
)
def test_tolerant_answer_formats(raw: str, caplog: pytest.LogCaptureFixture) -> None:
    llm = ScriptedLLM([raw])
    with caplog.at_level(logging.WARNING, logger=RERANK_LOGGER):
        result = GraphRelationRerank(llm=llm, top_n=4).postprocess_nodes(
            make_nodes(), query_str=QUERY)
    assert ids(result) == ["B", "A", "C", "D"]
    assert rerank_warnings(caplog) == []


def test_invented_ids_ignored() -> None:
    llm = ScriptedLLM([answer("[17] Euler invented the telephone", "[0] nothing", "[4] d",
                              "not a number", 99)])
    result = GraphRelationRerank(llm=llm, top_n=4).postprocess_nodes(
        make_nodes(), query_str=QUERY)
    assert ids(result) == ["C", "A", "B", "D"]
    assert result[0].node.metadata["graphrag_rerank"]["relation_rank"] == 0


@pytest.mark.parametrize("raw", [
    answer("[17] made up", "[5] one too far", "no number"),
    '{"useful_relationships": [' + "9" * 5000 + ", 2.5, -1]}",  # past Python's digit limit
])
def test_all_invented_keeps_incoming_order_and_warns(
        raw: str, caplog: pytest.LogCaptureFixture) -> None:
    llm = ScriptedLLM([raw])
    nodes = make_nodes()
    with caplog.at_level(logging.WARNING, logger=RERANK_LOGGER):
        result = GraphRelationRerank(llm=llm, top_n=3).postprocess_nodes(nodes,
                                                                         query_str=QUERY)
    assert ids(result) == ["A", "B", "C"]
    # the fallback keeps the retrieval scores
    assert [n.score for n in result] == [0.9, 0.8, 0.7]
    assert result[0].node.metadata["graphrag_rerank"] == {"relation_rank": None,
                                                         "retrieval_score": 0.9}
    warnings = rerank_warnings(caplog)
    assert len(warnings) == 1
    assert "no known relation" in warnings[0]


# ---------------------------------------------------------------------------- failures


@pytest.mark.parametrize(
    "raw",
    [
        "I cannot decide.",
        '{"thought_process": "Let me think about [relations',
        '{"thought_process": "hmm"}',
        '{"useful_relationships": "[1] a"}',
        "",
        "Sure: " + "[" * 3000,  # a model stuck in a loop: nested past Python's limit
        '{"thought_process": "[3] is irrelevant", "useful_relationships": ["[1] ',  # cut off
    ],
    ids=["prose", "truncated", "missing-key", "not-a-list", "empty", "nested", "cut-off"],
)
def test_malformed_answer_keeps_incoming_order(raw: str,
                                               caplog: pytest.LogCaptureFixture) -> None:
    llm = ScriptedLLM([raw])
    with caplog.at_level(logging.WARNING, logger=RERANK_LOGGER):
        result = GraphRelationRerank(llm=llm, top_n=4).postprocess_nodes(
            make_nodes(), query_str=QUERY)
    assert ids(result) == ["A", "B", "C", "D"]
    assert [n.score for n in result] == [0.9, 0.8, 0.7, 0.6]
    warnings = rerank_warnings(caplog)
    assert len(warnings) == 1
    assert "no JSON useful_relationships list" in warnings[0]


async def test_an_llm_that_echoes_the_prompt_is_not_read_as_a_choice(
        caplog: pytest.LogCaptureFixture) -> None:
    """Core's MockLLM (and some completion endpoints) repeat the prompt: its one-shot example
    ([11], [7], [1]...) must not be taken as the answer."""
    from llama_index.core.llms import MockLLM

    rerank = GraphRelationRerank(llm=MockLLM(), top_n=4)
    with caplog.at_level(logging.WARNING, logger=RERANK_LOGGER):
        sync = rerank.postprocess_nodes(make_nodes(), query_str=QUERY)
        asynch = await rerank.apostprocess_nodes(make_nodes(), query_str=QUERY)
    assert ids(sync) == ids(asynch) == ["A", "B", "C", "D"]
    warnings = rerank_warnings(caplog)
    assert len(warnings) == 2 and all("no JSON useful_relationships" in w for w in warnings)
    # an echo followed by a real answer is read from the answer
    echo_then_answer = ScriptedLLM(lambda prompt: prompt + ' {"useful_relationships": ["[3]"]}')
    result = GraphRelationRerank(llm=echo_then_answer, top_n=1).postprocess_nodes(
        make_nodes(), query_str=QUERY)
    assert result[0].node.metadata["graphrag_rerank"]["relation_rank"] == 0  # chosen first


async def test_llm_exception_keeps_incoming_order(caplog: pytest.LogCaptureFixture) -> None:
    llm = ScriptedLLM(lambda _prompt: RuntimeError("rate limited"))
    rerank = GraphRelationRerank(llm=llm, top_n=3)
    with caplog.at_level(logging.WARNING, logger=RERANK_LOGGER):
        sync = rerank.postprocess_nodes(make_nodes(), query_str=QUERY)
        asynch = await rerank.apostprocess_nodes(make_nodes(), query_str=QUERY)
    assert ids(sync) == ids(asynch) == ["A", "B", "C"]
    warnings = rerank_warnings(caplog)
    assert len(warnings) == 2
    assert all("the LLM failed" in w and "rate limited" in w for w in warnings)


def test_llm_timeout_sync(caplog: pytest.LogCaptureFixture) -> None:
    llm = ScriptedLLM([answer("[4] d")], delay=0.3)
    rerank = GraphRelationRerank(llm=llm, top_n=3, timeout=0.02)
    start = time.perf_counter()
    with caplog.at_level(logging.WARNING, logger=RERANK_LOGGER):
        result = rerank.postprocess_nodes(make_nodes(), query_str=QUERY)
    assert time.perf_counter() - start < 0.25  # did not wait for the LLM
    assert ids(result) == ["A", "B", "C"]
    warnings = rerank_warnings(caplog)
    assert len(warnings) == 1
    assert "no answer within 0.02 s" in warnings[0]


def test_calls_given_up_are_bounded_so_a_dead_llm_leaves_few_threads() -> None:
    """An LLM that never answers leaves at most RERANK_THREADS calls behind: later queries
    keep the incoming order without a call."""
    llm = HangingLLM([], hang_on=QUERY)
    rerank = GraphRelationRerank(llm=llm, top_n=3, timeout=0.02)
    try:
        results = [ids(rerank.postprocess_nodes(make_nodes(), query_str=QUERY))
                   for _ in range(RERANK_THREADS + 3)]
        started = llm.hung
    finally:
        llm.release()
    assert results == [["A", "B", "C"]] * (RERANK_THREADS + 3)
    assert started == RERANK_THREADS  # the later queries did not start a call


async def test_llm_timeout_async(caplog: pytest.LogCaptureFixture) -> None:
    llm = ScriptedLLM([answer("[4] d")], delay=0.3)
    rerank = GraphRelationRerank(llm=llm, top_n=3, timeout=0.02)
    start = time.perf_counter()
    with caplog.at_level(logging.WARNING, logger=RERANK_LOGGER):
        result = await rerank.apostprocess_nodes(make_nodes(), query_str=QUERY)
    assert time.perf_counter() - start < 0.25
    assert ids(result) == ["A", "B", "C"]
    warnings = rerank_warnings(caplog)
    assert len(warnings) == 1
    assert "no answer within 0.02 s" in warnings[0]


@pytest.mark.parametrize("use_async", [False, True])
async def test_llm_raising_timeout_error_is_not_reported_as_our_timeout(
        caplog: pytest.LogCaptureFixture, use_async: bool) -> None:
    llm = ScriptedLLM(lambda _prompt: TimeoutError("upstream read timeout"))
    rerank = GraphRelationRerank(llm=llm, top_n=3, timeout=5.0)
    with caplog.at_level(logging.WARNING, logger=RERANK_LOGGER):
        if use_async:
            result = await rerank.apostprocess_nodes(make_nodes(), query_str=QUERY)
        else:
            result = rerank.postprocess_nodes(make_nodes(), query_str=QUERY)
    assert ids(result) == ["A", "B", "C"]
    (warning,) = rerank_warnings(caplog)
    assert "upstream read timeout" in warning
    assert "no answer within" not in warning


class _Abort(BaseException):
    """Not an Exception: like KeyboardInterrupt, it must not be swallowed."""


@pytest.mark.parametrize("use_async", [False, True])
async def test_base_exceptions_of_the_llm_propagate(use_async: bool) -> None:
    llm = ScriptedLLM(lambda _prompt: _Abort("stop"))
    rerank = GraphRelationRerank(llm=llm)
    with pytest.raises(_Abort, match="stop"):
        if use_async:
            await rerank.apostprocess_nodes(make_nodes(), query_str=QUERY)
        else:
            rerank.postprocess_nodes(make_nodes(), query_str=QUERY)


def test_timeout_none_waits_for_the_llm() -> None:
    llm = ScriptedLLM([answer("[4] d")], delay=0.01)
    result = GraphRelationRerank(llm=llm, top_n=1, timeout=None).postprocess_nodes(
        make_nodes(), query_str=QUERY)
    assert ids(result) == ["C"]


@pytest.mark.parametrize("bad", [{"top_n": 0}, {"max_selected_relations": 0},
                                 {"max_prompt_relations": 0}, {"timeout": 0},
                                 {"timeout": -1.0}])
def test_bad_arguments_raise_the_package_error(bad: dict[str, Any]) -> None:
    name = next(iter(bad))
    with pytest.raises(InvalidInputError, match=f"GraphRelationRerank arguments rejected: "
                                                f"{name}: Input should be .*, got "):
        GraphRelationRerank(llm=ScriptedLLM([]), **bad)


# ---------------------------------------------------------------------------- sync == async


@pytest.mark.parametrize(
    "raw",
    [answer("[4] d", "[1] a"), answer(2), "garbage", answer("[9] x"),
     RuntimeError("boom")],
    ids=["good", "shared", "garbage", "invented", "exception"],
)
async def test_sync_and_async_agree(raw: Any) -> None:
    rerank = GraphRelationRerank(llm=ScriptedLLM([raw, raw]), top_n=4)
    sync = rerank.postprocess_nodes(make_nodes(), query_str=QUERY)
    asynch = await rerank.apostprocess_nodes(make_nodes(), query_str=QUERY)
    assert ids(sync) == ids(asynch)
    assert [n.score for n in sync] == [n.score for n in asynch]
    assert ([n.node.metadata["graphrag_rerank"] for n in sync]
            == [n.node.metadata["graphrag_rerank"] for n in asynch])
    assert rerank.llm.prompts[0] == rerank.llm.prompts[1]


# ---------------------------------------------------------------------------- prompt


def test_prompt_lists_union_of_relations_numbered_and_deduplicated() -> None:
    llm = ScriptedLLM([answer(1)])
    rerank = GraphRelationRerank(llm=llm, max_selected_relations=5)
    rerank.postprocess_nodes(make_nodes(), query_str=QUERY)
    (prompt,) = llm.prompts
    turn = prompt.split("Now your turn", 1)[1]
    assert f"Question:\n{QUERY}\n" in turn
    expected = "\n".join(f"[{i}] {text}" for i, (_, text) in enumerate([R1, R2, R3, R4], 1))
    assert f"Relationship descriptions:\n{expected}\n\nAnswer:" in turn
    assert turn.count(R2[1]) == 1  # on A and C, listed once
    assert "[5]" not in turn
    assert "Select up to 5 relationships" in prompt
    # the one-shot example is there, with literal JSON braces
    assert '{"thought_process": ' in prompt
    assert "[11] Richard the Lionheart led the Third Crusade" in prompt


def many_relations(counts: dict[str, int]) -> list[NodeWithScore]:
    """One node per name, carrying ``counts[name]`` relations of its own, ``<name><i>``."""
    return [make_node(name, [(f"{name}{i}", f"relation {name}{i}") for i in range(count)],
                      1.0 - position / 100)
            for position, (name, count) in enumerate(counts.items())]


def listed(prompt: str) -> list[str]:
    turn = prompt.split("Relationship descriptions:\n")[-1].split("\n\nAnswer:")[0]
    return turn.splitlines()


def test_the_prompt_lists_max_prompt_relations_a_round_at_a_time_over_the_passages(
        caplog: pytest.LogCaptureFixture) -> None:
    llm = ScriptedLLM([answer("[5] relation c0"), answer("[6] beyond the cap")])
    rerank = GraphRelationRerank(llm=llm, max_prompt_relations=5, top_n=3)
    nodes = many_relations({"a": 4, "b": 2, "c": 5})
    with caplog.at_level(logging.INFO, logger=RERANK_LOGGER):
        result = rerank.postprocess_nodes(nodes, query_str=QUERY)
    # rounds: a0 b0 c0, then a1 b1; numbered in the order the passages carry them
    assert listed(llm.prompts[0]) == ["[1] relation a0", "[2] relation a1", "[3] relation b0",
                                      "[4] relation b1", "[5] relation c0"]
    assert ids(result) == ["c", "a", "b"]  # the choice among the listed ones counts
    assert ("GraphRelationRerank: 6 of 11 candidate relations left out of the prompt "
            "(max_prompt_relations=5)") in [r.getMessage() for r in caplog.records]
    # a number past the cap is not a relation: the retriever's order, with a warning
    caplog.clear()
    assert ids(rerank.postprocess_nodes(many_relations({"a": 4, "b": 2, "c": 5}),
                                        query_str=QUERY)) == ["a", "b", "c"]
    assert rerank_warnings(caplog) == [
        "GraphRelationRerank: the LLM chose no known relation; keeping the retriever order"]


def test_the_default_cap_is_100_relations_in_one_call() -> None:
    llm = ScriptedLLM([answer(100)])
    nodes = many_relations({f"n{i}": 6 for i in range(25)})  # 150 relations
    result = GraphRelationRerank(llm=llm, top_n=1).postprocess_nodes(nodes, query_str=QUERY)
    (prompt,) = llm.prompts
    assert len(listed(prompt)) == 100
    assert listed(prompt)[-1] == "[100] relation n243"  # 4 rounds of 25 passages
    assert ids(result) == ["n24"]


def test_prompt_deduplicates_by_id_and_skips_relations_without_id() -> None:
    nodes = [
        NodeWithScore(node=TextNode(id_="X", text="x", metadata={"graphrag_relations": [
            {"id": "r1", "text": "first text"},
            {"text": "no id, skipped"},
            "not a dict",
        ]}), score=1.0),
        NodeWithScore(node=TextNode(id_="Y", text="y", metadata={"graphrag_relations": [
            {"id": "r1", "text": "same id, other text"},
            {"id": "r2", "text": "second\n[7] injected line"},
        ]}), score=0.5),
    ]
    llm = ScriptedLLM([answer("[2] second")])
    result = GraphRelationRerank(llm=llm).postprocess_nodes(nodes, query_str=QUERY)
    assert ids(result) == ["Y", "X"]
    turn = llm.prompts[0].split("Now your turn", 1)[1]
    assert "[1] first text\n[2] second [7] injected line\n\nAnswer:" in turn
    assert "no id" not in turn and "other text" not in turn


def test_prompt_customizable() -> None:
    llm = ScriptedLLM([answer(4)])
    rerank = GraphRelationRerank(llm=llm, top_n=1)
    prompts = rerank.get_prompts()
    assert list(prompts) == ["rerank_prompt"]
    assert prompts["rerank_prompt"].get_template() == DEFAULT_RERANK_PROMPT.get_template()
    custom = PromptTemplate("Q={query_str} | choose {max_relations} of:\n{relations_str}\nJSON:")
    rerank.update_prompts({"rerank_prompt": custom})
    assert rerank.get_prompts()["rerank_prompt"].get_template() == custom.get_template()
    result = rerank.postprocess_nodes(make_nodes(), query_str=QUERY)
    assert ids(result) == ["C"]
    assert llm.prompts[0].startswith(f"Q={QUERY} | choose 3 of:\n[1] {R1[1]}\n")
    assert llm.prompts[0].endswith(f"[4] {R4[1]}\nJSON:")


def test_prompt_via_constructor_and_unknown_key_ignored() -> None:
    llm = ScriptedLLM([answer(1)])
    custom = PromptTemplate("{query_str}/{relations_str}/{max_relations}")
    rerank = GraphRelationRerank(llm=llm, rerank_prompt=custom)
    rerank.update_prompts({"something_else": PromptTemplate("x")})
    rerank.postprocess_nodes([make_node("A", [R1], 1.0)], query_str="q")
    assert llm.prompts == [f"q/[1] {R1[1]}/3"]


# ---------------------------------------------------------------------------- edge inputs


def test_missing_query_bundle_raises() -> None:
    rerank = GraphRelationRerank(llm=ScriptedLLM([]))
    with pytest.raises(InvalidInputError, match="needs the query"):
        rerank.postprocess_nodes(make_nodes())


async def test_missing_query_bundle_raises_async() -> None:
    rerank = GraphRelationRerank(llm=ScriptedLLM([]))
    with pytest.raises(InvalidInputError, match="needs the query"):
        await rerank.apostprocess_nodes(make_nodes())


@pytest.mark.parametrize("query", ["", "  \n"])
async def test_an_empty_question_is_refused_before_the_llm_is_asked(query: str) -> None:
    llm = ScriptedLLM([answer(1)])
    rerank = GraphRelationRerank(llm=llm)
    with pytest.raises(InvalidInputError, match="needs the question to choose relations for"):
        rerank.postprocess_nodes(make_nodes(), query_str=query)
    with pytest.raises(InvalidInputError, match="needs the question to choose relations for"):
        await rerank.apostprocess_nodes(make_nodes(), query_bundle=QueryBundle(query))
    assert llm.prompts == []


async def test_empty_node_list() -> None:
    llm = ScriptedLLM([])
    rerank = GraphRelationRerank(llm=llm)
    assert rerank.postprocess_nodes([], query_str=QUERY) == []
    assert await rerank.apostprocess_nodes([], query_bundle=QueryBundle(QUERY)) == []
    assert llm.prompts == []


async def test_nodes_without_relations_skip_the_llm(caplog: pytest.LogCaptureFixture) -> None:
    llm = ScriptedLLM([])  # any call would fail: no answers left
    nodes = [make_node("A", None, 0.3), make_node("B", [], 0.2), make_node("C", None, 0.1)]
    rerank = GraphRelationRerank(llm=llm, top_n=2)
    with caplog.at_level(logging.WARNING, logger=RERANK_LOGGER):
        sync = rerank.postprocess_nodes(nodes, query_str=QUERY)
        asynch = await rerank.apostprocess_nodes(nodes, query_str=QUERY)
    assert ids(sync) == ids(asynch) == ["A", "B"]
    assert [n.score for n in sync] == [0.3, 0.2]
    assert sync[0].node.metadata["graphrag_rerank"] == {"relation_rank": None,
                                                       "retrieval_score": 0.3}
    assert llm.prompts == []
    assert rerank_warnings(caplog) == []  # B is the graph's: a passage without triplets
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=RERANK_LOGGER):  # none is the graph's
        assert ids(rerank.postprocess_nodes([nodes[0], nodes[2]], query_str=QUERY)) == [
            "A", "C"]
    assert ["none of the 2 nodes has graphrag_relations" in w
            for w in rerank_warnings(caplog)] == [True]


def test_query_bundle_and_query_str_both_given() -> None:
    rerank = GraphRelationRerank(llm=ScriptedLLM([]))
    with pytest.raises(ValueError, match="Cannot specify both"):
        rerank.postprocess_nodes(make_nodes(), query_bundle=QueryBundle("a"), query_str="b")


def test_context_variables_reach_the_llm_call() -> None:
    """The sync path runs the LLM in a worker thread: instrumentation context must follow."""
    var: contextvars.ContextVar[str] = contextvars.ContextVar("rerank_test_var")
    seen: list[str | None] = []

    def script(_prompt: str) -> str:
        seen.append(var.get(None))
        return answer(1)

    token = var.set("outer")
    try:
        GraphRelationRerank(llm=ScriptedLLM(script)).postprocess_nodes(make_nodes(),
                                                                      query_str=QUERY)
    finally:
        var.reset(token)
    assert seen == ["outer"]


def test_class_name_and_serialization() -> None:
    rerank = GraphRelationRerank(llm=ScriptedLLM([]), top_n=5)
    assert GraphRelationRerank.class_name() == "GraphRelationRerank"
    data = rerank.to_dict()
    assert data["top_n"] == 5
    assert data["class_name"] == "GraphRelationRerank"


# ---------------------------------------------------------------------------- instrumentation


class _Recorder(BaseEventHandler):
    events: list[BaseEvent] = Field(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "_Recorder"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        if isinstance(event, (ReRankStartEvent, ReRankEndEvent)):
            self.events.append(event)


@pytest.fixture
def recorder() -> Any:
    root = get_dispatcher()
    handler = _Recorder(events=[])
    root.add_event_handler(handler)
    try:
        yield handler
    finally:
        root.event_handlers.remove(handler)


@pytest.mark.parametrize("use_async", [False, True])
async def test_rerank_events_emitted(recorder: _Recorder, use_async: bool) -> None:
    rerank = GraphRelationRerank(llm=ScriptedLLM([answer(4)]), top_n=2)
    nodes = make_nodes()
    if use_async:
        result = await rerank.apostprocess_nodes(nodes, query_str=QUERY)
    else:
        result = rerank.postprocess_nodes(nodes, query_str=QUERY)
    start, end = recorder.events
    assert isinstance(start, ReRankStartEvent)
    assert isinstance(end, ReRankEndEvent)
    assert isinstance(start.query, QueryBundle) and start.query.query_str == QUERY
    assert ids(start.nodes) == ["A", "B", "C", "D"]
    assert start.top_n == 2
    assert start.model_name == "scripted-llm"
    assert ids(end.nodes) == ids(result) == ["C", "A"]


def test_rerank_events_on_fallback(recorder: _Recorder) -> None:
    rerank = GraphRelationRerank(llm=ScriptedLLM([ValueError("down")]), top_n=1)
    result = rerank.postprocess_nodes(make_nodes(), query_str=QUERY)
    assert [type(e) for e in recorder.events] == [ReRankStartEvent, ReRankEndEvent]
    assert ids(recorder.events[1].nodes) == ids(result) == ["A"]  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------- query engine


class _HandMadeRetriever(BaseRetriever):
    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return make_nodes()


def _engine_script(prompt: str) -> str:
    if "Relationship descriptions:" in prompt:
        return "```json\n" + answer("[3] c", "[4] d") + "\n```"
    return "Jacob Bernoulli."


async def test_inside_retriever_query_engine() -> None:
    llm = ScriptedLLM(_engine_script)
    rerank = GraphRelationRerank(llm=llm, top_n=2)
    engine = RetrieverQueryEngine.from_args(_HandMadeRetriever(), llm=llm,
                                            node_postprocessors=[rerank])
    response = engine.query(QUERY)
    assert str(response) == "Jacob Bernoulli."
    assert ids(response.source_nodes) == ["B", "C"]
    aresponse = await engine.aquery(QUERY)
    assert ids(aresponse.source_nodes) == ["B", "C"]
    # the synthesis prompt sees the passages but not the graph metadata
    synthesis = [p for p in llm.prompts if "Relationship descriptions:" not in p]
    assert synthesis and "passage B" in synthesis[0]
    assert "graphrag_rerank" not in synthesis[0]


def test_selections_past_any_candidate_number_are_ignored() -> None:
    """A 5,000-digit number raised ValueError (Python's int() digit limit)."""
    from llama_index_graphrag_milvus.rerank import parse_selection

    raw = '{"useful_relationships": ["[%s] x", "[2] b"]}' % ("9" * 5000)
    assert parse_selection(raw, 3) == [2]


def test_degenerate_answers_are_read_in_bounded_time() -> None:
    """Each failed try at an opening bracket reads on to the error: an unclosed run of
    arrays cost time in the square of its length (100 KB: 7.6 s) until the tries were
    bounded; the answers still read as before."""
    from llama_index_graphrag_milvus.parsing import MAX_FAILED_OPENINGS, find_json

    assert find_json("[0," * 30_000) is None
    assert find_json("[" * (MAX_FAILED_OPENINGS - 10) + '{"picked": [2]}', key="picked") == {
        "picked": [2]}
    assert find_json("no brace here " * 10_000 + '{"a": 1}') == {"a": 1}
