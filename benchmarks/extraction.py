"""Extraction throughput benchmark: wall time of :class:`TripletExtractor` versus concurrency.

The LLM is scripted (no network): it answers each passage with its stored triplets
(``triplets.jsonl`` of a ``shared/benchmarks`` folder) after a fixed delay, the stand-in for
an LLM API's latency. The run extracts every passage of ``corpus.jsonl`` once per
``--concurrency`` value (no cache, fresh nodes each time) and prints the wall time, the LLM
calls, the triplets, the failures, the peak number of requests in flight, and the speed-up
over the first concurrency value; with a delay ``d`` and ``n`` passages the ideal is
``n * d / concurrency`` seconds.

Example::

    python -m benchmarks.extraction \\
        /work/shared/benchmarks/musique_train100 --concurrency 1 16 --delay 0.2
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.llms import (
    LLMMetadata,
)
from llama_index.core.schema import TextNode

from benchmarks import command_parser
from benchmarks.multihop.data import InputError, guarded, load_dataset
from benchmarks.sleepy import SleepyLLM
from llama_index_graphrag_milvus.extraction import TripletExtractor


class StoredTripletLLM(SleepyLLM):
    """Answers an extraction prompt with the stored triplets of its passage after ``delay``
    seconds; counts the requests in flight (``peak``). A passage it does not know gets
    ``{"triplets": []}``.

    >>> llm = StoredTripletLLM({"Euler was born in Basel.": [["Euler", "born in", "Basel"]]})
    >>> llm.complete("Passage:\\nEuler was born in Basel.\\n\\nAnswer:").text
    '{"triplets": [["Euler", "born in", "Basel"]]}'
    """

    _answers: dict[str, str] = PrivateAttr(default_factory=dict)

    def __init__(self, triplets_by_text: dict[str, list[Any]], delay: float = 0.0) -> None:
        super().__init__(delay=delay)
        self._answers = {text: json.dumps({"triplets": triplets})
                         for text, triplets in triplets_by_text.items()}

    @classmethod
    def class_name(cls) -> str:
        return "StoredTripletLLM"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="stored-triplets", is_chat_model=False)

    def answer(self, prompt: str) -> str:
        passage = prompt.rsplit("Passage:\n", 1)[-1].rsplit("\n\nAnswer:", 1)[0]
        return self._answers.get(passage, '{"triplets": []}')


def load_passages(folder: Path, limit: int | None = None
                  ) -> tuple[list[tuple[str, str]], dict[str, list[Any]]]:
    """``(corpus id, text)`` of the passages in ``corpus.jsonl`` and the stored triplets
    per passage text (from ``triplets.jsonl``), read and checked as the other benchmarks
    read a folder (:func:`~benchmarks.multihop.data.load_dataset`)."""
    dataset = load_dataset(folder)
    if dataset.triplets is None:
        raise InputError(f"{folder} has no triplets.jsonl: this benchmark replays the stored "
                         "triplets as the LLM's answers")
    passages = [(p.id, p.text) for p in dataset.passages][:limit]
    return passages, {text: dataset.triplets.get(cid, []) for cid, text in passages}


@dataclass(frozen=True)
class Run:
    """One extraction of every passage at one concurrency."""

    concurrency: int
    seconds: float
    passages: int
    llm_calls: int
    triplets: int
    failures: int
    peak_in_flight: int


async def measure(passages: Sequence[tuple[str, str]], triplets: dict[str, list[Any]],
                  concurrency: int, delay: float, use_sync: bool = False,
                  show_progress: bool = False) -> Run:
    """Extract every passage once with ``num_workers=concurrency``; the wall time."""
    llm = StoredTripletLLM(triplets, delay=delay)
    extractor = TripletExtractor(llm=llm, num_workers=concurrency, max_triplets_per_chunk=1000)
    nodes = [TextNode(id_=cid, text=text) for cid, text in passages]
    started = time.perf_counter()
    if use_sync:
        report = await asyncio.to_thread(extractor.extract, nodes, show_progress)
    else:
        report = await extractor.aextract(nodes, show_progress=show_progress)
    seconds = time.perf_counter() - started
    return Run(concurrency, seconds, report.passages, report.llm_calls, report.triplets,
               len(report.failures), llm.peak)


def format_runs(runs: Sequence[Run], delay: float) -> str:
    """A Markdown table of the runs, with the speed-up over the first one.

    >>> print(format_runs([Run(1, 10.0, 50, 50, 100, 0, 1), Run(4, 2.6, 50, 50, 100, 0, 4)],
    ...                   0.2))
    | concurrency | wall s | ideal s | speed-up | passages | LLM calls | triplets | failures \
| peak in flight |
    |---|---|---|---|---|---|---|---|---|
    | 1 | 10.00 | 10.00 | 1.00 | 50 | 50 | 100 | 0 | 1 |
    | 4 | 2.60 | 2.50 | 3.85 | 50 | 50 | 100 | 0 | 4 |
    """
    lines = ["| concurrency | wall s | ideal s | speed-up | passages | LLM calls | triplets | "
             "failures | peak in flight |", "|---|---|---|---|---|---|---|---|---|"]
    for run in runs:
        ideal = run.llm_calls * delay / run.concurrency
        lines.append(f"| {run.concurrency} | {run.seconds:.2f} | {ideal:.2f} | "
                     f"{runs[0].seconds / run.seconds:.2f} | {run.passages} | {run.llm_calls} | "
                     f"{run.triplets} | {run.failures} | {run.peak_in_flight} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Command line entry point (see the module docstring)."""
    parser = command_parser("benchmarks.extraction", __doc__)
    parser.add_argument("folder", type=Path, help="benchmark folder: corpus.jsonl, "
                        "questions.jsonl and triplets.jsonl (read and checked as by "
                        "benchmarks.multihop)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16],
                        help="num_workers values to measure (default: 1 16)")
    parser.add_argument("--delay", type=float, default=0.2,
                        help="seconds the scripted LLM takes per request (default 0.2)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N passages")
    parser.add_argument("--sync", action="store_true",
                        help="use the sync path (worker threads) instead of the async one")
    parser.add_argument("--progress", action="store_true", help="show the progress bar")
    parser.add_argument("--json", type=Path, default=None, help="also write the runs here")
    args = parser.parse_args(argv)
    if any(c < 1 for c in args.concurrency):
        parser.error("--concurrency values must be at least 1")
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1 (passages)")

    passages, triplets = load_passages(args.folder, args.limit)
    print(f"{len(passages)} passages from {args.folder}, delay {args.delay} s, "
          f"{'sync (threads)' if args.sync else 'async'} path", flush=True)
    runs = []
    for concurrency in args.concurrency:
        run = asyncio.run(measure(passages, triplets, concurrency, args.delay, args.sync,
                                  args.progress))
        print(f"concurrency {concurrency}: {run.seconds:.2f} s", flush=True)
        runs.append(run)
    print(format_runs(runs, args.delay))
    if args.json is not None:
        args.json.write_text(json.dumps([asdict(r) for r in runs], indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(guarded(main))
