"""Triplet extraction: an LLM turns passages into (subject, predicate, object) triplets.

:class:`TripletExtractor` is a LlamaIndex ``TransformComponent``: it writes the triplets of
each node into ``node.metadata["graphrag_triplets"]``. Triplets that core's own path
extractors (``SimpleLLMPathExtractor``, ``SchemaLLMPathExtractor``,
``DynamicLLMPathExtractor``) leave in node metadata are read too, see
:func:`triplets_from_node`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from llama_index.core.async_utils import run_jobs
from llama_index.core.bridge.pydantic import Field, SerializeAsAny
from llama_index.core.graph_stores.types import KG_NODES_KEY, KG_RELATIONS_KEY
from llama_index.core.llms.llm import LLM
from llama_index.core.prompts import BasePromptTemplate, PromptTemplate
from llama_index.core.prompts.mixin import PromptDictType, PromptMixin, PromptMixinType
from llama_index.core.schema import BaseNode, MetadataMode, TransformComponent
from llama_index.core.settings import Settings
from llama_index.core.utils import get_tqdm_iterable

from llama_index_graphrag_milvus.parsing import find_json
from llama_index_graphrag_milvus.records import (
    ENTITY_NAME_MAX_BYTES,
    TRIPLETS_KEY,
    Triplet,
    clean_text,
)

logger = logging.getLogger(__name__)

DEFAULT_TRIPLET_EXTRACT_PROMPT = PromptTemplate(
    "Extract knowledge-graph triplets from the passage below. A triplet is "
    "[subject, predicate, object]: subject and object are named entities or concise noun "
    "phrases, written as in the passage with pronouns resolved to the names they refer to; "
    "the predicate is a short verb phrase. Extract at most {max_triplets} triplets.\n"
    'Answer with JSON only, in the form {{"triplets": [["subject", "predicate", "object"], '
    "...]}}.\n\n"
    "Example passage: Leonhard Euler was born in Basel and was a student of Johann "
    "Bernoulli.\n"
    'Example answer: {{"triplets": [["Leonhard Euler", "was born in", "Basel"], '
    '["Leonhard Euler", "was a student of", "Johann Bernoulli"]]}}\n\n'
    "Passage:\n{text}\n\nAnswer:"
)
"""The default extraction prompt; variables ``{text}`` and ``{max_triplets}``."""


def _part_text(part: Any) -> str | None:
    """A triplet part as text: strings, and numbers (years, counts) written as text."""
    if isinstance(part, str):
        return part
    if isinstance(part, (int, float)) and not isinstance(part, bool):
        return str(part)
    return None


def _triplet_parts(item: Any) -> Sequence[Any] | None:
    if isinstance(item, Triplet):
        return (item.subject, item.predicate, item.object)
    if isinstance(item, dict):
        keys = ("subject", "predicate", "object")
        return tuple(item.get(k) for k in keys) if all(k in item for k in keys) else None
    if isinstance(item, (list, tuple)):
        return item
    return None


def to_triplets(items: Iterable[Any]) -> tuple[list[Triplet], int]:
    """Clean ``items`` into :class:`Triplet` objects; returns them and how many were dropped.

    Accepted items: 3-sequences of strings, ``{"subject", "predicate", "object"}`` dicts and
    :class:`Triplet`; a number part (``["Eleanor", "was born in", 1122]``) is kept as its
    text. Dropped: other lengths (2- or 4-tuples), empty parts or parts that are neither
    text nor numbers, and names longer than the entity collection allows. Whitespace is
    collapsed; the text is otherwise kept as written. Duplicates (same relation id) are kept
    once and not counted as dropped.

    >>> to_triplets([["Euler", "born in", "Basel"], ["Euler", "Basel"], ["", "x", "y"]])
    ([Triplet(subject='Euler', predicate='born in', object='Basel')], 2)
    """
    triplets: dict[str, Triplet] = {}
    dropped = 0
    for item in items:
        parts = _triplet_parts(item)
        texts = [_part_text(p) for p in parts] if parts is not None else []
        if len(texts) != 3 or any(t is None for t in texts):
            dropped += 1
            continue
        subject, predicate, obj = (clean_text(t or "") for t in texts)
        too_long = any(len(p.encode()) > ENTITY_NAME_MAX_BYTES for p in (subject, predicate, obj))
        if not subject or not predicate or not obj or too_long:
            dropped += 1
            continue
        triplet = Triplet(subject, predicate, obj)
        triplets.setdefault(triplet.id, triplet)
    return list(triplets.values()), dropped


def parse_triplets(raw: str) -> tuple[list[Triplet], int]:
    """Triplets from an LLM answer (JSON, possibly fenced or wrapped in prose).

    The answer is ``{"triplets": [...]}`` (an object with that key wins over a bracketed
    aside before it), a bare list of triplets, or one bare triplet. Returns the triplets and
    the number of items dropped; an answer with no JSON list at all yields ``([], 0)`` and a
    warning.

    >>> parse_triplets('From [1]: {"triplets": [["Euler", "born in", "Basel"]]}')
    ([Triplet(subject='Euler', predicate='born in', object='Basel')], 0)
    """
    value = find_json(raw, key="triplets")
    if isinstance(value, dict):
        value = value.get("triplets")
    if not isinstance(value, list):
        logger.warning("triplet extraction: no JSON list of triplets in the answer %.200r", raw)
        return [], 0
    if len(value) == 3 and all(isinstance(part, str) for part in value):
        value = [value]  # one triplet, not a list of them: strings are never triplets
    return to_triplets(value)


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _core_kg_triplets(metadata: dict[str, Any]) -> list[Any]:
    """(subject, label, object) from the ``nodes``/``relations`` core's extractors write.

    Entries are core's ``EntityNode``/``Relation`` objects or their dict dumps (metadata read
    back from JSON, where an entity has no ``id``: core's id is the name with ``"`` replaced
    by a space). An unreadable entry becomes an item that :func:`to_triplets` drops.
    """
    names: dict[str, str] = {}
    for node in metadata.get(KG_NODES_KEY) or []:
        name, node_id = _field(node, "name"), _field(node, "id")
        if isinstance(name, str):
            names[str(node_id or name.replace('"', " "))] = name
    items = []
    for rel in metadata.get(KG_RELATIONS_KEY) or []:
        source, target = _field(rel, "source_id"), _field(rel, "target_id")
        items.append([names.get(source, source) if isinstance(source, str) else source,
                      _field(rel, "label"),
                      names.get(target, target) if isinstance(target, str) else target])
    return items


def triplets_from_node(node: BaseNode) -> tuple[list[Triplet], int]:
    """The triplets stored in a node's metadata, by this package or by core's extractors.

    Looks at ``metadata["graphrag_triplets"]`` first, then at the ``nodes`` and ``relations``
    keys that ``SimpleLLMPathExtractor``, ``SchemaLLMPathExtractor`` and
    ``DynamicLLMPathExtractor`` write. Returns the triplets and the number dropped.
    """
    if TRIPLETS_KEY in node.metadata:
        return to_triplets(node.metadata[TRIPLETS_KEY] or [])
    return to_triplets(_core_kg_triplets(node.metadata))


def _store_triplets(node: BaseNode, triplets: list[Triplet]) -> None:
    node.metadata[TRIPLETS_KEY] = [[t.subject, t.predicate, t.object] for t in triplets]
    for keys in (node.excluded_embed_metadata_keys, node.excluded_llm_metadata_keys):
        if TRIPLETS_KEY not in keys:
            keys.append(TRIPLETS_KEY)


class TripletExtractor(TransformComponent, PromptMixin):
    """Extract triplets from nodes with an LLM; a ``TransformComponent``.

    Each node gets ``metadata["graphrag_triplets"] = [[subject, predicate, object], ...]``,
    excluded from what LLMs and embedding models see. A failing LLM call or an answer with
    no usable JSON leaves the node with no triplets and a warning in the log; the passage is
    still stored and searchable.

    Example::

        from llama_index.core.ingestion import IngestionPipeline
        from llama_index.core.node_parser import SentenceSplitter
        pipeline = IngestionPipeline(
            transformations=[SentenceSplitter(), TripletExtractor(llm=llm)])
        nodes = pipeline.run(documents=documents)
        index = GraphRAGIndex.from_nodes(nodes, uri="./graphrag.db")
    """

    llm: SerializeAsAny[LLM] = Field(description="The LLM that extracts triplets.")
    extract_prompt: SerializeAsAny[BasePromptTemplate] = Field(
        default=DEFAULT_TRIPLET_EXTRACT_PROMPT,
        description="Prompt with {text} and {max_triplets}; must ask for JSON triplets.",
    )
    max_triplets_per_chunk: int = Field(
        default=15, gt=0, description="Upper bound on triplets asked for per passage."
    )
    num_workers: int = Field(
        default=4, gt=0, description="Concurrent LLM calls in the async path (acall)."
    )

    def __init__(self, llm: LLM | None = None, **kwargs: Any) -> None:
        kwargs["llm"] = llm or Settings.llm
        super().__init__(**kwargs)

    @classmethod
    def class_name(cls) -> str:
        return "GraphRAGTripletExtractor"

    def _get_prompts(self) -> PromptDictType:
        return {"extract_prompt": self.extract_prompt}

    def _get_prompt_modules(self) -> PromptMixinType:
        return {}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        if "extract_prompt" in prompts:
            self.extract_prompt = prompts["extract_prompt"]

    def _prompt_kwargs(self, node: BaseNode) -> dict[str, Any]:
        return {"text": node.get_content(metadata_mode=MetadataMode.LLM),
                "max_triplets": self.max_triplets_per_chunk}

    def _apply(self, node: BaseNode, raw: str | BaseException) -> None:
        if isinstance(raw, BaseException):
            logger.warning("triplet extraction failed for node %s: %r", node.node_id, raw)
            triplets: list[Triplet] = []
        else:
            triplets, dropped = parse_triplets(raw)
            if dropped:
                logger.info("triplet extraction: dropped %d malformed triplets of node %s",
                            dropped, node.node_id)
        _store_triplets(node, triplets[: self.max_triplets_per_chunk])

    def __call__(self, nodes: Sequence[BaseNode], show_progress: bool = False,
                 **kwargs: Any) -> Sequence[BaseNode]:
        for node in get_tqdm_iterable(nodes, show_progress, "Extracting triplets"):
            try:
                raw: str | BaseException = self.llm.predict(self.extract_prompt,
                                                            **self._prompt_kwargs(node))
            except Exception as exc:  # an LLM failure skips one passage, not the run
                raw = exc
            self._apply(node, raw)
        return nodes

    async def acall(self, nodes: Sequence[BaseNode], show_progress: bool = False,
                    **kwargs: Any) -> Sequence[BaseNode]:
        async def extract(node: BaseNode) -> str | BaseException:
            try:
                return await self.llm.apredict(self.extract_prompt, **self._prompt_kwargs(node))
            except Exception as exc:  # an LLM failure skips one passage, not the run
                return exc

        answers = await run_jobs([extract(n) for n in nodes], show_progress=show_progress,
                                 workers=self.num_workers, desc="Extracting triplets")
        for node, raw in zip(nodes, answers, strict=True):
            self._apply(node, raw)
        return nodes
