"""The pure steps of global search (Microsoft GraphRAG's map-reduce over community reports):
batching the reports under a token budget, reading the map answers' points, ranking them and
packing the reduce prompt's analyst blocks. No LLM here: :mod:`.global_search` calls it."""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from llama_index.core.schema import NodeWithScore

from llama_index_graphrag_milvus.communities.report_retriever import report_node
from llama_index_graphrag_milvus.llm import count_tokens, truncate_to_tokens
from llama_index_graphrag_milvus.parsing import keyed_list
from llama_index_graphrag_milvus.records import CommunityReport

logger = logging.getLogger(__name__)


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
class RankedPoint:
    """A kept point with the batch (0-based) and the position in it that produced it."""

    point: MapPoint
    batch: int
    position: int


@dataclass(frozen=True)
class MapOutcome:
    """The points of one batch, and whether its map call failed (``error``: why, or the
    LLM's exception)."""

    points: tuple[MapPoint, ...]
    dropped: int
    failed: bool
    error: Exception | None = None


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
    An answer cut off in its list (the output-token limit) gives its complete points.

    A point needs a non-empty string ``description`` and a numeric ``score`` (a number, or
    a string holding one); the score is clamped to 0..100. Points that lack either, and
    points with score 0 ("I don't know"), are dropped; a list none of whose items is such a
    point is ``None``, as an answer without JSON is.

    >>> parse_points('Sure: {"points": [{"description": "A [Data: Reports (c1)]", '
    ...              '"score": 120}, {"description": "none", "score": 0}, {"score": 5}]}')
    ([MapPoint(description='A [Data: Reports (c1)]', score=100.0)], 2)
    >>> parse_points("I cannot answer.") is None
    True
    """
    value, cut = keyed_list(  # a bare list is one of point objects, not an aside: "[1]"
        raw, "points", bare=lambda items: bool(items) and all(isinstance(v, dict) for v in items))
    if value is None or (cut and not value):
        return None
    if cut:
        logger.warning("global search: a map answer was cut off (the LLM's output-token "
                       "limit?); kept its %d complete points", len(value))
    points: list[MapPoint] = []
    dropped = well_formed = 0
    for item in value:
        description = item.get("description") if isinstance(item, dict) else None
        score = _score(item.get("score")) if isinstance(item, dict) else None
        formed = isinstance(description, str) and bool(description.strip()) \
            and score is not None
        well_formed += formed
        if not formed or not score:
            # no description, no numeric score, or score 0 ("I don't know")
            dropped += 1
            continue
        points.append(MapPoint(str(description).strip(), score))
    if value and not well_formed:  # a list, but not of points: the format was not followed
        return None
    return points, dropped


def rank_points(outcomes: Sequence[MapOutcome]) -> list[RankedPoint]:
    """Every kept point, by score descending; ties keep batch order, then point order."""
    ranked = [RankedPoint(point, batch, position)
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


def pack_points(ranked: Sequence[RankedPoint], max_tokens: int,
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


def source_nodes(batches: Sequence[ReportBatch], outcomes: Sequence[MapOutcome]
                  ) -> list[NodeWithScore]:
    """The reports of the batches with kept points, scored by their batch's best point
    score / 100; best first, ties in batch order, then report order."""
    scored = [(max(p.score for p in outcome.points) / 100.0, batch_no, position, report)
              for batch_no, (batch, outcome) in enumerate(zip(batches, outcomes, strict=True))
              if outcome.points
              for position, report in enumerate(batch.reports)]
    scored.sort(key=lambda item: (-item[0], item[1], item[2]))
    return [report_node(report, score) for score, _, _, report in scored]
