"""Community reports: the context of a community, an LLM report or an extractive one.

Microsoft GraphRAG writes one report per community from its entities and relations: a
title, a summary, 5 to 10 findings and a 1-10 importance rating. This module holds the pure
parts (the context tables and their token budget, parsing the LLM's JSON, the extractive
report written without an LLM) and :class:`CommunityReporter`, which sends contexts to an LLM
with bounded concurrency and the retries of triplet extraction
(:func:`~llama_index_graphrag_milvus.llm.call_with_retries`).

Context rules (Microsoft GraphRAG's): entities are listed by degree, relations by combined
degree (the degrees of both endpoints) then support; when a community's tables exceed
``max_input_tokens``, the reports of its sub-communities (already written: levels are
reported deepest first) replace their members' rows, largest sub-community first; when that
is not enough, the rows are trimmed by degree to fit.
"""

from __future__ import annotations

import functools
import json
import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from llama_index.core.llms.llm import LLM
from llama_index.core.prompts import BasePromptTemplate, PromptTemplate
from llama_index.core.utils import get_tokenizer
from tqdm.auto import tqdm

from llama_index_graphrag_milvus.errors import InvalidInputError
from llama_index_graphrag_milvus.ids import stable_id
from llama_index_graphrag_milvus.llm import (
    Sleep,
    Threads,
    call_with_retries,
    gather_bounded,
    run_with_threads,
)
from llama_index_graphrag_milvus.parsing import find_json, strip_echo
from llama_index_graphrag_milvus.records import Community, CommunityReport, Finding
from llama_index_graphrag_milvus.validation import (
    check_instance,
    check_int,
    check_number,
    check_optional_number,
)

logger = logging.getLogger(__name__)

DEFAULT_REPORT_PROMPT = PromptTemplate(
    "You write the report of one community of a knowledge graph: a group of entities and the "
    "relations between them, extracted from a collection of documents. The report helps a "
    "reader who has not seen the documents understand what the community is about and why "
    "it matters.\n\n"
    "Use only the data below. Refer to it in the findings as [Data: Entities (ids); "
    "Relationships (ids)] with at most five ids per list, or [Data: Reports (ids)] for "
    "sub-community reports.\n\n"
    "Answer with JSON only, in this form:\n"
    '{"title": "a short, specific name of the community (its key entities)",\n'
    ' "summary": "what the community is and how its entities relate, in a few sentences",\n'
    ' "rating": a number from 1 to 10, how important the community is to the collection,\n'
    ' "rating_explanation": "one sentence justifying the rating",\n'
    ' "findings": [{"summary": "a one-line insight", "explanation": "a paragraph grounded '
    'in the data"}, ...]}\n'
    "Give 5 to 10 findings (fewer when the data is small).\n\n"
    "Data:\n{context}\n\nJSON:"
)
"""The community report prompt; variable ``{context}`` (the entity and relation tables,
and sub-community reports)."""

DEFAULT_MAX_INPUT_TOKENS = 8000
"""Token budget of one report's context (Microsoft GraphRAG's ``max_input_length``)."""
EXTRACTIVE_FINDINGS = 5
"""Findings of an extractive report: the community's best-supported relations."""
_TITLE_ENTITIES = 3


@dataclass(frozen=True)
class CommunityData:
    """What a community's context is made of: its entities and relations, best first.

    ``entities`` are ``(id, name, degree, description)`` by degree; ``relations`` are
    ``(id, subject name, object name, text, combined degree, passages, description)`` by
    combined degree then passages. Without extracted descriptions (see
    :mod:`~llama_index_graphrag_milvus.communities.descriptions`) descriptions are ``""``:
    the relation text ("subject predicate object") stands in.
    Only the first rows are needed by an extractive report, so callers may cut them.
    """

    community: Community
    entities: tuple[tuple[str, str, int, str], ...]
    relations: tuple[tuple[str, str, str, str, int, int, str], ...]


def _entity_row(entity: tuple[str, str, int, str]) -> str:
    row = f"{entity[0][:8]},{_cell(entity[1])},{entity[2]}"
    return f"{row},{_cell(entity[3])}" if entity[3] else row


def _relation_row(relation: tuple[str, str, str, str, int, int, str]) -> str:
    rid, subject, obj, text, degree, passages, description = relation
    return (f"{rid[:8]},{_cell(subject)},{_cell(obj)},{_cell(description or text)},{degree},"
            f"{passages}")


def _cell(value: str) -> str:
    return json.dumps(value, ensure_ascii=False) if any(c in value for c in ',"\n') else value


def _report_section(report: CommunityReport) -> str:
    return f"id: {report.id[:8]}\n{report.as_text()}"


