"""Global search over community reports: Microsoft GraphRAG's map-reduce query engine.

A question about the whole corpus ("what are the main themes?") has no entity to start a
graph walk from. Global search reads the community reports of one level instead:

- **map**: the reports (those rated at least ``min_rating``) are shuffled with a fixed seed
  and packed into batches of at most ``batch_max_tokens`` tokens; one LLM call per batch,
  at most ``max_concurrency`` in flight, answers with JSON key points
  (``{"points": [{"description": "... [Data: Reports (ids)]", "score": 0-100}]}``), the
  score saying how important the point is to answer the question;
- **reduce**: the points with a score above 0, most important first, are packed under
  ``reduce_max_tokens`` as ``----Analyst {n}----`` blocks and one LLM call writes the
  answer, keeping the data references.

A question costs ``batches + 1`` LLM calls, or ``batches`` when no point survives the map:
the engine then answers :data:`NO_DATA_ANSWER` without calling the LLM. A map call that
raises, times out or answers without usable JSON gives no points for its batch, logs a
warning and is counted in :class:`GlobalSearchStats` (``response.metadata``); the query goes
on. The reduce call is the answer: its failure is raised to the caller.

Example::

    engine = GlobalSearchQueryEngine(lambda: load_reports(level=1), llm=llm)
    response = engine.query("What are the main themes of the corpus?")
    print(response.response, response.metadata["map_failures"])
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.response.schema import Response
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.llms.llm import LLM
from llama_index.core.prompts import BasePromptTemplate, PromptTemplate
from llama_index.core.prompts.mixin import PromptDictType, PromptMixinType
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.settings import Settings

from llama_index_graphrag_milvus.errors import InvalidInputError
from llama_index_graphrag_milvus.llm import (
    NoAnswer,
    count_tokens,
    gather_bounded,
    run_blocking,
    truncate_to_tokens,
    within,
)
from llama_index_graphrag_milvus.parsing import find_json, strip_echo
from llama_index_graphrag_milvus.records import COMMUNITY_KEY, CommunityReport, hide_from_models
from llama_index_graphrag_milvus.validation import (
    check_instance,
    check_int,
    check_optional_number,
)

logger = logging.getLogger(__name__)

# The JSON examples use single braces: core's PromptTemplate formats with a SafeFormatter
# that leaves unknown ``{...}`` groups as written (and would show ``{{`` doubled).
DEFAULT_MAP_PROMPT = PromptTemplate(
    "---Role---\n"
    "You are a helpful assistant answering questions about the data in the community "
    "reports below.\n\n"
    "---Goal---\n"
    "Generate a response consisting of a list of key points that answers the user's "
    "question, summarizing all the relevant information in the reports below. Use the "
    "reports as the primary context. If you don't know the answer, or the reports do not "
    "hold enough information to answer, just say so in a point with score 0. Do not make "
    "anything up.\n\n"
    "Each key point has:\n"
    "- description: a comprehensive description of the point, with its data references;\n"
    "- score: an integer between 0 and 100 saying how important the point is to answer "
    "the question. An \"I don't know\" kind of point has score 0.\n\n"
    "Points supported by the reports list the ids of the reports that support them, as in "
    "\"Person X is the owner of Company Y [Data: Reports (c12, c7)]\". Do not list more "
    "than 5 report ids in one reference: list the 5 most relevant ones and add \"+more\". "
    "Keep the original meaning and the use of modal verbs such as \"shall\", \"may\" or "
    "\"will\".\n\n"
    "Answer with JSON only, in this form:\n"
    '{"points": [{"description": "Description of point 1 [Data: Reports (report ids)]", '
    '"score": score_value}, {"description": "Description of point 2 [Data: Reports '
    '(report ids)]", "score": score_value}]}\n\n'
    "---Question---\n{query_str}\n\n"
    "---Reports---\n{context_data}\n\n"
    "---Question---\n{query_str}\n\n"
    "Answer:"
)
"""The map prompt, after Microsoft GraphRAG's ``MAP_SYSTEM_PROMPT``; variables
``{context_data}`` (the batch of reports) and ``{query_str}``."""

DEFAULT_REDUCE_PROMPT = PromptTemplate(
    "---Role---\n"
    "You are a helpful assistant answering a question about a dataset by synthesizing the "
    "reports of several analysts, each of whom read a different part of the dataset.\n\n"
    "---Goal---\n"
    "Write a response of the target length and format that answers the question, "
    "summarizing the analysts' reports below. The reports are ranked in descending order "
    "of importance.\n"
    "If you don't know the answer, or the analysts' reports do not support one, just say "
    "so. Do not make anything up.\n"
    "Remove the irrelevant information and merge the rest into a comprehensive answer that "
    "explains the key points and their implications, as the target length and format "
    "allow. Add sections and commentary as appropriate; style the response in markdown.\n"
    "Keep the original meaning and the use of modal verbs such as \"shall\", \"may\" or "
    "\"will\".\n"
    "Keep all the data references of the analysts' reports, as in \"Person X is the owner "
    "of Company Y [Data: Reports (c2, c7, c34, c46, c64, +more)]\", but do not mention the "
    "analysts or their roles. Do not list more than 5 report ids in one reference: list "
    "the 5 most relevant ones and add \"+more\".\n"
    "Do not include information for which no supporting evidence is given.\n\n"
    "---Target response length and format---\n{response_type}\n\n"
    "---Analyst Reports---\n{report_data}\n\n"
    "---Question---\n{query_str}\n\n"
    "---Target response length and format---\n{response_type}\n\n"
    "Answer:"
)
"""The reduce prompt, after Microsoft GraphRAG's ``REDUCE_SYSTEM_PROMPT``; variables
``{report_data}`` (the ranked analyst blocks), ``{query_str}`` and ``{response_type}``."""

NO_DATA_ANSWER = ("I am sorry but I am unable to answer this question given the provided "
                  "data.")
"""The answer when no map call produced a point with a score above 0 (no reduce call)."""

_OWNER = "GlobalSearchQueryEngine: "
_MAP_VARIABLES = ("context_data", "query_str")
_REDUCE_VARIABLES = ("report_data", "query_str")  # {response_type} is optional


# ---------------------------------------------------------------------------- records


@dataclass(frozen=True)
class GlobalSearchStats:
    """What one global search did; ``response.metadata`` holds it as a dict
    (:meth:`as_dict`).

    ``reports`` counts the reports mapped (after ``min_rating``), ``reports_truncated``
    those cut to fit a batch alone; ``map_calls`` equals ``batches``; ``map_failures``
    counts the map calls that raised, timed out or answered without usable JSON.
    ``points_kept`` are the valid points with a score above 0, ``points_dropped`` the
    others (no description, a non-numeric score, score 0), ``points_in_reduce`` the kept
    points that fit ``reduce_max_tokens``. ``seconds`` is the wall time of the question,
    loading the reports included.
    """

    reports: int
    reports_truncated: int
    batches: int
    map_calls: int
    map_failures: int
    points_kept: int
    points_dropped: int
    points_in_reduce: int
    reduce_called: bool
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        """The fields as a plain dict.

        >>> GlobalSearchStats(3, 0, 1, 1, 0, 2, 1, 2, True, 0.5).as_dict()["points_kept"]
        2
        """
        return asdict(self)


@dataclass(frozen=True)
class MapPoint:
    """One key point of a map answer: a description (with its data references) and an
    importance score in ``(0, 100]``."""

    description: str
    score: float


@dataclass(frozen=True)
class ReportBatch:
    """The reports of one map call and their text (``{context_data}``); ``tokens`` is the
    sum of the report sections' token counts."""

    reports: tuple[CommunityReport, ...]
    context_data: str
    tokens: int
    truncated: int = 0
    """How many of its reports were cut to fit (at most one: the report alone in it)."""


