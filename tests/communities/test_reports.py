"""Community report contexts (budget, sub-community substitution), parsing and the
extractive report: pure, no Milvus."""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core.utils import get_tokenizer
from tqdm import tqdm

from llama_index_graphrag_milvus.communities.descriptions import (
    DescriptionSummarizer,
    MergedDescription,
)
from llama_index_graphrag_milvus.communities.report_writer import (
    DEFAULT_REPORT_PROMPT,
    CommunityData,
    CommunityReporter,
    ContextBuilder,
    extractive_report,
    parse_report,
)
from llama_index_graphrag_milvus.errors import InvalidInputError
from llama_index_graphrag_milvus.records import Community
from tests.support.fakes import HangingLLM, ScriptedLLM


def data(prefix: str, size: int, level: int = 0, children: tuple[str, ...] = ()
         ) -> CommunityData:
    """A community of ``size`` entities in a chain, entities and relations best first."""
    ids = [f"{prefix}{i:030d}" for i in range(size)]
    community = Community(f"{prefix}c", level, "", children, tuple(ids), size - 1, size - 1)
    entities = tuple((eid, f"Entity {prefix} number {i}", size - i, "")
                     for i, eid in enumerate(ids))
    relations = tuple((f"{prefix}r{i:029d}", f"Entity {prefix} number {i}",
                       f"Entity {prefix} number {i + 1}",
                       f"Entity {prefix} number {i} works with Entity {prefix} number {i + 1}",
                       2 * (size - i), 1, "") for i in range(size - 1))
    return CommunityData(community, entities, relations)


def test_a_small_community_gets_its_whole_tables() -> None:
    context = ContextBuilder(2000).build(data("a", 5))
    assert not context.trimmed and context.substituted == ()
    assert context.text.count("works with") == 4 and "Entity a number 4" in context.text


def test_an_oversized_community_uses_its_sub_community_reports_then_fits() -> None:
    tokens = get_tokenizer()
    left, right = data("l", 40, level=1), data("r", 40, level=1)
    parent = CommunityData(
        Community("pc", 0, "", (left.community.id, right.community.id),
                  left.community.entity_ids + right.community.entity_ids, 79, 79),
        tuple(sorted(left.entities + right.entities, key=lambda e: -e[2])),
        left.relations + right.relations)
    builder = ContextBuilder(600)
    alone = builder.build(parent)
    assert alone.trimmed and len(tokens(alone.text)) <= 600  # trimmed by degree
    children = [(d, extractive_report(d)) for d in (left, right)]
    context = builder.build(parent, children)
    assert context.substituted and set(context.substituted) <= {"lc", "rc"}
    assert "-----Reports-----" in context.text
    assert len(tokens(context.text)) <= 600
    # the substituted child's own rows are gone from the tables
    first = context.substituted[0][0]
    tables = context.text.split("-----Entities-----", 1)[1]
    assert f"Entity {first} number 39" not in tables


def test_parse_report_accepts_realistic_answers_and_refuses_others() -> None:
    community = Community("c", 0, "", (), ("e",))
    report = parse_report('Sure!\n{"title": " Basel  mathematicians ", "summary": "S.", '
                          '"rating": "7.5", "findings": ["a bare string", {"explanation": '
                          '"only an explanation"}, {"summary": ""}], "rating_explanation": 3}',
                          community)
    assert report is not None
    assert report.title == "Basel mathematicians" and report.rating == 7.5
    assert [f.summary for f in report.findings] == ["a bare string", "only an explanation"]
    assert report.rating_explanation == ""
    for raw in ("not json", '{"summary": "no title"}', '{"title": "t", "summary": ""}',
                '["title", "summary"]', ""):
        assert parse_report(raw, community) is None
    for rating, expected in (("high", 0.0), (None, 0.0), (-3, 0.0), (True, 0.0),
                             (float("nan"), 0.0), (11, 10.0)):
        raw = ('{"title": "t", "summary": "s", "rating": %s}'
               % ("NaN" if rating != rating else repr(rating).replace("'", '"')
                  .replace("None", "null").replace("True", "true")))
        parsed = parse_report(raw, community)
        assert parsed is not None and parsed.rating == expected, raw
    # a rating past a float's range, findings given alone, half an emoji (Milvus refused
    # the row and the whole build failed)
    parsed = parse_report('{"title": "t \\ud83d", "summary": "s", "rating": 1%s, '
                          '"findings": "one finding alone"}' % ("0" * 400), community)
    assert parsed is not None and parsed.rating == 10.0 and parsed.title == "t \ufffd"
    assert [f.summary for f in parsed.findings] == ["one finding alone"]


def test_extractive_report_names_the_most_connected_entities() -> None:
    report = extractive_report(data("x", 8))
    assert report.kind == "extractive"
    assert report.title == "Entity x number 0, Entity x number 1 and Entity x number 2"
    assert len(report.findings) == 5
    assert report.findings[0].summary == "Entity x number 0 works with Entity x number 1"
    assert 1.0 <= report.rating <= 10.0


