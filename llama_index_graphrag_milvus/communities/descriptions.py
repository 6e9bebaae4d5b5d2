"""Entity and relation descriptions (Microsoft GraphRAG), merged over the passages.

``TripletExtractor(describe=True)`` leaves, on each passage, the entities it names (name,
type, description) and its relations (with a description and a 1-10 strength). This module
merges them over every stored passage, as Microsoft GraphRAG does: entities by name (the
package's entity identity; the most frequent type wins), relations by relation id (subject,
predicate, object: the package's relations are typed by their predicate, where Microsoft
GraphRAG merges every relation between two entities), strengths summed. An entity or
relation with several distinct descriptions gets one summary: written by an LLM when one is
given (cached in Milvus: unchanged inputs are not summarized again), else the distinct
descriptions joined, longest first, up to :data:`JOINED_MAX_CHARS`.

:func:`build_descriptions` runs inside ``build_communities`` and stores the merged
descriptions, with degree and combined degree, in ``{prefix}_descriptions``; the report
contexts and local search read them from there. Deleting a passage removes its
contribution at the next build (the descriptions are recomputed from the stored passages).
"""

from __future__ import annotations

import functools
import logging
from collections import Counter
from collections.abc import Awaitable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms.llm import LLM
from llama_index.core.prompts import BasePromptTemplate, PromptTemplate
from llama_index.core.schema import BaseNode

from llama_index_graphrag_milvus.embeddings import embed_texts
from llama_index_graphrag_milvus.extraction.described import descriptions_from_node
from llama_index_graphrag_milvus.graph import EntityRelationGraph
from llama_index_graphrag_milvus.ids import clip_utf8, entity_id, stable_id
from llama_index_graphrag_milvus.limits import RELATION_TEXT_MAX_BYTES
from llama_index_graphrag_milvus.llm import (
    Sleep,
    Threads,
    call_with_retries,
    gather_bounded,
    run_with_threads,
)
from llama_index_graphrag_milvus.milvus.schema import DESCRIPTION_TEXT_MAX_BYTES
from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore
from llama_index_graphrag_milvus.records import Triplet

logger = logging.getLogger(__name__)

DEFAULT_SUMMARIZE_PROMPT = PromptTemplate(
    "You are given several descriptions of the same {kind}, {name}, taken from different "
    "passages. Write one comprehensive description of it in the third person, that keeps "
    "every distinct fact and resolves contradictions when you can. Mention the name, so that "
    "the description makes sense on its own. At most {max_words} words. Answer with the "
    "description only.\n\nDescriptions:\n{descriptions}\n\nDescription:"
)
"""The summary prompt; variables ``{kind}`` (entity / relation), ``{name}``,
``{descriptions}`` (one per line) and ``{max_words}``."""

JOINED_MAX_CHARS = 1000
"""Without an LLM, several descriptions are joined (longest first) up to this many
characters."""
SUMMARY_MAX_WORDS = 150


@dataclass
class MergedDescription:
    """The descriptions of one entity or relation over all passages."""

    id: str
    kind: str
    """``"entity"`` or ``"relation"``."""
    name: str
    """The entity name as first written, or the relation text."""
    types: Counter[str] = field(default_factory=Counter)
    descriptions: list[str] = field(default_factory=list)
    strength: float = 0.0

    @property
    def type(self) -> str:
        """The most frequent type (ties: alphabetical), ``""`` for relations."""
        if not self.types:
            return ""
        return min(self.types.items(), key=lambda item: (-item[1], item[0]))[0]

    def add(self, description: str) -> None:
        if description and description not in self.descriptions:
            self.descriptions.append(description)

    def source_hash(self, model: str) -> str:
        """A hash of what the description is made of (and of the summarizer)."""
        return stable_id("descriptions", "\x1f".join([self.kind, self.name, model,
                                                       *sorted(self.descriptions)]))