@dataclass(frozen=True)
class _RankedPoint:
    point: MapPoint
    batch: int
    position: int


@dataclass(frozen=True)
class _MapOutcome:
    """The points of one batch, and whether its map call failed."""

    points: tuple[MapPoint, ...]
    dropped: int
    failed: bool


# ---------------------------------------------------------------------------- pure steps


def format_report(report: CommunityReport) -> str:
    """One report as a section of the map prompt's ``{context_data}``: its id (what the
    data references cite), title, rating and text.

    >>> from llama_index_graphrag_milvus.records import Community, Finding
    >>> print(format_report(CommunityReport(Community("c1", 0, "", (), ("e1",)),
    ...     "Bernoulli family", "Mathematicians of Basel.", (), 7.0, "Central.", "llm")))
    ----Report c1----
    Title: Bernoulli family
    Rating: 7
    # Bernoulli family
    <BLANKLINE>
    Mathematicians of Basel.
    """
    return (f"----Report {report.id}----\nTitle: {report.title}\nRating: {report.rating:g}\n"
            f"{report.as_text()}")


def shuffled_reports(reports: Sequence[CommunityReport], seed: int,
                     min_rating: float | None = None) -> list[CommunityReport]:
    """The reports rated at least ``min_rating`` (all when ``None``), first occurrence of
    each id only, in the order of ``random.Random(seed).shuffle`` (deterministic).

    >>> from llama_index_graphrag_milvus.records import Community
    >>> reports = [CommunityReport(Community(f"c{i}", 0, "", (), ()), f"t{i}", "", (), i,
    ...                            "", "llm") for i in range(5)]
    >>> [r.id for r in shuffled_reports(reports, seed=86, min_rating=2)]
    ['c4', 'c3', 'c2']
    """
    seen: set[str] = set()
    kept = []
    for report in reports:
        if report.id in seen or (min_rating is not None and not report.rating >= min_rating):
            continue
        seen.add(report.id)
        kept.append(report)
    random.Random(seed).shuffle(kept)
    return kept


