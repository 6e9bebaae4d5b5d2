"""Triplet extraction: an LLM turns passages into (subject, predicate, object) triplets.

:class:`TripletExtractor` is a LlamaIndex ``TransformComponent``: it writes the triplets of
each node into ``node.metadata["graphrag_triplets"]``. Triplets that core's own path
extractors (``SimpleLLMPathExtractor``, ``SchemaLLMPathExtractor``,
``DynamicLLMPathExtractor``) leave in node metadata are read too, see
:func:`triplets_from_node`.

Extraction of a real corpus is concurrent (at most ``num_workers`` LLM requests in flight),
retried (``max_retries`` with exponential backoff from ``retry_base_delay``), cached and
resumable: an :class:`ExtractionCache` keeps the triplets of every passage extracted
successfully, keyed by the passage text, the prompt and the model, in a LlamaIndex kvstore
(a JSON file by default, persisted as the run goes; Redis, MongoDB, Postgres... through any
``BaseKVStore``). A run that crashed, or that left passages failed, is simply run again:
only the passages missing from the cache go to the LLM.

The cache belongs to the extraction, not to the index: its keys say nothing of where the
triplets are stored, so one cache serves a Milvus Lite file, a Milvus server or Zilliz
Cloud alike, and any number of indexes. Keep it next to the ingestion job (a file on the
machine that runs it), or in a shared kvstore when several machines ingest into one server.

With ``describe=True`` the extractor runs Microsoft GraphRAG's extraction instead: the LLM
returns entities with a type and a description, and relations with a predicate, a
description and a 1-10 strength (:data:`DEFAULT_DESCRIBED_EXTRACT_PROMPT`,
:func:`parse_described`). The triplets are stored as above; the descriptions go to
``metadata["graphrag_entity_descriptions"]`` and ``metadata["graphrag_relation_descriptions"]``
and are read back with :func:`descriptions_from_node`.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from llama_index.core.bridge.pydantic import Field, PrivateAttr, SerializeAsAny
from llama_index.core.llms.llm import LLM
from llama_index.core.prompts import BasePromptTemplate
from llama_index.core.prompts.mixin import PromptDictType, PromptMixin, PromptMixinType
from llama_index.core.schema import BaseNode, MetadataMode, TransformComponent
from llama_index.core.settings import Settings
from tqdm import tqdm

from llama_index_graphrag_milvus.errors import InvalidInputError
from llama_index_graphrag_milvus.extraction.cache import ExtractionCache, sha256
from llama_index_graphrag_milvus.extraction.described import (
    DescribedExtraction,
    no_extraction,
    parse_described,
    store_descriptions,
)
from llama_index_graphrag_milvus.extraction.extraction_report import (
    EXTRACTION_ERROR_KEY,
    ExtractionReport,
    Outcome,
    Tally,
)
from llama_index_graphrag_milvus.extraction.prompts import (
    DEFAULT_DESCRIBED_EXTRACT_PROMPT,
    DEFAULT_ENTITY_TYPES,
    DEFAULT_TRIPLET_EXTRACT_PROMPT,
)
from llama_index_graphrag_milvus.extraction.triplets import (
    answer_failure,
    parse_triplets,
    store_triplets,
)
from llama_index_graphrag_milvus.ids import clean_text
from llama_index_graphrag_milvus.llm import (
    Sleep,
    Threads,
    call_with_retries,
    gather_bounded,
    run_with_threads,
)
from llama_index_graphrag_milvus.metadata import (
    ENTITY_DESCRIPTIONS_KEY,
    RELATION_DESCRIPTIONS_KEY,
    hide_from_models,
)
from llama_index_graphrag_milvus.parsing import strip_echo
from llama_index_graphrag_milvus.validation import check_optional_number, pydantic_arguments

T = TypeVar("T")

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Io:
    """The I/O of one extraction call: the only part that differs between sync and async."""

    predict: Callable[[dict[str, Any]], Awaitable[str]]
    cache_get: Callable[[str], Awaitable[DescribedExtraction | None]]
    cache_put: Callable[[str, DescribedExtraction], Awaitable[None]]


def _as_async(function: Callable[..., T]) -> Callable[..., Awaitable[T]]:
    async def call(*args: Any) -> T:
        return function(*args)

    return call


async def _no_cached(key: str) -> DescribedExtraction | None:
    return None


async def _no_put(key: str, extraction: DescribedExtraction) -> None:
    return None


def _check_entity_types(value: Any) -> tuple[str, ...]:
    """``entity_types`` cleaned (whitespace collapsed, duplicates dropped), or
    :class:`InvalidInputError`."""
    items = list(value) if isinstance(value, Iterable) and not isinstance(value, str) else None
    if not items or not all(isinstance(t, str) and clean_text(t) for t in items):
        raise InvalidInputError(
            f"entity_types must be a non-empty sequence of type names, got {value!r:.200}; "
            f"for example {DEFAULT_ENTITY_TYPES!r} (Microsoft GraphRAG's)."
        )
    return tuple(dict.fromkeys(clean_text(t) for t in items))


class TripletExtractor(TransformComponent, PromptMixin):
    """Extract triplets from nodes with an LLM; a ``TransformComponent``.

    Each node gets ``metadata["graphrag_triplets"] = [[subject, predicate, object], ...]``,
    excluded from what LLMs and embedding models see. At most ``num_workers`` LLM requests
    are in flight, in the sync call (the LLM's sync API in worker threads) and in ``acall``
    (its async API). A failing LLM call is retried ``max_retries`` times, waiting
    ``retry_base_delay`` seconds, then twice as long at each retry; a passage that still
    fails gets no triplets and ``metadata["graphrag_extraction_error"]``, a warning is
    logged, and the run goes on. An answer with no usable JSON ("I found no triplets.") is
    an answer: no triplets, a warning, no retry. A blank answer, one cut off before its
    first complete triplet (the LLM's output-token limit), or JSON without a list of
    triplets fails the passage as an error does, without a retry; an answer cut off later
    keeps its complete triplets, with a warning. The passage is stored and searchable
    either way.

    With an :class:`ExtractionCache` (``cache=``), passages already extracted with the same
    text, prompt and model are not sent to the LLM again; failures are not cached, so running
    the same input again after a crash or after failures extracts only what is missing.
    :meth:`extract` / :meth:`aextract` return an :class:`ExtractionReport` (counts and the
    failed node ids); ``__call__`` / ``acall`` log it at INFO and return the nodes.
    Passages with identical text in one call cost one LLM request.

    With ``describe=True``, the extraction is Microsoft GraphRAG's: the LLM names the
    entities (of ``entity_types``) with a type and a description, and the relations between
    them with a predicate, a description and a 1-10 strength
    (:data:`DEFAULT_DESCRIBED_EXTRACT_PROMPT`, read by :func:`parse_described`). The
    triplets of the relations go to ``metadata["graphrag_triplets"]`` as above, the
    descriptions to ``metadata["graphrag_entity_descriptions"]`` (``[[name, type,
    description], ...]``) and ``metadata["graphrag_relation_descriptions"]`` (``[[subject,
    predicate, object, description, strength], ...]``), both excluded from what LLMs and
    embedding models see (read them with :func:`descriptions_from_node`). At most
    ``max_triplets_per_chunk`` relations and as many entities are kept per passage. The
    prompt is chosen at construction: ``DEFAULT_DESCRIBED_EXTRACT_PROMPT`` unless
    ``extract_prompt`` is given.

    Args:
        llm: the extraction LLM; defaults to ``Settings.llm``.
        cache: where extracted triplets are kept between runs; none by default.
        sleep: the async sleep of the retry backoff (default ``asyncio.sleep``; tests pass
            a recorder).
        **kwargs: the fields (``extract_prompt``, ``describe``, ``entity_types``,
            ``max_triplets_per_chunk``, ``num_workers``, ``max_retries``,
            ``retry_base_delay``, ``timeout``).

    Raises:
        InvalidInputError: ``entity_types`` is a string, empty, or holds a blank or
            non-text type; a field is out of range or of the wrong type (the message names
            it; pydantic's ``ValidationError`` is chained as ``__cause__``).

    Example::

        from llama_index.core.ingestion import IngestionPipeline
        from llama_index.core.node_parser import SentenceSplitter
        extractor = TripletExtractor(llm=llm, num_workers=16,
                                     cache=ExtractionCache("./extraction_cache.json"))
        pipeline = IngestionPipeline(transformations=[SentenceSplitter(), extractor])
        nodes = pipeline.run(documents=documents, show_progress=True)
        index = GraphRAGIndex.from_nodes(nodes, uri="./graphrag.db")
        print(extraction_failures(nodes))  # run the pipeline again to retry just these
    """

    llm: SerializeAsAny[LLM] = Field(description="The LLM that extracts triplets.")
    extract_prompt: SerializeAsAny[BasePromptTemplate] = Field(
        default=DEFAULT_TRIPLET_EXTRACT_PROMPT,
        description="Prompt with {text} and {max_triplets} (and {entity_types} with "
        "describe); must ask for JSON triplets, or with describe for JSON entities and "
        "relations. Default: DEFAULT_TRIPLET_EXTRACT_PROMPT, or "
        "DEFAULT_DESCRIBED_EXTRACT_PROMPT with describe=True.",
    )
    describe: bool = Field(
        default=False, description="Microsoft GraphRAG's extraction: entities with a type "
        "and a description, relations with a description and a 1-10 strength, stored next "
        "to the triplets."
    )
    entity_types: tuple[str, ...] = Field(
        default=DEFAULT_ENTITY_TYPES, description="The entity types the described prompt "
        "asks for ({entity_types}, joined by ', '); Microsoft GraphRAG's by default."
    )
    max_triplets_per_chunk: int = Field(
        default=15, gt=0, description="Upper bound on triplets asked for per passage."
    )
    num_workers: int = Field(
        default=4, gt=0, description="LLM requests in flight at most (sync and async)."
    )
    max_retries: int = Field(
        default=3, ge=0, description="Retries of a failed LLM call before the passage is "
        "recorded as failed."
    )
    retry_base_delay: float = Field(
        default=1.0, ge=0.0, description="Seconds before the first retry; doubled at each "
        "further retry."
    )
    timeout: float | None = Field(
        default=None, gt=0.0, description="Seconds to wait for each LLM call; a call past "
        "it fails like an error (retried, then the passage is recorded as failed). None "
        "(default) waits as long as the LLM client does. A sync call given up is left to "
        "finish in its thread."
    )
    _cache: ExtractionCache | None = PrivateAttr(default=None)
    _sleep: Sleep | None = PrivateAttr(default=None)  # None: asyncio.sleep

    def __init__(self, llm: LLM | None = None, cache: ExtractionCache | None = None,
                 sleep: Sleep | None = None, **kwargs: Any) -> None:
        kwargs["llm"] = llm or Settings.llm
        if kwargs.get("timeout") is not None:  # one rule for every timeout of the package
            kwargs["timeout"] = check_optional_number("TripletExtractor: timeout",
                                                      kwargs["timeout"], low=0, low_open=True,
                                                      hint="seconds")
        if "entity_types" in kwargs:
            kwargs["entity_types"] = _check_entity_types(kwargs["entity_types"])
        prompt_given = kwargs.get("extract_prompt") is not None
        if not prompt_given:
            kwargs.pop("extract_prompt", None)
        with pydantic_arguments("TripletExtractor",
                                "max_triplets_per_chunk and num_workers are integers > 0, "
                                "max_retries an integer >= 0, retry_base_delay seconds >= 0, "
                                "timeout seconds > 0 or None, "
                                "extract_prompt a PromptTemplate."):
            super().__init__(**kwargs)
        if self.describe and not prompt_given:
            self.extract_prompt = DEFAULT_DESCRIBED_EXTRACT_PROMPT
        self._cache = cache
        self._sleep = sleep

    @classmethod
    def class_name(cls) -> str:
        return "GraphRAGTripletExtractor"

    @property
    def cache(self) -> ExtractionCache | None:
        """The :class:`ExtractionCache` given at construction, if any."""
        return self._cache

    def _get_prompts(self) -> PromptDictType:
        return {"extract_prompt": self.extract_prompt}

    def _get_prompt_modules(self) -> PromptMixinType:
        return {}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        if "extract_prompt" in prompts:
            self.extract_prompt = prompts["extract_prompt"]

    def _prompt_kwargs(self, node: BaseNode) -> dict[str, Any]:
        kwargs = {"text": node.get_content(metadata_mode=MetadataMode.LLM),
                  "max_triplets": self.max_triplets_per_chunk}
        if self.describe:
            kwargs["entity_types"] = ", ".join(self.entity_types)
        return kwargs

    def cache_key(self, text: str) -> str:
        """The cache key of a passage text (as the LLM sees it, metadata included):
        ``"<sha256 of text>:<16 hex of the prompt hash>:<model name>"``; the prompt hash
        covers the template text and ``max_triplets_per_chunk``, and with ``describe`` the
        described mode and ``entity_types`` (keys without ``describe`` are those of earlier
        versions, so their caches stay valid).

        >>> from llama_index.core.llms import MockLLM
        >>> key = TripletExtractor(llm=MockLLM()).cache_key("Euler was born in Basel.")
        >>> key.split(":")[0][:12], len(key.split(":")[1]), key.split(":")[2]
        ('432ec192c350', 16, 'unknown')
        """
        prompt = f"{self.extract_prompt.get_template()}\x00{self.max_triplets_per_chunk}"
        if self.describe:
            prompt += "\x00described\x00" + "\x1f".join(self.entity_types)
        return f"{sha256(text)}:{sha256(prompt)[:16]}:{self.llm.metadata.model_name}"

    # ------------------------------------------------------------------ shared helpers

    def _parse(self, raw: str, node_ids: str) -> DescribedExtraction | str:
        """What the answer holds, or why it failed (:func:`answer_failure`: not cached, so
        that the next run asks again)."""
        if not raw.strip():  # said once, not also as "no JSON in ''"
            logger.warning("triplet extraction of node %s failed: the LLM answered nothing",
                           node_ids)
            return "the LLM answered nothing"
        if self.describe:
            described = parse_described(raw)
            failure = answer_failure(raw, "relations", "relationships", "entities") \
                if described is None else None
            extraction, what = described or no_extraction(), "entities or relations"
        else:
            triplets, dropped = parse_triplets(raw)
            failure = answer_failure(raw, "triplets") if not triplets and not dropped \
                else None
            extraction, what = DescribedExtraction(triplets, [], [], dropped), "triplets"
        if failure is not None:
            logger.warning("triplet extraction of node %s failed: %s", node_ids, failure)
            return failure
        if extraction.dropped:
            logger.info("triplet extraction: dropped %d malformed %s of node %s",
                        extraction.dropped, what, node_ids)
        return extraction.cut(self.max_triplets_per_chunk)

    async def _predict_with_retries(self, prompt_kwargs: dict[str, Any], node_ids: str,
                                    io: _Io) -> Outcome:
        answer = await call_with_retries(
            lambda: io.predict(prompt_kwargs), f"triplet extraction of node {node_ids}",
            self.max_retries, self.retry_base_delay, self._sleep, logger, self.timeout)
        if answer.error is not None:
            return Outcome(no_extraction(), answer.error, answer.attempts)
        # an answer that repeats the prompt first (some completion endpoints, core's
        # MockLLM) would give the prompt's example triplets to every passage
        raw = strip_echo(answer.text, self.extract_prompt.format(**prompt_kwargs))
        parsed = self._parse(raw, node_ids)
        if isinstance(parsed, str):
            return Outcome(no_extraction(), parsed, answer.attempts)
        return Outcome(parsed, llm_calls=answer.attempts)

    async def _extract_passage(self, key: str, prompt_kwargs: dict[str, Any],
                               nodes: list[BaseNode], io: _Io, tally: Tally) -> None:
        cached = await io.cache_get(key)
        if cached is not None:
            outcome = Outcome(cached.cut(self.max_triplets_per_chunk), cached=True)
        else:
            node_ids = ", ".join(n.node_id for n in nodes)
            outcome = await self._predict_with_retries(prompt_kwargs, node_ids, io)
            if outcome.error is None:
                await io.cache_put(key, outcome.extraction)
        for node in nodes:
            store_triplets(node, outcome.triplets)
            if self.describe:
                store_descriptions(node, outcome.extraction.entities,
                                    outcome.extraction.relations)
            else:  # descriptions of an earlier described run would not match the triplets
                node.metadata.pop(ENTITY_DESCRIPTIONS_KEY, None)
                node.metadata.pop(RELATION_DESCRIPTIONS_KEY, None)
            if outcome.error is None:
                node.metadata.pop(EXTRACTION_ERROR_KEY, None)
            else:
                node.metadata[EXTRACTION_ERROR_KEY] = outcome.error
                hide_from_models(node, EXTRACTION_ERROR_KEY)
        tally.add(outcome, nodes)

    async def _extract_all(self, nodes: Sequence[BaseNode], show_progress: bool,
                           io: _Io) -> ExtractionReport:
        started = time.perf_counter()
        passages: dict[str, tuple[dict[str, Any], list[BaseNode]]] = {}
        for node in nodes:
            prompt_kwargs = self._prompt_kwargs(node)
            key = self.cache_key(prompt_kwargs["text"])
            passages.setdefault(key, (prompt_kwargs, []))[1].append(node)
        tally = Tally(tqdm(total=len(nodes), desc="Extracting triplets",
                            disable=not show_progress))
        try:  # a crash stops the other passages; what is done is kept
            await gather_bounded([functools.partial(self._extract_passage, key, kwargs, group,
                                                    io, tally)
                                  for key, (kwargs, group) in passages.items()],
                                 self.num_workers)
        finally:
            tally.bar.close()
            if self._cache is not None:
                self._cache.persist()
        report = tally.report(len(nodes), time.perf_counter() - started)
        logger.log(logging.INFO if report.failures else logging.DEBUG, "%s", report.summary())
        return report

    def _async_io(self) -> _Io:
        async def predict(prompt_kwargs: dict[str, Any]) -> str:
            return await self.llm.apredict(self.extract_prompt, **prompt_kwargs)

        cache = self._cache
        if cache is None:
            return _Io(predict, _no_cached, _no_put)
        return _Io(predict, cache.aget_described, cache.aput_described)

    def _threaded_io(self, threads: Threads) -> _Io:
        async def predict(prompt_kwargs: dict[str, Any]) -> str:
            return await threads.call(self.llm.predict, self.extract_prompt, **prompt_kwargs)

        cache = self._cache
        if cache is None:
            return _Io(predict, _no_cached, _no_put)
        return _Io(predict, _as_async(cache.get_described), _as_async(cache.put_described))

    # ------------------------------------------------------------------ entry points

    async def aextract(self, nodes: Sequence[BaseNode], show_progress: bool = False
                       ) -> ExtractionReport:
        """Extract the triplets of ``nodes`` in place through the LLM's async API; returns
        the report (see the class docstring)."""
        return await self._extract_all(nodes, show_progress, self._async_io())

    def extract(self, nodes: Sequence[BaseNode], show_progress: bool = False
                ) -> ExtractionReport:
        """:meth:`aextract` through the LLM's sync API, ``num_workers`` calls at a time in
        worker threads (for LLMs whose async API is missing or bound to another loop)."""
        return run_with_threads(
            self.num_workers, "graphrag-extract",
            lambda threads: self._extract_all(nodes, show_progress, self._threaded_io(threads)))

    def __call__(self, nodes: Sequence[BaseNode], show_progress: bool = False,
                 **kwargs: Any) -> Sequence[BaseNode]:
        self.extract(nodes, show_progress=show_progress)
        return nodes

    async def acall(self, nodes: Sequence[BaseNode], show_progress: bool = False,
                    **kwargs: Any) -> Sequence[BaseNode]:
        await self.aextract(nodes, show_progress=show_progress)
        return nodes