def merge_descriptions(passages: Iterable[BaseNode]) -> dict[str, MergedDescription]:
    """Entity and relation descriptions of ``passages`` merged by id (see the module
    docstring); relation strengths are summed over passages."""
    merged: dict[str, MergedDescription] = {}
    for node in passages:
        entities, relations = descriptions_from_node(node)
        for entity in entities:
            eid = entity_id(entity.name)
            item = merged.setdefault(eid, MergedDescription(eid, "entity", entity.name))
            if entity.type:
                item.types[entity.type] += 1
            item.add(entity.description)
        for relation in relations:
            triplet: Triplet = relation.triplet
            item = merged.setdefault(triplet.id, MergedDescription(triplet.id, "relation",
                                                                   triplet.text))
            item.add(relation.description)
            item.strength += float(relation.strength)
    return merged


def joined(descriptions: Sequence[str], max_chars: int = JOINED_MAX_CHARS) -> str:
    """Distinct descriptions joined, longest first, within ``max_chars``.

    >>> joined(["A Swiss mathematician.", "Born in Basel.", "A Swiss mathematician."])
    'A Swiss mathematician. Born in Basel.'
    """
    text = ""
    for description in sorted(dict.fromkeys(descriptions), key=lambda d: (-len(d), d)):
        candidate = f"{text} {description}".strip()
        if len(candidate) > max_chars and text:
            break
        text = candidate[:max_chars]
    return text


class DescriptionSummarizer:
    """Summarizes several descriptions of one entity or relation with an LLM: bounded
    concurrency, retries with backoff, a deadline per call (``timeout`` seconds, none by
    default), and the joined descriptions as the fallback of a failed call (logged)."""

    def __init__(self, llm: LLM, prompt: BasePromptTemplate = DEFAULT_SUMMARIZE_PROMPT,
                 num_workers: int = 4, max_retries: int = 3, retry_base_delay: float = 1.0,
                 sleep: Sleep | None = None, timeout: float | None = None) -> None:
        self.llm = llm
        self.prompt = prompt
        self.num_workers = num_workers
        self.max_retries = max_retries
        self.retry_base_delay = retry_base_delay
        self._sleep = sleep
        self.timeout = timeout

    @property
    def model(self) -> str:
        """The model name and a hash of the prompt: part of the summaries' cache key."""
        prompt = stable_id("prompt", self.prompt.get_template())[:8]
        return f"{self.llm.metadata.model_name}:{prompt}"

    async def _one(self, item: MergedDescription, threads: Threads) -> tuple[str, int]:
        kwargs = {"kind": item.kind, "name": item.name, "max_words": SUMMARY_MAX_WORDS,
                  "descriptions": "\n".join(f"- {d}" for d in item.descriptions)}
        answer = await call_with_retries(
            lambda: threads.call(self.llm.predict, self.prompt, **kwargs),
            f"the description summary of {item.kind} {item.name!r}", self.max_retries,
            self.retry_base_delay, self._sleep, logger, self.timeout)
        text = " ".join(answer.text.split())
        return (text if answer.error is None and text else joined(item.descriptions),
                answer.attempts)

    def summarize(self, items: Sequence[MergedDescription]) -> tuple[list[str], int]:
        """The summaries of ``items`` in order, and the number of LLM calls made: the LLM's
        sync API, ``num_workers`` calls at a time in worker threads (as the reports: a
        timeout then holds for an LLM whose async API blocks, core's ``CustomLLM``)."""
        def main(threads: Threads) -> Awaitable[list[tuple[str, int]]]:
            return gather_bounded([functools.partial(self._one, item, threads)
                                   for item in items], self.num_workers)

        results = run_with_threads(self.num_workers, "graphrag-summary", main) if items else []
        return [text for text, _ in results], sum(calls for _, calls in results)


@dataclass(frozen=True)
class DescriptionTable:
    """The merged descriptions of an index: id to ``(type, description)`` for entities and
    ``(description, strength)`` for relations. Empty when no passage was extracted with
    descriptions."""

    entities: dict[str, tuple[str, str]]
    relations: dict[str, tuple[str, float]]

    def __bool__(self) -> bool:
        return bool(self.entities or self.relations)