def pack_reports(reports: Sequence[CommunityReport], max_tokens: int,
                 count: Callable[[str], int] = count_tokens) -> list[ReportBatch]:
    """Pack the reports, in order, into batches of at most ``max_tokens`` tokens (the sum
    of their :func:`format_report` sections' tokens; the blank lines that join the sections
    are not counted). A report whose section alone is bigger than ``max_tokens`` is
    truncated to ``max_tokens`` tokens and gets a batch of its own (its header, with the id,
    title and rating, comes first, so only the end of its text is lost).

    >>> from llama_index_graphrag_milvus.records import Community
    >>> reports = [CommunityReport(Community(f"c{i}", 0, "", (), ()), f"t{i}", "", (), 5.0,
    ...                            "", "llm") for i in range(5)]
    >>> [[r.id for r in b.reports] for b in pack_reports(reports, 2, count=lambda t: 1)]
    [['c0', 'c1'], ['c2', 'c3'], ['c4']]
    """
    batches: list[ReportBatch] = []
    sections: list[str] = []
    members: list[CommunityReport] = []
    used = 0

    def close(truncated: int = 0) -> None:
        nonlocal sections, members, used
        if members:
            batches.append(ReportBatch(tuple(members), "\n\n".join(sections), used, truncated))
        sections, members, used = [], [], 0

    for report in reports:
        section = format_report(report)
        tokens = count(section)
        if tokens > max_tokens:  # too big for any batch: alone, cut to fit
            close()
            sections, members = [truncate_to_tokens(section, max_tokens, count)], [report]
            used = count(sections[0])
            close(truncated=1)
            continue
        if used + tokens > max_tokens:
            close()
        sections.append(section)
        members.append(report)
        used += tokens
    close()
    return batches