@dataclass(frozen=True)
class ReportContext:
    """The text a report is written from, and which sub-community reports it used."""

    community: Community
    text: str
    substituted: tuple[str, ...] = ()
    trimmed: bool = False

    def key(self, prompt: BasePromptTemplate, model: str) -> str:
        """The cache key of the report: a hash of the prompt, the model and the context
        (an unchanged community keeps its report across rebuilds)."""
        return stable_id("report-context", "\x1f".join([prompt.get_template(), model,
                                                         self.text]))


class ContextBuilder:
    """Builds report contexts under a token budget (see the module docstring)."""

    def __init__(self, max_input_tokens: int = DEFAULT_MAX_INPUT_TOKENS,
                 tokenizer: Callable[[str], Sequence[Any]] | None = None) -> None:
        self.max_input_tokens = check_int("max_input_tokens", max_input_tokens, minimum=100)
        self._tokens = tokenizer or get_tokenizer()

    def count(self, text: str) -> int:
        return len(self._tokens(text))

    def _tables(self, entities: Sequence[tuple[str, str, int, str]],
                relations: Sequence[tuple[str, str, str, str, int, int, str]], budget: int
                ) -> tuple[str, bool]:
        """The entity and relation tables, rows by rank until ``budget`` tokens."""
        described = any(e[3] for e in entities)
        lines = ["-----Entities-----",
                 "id,entity,degree,description" if described else "id,entity,degree"]
        relation_lines = ["-----Relationships-----",
                          "id,source,target,description,combined_degree,passages"]
        used = self.count("\n".join(lines + relation_lines))
        kept_entities: list[str] = []
        kept_relations: list[str] = []
        trimmed = False
        tables = ((list(map(_entity_row, entities)), kept_entities),
                  (list(map(_relation_row, relations)), kept_relations))
        # interleave, so that a trimmed context keeps the top of both tables
        for position in range(max(len(entities), len(relations))):
            for rows, kept in tables:
                if position >= len(rows):
                    continue
                cost = self.count(rows[position]) + 1
                if used + cost > budget:
                    trimmed = True
                    continue
                used += cost
                kept.append(rows[position])
        text = "\n".join([*lines, *kept_entities, "", *relation_lines, *kept_relations])
        return text, trimmed

    def build(self, data: CommunityData, child_reports: Sequence[tuple[CommunityData,
                                                                       CommunityReport]] = ()
              ) -> ReportContext:
        """The context of one community; ``child_reports`` are its sub-communities (their
        data and report), used when its own tables do not fit."""
        budget = self.max_input_tokens
        text, trimmed = self._tables(data.entities, data.relations, budget)
        if not trimmed or not child_reports:
            return ReportContext(data.community, text, (), trimmed)
        entities, relations = list(data.entities), list(data.relations)
        sections: list[str] = []
        used: list[str] = []
        for child, report in sorted(child_reports, key=lambda cr: -len(cr[0].entities)):
            section = _report_section(report)
            if self.count("\n\n".join([*sections, section])) > budget // 2 and sections:
                break
            sections.append(section)
            used.append(report.id)
            members = {e[0] for e in child.entities}
            inner = {r[0] for r in child.relations}
            entities = [e for e in entities if e[0] not in members]
            relations = [r for r in relations if r[0] not in inner]
            reports_text = "-----Reports-----\n" + "\n\n".join(sections)
            rest = budget - self.count(reports_text)
            tables, trimmed = self._tables(entities, relations, max(rest, 0))
            if not trimmed:
                return ReportContext(data.community, f"{reports_text}\n\n{tables}",
                                     tuple(used), False)
        reports_text = "-----Reports-----\n" + "\n\n".join(sections)
        clipped = self._clip(reports_text, budget // 2)
        tables, _ = self._tables(entities, relations, budget - self.count(clipped))
        return ReportContext(data.community, f"{clipped}\n\n{tables}", tuple(used), True)

    def _clip(self, text: str, budget: int) -> str:
        tokens = self._tokens(text)
        if len(tokens) <= budget:
            return text
        return text[: max(1, int(len(text) * budget / len(tokens)))]


# ---------------------------------------------------------------------- parsing


def _text(value: Any) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def parse_report(raw: str, community: Community) -> CommunityReport | None:
    """The report in an LLM answer; ``None`` when it has no JSON object with a title and a
    summary. Findings without a summary are dropped (an explanation alone becomes its own
    summary); the rating is clamped to 0-10 (0 when it is missing or not a number).

    >>> c = Community("c1", 0, "", (), ("e1",))
    >>> r = parse_report('```json\\n{"title": "Basel", "summary": "A city.", "rating": 12, '
    ...                  '"findings": [{"summary": "Euler", "explanation": "born there"}, 3]}'
    ...                  '\\n```', c)
    >>> r.title, r.rating, len(r.findings), r.kind
    ('Basel', 10.0, 1, 'llm')
    >>> parse_report("I cannot help with that.", c) is None
    True
    """
    value = find_json(raw, key="title")
    if not isinstance(value, dict):
        return None
    title, summary = _text(value.get("title")), _text(value.get("summary"))
    if not title or not summary:
        return None
    findings = []
    listed = value.get("findings")
    # one finding given alone (a string, an object) is one finding, not one per character
    listed = listed if isinstance(listed, list) else [listed] if listed else []
    for item in listed:
        if isinstance(item, str):
            item = {"summary": item}
        if not isinstance(item, dict):
            continue
        head, body = _text(item.get("summary")), _text(item.get("explanation"))
        if head or body:
            findings.append(Finding(head or body, body))
    rating: Any = value.get("rating")
    try:
        number = float(rating) if not isinstance(rating, bool) else math.nan
    except (TypeError, ValueError):
        number = math.nan
    except OverflowError:  # an integer past a float's range (10**400): clamped below
        number = 10.0 if rating > 0 else 0.0
    number = 0.0 if not math.isfinite(number) else min(10.0, max(0.0, number))
    return CommunityReport(community, title, summary, tuple(findings), number,
                           _text(value.get("rating_explanation")), "llm")


def extractive_report(data: CommunityData) -> CommunityReport:
    """A report written without an LLM: the community's most connected entities name it,
    its best-supported relations are the findings, and the rating grows with the number of
    passages (``1 + log2(passages)``, at most 10: a size measure, not a judgement).

    >>> data = CommunityData(Community("c1", 0, "", (), ("e1", "e2"), 1, 2),
    ...     (("e1", "Euler", 2, ""), ("e2", "Basel", 1, "")),
    ...     (("r1", "Euler", "Basel", "Euler was born in Basel", 3, 2, ""),))
    >>> report = extractive_report(data)
    >>> report.title, report.findings[0].summary, report.rating, report.kind
    ('Euler and Basel', 'Euler was born in Basel', 2.0, 'extractive')
    """
    community = data.community
    names = [entity[1] for entity in data.entities[:_TITLE_ENTITIES]]
    title = (names[0] if len(names) == 1 else
             f"{', '.join(names[:-1])} and {names[-1]}") if names else "Empty community"
    degrees = ", ".join(f"{e[1]} ({e[2]})" for e in data.entities[:5])
    summary = (f"{len(community.entity_ids)} entities and {community.num_relations} "
               f"relations, supported by {community.num_passages} passages. The most "
               f"connected entities (with their number of relations): {degrees}.")
    described = [f"{e[1]}: {e[3]}" for e in data.entities[:2] if e[3]]
    if described:
        summary = " ".join([summary, *described])
    findings = tuple(
        Finding(text, " ".join(filter(None, [
            description, f"Supported by {passages} passage{'s' if passages != 1 else ''}; "
                         f"{subject} and {obj} have {degree} relations between them in all."])))
        for _, subject, obj, text, degree, passages, description
        in data.relations[:EXTRACTIVE_FINDINGS])
    rating = min(10.0, 1.0 + math.log2(max(1, community.num_passages)))
    explanation = (f"Extractive report (no LLM): the rating measures size, {community.num_passages}"
                   " supporting passages.")
    return CommunityReport(community, title, summary, findings, round(rating, 2), explanation,
                           "extractive")


# ---------------------------------------------------------------------- the LLM writer


@dataclass(frozen=True)
class ReportOutcome:
    """The report of one community: written by the LLM, or the extractive fallback with
    the reason (``error``) when the LLM failed or answered without a usable report."""

    report: CommunityReport
    error: str | None = None
    llm_calls: int = 0


Predict = Callable[[ReportContext], Awaitable[str]]


class CommunityReporter:
    """Writes community reports with an LLM: at most ``num_workers`` calls in flight,
    retries with backoff on failures (as :class:`TripletExtractor`), and the extractive
    report as the fallback of a community whose answer is unusable (counted, logged).

    Args:
        llm: any LlamaIndex LLM.
        report_prompt: prompt with ``{context}``; must ask for the JSON report.
        max_input_tokens: token budget of one community's context.
        num_workers: LLM calls in flight at most.
        max_retries: retries of a failed call; ``retry_base_delay`` seconds before the
            first, doubled after.
        timeout: seconds to wait for each LLM call (reports and description summaries); a
            call past it fails like an error (retried, then the fallback). ``None``
            (default) waits as long as the LLM client does.
        sleep: the async sleep of the backoff (tests pass a recorder).

    Example::

        reporter = CommunityReporter(llm=OpenAI(model="gpt-4o-mini"), num_workers=16)
        stats = index.build_communities(reporter=reporter, show_progress=True)
    """

    def __init__(self, llm: LLM, report_prompt: BasePromptTemplate = DEFAULT_REPORT_PROMPT,
                 max_input_tokens: int = DEFAULT_MAX_INPUT_TOKENS, num_workers: int = 4,
                 max_retries: int = 3, retry_base_delay: float = 1.0,
                 sleep: Sleep | None = None, timeout: float | None = None) -> None:
        check_instance("llm", llm, LLM, "a LlamaIndex LLM")
        check_int("num_workers", num_workers)
        check_int("max_retries", max_retries, minimum=0)
        check_number("retry_base_delay", retry_base_delay, low=0, hint="seconds")
        self.llm = llm
        self.report_prompt = report_prompt
        self.contexts = ContextBuilder(max_input_tokens)
        self.num_workers = num_workers
        self.max_retries = max_retries
        self.retry_base_delay = float(retry_base_delay)
        self.sleep = sleep
        """The async sleep of the retry backoff (``None``: ``asyncio.sleep``)."""
        self.timeout = check_optional_number("timeout", timeout, low=0, low_open=True,
                                             hint="seconds")

    @property
    def model(self) -> str:
        return str(self.llm.metadata.model_name)

    def cache_key(self, context: ReportContext) -> str:
        return context.key(self.report_prompt, self.model)

    async def _one(self, context: ReportContext, data: CommunityData, predict: Predict,
                   progress: tqdm) -> ReportOutcome:
        answer = await call_with_retries(
            lambda: predict(context), f"the report of community {context.community.id}",
            self.max_retries, self.retry_base_delay, self.sleep, logger, self.timeout)
        progress.update(1)
        if answer.error is not None:
            return ReportOutcome(extractive_report(data), answer.error, answer.attempts)
        report = parse_report(strip_echo(answer.text, self.report_prompt.format(
            **self._prompt(context))), context.community)  # the prompt's example, echoed
        if report is None:
            logger.warning("the report answer for community %s has no JSON report with a "
                           "title and a summary (%.200r); using the extractive report",
                           context.community.id, answer.text)
            return ReportOutcome(extractive_report(data), "no JSON report in the answer",
                                 answer.attempts)
        return ReportOutcome(report, None, answer.attempts)

    async def _write(self, items: Sequence[tuple[ReportContext, CommunityData]],
                     predict: Predict, progress: tqdm) -> list[ReportOutcome]:
        return await gather_bounded([functools.partial(self._one, context, data, predict,
                                                       progress)
                                     for context, data in items], self.num_workers)

    def _prompt(self, context: ReportContext) -> dict[str, Any]:
        return {"context": context.text}

    async def awrite(self, items: Sequence[tuple[ReportContext, CommunityData]],
                     progress: tqdm) -> list[ReportOutcome]:
        """The reports of ``items`` through the LLM's async API, in order."""
        async def predict(context: ReportContext) -> str:
            return await self.llm.apredict(self.report_prompt, **self._prompt(context))

        return await self._write(items, predict, progress)

    def write(self, items: Sequence[tuple[ReportContext, CommunityData]], progress: tqdm
              ) -> list[ReportOutcome]:
        """:meth:`awrite` through the LLM's sync API, ``num_workers`` threads."""
        def main(threads: Threads) -> Awaitable[list[ReportOutcome]]:
            async def predict(context: ReportContext) -> str:
                return await threads.call(self.llm.predict, self.report_prompt,
                                          **self._prompt(context))

            return self._write(items, predict, progress)

        return run_with_threads(self.num_workers, "graphrag-report", main)


def with_community(report: CommunityReport, community: Community) -> CommunityReport:
    """``report`` attached to ``community`` (a cached report reused for the same context)."""
    return replace(report, community=community)


def choose_reporter(llm: LLM | None, reporter: CommunityReporter | None,
                    max_input_tokens: int = DEFAULT_MAX_INPUT_TOKENS, num_workers: int = 4
                    ) -> CommunityReporter | None:
    """The reporter of a build: one for ``llm`` (with the budget and workers given), the
    ``reporter`` given, or ``None`` for extractive reports.

    >>> choose_reporter(None, None) is None
    True
    """
    if llm is not None and reporter is not None:
        raise InvalidInputError("give llm or reporter, not both (the reporter has its own llm)")
    if llm is not None:
        return CommunityReporter(llm, max_input_tokens=max_input_tokens,
                                 num_workers=num_workers)
    return check_instance("reporter", reporter, CommunityReporter, "a CommunityReporter",
                          optional=True)