def test_reporter_and_builder_arguments_are_checked() -> None:
    with pytest.raises(InvalidInputError, match="max_input_tokens"):
        ContextBuilder(10)
    with pytest.raises(InvalidInputError, match="llm must be a LlamaIndex LLM"):
        CommunityReporter("gpt-4o")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="num_workers"):
        CommunityReporter(ScriptedLLM(["x"]), num_workers=0)
    with pytest.raises(InvalidInputError, match="retry_base_delay"):
        CommunityReporter(ScriptedLLM(["x"]), retry_base_delay=float("inf"))


REPORT = '{"title": "A report", "summary": "Written by the LLM.", "rating": 5}'


@pytest.mark.parametrize("use_async", [False, True])
async def test_a_report_call_past_the_timeout_gets_the_extractive_report(
        use_async: bool) -> None:
    slow, fast = data("s", 4), data("f", 4)
    llm = HangingLLM(lambda prompt: REPORT, hang_on="Entity s number 0")
    # the timeout is what the call that does answer gets too: on a loaded 2-core machine a
    # thread's start and a scripted answer have taken more than 0.2 s
    reporter = CommunityReporter(llm, timeout=2.0, max_retries=0)
    items = [(reporter.contexts.build(d), d) for d in (slow, fast)]
    try:
        with tqdm(disable=True) as progress:
            outcomes = await (reporter.awrite(items, progress) if use_async
                              else asyncio.to_thread(reporter.write, items, progress))
        finished_before_release = llm.finished
    finally:
        llm.release()
    assert outcomes[0].report == extractive_report(slow)
    assert outcomes[0].error == "NoAnswer: no answer within 2.0 s"
    assert outcomes[1].error is None and outcomes[1].report.title == "A report"
    assert llm.hung == 1 and finished_before_release == 0


def test_a_description_summary_past_the_timeout_keeps_the_joined_descriptions() -> None:
    items = [MergedDescription("e1", "entity", "Basel", descriptions=["A city.", "On the Rhine."]),
             MergedDescription("e2", "entity", "Euler", descriptions=["A mathematician.",
                                                                     "Born in Basel."])]
    llm = HangingLLM(lambda prompt: "A summary.", hang_on="same entity, Basel,")
    summarizer = DescriptionSummarizer(llm, timeout=2.0, max_retries=0)  # as above
    try:  # the LLM's sync API in threads: a timeout holds whatever its async API does
        summaries, calls = summarizer.summarize(items)
        finished_before_release = llm.finished
    finally:
        llm.release()
    assert summaries == ["On the Rhine. A city.", "A summary."] and calls == 2
    assert llm.hung == 1 and finished_before_release == 0


def test_reporter_timeout_must_be_positive_seconds() -> None:
    with pytest.raises(InvalidInputError, match="timeout must be None or a finite number > 0"):
        CommunityReporter(ScriptedLLM(["x"]), timeout=0)


def test_cache_key_follows_the_context_the_prompt_and_the_model() -> None:
    reporter = CommunityReporter(ScriptedLLM(["x"]))
    one = reporter.contexts.build(data("a", 5))
    two = reporter.contexts.build(data("b", 5))
    assert reporter.cache_key(one) == reporter.cache_key(reporter.contexts.build(data("a", 5)))
    assert reporter.cache_key(one) != reporter.cache_key(two)
    assert one.key(DEFAULT_REPORT_PROMPT, "model-a") != one.key(DEFAULT_REPORT_PROMPT, "model-b")


def test_every_default_prompt_shows_its_json_example_with_single_braces() -> None:
    """Core's PromptTemplate leaves unknown ``{...}`` as written: ``{{`` would reach the
    LLM doubled (it did in 0.1.0 for the NER, rerank and extraction prompts)."""
    from llama_index_graphrag_milvus.communities.global_search import (
        DEFAULT_MAP_PROMPT,
        DEFAULT_REDUCE_PROMPT,
    )
    from llama_index_graphrag_milvus.extraction import DEFAULT_TRIPLET_EXTRACT_PROMPT
    from llama_index_graphrag_milvus.rerank import DEFAULT_RERANK_PROMPT
    from llama_index_graphrag_milvus.retrieval.steps import DEFAULT_NER_PROMPT

    for prompt in (DEFAULT_TRIPLET_EXTRACT_PROMPT, DEFAULT_RERANK_PROMPT, DEFAULT_NER_PROMPT,
                   DEFAULT_REPORT_PROMPT, DEFAULT_MAP_PROMPT, DEFAULT_REDUCE_PROMPT):
        text = prompt.format(**{name: "X" for name in prompt.template_vars})
        assert "{{" not in text and "}}" not in text, text[:80]
        assert prompt is DEFAULT_REDUCE_PROMPT or '{"' in text  # its JSON example


def test_a_finding_too_long_for_the_row_is_skipped_not_those_after_it() -> None:
    import json

    from llama_index_graphrag_milvus.communities.build import _findings_json
    from llama_index_graphrag_milvus.milvus.schema import COMMUNITY_TEXT_MAX_BYTES
    from llama_index_graphrag_milvus.records import Finding

    findings = [Finding("Euler studied under Johann", "a"),
                Finding("A long one", "x" * COMMUNITY_TEXT_MAX_BYTES),
                Finding("Daniel was Johann's son", "b"), Finding("Basel", "c")]
    stored = json.loads(_findings_json(findings))
    assert [f["summary"] for f in stored] == [
        "Euler studied under Johann", "Daniel was Johann's son", "Basel"]