def _score(value: Any) -> float | None:
    """A finite number (or a numeric string) clamped to 0..100; ``None`` otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int with more digits than a float holds
        number = math.inf if value > 0 else -math.inf
    if math.isnan(number):
        return None
    return min(100.0, max(0.0, number))


def parse_points(raw: str) -> tuple[list[MapPoint], int] | None:
    """The key points of a map answer and how many were dropped; ``None`` when the answer
    holds no usable JSON (neither ``{"points": [...]}`` nor a bare list of point objects).

    A point needs a non-empty string ``description`` and a numeric ``score`` (a number, or
    a string holding one); the score is clamped to 0..100. Points that lack either, and
    points with score 0 ("I don't know"), are dropped.

    >>> parse_points('Sure: {"points": [{"description": "A [Data: Reports (c1)]", '
    ...              '"score": 120}, {"description": "none", "score": 0}, {"score": 5}]}')
    ([MapPoint(description='A [Data: Reports (c1)]', score=100.0)], 2)
    >>> parse_points("I cannot answer.") is None
    True
    """
    value = find_json(raw, key="points")
    if isinstance(value, dict):
        value = value.get("points")
    elif isinstance(value, list) and not (value and all(isinstance(v, dict) for v in value)):
        value = None  # a bracketed aside such as "[1]", not a list of points
    if not isinstance(value, list):
        return None
    points: list[MapPoint] = []
    dropped = 0
    for item in value:
        description = item.get("description") if isinstance(item, dict) else None
        score = _score(item.get("score")) if isinstance(item, dict) else None
        if not isinstance(description, str) or not description.strip() or not score:
            # no description, no numeric score, or score 0 ("I don't know")
            dropped += 1
            continue
        points.append(MapPoint(description.strip(), score))
    return points, dropped


def _rank(outcomes: Sequence[_MapOutcome]) -> list[_RankedPoint]:
    """Every kept point, by score descending; ties keep batch order, then point order."""
    ranked = [_RankedPoint(point, batch, position)
              for batch, outcome in enumerate(outcomes)
              for position, point in enumerate(outcome.points)]
    ranked.sort(key=lambda r: (-r.point.score, r.batch, r.position))
    return ranked


def format_point(point: MapPoint, analyst: int) -> str:
    """One block of the reduce prompt's ``{report_data}``; ``analyst`` is the 1-based
    number of the batch that produced the point (Microsoft GraphRAG's numbering).

    >>> print(format_point(MapPoint("Euler studied in Basel [Data: Reports (c1)]", 80.0), 3))
    ----Analyst 3----
    Importance Score: 80
    Euler studied in Basel [Data: Reports (c1)]
    """
    return f"----Analyst {analyst}----\nImportance Score: {point.score:g}\n{point.description}"


def pack_points(ranked: Sequence[_RankedPoint], max_tokens: int,
                count: Callable[[str], int] = count_tokens) -> tuple[str, int]:
    """``{report_data}``: the ranked points' blocks while their tokens fit ``max_tokens``
    (it stops at the first block that does not fit, as Microsoft GraphRAG does; a first
    block bigger than the budget is truncated to it). Returns the text and the points in it.
    """
    blocks: list[str] = []
    used = 0
    for ranked_point in ranked:
        block = format_point(ranked_point.point, ranked_point.batch + 1)
        tokens = count(block)
        if used + tokens > max_tokens:
            if not blocks:
                blocks.append(truncate_to_tokens(block, max_tokens, count))
            break
        blocks.append(block)
        used += tokens
    return "\n\n".join(blocks), len(blocks)


def report_node(report: CommunityReport, score: float | None) -> NodeWithScore:
    """A community report as a node: its markdown text (:meth:`CommunityReport.as_text`),
    its community id as node id, and ``metadata["graphrag_community"]`` (``id``, ``level``,
    ``title``, ``rating``, ``kind``), kept out of LLM and embedding text.

    >>> from llama_index_graphrag_milvus.records import Community
    >>> node = report_node(CommunityReport(Community("c1", 1, "c0", (), ("e1",)),
    ...     "Bernoulli family", "Mathematicians of Basel.", (), 7.0, "Central.", "llm"), 0.8)
    >>> node.node.node_id, node.score, node.node.metadata["graphrag_community"]["level"]
    ('c1', 0.8, 1)
    >>> node.node.get_content(metadata_mode="llm")
    '# Bernoulli family\\n\\nMathematicians of Basel.'
    """
    metadata = {COMMUNITY_KEY: {"id": report.id, "level": report.level, "title": report.title,
                                "rating": report.rating, "kind": report.kind}}
    node = TextNode(text=report.as_text(), id_=report.id, metadata=metadata)
    hide_from_models(node, COMMUNITY_KEY)
    return NodeWithScore(node=node, score=score)


def _source_nodes(batches: Sequence[ReportBatch], outcomes: Sequence[_MapOutcome]
                  ) -> list[NodeWithScore]:
    """The reports of the batches with kept points, scored by their batch's best point
    score / 100; best first, ties in batch order, then report order."""
    scored = [(max(p.score for p in outcome.points) / 100.0, batch_no, position, report)
              for batch_no, (batch, outcome) in enumerate(zip(batches, outcomes, strict=True))
              if outcome.points
              for position, report in enumerate(batch.reports)]
    scored.sort(key=lambda item: (-item[0], item[1], item[2]))
    return [report_node(report, score) for score, _, _, report in scored]


# ---------------------------------------------------------------------------- the engine


def _check_prompt(name: str, prompt: Any, variables: Sequence[str]) -> BasePromptTemplate:
    if not isinstance(prompt, BasePromptTemplate):
        raise InvalidInputError(f"GlobalSearchQueryEngine: {name} must be a prompt template "
                                f"(PromptTemplate), got {type(prompt).__name__}.")
    missing = [v for v in variables if v not in prompt.template_vars]
    if missing:
        raise InvalidInputError(
            f"GlobalSearchQueryEngine: {name} lacks the variables {missing}; it needs "
            f"{list(variables)} (got {prompt.template_vars}). Start from "
            f"DEFAULT_{name.upper()}.")
    return prompt


class GlobalSearchQueryEngine(BaseQueryEngine):
    """Microsoft GraphRAG's global search: map-reduce over the community reports of one
    level (see the module docstring).

    Args:
        reports: called at each query, returns the community reports to search (the index
            passes a function that loads one level from Milvus; its errors propagate).
        llm: the map and reduce LLM; ``Settings.llm`` by default (read at construction).
        map_prompt: with ``{context_data}`` and ``{query_str}``; asks for JSON points.
        reduce_prompt: with ``{report_data}``, ``{query_str}`` (and ``{response_type}``).
        batch_max_tokens: tokens of report text per map call (``get_tokenizer()``); a
            report bigger than this is truncated to fit a batch of its own.
        reduce_max_tokens: tokens of ranked points in the reduce prompt; the least
            important points that do not fit are left out.
        max_concurrency: map calls in flight at most (the sync ``query`` too).
        shuffle_seed: seed of the ``random.Random`` that shuffles the reports before
            batching (Microsoft GraphRAG's 86), so the batches are the same at each query.
        min_rating: map only the reports rated at least this (1-10); all by default.
        response_type: the target length and format of the answer, as
            ``"multiple paragraphs"``, ``"a single sentence"`` or ``"a bullet list"``.
        callback_manager: LlamaIndex callbacks.
        timeout: seconds to wait for each LLM call; a map call past it is a failed batch,
            a reduce call past it raises ``TimeoutError``. ``None`` waits as long as the
            LLM client does.

    The response: ``response.response`` is the answer (:data:`NO_DATA_ANSWER` when no
    point has a score above 0); ``source_nodes`` are the reports of the batches that gave
    points (:func:`report_node`), scored by the best point score of their batch / 100;
    ``metadata`` is :class:`GlobalSearchStats` as a dict.

    Raises:
        InvalidInputError: bad arguments; an empty query; ``reports()`` returned no
            reports (build them with ``index.build_communities()``) or not reports.
    """

    def __init__(
        self,
        reports: Callable[[], Sequence[CommunityReport]],
        llm: LLM | None = None,
        *,
        map_prompt: BasePromptTemplate = DEFAULT_MAP_PROMPT,
        reduce_prompt: BasePromptTemplate = DEFAULT_REDUCE_PROMPT,
        batch_max_tokens: int = 8000,
        reduce_max_tokens: int = 8000,
        max_concurrency: int = 16,
        shuffle_seed: int = 86,
        min_rating: float | None = None,
        response_type: str = "multiple paragraphs",
        callback_manager: CallbackManager | None = None,
        timeout: float | None = None,
    ) -> None:
        if not callable(reports):
            raise InvalidInputError(
                "GlobalSearchQueryEngine: reports must be a function that returns the "
                f"community reports, got {type(reports).__name__}; pass e.g. "
                "`lambda: reports`.")
        check_instance(f"{_OWNER}llm", llm, LLM, "a LlamaIndex LLM", optional=True)
        check_int(f"{_OWNER}shuffle_seed", shuffle_seed, minimum=None)
        check_optional_number(f"{_OWNER}min_rating", min_rating)
        if not isinstance(response_type, str) or not response_type.strip():
            raise InvalidInputError(f"GlobalSearchQueryEngine: response_type must be a "
                                    f"non-empty text such as 'multiple paragraphs', got "
                                    f"{response_type!r}.")
        check_optional_number(f"{_OWNER}timeout", timeout, low=0, low_open=True,
                              hint="seconds")
        self._reports = reports
        self._llm: LLM = llm or Settings.llm
        self._map_prompt = _check_prompt("map_prompt", map_prompt, _MAP_VARIABLES)
        self._reduce_prompt = _check_prompt("reduce_prompt", reduce_prompt, _REDUCE_VARIABLES)
        self.batch_max_tokens = check_int(f"{_OWNER}batch_max_tokens", batch_max_tokens)
        self.reduce_max_tokens = check_int(f"{_OWNER}reduce_max_tokens", reduce_max_tokens)
        self.max_concurrency = check_int(f"{_OWNER}max_concurrency", max_concurrency)
        self.shuffle_seed = shuffle_seed
        self.min_rating = min_rating
        self.response_type = response_type
        self.timeout = timeout
        super().__init__(callback_manager=callback_manager)

    @property
    def llm(self) -> LLM:
        """The map and reduce LLM."""
        return self._llm

    # ------------------------------------------------------------------ prompts

    def _get_prompts(self) -> PromptDictType:
        return {"map_prompt": self._map_prompt, "reduce_prompt": self._reduce_prompt}

    def _get_prompt_modules(self) -> PromptMixinType:
        return {}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        if "map_prompt" in prompts:
            self._map_prompt = _check_prompt("map_prompt", prompts["map_prompt"],
                                             _MAP_VARIABLES)
        if "reduce_prompt" in prompts:
            self._reduce_prompt = _check_prompt("reduce_prompt", prompts["reduce_prompt"],
                                                _REDUCE_VARIABLES)

    # ------------------------------------------------------------------ steps

    @staticmethod
    def _query_text(query_bundle: QueryBundle) -> str:
        query = query_bundle.query_str
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError(f"GlobalSearchQueryEngine: the query is empty "
                                    f"({query!r}); ask a question in words.")
        return query

    def _load_reports(self) -> list[CommunityReport]:
        reports = self._reports()
        if isinstance(reports, (str, bytes)) or not isinstance(reports, Sequence):
            raise InvalidInputError(
                f"GlobalSearchQueryEngine: reports() must return a sequence of "
                f"CommunityReport, got {type(reports).__name__}.")
        wrong = next((r for r in reports if not isinstance(r, CommunityReport)), None)
        if wrong is not None:
            raise InvalidInputError(
                f"GlobalSearchQueryEngine: reports() must return CommunityReport records, "
                f"got a {type(wrong).__name__}.")
        if not reports:
            raise InvalidInputError(
                "GlobalSearchQueryEngine: there are no community reports to search. Build "
                "them first with index.build_communities() (or check the level asked for).")
        return list(reports)

    async def _map_batch(self, batch_no: int, batch: ReportBatch, query: str) -> _MapOutcome:
        kwargs: dict[str, Any] = {"context_data": batch.context_data, "query_str": query}
        raw = await within(self._llm.apredict(self._map_prompt, **kwargs), self.timeout)
        if isinstance(raw, Exception):
            logger.warning("GlobalSearchQueryEngine: the map call of batch %d (%d reports) "
                           "failed (%r); the batch gives no points", batch_no + 1,
                           len(batch.reports), raw)
            return _MapOutcome((), 0, failed=True)
        parsed = parse_points(strip_echo(raw, self._map_prompt.format(**kwargs)))
        if parsed is None:
            logger.warning("GlobalSearchQueryEngine: no JSON points in the map answer of "
                           "batch %d (%.200r); the batch gives no points", batch_no + 1, raw)
            return _MapOutcome((), 0, failed=True)
        points, dropped = parsed
        if dropped:
            logger.debug("GlobalSearchQueryEngine: batch %d: dropped %d points (score 0 or "
                         "malformed)", batch_no + 1, dropped)
        return _MapOutcome(tuple(points), dropped, failed=False)

    async def _search(self, query: str, reports: Sequence[CommunityReport],
                      started: float) -> Response:
        """The map-reduce, once for both paths: ``query`` and ``aquery`` differ only in how
        they load the reports and run this coroutine."""
        mapped = shuffled_reports(reports, self.shuffle_seed, self.min_rating)
        if not mapped:
            logger.warning("GlobalSearchQueryEngine: none of the %d reports is rated at "
                           "least min_rating=%s; nothing to search", len(reports),
                           self.min_rating)
        batches = pack_reports(mapped, self.batch_max_tokens)
        outcomes = await gather_bounded([functools.partial(self._map_batch, n, batch, query)
                                         for n, batch in enumerate(batches)],
                                        self.max_concurrency)
        ranked = _rank(outcomes)
        report_data, in_reduce = pack_points(ranked, self.reduce_max_tokens)
        answer = NO_DATA_ANSWER
        if ranked:
            raw = await within(self._llm.apredict(
                self._reduce_prompt, report_data=report_data, query_str=query,
                response_type=self.response_type), self.timeout)
            if isinstance(raw, NoAnswer):
                raise TimeoutError(f"GlobalSearchQueryEngine: the reduce LLM call gave no "
                                   f"answer within timeout={self.timeout} s; raise the "
                                   f"timeout or lower reduce_max_tokens.") from raw
            if isinstance(raw, Exception):
                raise raw
            answer = raw.strip()
        stats = GlobalSearchStats(
            reports=len(mapped),
            reports_truncated=sum(b.truncated for b in batches),
            batches=len(batches),
            map_calls=len(batches),
            map_failures=sum(o.failed for o in outcomes),
            points_kept=len(ranked),
            points_dropped=sum(o.dropped for o in outcomes),
            points_in_reduce=in_reduce,
            reduce_called=bool(ranked),
            seconds=time.perf_counter() - started,
        )
        logger.debug("GlobalSearchQueryEngine: %s", stats)
        return Response(response=answer, source_nodes=_source_nodes(batches, outcomes),
                        metadata=stats.as_dict())

    # ------------------------------------------------------------------ sync / async

    def _query(self, query_bundle: QueryBundle) -> Response:
        started = time.perf_counter()
        query = self._query_text(query_bundle)
        reports = self._load_reports()
        return run_blocking(lambda: self._search(query, reports, started))

    async def _aquery(self, query_bundle: QueryBundle) -> Response:
        started = time.perf_counter()
        query = self._query_text(query_bundle)
        reports = await asyncio.to_thread(self._load_reports)  # Milvus I/O off the loop
        return await self._search(query, reports, started)
