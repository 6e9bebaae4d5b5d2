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
on, unless every map call failed: that raises
:class:`~llama_index_graphrag_milvus.errors.LLMAnswerError` (or ``LLMTimeoutError`` when
every one timed out) rather than answer "no data" for an LLM that is down. The reduce call
is the answer: its failure, or an empty answer, is raised to the caller.

Example::

    engine = GlobalSearchQueryEngine(lambda: load_reports(level=1), llm=llm)
    response = engine.query("What are the main themes of the corpus?")
    print(response.response, response.metadata["map_failures"])
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.response.schema import Response
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.llms.llm import LLM
from llama_index.core.prompts import BasePromptTemplate, PromptTemplate
from llama_index.core.prompts.mixin import PromptDictType, PromptMixinType
from llama_index.core.schema import QueryBundle
from llama_index.core.settings import Settings

from llama_index_graphrag_milvus.communities.map_reduce import (
    GlobalSearchStats,
    MapOutcome,
    ReportBatch,
    pack_points,
    pack_reports,
    parse_points,
    rank_points,
    shuffled_reports,
    source_nodes,
)
from llama_index_graphrag_milvus.errors import (
    InvalidInputError,
    LLMAnswerError,
    LLMTimeoutError,
)
from llama_index_graphrag_milvus.llm import (
    NoAnswer,
    gather_bounded,
    run_blocking,
    within,
)
from llama_index_graphrag_milvus.parsing import strip_echo
from llama_index_graphrag_milvus.records import CommunityReport
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


def _check_some_map_answered(outcomes: Sequence[MapOutcome], timeout: float | None) -> None:
    """Raise when there were map calls and every one failed: "no data" would hide an LLM
    that is down, late or answering without JSON points."""
    if not outcomes or not all(o.failed for o in outcomes):
        return
    first = next((o.error for o in outcomes if o.error is not None), None)
    late = all(isinstance(o.error, NoAnswer) for o in outcomes)
    error = LLMTimeoutError if late else LLMAnswerError
    hint = (f"raise the timeout (timeout={timeout} s) or lower batch_max_tokens" if late
            else "check the LLM (its key, its model, its output-token limit) and ask again")
    raise error(f"GlobalSearchQueryEngine: all {len(outcomes)} map calls failed (the "
                f"first: {first!r}); {hint}.") from first


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
            a reduce call past it raises
            :class:`~llama_index_graphrag_milvus.errors.LLMTimeoutError` (a
            ``TimeoutError``). ``None`` waits as long as the LLM client does.

    The response: ``response.response`` is the answer (:data:`NO_DATA_ANSWER` when no
    point has a score above 0); ``source_nodes`` are the reports of the batches that gave
    points (:func:`report_node`), scored by the best point score of their batch / 100;
    ``metadata`` is :class:`GlobalSearchStats` as a dict.

    Raises:
        InvalidInputError: bad arguments; an empty query; ``reports()`` returned no
            reports (build them with ``index.build_communities()``) or not reports.
        LLMTimeoutError: the reduce call gave no answer within ``timeout``, or no map
            call did.
        LLMAnswerError: every map call failed (raised, or answered without JSON points),
            or the reduce call answered nothing.
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

    async def _map_batch(self, batch_no: int, batch: ReportBatch, query: str) -> MapOutcome:
        kwargs: dict[str, Any] = {"context_data": batch.context_data, "query_str": query}
        raw = await within(self._llm.apredict(self._map_prompt, **kwargs), self.timeout)
        if isinstance(raw, Exception):
            logger.warning("GlobalSearchQueryEngine: the map call of batch %d (%d reports) "
                           "failed (%r); the batch gives no points", batch_no + 1,
                           len(batch.reports), raw)
            return MapOutcome((), 0, failed=True, error=raw)
        parsed = parse_points(strip_echo(raw, self._map_prompt.format(**kwargs)))
        if parsed is None:
            logger.warning("GlobalSearchQueryEngine: no JSON points in the map answer of "
                           "batch %d (%.200r); the batch gives no points", batch_no + 1, raw)
            return MapOutcome((), 0, failed=True, error=ValueError(
                f"no JSON points in the answer {raw[:200]!r}"))
        points, dropped = parsed
        if dropped:
            logger.debug("GlobalSearchQueryEngine: batch %d: dropped %d points (score 0 or "
                         "malformed)", batch_no + 1, dropped)
        return MapOutcome(tuple(points), dropped, failed=False)

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
        _check_some_map_answered(outcomes, self.timeout)
        ranked = rank_points(outcomes)
        report_data, in_reduce = pack_points(ranked, self.reduce_max_tokens)
        answer = NO_DATA_ANSWER
        if ranked:
            raw = await within(self._llm.apredict(
                self._reduce_prompt, report_data=report_data, query_str=query,
                response_type=self.response_type), self.timeout)
            if isinstance(raw, NoAnswer):
                raise LLMTimeoutError(f"GlobalSearchQueryEngine: the reduce LLM call gave no "
                                      f"answer within timeout={self.timeout} s; raise the "
                                      f"timeout or lower reduce_max_tokens.") from raw
            if isinstance(raw, Exception):
                raise raw
            answer = raw.strip() if isinstance(raw, str) else ""
            if not answer:
                raise LLMAnswerError(
                    f"GlobalSearchQueryEngine: the reduce LLM call answered nothing "
                    f"({raw!r}) to {len(ranked)} key points; check the LLM (its output-"
                    f"token limit, its model) and ask again.")
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
        return Response(response=answer, source_nodes=source_nodes(batches, outcomes),
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
