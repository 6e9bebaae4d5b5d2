"""Tests of GlobalSearchQueryEngine (map-reduce over community reports) with a scripted LLM;
no Milvus: the reports are built by hand."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from llama_index.core.base.response.schema import Response
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.llms import CompletionResponse
from llama_index.core.prompts import PromptTemplate
from llama_index.core.query_engine import RouterQueryEngine
from llama_index.core.schema import MetadataMode, QueryBundle
from llama_index.core.selectors import LLMSingleSelector
from llama_index.core.tools import QueryEngineTool

from llama_index_graphrag_milvus.communities.global_search import (
    DEFAULT_MAP_PROMPT,
    DEFAULT_REDUCE_PROMPT,
    NO_DATA_ANSWER,
    GlobalSearchQueryEngine,
)
from llama_index_graphrag_milvus.communities.map_reduce import (
    GlobalSearchStats,
    MapPoint,
    format_report,
    pack_reports,
    parse_points,
    shuffled_reports,
)
from llama_index_graphrag_milvus.communities.report_retriever import report_node
from llama_index_graphrag_milvus.errors import (
    EmptyIndexError,
    GraphRAGError,
    InvalidInputError,
    LLMAnswerError,
    LLMTimeoutError,
)
from llama_index_graphrag_milvus.llm import count_tokens
from llama_index_graphrag_milvus.metadata import COMMUNITY_KEY
from llama_index_graphrag_milvus.records import Community, CommunityReport, Finding
from tests.support.fakes import ScriptedLLM

QUESTION = "What are the main trades of the guilds of Basel?"
LOGGER = "llama_index_graphrag_milvus.communities.global_search"
_REPORT_ID = re.compile(r"^----Report (\S+)----$", re.MULTILINE)
_BLOCK = re.compile(r"----Analyst (\d+)----\nImportance Score: ([\d.]+)\n(.*)")


def make_report(i: int, rating: float = 5.0, extra: str = "") -> CommunityReport:
    """Report ``c{i:02d}``; for i < 100 every report section has the same token count."""
    return CommunityReport(
        Community(f"c{i:02d}", 0, "", (), (f"e{i}",)), f"Guild {i:02d} of Basel",
        f"The guild {i:02d} trades wool.{extra}",
        (Finding(f"Guild {i:02d} is old", "Founded long ago."),), rating, "why", "llm")


def make_reports(n: int, rating: Callable[[int], float] = lambda i: 5.0
                 ) -> list[CommunityReport]:
    return [make_report(i, rating(i)) for i in range(n)]


SECTION = count_tokens(format_report(make_report(0)))


def report_ids(prompt: str) -> list[str]:
    """The ids of the reports in a map prompt, in batch order."""
    return _REPORT_ID.findall(prompt)


def is_reduce(prompt: str) -> bool:
    return "Analyst" in prompt


def blocks(reduce_prompt: str) -> list[tuple[int, float, str]]:
    """(analyst, score, description) of the blocks of a reduce prompt, in order."""
    return [(int(a), float(s), d) for a, s, d in _BLOCK.findall(reduce_prompt)]


def points(*items: tuple[str, Any]) -> str:
    return json.dumps({"points": [{"description": d, "score": s} for d, s in items]})


def answer_each_batch(point_of: Callable[[list[str]], str], final: str = "final answer"
                      ) -> Callable[[str], str]:
    """A script: map prompts answered by ``point_of(report ids)``, the reduce by ``final``."""
    return lambda prompt: final if is_reduce(prompt) else point_of(report_ids(prompt))


def one_point(ids: list[str], score: int = 50) -> str:
    return points((f"{ids[0]} trades wool [Data: Reports ({', '.join(ids)})]", score))


def engine_for(llm: ScriptedLLM, reports: Sequence[CommunityReport], **kwargs: Any
               ) -> GlobalSearchQueryEngine:
    return GlobalSearchQueryEngine(lambda: reports, llm=llm, **kwargs)


def ask(engine: GlobalSearchQueryEngine) -> Response:
    response = engine.query(QUESTION)
    assert isinstance(response, Response)
    return response


async def aask(engine: GlobalSearchQueryEngine) -> Response:
    response = await engine.aquery(QUESTION)
    assert isinstance(response, Response)
    return response


def stats_of(response: Any) -> GlobalSearchStats:
    return GlobalSearchStats(**response.metadata)


def expected_batches(reports: Sequence[CommunityReport], budget: int, seed: int = 86
                     ) -> list[list[str]]:
    return [[r.id for r in b.reports]
            for b in pack_reports(shuffled_reports(reports, seed), budget)]


class InFlightLLM(ScriptedLLM):
    """A ScriptedLLM that counts its async calls in flight (``peak``); reduce calls sleep
    ``reduce_delay`` seconds instead of ``delay``."""

    _guard: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _active: int = PrivateAttr(default=0)
    _peak: int = PrivateAttr(default=0)
    _reduce_delay: float | None = PrivateAttr(default=None)

    def __init__(self, script: Callable[[str], Any], delay: float = 0.0,
                 reduce_delay: float | None = None) -> None:
        super().__init__(script, delay=delay)
        self._reduce_delay = reduce_delay

    @property
    def peak(self) -> int:
        return self._peak

    async def acomplete(self, prompt: str, formatted: bool = False,
                        **kwargs: Any) -> CompletionResponse:
        with self._guard:
            self._active += 1
            self._peak = max(self._peak, self._active)
        try:
            if self._reduce_delay is not None and is_reduce(prompt):
                await asyncio.sleep(self._reduce_delay)
                return CompletionResponse(text=self._answer(prompt))
            return await super().acomplete(prompt, formatted, **kwargs)
        finally:
            with self._guard:
                self._active -= 1


# ---------------------------------------------------------------------------- the flow


def test_llm_calls_are_batches_plus_one() -> None:
    assert SECTION > 10  # the reports are built so that every section has this many tokens
    reports = make_reports(30)
    llm = ScriptedLLM(answer_each_batch(one_point))
    response = ask(engine_for(llm, reports, batch_max_tokens=4 * SECTION))

    stats = stats_of(response)
    assert stats.batches == 8  # ceil(30 / 4)
    assert len(llm.prompts) == stats.batches + 1 == 9
    assert stats.map_calls == 8 and stats.map_failures == 0 and stats.reduce_called
    assert (stats.reports, stats.reports_truncated) == (30, 0)
    assert stats.points_kept == stats.points_in_reduce == 8 and stats.points_dropped == 0
    assert response.response == "final answer"
    map_prompts = [p for p in llm.prompts if not is_reduce(p)]
    assert len(map_prompts) == 8 and sum(is_reduce(p) for p in llm.prompts) == 1
    ids = [i for p in map_prompts for i in report_ids(p)]
    assert sorted(ids) == [r.id for r in reports]  # each report in exactly one batch
    assert all(len(report_ids(p)) <= 4 for p in map_prompts)
    assert all(QUESTION in p for p in llm.prompts)
    titles = {r.id: r.title for r in reports}
    assert all(titles[i] in p for p in map_prompts for i in report_ids(p))
    # every batch gave a point of score 50: all reports are sources, scored 0.5
    assert sorted(n.node.node_id for n in response.source_nodes) == sorted(titles)
    assert {n.score for n in response.source_nodes} == {0.5}


def test_map_prompt_lists_id_title_rating_and_text() -> None:
    reports = [make_report(1, rating=8.5)]
    llm = ScriptedLLM(answer_each_batch(one_point))
    ask(engine_for(llm, reports))
    map_prompt = llm.prompts[0]
    assert "----Report c01----\nTitle: Guild 01 of Basel\nRating: 8.5\n" in map_prompt
    assert reports[0].as_text() in map_prompt


def test_score_zero_points_are_dropped_and_points_ranked() -> None:
    reports = make_reports(12)
    budget = 3 * SECTION
    batches = expected_batches(reports, budget)
    assert len(batches) == 4
    rank_of = {batch[0]: n for n, batch in enumerate(batches)}

    def point_of(ids: list[str]) -> str:
        n = rank_of[ids[0]]
        # per batch: two tied points (y before x: point order, not alphabetical), a score
        # of its own, a score-0 point
        return points((f"tie-y of batch {n}", 60), (f"zero of batch {n}", 0),
                      (f"tie-x of batch {n}", 60), (f"own of batch {n}", 10 + 20 * n))

    llm = ScriptedLLM(answer_each_batch(point_of))
    response = ask(engine_for(llm, reports, batch_max_tokens=budget))
    stats = stats_of(response)
    assert (stats.points_kept, stats.points_dropped) == (12, 4)
    reduce_prompt = next(p for p in llm.prompts if is_reduce(p))
    assert "zero of batch" not in reduce_prompt
    # score descending; ties in batch order (analyst n is batch n), then in point order
    assert blocks(reduce_prompt) == [
        (4, 70.0, "own of batch 3"),
        *[(n + 1, 60.0, f"tie-{c} of batch {n}") for n in range(4) for c in "yx"],
        (3, 50.0, "own of batch 2"), (2, 30.0, "own of batch 1"), (1, 10.0, "own of batch 0")]
    # sources: best score of their batch / 100, best batch first
    assert [n.score for n in response.source_nodes] == [0.7] * 3 + [0.6] * 9
    assert [n.node.node_id for n in response.source_nodes[:3]] == batches[3]


def test_malformed_map_answers_contribute_nothing(caplog: pytest.LogCaptureFixture) -> None:
    reports = make_reports(10)
    budget = 2 * SECTION
    batches = expected_batches(reports, budget)
    assert len(batches) == 5
    answers: dict[str, Any] = {
        batches[0][0]: "I think the guilds trade wool.",  # not JSON
        batches[1][0]: '{"answer": "wool"}',  # JSON without points
        batches[2][0]: json.dumps({"points": [  # every point malformed: a failure too
            {"description": "bad score", "score": "high"}, {"description": "no score"},
            {"description": "", "score": 50}, {"score": 40}]}),
        batches[3][0]: RuntimeError("LLM down"),  # the LLM raises
        batches[4][0]: "```json\n" + points(("good [Data: Reports (x)]", "80")) + "\n```",
    }
    llm = ScriptedLLM(answer_each_batch(lambda ids: answers[ids[0]]))
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        response = ask(engine_for(llm, reports, batch_max_tokens=budget))
    stats = stats_of(response)
    assert (stats.batches, stats.map_calls, stats.map_failures) == (5, 5, 4)
    assert (stats.points_kept, stats.points_dropped) == (1, 0)
    assert stats.reduce_called and response.response == "final answer"
    assert len(llm.prompts) == 6
    assert blocks(next(p for p in llm.prompts if is_reduce(p))) == [
        (5, 80.0, "good [Data: Reports (x)]")]
    assert [n.node.node_id for n in response.source_nodes] == batches[4]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 4
    assert any("LLM down" in w for w in warnings)
    assert sum("no JSON points" in w for w in warnings) == 3


def test_no_points_means_no_reduce_call() -> None:
    reports = make_reports(9)
    llm = ScriptedLLM(answer_each_batch(
        lambda ids: points(("I don't know [Data: Reports ()]", 0))))
    response = ask(engine_for(llm, reports, batch_max_tokens=3 * SECTION))
    stats = stats_of(response)
    assert response.response == NO_DATA_ANSWER
    assert len(llm.prompts) == stats.batches == 3
    assert not any(is_reduce(p) for p in llm.prompts)
    assert not stats.reduce_called and stats.points_kept == 0 and stats.points_dropped == 3
    assert response.source_nodes == []


def test_reduce_budget_keeps_the_best_points() -> None:
    reports = make_reports(6)
    scores = iter(range(10, 100, 10))
    llm = ScriptedLLM(answer_each_batch(lambda ids: one_point(ids, next(scores))))
    block = count_tokens("----Analyst 1----\nImportance Score: 60\nc00 trades wool "
                         "[Data: Reports (c00)]")
    engine = engine_for(llm, reports, batch_max_tokens=SECTION, reduce_max_tokens=2 * block)
    stats = stats_of(ask(engine))
    assert (stats.points_kept, stats.points_in_reduce) == (6, 2)
    found = blocks(next(p for p in llm.prompts if is_reduce(p)))
    assert [b[1] for b in found] == [60.0, 50.0]


def test_oversized_report_is_truncated_to_its_own_batch() -> None:
    big = make_report(50, extra=" Wool and cloth." * 200)
    reports = [*make_reports(4), big]
    budget = 2 * SECTION
    llm = ScriptedLLM(answer_each_batch(one_point))
    stats = stats_of(ask(engine_for(llm, reports, batch_max_tokens=budget)))
    batches = expected_batches(reports, budget)
    assert ["c50"] in batches and len(batches) in (3, 4)  # 3 or 4: where the shuffle puts it
    assert stats.reports_truncated == 1 and stats.batches == len(batches)
    big_prompt = next(p for p in llm.prompts if "c50" in report_ids(p))
    assert report_ids(big_prompt) == ["c50"]
    context = big_prompt.split("---Reports---\n", 1)[1].split("\n\n---Question---", 1)[0]
    assert count_tokens(context) <= budget
    assert context.startswith("----Report c50----\nTitle: Guild 50 of Basel")
    assert len(context) < len(format_report(big))


def test_min_rating_filters_reports() -> None:
    reports = make_reports(20, rating=lambda i: float(i % 10))
    llm = ScriptedLLM(answer_each_batch(one_point))
    response = ask(engine_for(llm, reports, min_rating=7, batch_max_tokens=2 * SECTION))
    mapped = {i for p in llm.prompts if not is_reduce(p) for i in report_ids(p)}
    assert mapped == {r.id for r in reports if r.rating >= 7}
    assert stats_of(response).reports == 6


def test_min_rating_above_every_report_answers_no_data(caplog: pytest.LogCaptureFixture
                                                       ) -> None:
    llm = ScriptedLLM(answer_each_batch(one_point))
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        response = ask(engine_for(llm, make_reports(3), min_rating=9))
    assert response.response == NO_DATA_ANSWER and llm.prompts == []
    assert stats_of(response).batches == 0
    assert "min_rating" in caplog.text


def test_batching_is_deterministic_with_the_seed() -> None:
    reports = make_reports(30)

    def batches_of(seed: int) -> list[list[str]]:
        llm = ScriptedLLM(answer_each_batch(one_point))
        ask(engine_for(llm, reports, batch_max_tokens=5 * SECTION, shuffle_seed=seed,
                       max_concurrency=1))
        return [report_ids(p) for p in llm.prompts if not is_reduce(p)]

    first = batches_of(86)
    assert first == batches_of(86) == expected_batches(reports, 5 * SECTION, seed=86)
    assert first[0] != [r.id for r in reports[:5]]  # shuffled, not in input order
    assert first != batches_of(7)
    assert sorted(map(sorted, first)) != sorted(map(sorted, batches_of(7)))


async def test_sync_and_async_give_the_same_answer() -> None:
    reports = make_reports(20)

    def script(prompt: str) -> str:
        if is_reduce(prompt):
            return "answer from " + ",".join(d for _, _, d in blocks(prompt))
        ids = report_ids(prompt)
        return one_point(ids, 10 + int(ids[0][1:]))

    kwargs = {"batch_max_tokens": 3 * SECTION}
    sync = ask(engine_for(ScriptedLLM(script), reports, **kwargs))
    asynced = await aask(engine_for(ScriptedLLM(script), reports, **kwargs))
    assert sync.response == asynced.response and str(sync).startswith("answer from c")
    assert [(n.node.node_id, n.score) for n in sync.source_nodes] == [
        (n.node.node_id, n.score) for n in asynced.source_nodes]
    sync_stats, async_stats = stats_of(sync).as_dict(), stats_of(asynced).as_dict()
    sync_stats.pop("seconds")
    async_stats.pop("seconds")
    assert sync_stats == async_stats


async def test_sync_query_works_inside_a_running_loop() -> None:
    llm = ScriptedLLM(answer_each_batch(one_point))
    response = ask(engine_for(llm, make_reports(4)))  # no await: sync API
    assert response.response == "final answer"


@pytest.mark.parametrize("path", ["sync", "async"])
async def test_concurrency_is_bounded(path: str) -> None:
    reports = make_reports(50)
    llm = InFlightLLM(answer_each_batch(one_point), delay=0.2)
    engine = engine_for(llm, reports, batch_max_tokens=SECTION, max_concurrency=16)
    if path == "sync":
        response = await asyncio.to_thread(ask, engine)
    else:
        response = await aask(engine)
    assert stats_of(response).batches == 50 and len(llm.prompts) == 51
    assert 1 < llm.peak <= 16


def test_map_timeout_fails_the_batch() -> None:
    reports = make_reports(4)
    first = expected_batches(reports, 2 * SECTION)[0]

    class FirstLate(ScriptedLLM):  # only the first batch's map call is late
        async def acomplete(self, prompt: str, formatted: bool = False,
                            **kwargs: Any) -> CompletionResponse:
            if report_ids(prompt) == first:
                await asyncio.sleep(2.0)
            return CompletionResponse(text=self._answer(prompt))

    llm = FirstLate(answer_each_batch(one_point))
    response = ask(engine_for(llm, reports, batch_max_tokens=2 * SECTION, timeout=0.05))
    stats = stats_of(response)
    assert (stats.batches, stats.map_failures) == (2, 1)
    assert stats.reduce_called and response.response == "final answer"


def test_every_map_call_late_raises_a_timeout() -> None:
    llm = ScriptedLLM(answer_each_batch(one_point), delay=2.0)
    engine = engine_for(llm, make_reports(4), batch_max_tokens=2 * SECTION, timeout=0.05)
    with pytest.raises(LLMTimeoutError, match=r"all 2 map calls failed .*raise the timeout"):
        engine.query(QUESTION)


@pytest.mark.parametrize("answer", [RuntimeError("401 invalid api key"),
                                    "I cannot help with that.", '{"answer": "wool"}',
                                    '{"points": [1, 2, 3]}'])
async def test_every_map_call_failing_raises_instead_of_answering_no_data(
        answer: Any) -> None:
    llm = ScriptedLLM(lambda prompt: answer)
    engine = engine_for(llm, make_reports(6), batch_max_tokens=2 * SECTION)
    expected = "401 invalid api key" if isinstance(answer, Exception) else "no JSON points"
    for query in (engine.query, engine.aquery):
        with pytest.raises(LLMAnswerError, match=f"all 3 map calls failed.*{expected}") as info:
            result = query(QUESTION)
            if asyncio.iscoroutine(result):
                await result
        assert isinstance(info.value, GraphRAGError)
        if isinstance(answer, Exception):
            assert info.value.__cause__ is answer
    assert not any(is_reduce(p) for p in llm.prompts)


@pytest.mark.parametrize("final", ["", "  \n "])
def test_an_empty_reduce_answer_raises(final: str) -> None:
    llm = ScriptedLLM(answer_each_batch(one_point, final=final))
    with pytest.raises(LLMAnswerError, match="reduce LLM call answered nothing"):
        ask(engine_for(llm, make_reports(4)))


def test_reduce_timeout_raises_a_package_error_that_is_a_timeout_error() -> None:
    llm = InFlightLLM(answer_each_batch(one_point), reduce_delay=2.0)
    engine = engine_for(llm, make_reports(4), timeout=0.1)
    with pytest.raises(LLMTimeoutError, match="reduce LLM call gave no answer within") as info:
        engine.query(QUESTION)
    assert isinstance(info.value, GraphRAGError)
    assert isinstance(info.value, TimeoutError)  # `except TimeoutError` still catches it


def test_reduce_failure_propagates() -> None:
    llm = ScriptedLLM(answer_each_batch(one_point, final=RuntimeError("reduce down")))  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="reduce down"):
        ask(engine_for(llm, make_reports(4)))


# ---------------------------------------------------------------------------- errors


def test_no_reports_asks_to_build_communities() -> None:
    llm = ScriptedLLM([])
    with pytest.raises(InvalidInputError, match=r"index\.build_communities\(\)"):
        ask(engine_for(llm, []))
    assert llm.prompts == []


async def test_no_reports_async() -> None:
    with pytest.raises(InvalidInputError, match="no community reports"):
        await aask(engine_for(ScriptedLLM([]), []))


@pytest.mark.parametrize("query", ["", "   \n"])
def test_empty_query(query: str) -> None:
    called: list[int] = []

    def load() -> list[CommunityReport]:
        called.append(1)
        return make_reports(2)

    engine = GlobalSearchQueryEngine(load, llm=ScriptedLLM([]))
    with pytest.raises(InvalidInputError, match="the query is empty"):
        engine.query(query)
    with pytest.raises(InvalidInputError, match="the query is empty"):
        engine.query(QueryBundle(query))
    assert called == []


def test_reports_loader_errors_propagate() -> None:
    def load() -> list[CommunityReport]:
        raise EmptyIndexError("no communities collection")

    engine = GlobalSearchQueryEngine(load, llm=ScriptedLLM([]))
    with pytest.raises(EmptyIndexError, match="no communities collection"):
        engine.query(QUESTION)


@pytest.mark.parametrize("loaded, match", [
    (None, "must return a sequence of CommunityReport, got NoneType"),
    ("c1", "must return a sequence of CommunityReport, got str"),
    ([make_report(1), "c2"], "must return CommunityReport records, got a str"),
])
def test_reports_loader_returning_wrong_things(loaded: Any, match: str) -> None:
    engine = GlobalSearchQueryEngine(lambda: loaded, llm=ScriptedLLM([]))
    with pytest.raises(InvalidInputError, match=match):
        engine.query(QUESTION)


@pytest.mark.parametrize("kwargs, match", [
    ({"batch_max_tokens": 0}, r"batch_max_tokens must be an integer >= 1, got 0"),
    ({"batch_max_tokens": 1.5}, r"batch_max_tokens must be an integer >= 1, got 1\.5"),
    ({"reduce_max_tokens": -1}, r"reduce_max_tokens must be an integer >= 1, got -1"),
    ({"max_concurrency": 0}, r"max_concurrency must be an integer >= 1, got 0"),
    ({"max_concurrency": True}, r"max_concurrency must be an integer >= 1, got True"),
    ({"shuffle_seed": "86"}, r"shuffle_seed must be an integer, got '86'"),
    ({"min_rating": float("nan")}, r"min_rating must be None or a finite number, got nan"),
    ({"min_rating": "5"}, r"min_rating must be None or a finite number, got '5'"),
    ({"response_type": " "}, r"response_type must be a non-empty text"),
    ({"timeout": 0}, r"timeout must be None or a finite number > 0, got 0 \(seconds\)"),
    ({"timeout": float("inf")}, r"timeout must be None or a finite number > 0, got inf"),
    ({"map_prompt": "Answer {query_str}"}, r"map_prompt must be a prompt template"),
    ({"map_prompt": PromptTemplate("Answer {query_str}")},
     r"map_prompt lacks the variables \['context_data'\]"),
    ({"reduce_prompt": PromptTemplate("Sum up {query_str}")},
     r"reduce_prompt lacks the variables \['report_data'\]"),
])
def test_bad_arguments(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        GlobalSearchQueryEngine(lambda: [], llm=ScriptedLLM([]), **kwargs)


def test_bad_reports_and_llm_arguments() -> None:
    with pytest.raises(InvalidInputError, match="reports must be a function"):
        GlobalSearchQueryEngine(make_reports(2), llm=ScriptedLLM([]))  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="llm must be a LlamaIndex LLM or None, got str"):
        GlobalSearchQueryEngine(lambda: [], llm="gpt-4o")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- prompts


def test_prompts_are_exposed_and_updatable() -> None:
    llm = ScriptedLLM(answer_each_batch(one_point))
    engine = engine_for(llm, make_reports(2))
    assert engine.get_prompts() == {"map_prompt": DEFAULT_MAP_PROMPT,
                                    "reduce_prompt": DEFAULT_REDUCE_PROMPT}
    engine.update_prompts({"map_prompt": PromptTemplate(
        "MINE {query_str}\n{context_data}\nJSON points please")})
    engine.query(QUESTION)
    assert llm.prompts[0].startswith("MINE " + QUESTION)
    with pytest.raises(InvalidInputError, match=r"reduce_prompt lacks the variables"):
        engine.update_prompts({"reduce_prompt": PromptTemplate("{query_str}")})


def test_default_prompts_show_real_json_and_keep_the_words_apart() -> None:
    map_text = DEFAULT_MAP_PROMPT.format(context_data="DATA", query_str="Q")
    assert '{"points": [{"description": ' in map_text and "{{" not in map_text
    assert "Analyst" not in map_text  # tests tell the two prompts apart by this word
    reduce_text = DEFAULT_REDUCE_PROMPT.format(report_data="R", query_str="Q",
                                               response_type="a single sentence")
    assert "---Analyst Reports---\nR" in reduce_text and "a single sentence" in reduce_text
    assert "[Data: Reports (" in map_text and "[Data: Reports (" in reduce_text


# ---------------------------------------------------------------------------- pure parts


@pytest.mark.parametrize("raw, expected", [
    ('{"points": [{"description": "a", "score": 55}]}', ([MapPoint("a", 55.0)], 0)),
    ('```json\n{"points": [{"description": " a ", "score": 55.5}]}\n```',
     ([MapPoint("a", 55.5)], 0)),
    ('See [1]. {"points": [{"description": "a", "score": "70"}]}', ([MapPoint("a", 70.0)], 0)),
    ('[{"description": "a", "score": 20}]', ([MapPoint("a", 20.0)], 0)),
    ('{"points": [{"description": "a", "score": -5}, {"description": "b", "score": 1e9}]}',
     ([MapPoint("b", 100.0)], 1)),
    # a list of which no item is a point: as no JSON (the map call failed)
    ('{"points": [{"description": "a", "score": NaN}, {"description": "b", "score": true},'
     ' {"description": 3, "score": 50}, "text", {"description": "c", "score": [5]}]}', None),
    ('{"points": [1, 2, 3]}', None),
    ('{"points": [{"description": "a", "score": 0}]}', ([], 1)),  # "I don't know": answered
    ('{"points": []}', ([], 0)),
    ('{"points": "wool"}', None),
    ('{"answer": "wool"}', None),
    ("[1, 2]", None),
    ("no json", None),
    # cut off (the output-token limit): the complete points; none complete: no points
    ('{"points": [{"description": "A", "score": 40}, {"description": "B", "sc',
     ([MapPoint("A", 40.0)], 0)),
    ('{"why": "see [1]", "points": [{"descr', None),
    # a score past Python's digit limit is read (clamped as 1e9 is), the other points too
    pytest.param('{"points": [{"description": "A", "score": ' + "9" * 5000 + '}, '
                 '{"description": "B", "score": 30}]}',
                 ([MapPoint("A", 100.0), MapPoint("B", 30.0)], 0), id="score-of-5000-digits"),
])
def test_parse_points(raw: str, expected: Any) -> None:
    assert parse_points(raw) == expected


def test_report_node_keeps_its_metadata_out_of_model_text() -> None:
    report = make_report(3, rating=6.0)
    node = report_node(report, 0.42)
    assert node.score == 0.42 and node.node.node_id == "c03"
    assert node.node.metadata[COMMUNITY_KEY] == {
        "id": "c03", "level": 0, "title": "Guild 03 of Basel", "rating": 6.0, "kind": "llm"}
    for mode in (MetadataMode.LLM, MetadataMode.EMBED):
        assert node.node.get_content(metadata_mode=mode) == report.as_text()


def test_pack_reports_respects_the_budget() -> None:
    reports = make_reports(17)
    for budget in (SECTION, 2 * SECTION, 3 * SECTION + 5, 40 * SECTION):
        batches = pack_reports(reports, budget)
        assert [r for b in batches for r in b.reports] == reports
        assert all(b.tokens <= budget for b in batches)
        assert len(batches) == -(-17 // (budget // SECTION))


# ---------------------------------------------------------------------------- composition


def test_works_under_a_router_query_engine() -> None:
    def script(prompt: str) -> str:
        if "Some choices are given below" in prompt:
            return json.dumps([{"choice": 1, "reason": "a question about the whole corpus"}])
        return answer_each_batch(one_point)(prompt)

    llm = ScriptedLLM(script)
    engine = engine_for(llm, make_reports(6), batch_max_tokens=3 * SECTION)
    router = RouterQueryEngine(
        selector=LLMSingleSelector.from_defaults(llm=llm),
        query_engine_tools=[QueryEngineTool.from_defaults(
            engine, description="Global questions about the whole corpus.")], llm=llm)
    response = router.query(QUESTION)
    assert str(response) == "final answer"
    assert len(response.source_nodes) == 6
    assert response.metadata is not None and response.metadata["batches"] == 2
