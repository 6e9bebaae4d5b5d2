"""Global search timing: one question over synthetic community reports, scripted LLM.

:class:`~llama_index_graphrag_milvus.communities.global_search.GlobalSearchQueryEngine`
maps batches of community reports with one LLM call each, at most ``max_concurrency`` in
flight, then makes one reduce call. The LLM here is scripted (no network): every call waits
``--delay`` seconds, the stand-in for an LLM API's latency, then answers a map prompt with one valid
JSON point and the reduce prompt with a sentence. The reports are synthetic, all of the same
token count, and the batch budget holds ``--reports-per-batch`` of them, so a question makes
exactly ``--batches`` map calls plus the reduce call. Printed per ``--concurrency`` value:
the LLM calls, the wall time of the question, the ideal time
(``ceil(batches / concurrency) * delay + delay``) and the peak number of calls in flight.

Example::

    python -m benchmarks.global_search --batches 50 \\
        --concurrency 16 1 --delay 0.2
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass

from llama_index.core.llms import (
    LLMMetadata,
)

from benchmarks import command_parser
from benchmarks.sleepy import SleepyLLM
from llama_index_graphrag_milvus.communities.global_search import GlobalSearchQueryEngine
from llama_index_graphrag_milvus.communities.map_reduce import (
    GlobalSearchStats,
    format_report,
    pack_reports,
)
from llama_index_graphrag_milvus.llm import count_tokens
from llama_index_graphrag_milvus.records import Community, CommunityReport, Finding

_REPORT_ID = re.compile(r"^----Report (\S+)----$", re.MULTILINE)
REDUCE_MARKER = "---Analyst Reports---"
"""A line of the default reduce prompt, absent from the map prompt."""


class SleepyPointsLLM(SleepyLLM):
    """Waits ``delay`` seconds per call, then answers a map prompt with one JSON point
    citing the first report of the batch, and the reduce prompt with a sentence. Counts the
    calls (``calls``) and the most calls in flight at once (``peak``).

    >>> llm = SleepyPointsLLM()
    >>> llm.complete("----Report c0001----\\nTitle: Guild").text
    '{"points": [{"description": "Guild c0001 trades wool [Data: Reports (c0001)]", \
"score": 50}]}'
    >>> llm.complete("---Analyst Reports---\\n...").text, llm.calls
    ('The guilds trade wool [Data: Reports (c0001)].', 2)
    """

    def __init__(self, delay: float = 0.0) -> None:
        super().__init__(delay=delay)

    @classmethod
    def class_name(cls) -> str:
        return "SleepyPointsLLM"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="sleepy-points", is_chat_model=False)

    def answer(self, prompt: str) -> str:
        if REDUCE_MARKER in prompt:
            return "The guilds trade wool [Data: Reports (c0001)]."
        ids = _REPORT_ID.findall(prompt) or ["unknown"]
        point = {"description": f"Guild {ids[0]} trades wool [Data: Reports ({ids[0]})]",
                 "score": 50}
        return json.dumps({"points": [point]})


def synthetic_reports(count: int) -> list[CommunityReport]:
    """``count`` (at most 10,000) level-1 reports whose sections have the same token count.

    >>> [r.title for r in synthetic_reports(2)]
    ['Guild 0000 of Basel', 'Guild 0001 of Basel']
    """
    if not 0 <= count <= 10_000:
        raise ValueError(f"count must be 0..10000, got {count}")
    return [CommunityReport(
        Community(f"c{i:04d}", 1, "", (), (f"e{i}",)), f"Guild {i:04d} of Basel",
        f"The guild {i:04d} trades wool and cloth along the Rhine.",
        (Finding(f"Guild {i:04d} is old", "Founded long ago; its members meet every week."),),
        5.0, "A guild of the city.", "llm") for i in range(count)]


def batch_budget(reports: Sequence[CommunityReport], per_batch: int, batches: int) -> int:
    """The ``batch_max_tokens`` that packs ``reports`` into exactly ``batches`` batches of
    ``per_batch`` (the last may hold fewer); raises ``ValueError`` when the sections differ
    in size so that no budget does."""
    budget = per_batch * max(count_tokens(format_report(r)) for r in reports)
    got = len(pack_reports(reports, budget))
    if got != batches:
        raise ValueError(f"{len(reports)} reports with a budget of {budget} tokens make {got} "
                         f"batches, not {batches}: the report sections differ in size")
    return budget


@dataclass(frozen=True)
class Run:
    """One question at one ``max_concurrency``."""

    concurrency: int
    seconds: float
    llm_calls: int
    peak_in_flight: int
    stats: GlobalSearchStats


def measure(reports: Sequence[CommunityReport], budget: int, concurrency: int, delay: float,
            use_async: bool = False) -> Run:
    """Time one question (``query``, or ``aquery`` with ``use_async``) with a fresh LLM."""
    llm = SleepyPointsLLM(delay=delay)
    engine = GlobalSearchQueryEngine(lambda: reports, llm=llm, batch_max_tokens=budget,
                                     max_concurrency=concurrency)
    question = "What do the guilds of Basel trade?"
    started = time.perf_counter()
    response = (asyncio.run(engine.aquery(question)) if use_async
                else engine.query(question))
    seconds = time.perf_counter() - started
    stats = GlobalSearchStats(**(response.metadata or {}))
    return Run(concurrency, seconds, llm.calls, llm.peak, stats)


def format_runs(runs: Sequence[Run], delay: float) -> str:
    """A Markdown table of the runs.

    >>> stats = GlobalSearchStats(200, 0, 50, 50, 0, 50, 0, 50, True, 0.8)
    >>> print(format_runs([Run(16, 1.04, 51, 16, stats)], 0.2))
    | max_concurrency | wall s | ideal s | LLM calls | batches | map failures | peak in flight |
    |---|---|---|---|---|---|---|
    | 16 | 1.04 | 1.00 | 51 | 50 | 0 | 16 |
    """
    lines = ["| max_concurrency | wall s | ideal s | LLM calls | batches | map failures | "
             "peak in flight |", "|---|---|---|---|---|---|---|"]
    for run in runs:
        ideal = (math.ceil(run.stats.batches / run.concurrency) + run.stats.reduce_called
                 ) * delay
        lines.append(f"| {run.concurrency} | {run.seconds:.2f} | {ideal:.2f} | "
                     f"{run.llm_calls} | {run.stats.batches} | {run.stats.map_failures} | "
                     f"{run.peak_in_flight} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Command line entry point (see the module docstring)."""
    parser = command_parser("benchmarks.global_search", __doc__)
    parser.add_argument("--batches", type=int, default=50, help="map calls (default 50)")
    parser.add_argument("--reports-per-batch", type=int, default=4,
                        help="reports per map call (default 4)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 1],
                        help="max_concurrency values to measure (default: 16 1)")
    parser.add_argument("--delay", type=float, default=0.2,
                        help="seconds the scripted LLM takes per call (default 0.2)")
    parser.add_argument("--async", dest="use_async", action="store_true",
                        help="time aquery instead of query")
    args = parser.parse_args(argv)
    if args.batches < 1 or args.reports_per_batch < 1 or any(c < 1 for c in args.concurrency):
        parser.error("--batches, --reports-per-batch and --concurrency must be at least 1")
    if args.batches * args.reports_per_batch > 10_000:
        parser.error("at most 10,000 reports (--batches x --reports-per-batch)")
    if args.delay < 0:
        parser.error("--delay must be >= 0")

    reports = synthetic_reports(args.batches * args.reports_per_batch)
    budget = batch_budget(reports, args.reports_per_batch, args.batches)
    print(f"{len(reports)} reports, batch_max_tokens={budget} -> {args.batches} batches; "
          f"LLM delay {args.delay} s; {'aquery' if args.use_async else 'query'}", flush=True)
    runs = []
    for concurrency in args.concurrency:
        run = measure(reports, budget, concurrency, args.delay, args.use_async)
        print(f"max_concurrency {concurrency}: {run.llm_calls} LLM calls, "
              f"{run.seconds:.2f} s", flush=True)
        runs.append(run)
    print(format_runs(runs, args.delay))


if __name__ == "__main__":
    main()