@dataclass(frozen=True)
class DescriptionStats:
    """What the description step of a build did."""

    entities: int
    relations: int
    summarized: int
    reused: int
    llm_calls: int


def build_descriptions(store: MilvusGraphStore, graph: EntityRelationGraph,
                       embed_model: BaseEmbedding, summarizer: DescriptionSummarizer | None,
                       show_progress: bool = False) -> tuple[DescriptionTable, DescriptionStats]:
    """Merge the descriptions of the stored passages, summarize those with several
    (reusing stored summaries of unchanged inputs), store them with degree and combined
    degree in ``{prefix}_descriptions``; returns them for the report contexts."""
    merged = merge_descriptions(store.all_passages())
    if not merged:
        store.descriptions.drop()
        return DescriptionTable({}, {}), DescriptionStats(0, 0, 0, 0, 0)
    model = summarizer.model if summarizer is not None else "joined"
    existing = ({row["id"]: row for row in store.descriptions.read()}
                if store.descriptions.exists() else {})
    texts: dict[str, str] = {}
    hashes = {key: item.source_hash(model) for key, item in merged.items()}
    to_summarize = []
    reused = 0
    for key, item in merged.items():
        row = existing.get(key)
        if row is not None and row["source_hash"] == hashes[key]:
            texts[key] = row["description"]
            reused += 1
        elif len(item.descriptions) <= 1:
            texts[key] = item.descriptions[0] if item.descriptions else ""
        elif summarizer is None:
            texts[key] = joined(item.descriptions)
        else:
            to_summarize.append(item)
    summaries, calls = (summarizer.summarize(to_summarize) if summarizer is not None
                        else ([], 0))
    texts.update({item.id: text for item, text in zip(to_summarize, summaries, strict=True)})
    degree = graph.entity_degrees

    def entity_degree(eid: str) -> int:
        rows = graph.entity_ids.lookup([eid])
        return int(degree[rows[0]]) if rows.size else 0

    def combined_degree(rid: str) -> int:
        rows = graph.relation_ids.lookup([rid])
        return int(graph.combined_degrees(rows[:1])[0]) if rows.size else 0

    keys = list(merged)
    vectors: list[Any] = [existing[k]["embedding"] if k in existing and existing[k]["source_hash"]
               == hashes[k] else None for k in keys]
    missing = [i for i, v in enumerate(vectors) if v is None]
    new = embed_texts(embed_model, [f"{merged[keys[i]].name}: {texts[keys[i]]}"
                                    for i in missing], show_progress)
    for i, vector in zip(missing, new, strict=True):
        vectors[i] = vector
    rows = []
    for key, vector in zip(keys, vectors, strict=True):
        item = merged[key]
        rows.append({"id": key, "kind": item.kind,
                     "name": clip_utf8(item.name, RELATION_TEXT_MAX_BYTES),
                     "type": clip_utf8(item.type, 256),
                     "description": clip_utf8(texts[key], DESCRIPTION_TEXT_MAX_BYTES),
                     "strength": float(item.strength),
                     "degree": entity_degree(key) if item.kind == "entity"
                     else combined_degree(key),
                     "source_hash": hashes[key], "embedding": list(vector)})
    store.descriptions.write(rows, stale=[k for k in existing if k not in merged])
    table = DescriptionTable(
        {k: (merged[k].type, texts[k]) for k in keys if merged[k].kind == "entity"},
        {k: (texts[k], merged[k].strength) for k in keys if merged[k].kind == "relation"})
    stats = DescriptionStats(len(table.entities), len(table.relations), len(to_summarize),
                             reused, calls)
    return table, stats


def read_description_table(rows: Iterable[dict[str, Any]]) -> DescriptionTable:
    """The table from stored description rows."""
    entities: dict[str, tuple[str, str]] = {}
    relations: dict[str, tuple[str, float]] = {}
    for row in rows:
        if row["kind"] == "entity":
            entities[row["id"]] = (row["type"], row["description"])
        else:
            relations[row["id"]] = (row["description"], float(row["strength"]))
    return DescriptionTable(entities, relations)
