"""LLM rerank of graph-retrieved passages through their candidate relations.

The LLM reads the question and the numbered candidate relations carried by the incoming nodes
(one-shot chain-of-thought prompt, JSON answer) and picks the useful ones in order; passages
are re-ordered by the rank of their best chosen relation, then by the incoming order. The
prompt lists :data:`DEFAULT_MAX_PROMPT_RELATIONS` relations at most
(``max_prompt_relations``): one call, whatever the number of incoming nodes, so that the
LLM ranks all the relations it sees against each other (batches, as core's ``LLMRerank``
sends, would each pick their own "most useful first" with no order between batches). Any
failure of the LLM (an exception, a timeout, an answer with no usable JSON) keeps the
incoming order and logs a warning: the reranker never raises because of its LLM.
"""

from __future__ import annotations

import itertools
import logging
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from llama_index.core.bridge.pydantic import Field, PrivateAttr, SerializeAsAny
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
from llama_index.core.llms.llm import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.prompts import BasePromptTemplate, PromptTemplate
from llama_index.core.prompts.mixin import PromptDictType, PromptMixin
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.settings import Settings

from llama_index_graphrag_milvus.errors import InvalidInputError
from llama_index_graphrag_milvus.ids import clean_text
from llama_index_graphrag_milvus.llm import CallSlots, within, within_thread
from llama_index_graphrag_milvus.metadata import RELATIONS_KEY, RERANK_KEY, hide_from_models
from llama_index_graphrag_milvus.parsing import keyed_list, strip_echo
from llama_index_graphrag_milvus.validation import pydantic_arguments

logger = logging.getLogger(__name__)
dispatcher = get_dispatcher(__name__)

DEFAULT_RERANK_PROMPT = PromptTemplate(
    "I will give you a question and a numbered list of relationship descriptions. Select "
    "up to {max_relations} relationships that are useful to answer the question. Return a "
    "JSON object with your thought process and the selected relationships, most relevant "
    "first, each starting with its number in brackets.\n\n"
    "Example\n"
    "Question:\nWhen was the mother of the leader of the Third Crusade born?\n\n"
    "Relationship descriptions:\n"
    "[1] Eleanor was born in 1122.\n"
    "[2] Eleanor married King Louis VII of France.\n"
    "[3] Eleanor was the Duchess of Aquitaine.\n"
    "[4] Eleanor participated in the Second Crusade.\n"
    "[5] Eleanor had eight children.\n"
    "[6] Eleanor was married to Henry II of England.\n"
    "[7] Eleanor was the mother of Richard the Lionheart.\n"
    "[8] Richard the Lionheart was the King of England.\n"
    "[9] Henry II was the father of Richard the Lionheart.\n"
    "[10] Henry II was the King of England.\n"
    "[11] Richard the Lionheart led the Third Crusade.\n\n"
    'Answer: {"thought_process": "To answer the question about the birth of the mother of '
    "the leader of the Third Crusade, I first need to identify who led the Third Crusade, "
    "then who his mother was, then the relationship that mentions her birth.\", "
    '"useful_relationships": ["[11] Richard the Lionheart led the Third Crusade", '
    '"[7] Eleanor was the mother of Richard the Lionheart", "[1] Eleanor was born in 1122"]}'
    "\n\nNow your turn\n"
    "Question:\n{query_str}\n\n"
    "Relationship descriptions:\n{relations_str}\n\n"
    "Answer:"
)
"""Default rerank prompt; variables ``{query_str}``, ``{relations_str}``, ``{max_relations}``."""

DEFAULT_MAX_PROMPT_RELATIONS = 100
"""Candidate relations the rerank prompt lists at most (about 15 tokens each): the k-hop
retriever's whole pool (``max_candidate_relations``, 100 by default)."""

RERANK_THREADS = 16
"""Sync LLM calls of one :class:`GraphRelationRerank` at once, those given up after
``timeout`` included: past it a query keeps the retriever order without a call, so that an
LLM that never answers leaves at most this many threads behind."""

_BRACKETED = re.compile(r"^\s*\[\s*(\d+)\s*\]")
"""A chosen relation's number as the prompt shows it: ``[2] ...``."""
_NUMBER = re.compile(r"^\s*(\d+)\s*(?:$|[.):](?:\s|$))")
"""A chosen relation's number alone (``"2"``) or numbering a list (``2. ...``, ``2)
...``); not the digits that begin a text ("3M acquired ...")."""


@dataclass(frozen=True)
class CandidateList:
    """The union of the candidate relations on the incoming nodes, numbered from 1, and how
    many were left out of it by the cap (``left_out``)."""

    ids: tuple[str, ...]
    texts: tuple[str, ...]
    left_out: int = 0

    @classmethod
    def from_nodes(cls, nodes: Sequence[NodeWithScore], limit: int | None = None
                   ) -> CandidateList:
        """The relations of ``nodes`` in the order they first appear; beyond ``limit`` of
        them, those kept are taken a round at a time over the nodes (each node's first new
        relation, then each node's second...), so that every passage has relations in the
        prompt before any has all of its own, and the first passages win the last round.

        >>> from llama_index.core.schema import TextNode
        >>> nodes = [NodeWithScore(node=TextNode(text=name, metadata={RELATIONS_KEY: [
        ...     {"id": f"{name}{i}", "text": f"{name} {i}"} for i in range(3)]}))
        ...     for name in "ab"]
        >>> CandidateList.from_nodes(nodes, limit=3)
        CandidateList(ids=('a0', 'a1', 'b0'), texts=('a 0', 'a 1', 'b 0'), left_out=3)
        """
        seen: dict[str, str] = {}
        firsts: list[list[str]] = []  # per node, the relations first seen on it
        for node in nodes:
            firsts.append([])
            for relation in node.node.metadata.get(RELATIONS_KEY) or []:
                if isinstance(relation, dict) and "id" in relation \
                        and str(relation["id"]) not in seen:
                    # one line per relation: a newline in a text cannot fake a number
                    seen[str(relation["id"])] = clean_text(str(relation.get("text", "")))
                    firsts[-1].append(str(relation["id"]))
        if limit is None or len(seen) <= limit:
            return cls(tuple(seen), tuple(seen.values()))
        rounds = (ids[depth] for depth in range(max(map(len, firsts)))
                  for ids in firsts if depth < len(ids))
        kept = set(itertools.islice(rounds, limit))
        ids = tuple(i for i in seen if i in kept)
        return cls(ids, tuple(seen[i] for i in ids), len(seen) - len(ids))

    def render(self) -> str:
        return "\n".join(f"[{i}] {text}" for i, text in enumerate(self.texts, start=1))


def _as_quoted(text: str) -> str:
    """A relation text as an answer may quote it: case, spacing and a final period aside."""
    return clean_text(text).rstrip(" .").casefold()


def parse_selection(raw: str, num_candidates: int, texts: Sequence[str] = ()
                    ) -> list[int] | None:
    """Chosen relation numbers (1-based, in order, deduplicated) from the LLM answer.

    An item is a number, a string that gives one (``"[2] Euler was ..."``, ``"2"``), or
    one of ``texts`` (the candidates' texts, in their order) quoted without its number,
    letter case, spacing and a final period aside. Numbers outside ``1..num_candidates``
    (invented ids) are ignored. Returns ``None`` when the answer holds no JSON
    ``useful_relationships`` list.

    >>> parse_selection('{"useful_relationships": ["[2] b", "[9] made up", 1]}', 3)
    [2, 1]
    >>> parse_selection('{"useful_relationships": ["3m acquired ceradyne"]}', 3,
    ...                 ["Euler was born in Basel", "x", "3M acquired Ceradyne"])
    [3]
    """
    value, cut = keyed_list(raw, "useful_relationships")
    if value is None or (cut and not value):  # no list, or cut off before its first item
        return None
    by_text: dict[str, int] = {}
    for position, text in enumerate(texts, start=1):
        by_text.setdefault(_as_quoted(text), position)
    chosen: list[int] = []
    for item in value:
        number = _chosen_number(item, by_text)
        if number is not None and 1 <= number <= num_candidates and number not in chosen:
            chosen.append(number)
    return chosen


def _chosen_number(item: Any, by_text: dict[str, int]) -> int | None:
    """The relation number an item of the selection names: an integer (``2``, ``2.0``), the
    prompt's ``[2]`` before a text, a candidate's text itself ("1. FC Köln won the
    Bundesliga" is that relation, not number 1), or a number alone or numbering a list."""
    if isinstance(item, float) and item.is_integer():
        return int(item)
    if isinstance(item, int) and not isinstance(item, bool):
        return item
    if not isinstance(item, str):
        return None
    if (bracketed := _BRACKETED.match(item)) is None and (
            quoted := by_text.get(_as_quoted(item))) is not None:
        return quoted
    match = bracketed or _NUMBER.match(item)
    digits = match.group(1) if match else ""
    if not digits:
        return None
    return int(digits) if len(digits) < 10 else 0  # a longer one is out of range


class GraphRelationRerank(BaseNodePostprocessor, PromptMixin):
    """Rerank graph-retrieved passages with an LLM that picks useful relations.

    Works on the nodes of :class:`GraphRAGRetriever` (it reads
    ``metadata["graphrag_relations"]``); nodes without relations keep their place after the
    chosen ones. Each returned node gets ``metadata["graphrag_rerank"]`` with the rank of
    its best chosen relation (``None`` if none was chosen) and its retrieval score.

    Example::

        rerank = GraphRelationRerank(llm=llm, top_n=2)
        engine = RetrieverQueryEngine.from_args(
            index.as_retriever(), node_postprocessors=[rerank], llm=llm)
    """

    llm: SerializeAsAny[LLM] = Field(description="The LLM that chooses relations.")
    top_n: int = Field(default=2, gt=0, description="Passages returned after rerank.")
    max_selected_relations: int = Field(
        default=3, gt=0, description="How many relations the LLM is asked to choose."
    )
    max_prompt_relations: int = Field(
        default=DEFAULT_MAX_PROMPT_RELATIONS,
        gt=0,
        description="Candidate relations listed in the prompt at most (one LLM call). Beyond "
        "it, each incoming passage keeps its first relations, a round at a time in the "
        "incoming order; a passage none of whose relations is listed cannot be chosen and "
        "follows the chosen ones in the incoming order.",
    )
    timeout: float | None = Field(
        default=120.0,
        gt=0,
        le=threading.TIMEOUT_MAX,  # longer waits overflow the worker thread's lock
        description="Seconds to wait for the LLM before keeping the incoming order; None "
        "waits as long as the LLM client does.",
    )
    rerank_prompt: SerializeAsAny[BasePromptTemplate] = Field(
        default=DEFAULT_RERANK_PROMPT,
        description="Prompt with {query_str}, {relations_str} and {max_relations}.",
    )

    _slots: CallSlots = PrivateAttr(default_factory=lambda: CallSlots(RERANK_THREADS))

    def __init__(self, llm: LLM | None = None, **kwargs: Any) -> None:
        kwargs["llm"] = llm or Settings.llm
        with pydantic_arguments("GraphRelationRerank",
                                "top_n, max_selected_relations and max_prompt_relations are "
                                "integers > 0, timeout is seconds > 0 (or None)."):
            super().__init__(**kwargs)

    @classmethod
    def class_name(cls) -> str:
        return "GraphRelationRerank"

    def _get_prompts(self) -> PromptDictType:
        return {"rerank_prompt": self.rerank_prompt}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        if "rerank_prompt" in prompts:
            self.rerank_prompt = prompts["rerank_prompt"]

    # ------------------------------------------------------------------ pure steps

    def _prompt_kwargs(self, query: str, candidates: CandidateList) -> dict[str, Any]:
        return {"query_str": query, "relations_str": candidates.render(),
                "max_relations": self.max_selected_relations}

    def _selection(self, raw: str | BaseException, candidates: CandidateList,
                   prompt_kwargs: dict[str, Any]) -> list[int]:
        """The chosen relation numbers, or ``[]`` (and a warning) when the LLM failed."""
        if isinstance(raw, BaseException):
            logger.warning("GraphRelationRerank: the LLM failed (%r); keeping the retriever "
                           "order", raw)
            return []
        raw = strip_echo(raw, self.rerank_prompt.format(**prompt_kwargs))
        chosen = parse_selection(raw, len(candidates.ids), candidates.texts)
        if chosen is None:
            logger.warning("GraphRelationRerank: no JSON useful_relationships list in the "
                           "LLM answer (%.200r); keeping the retriever order", raw)
        elif not chosen:
            logger.warning("GraphRelationRerank: the LLM chose no known relation; keeping "
                           "the retriever order")
        return chosen or []

    def _reorder(self, nodes: list[NodeWithScore], candidates: CandidateList,
                 chosen: list[int]) -> list[NodeWithScore]:
        rank_of = {candidates.ids[n - 1]: rank for rank, n in enumerate(chosen)}

        def best_rank(node: NodeWithScore) -> int | None:
            ranks = [rank_of[str(r.get("id"))] for r in node.node.metadata.get(RELATIONS_KEY)
                     or [] if isinstance(r, dict) and str(r.get("id")) in rank_of]
            return min(ranks) if ranks else None

        ranked = []
        for position, node in enumerate(nodes):
            rank = best_rank(node)
            ranked.append((rank if rank is not None else len(rank_of), position, rank, node))
        ranked.sort(key=lambda item: (item[0], item[1]))
        results = []
        for _, _, rank, node in ranked[: self.top_n]:
            node.node.metadata[RERANK_KEY] = {"relation_rank": rank,
                                              "retrieval_score": node.score}
            hide_from_models(node.node, RERANK_KEY)
            score = node.score if not rank_of else (1.0 / (1 + rank) if rank is not None
                                                    else 0.0)
            results.append(NodeWithScore(node=node.node, score=score))
        return results

    def _start(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None
               ) -> tuple[str, CandidateList]:
        if query_bundle is None:
            raise InvalidInputError("GraphRelationRerank needs the query: pass query_bundle "
                                    "or query_str to postprocess_nodes.")
        query = query_bundle.query_str
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError(
                f"GraphRelationRerank needs the question to choose relations for, got "
                f"query_str={query!r:.40}: pass the question as a non-empty string.")
        dispatcher.event(ReRankStartEvent(query=query_bundle, nodes=nodes, top_n=self.top_n,
                                          model_name=self.llm.metadata.model_name))
        candidates = CandidateList.from_nodes(nodes, self.max_prompt_relations)
        if nodes and not any(RELATIONS_KEY in n.node.metadata for n in nodes):
            logger.warning(
                "GraphRelationRerank: none of the %d nodes has graphrag_relations (the graph "
                "retriever's nodes do; in a QueryFusionRetriever, the node of another "
                "retriever may be kept: see docs/composition.md); keeping the incoming order",
                len(nodes))
        if candidates.left_out:
            logger.info("GraphRelationRerank: %d of %d candidate relations left out of the "
                        "prompt (max_prompt_relations=%d)", candidates.left_out,
                        candidates.left_out + len(candidates.ids), self.max_prompt_relations)
        return query, candidates

    def _end(self, results: list[NodeWithScore]) -> list[NodeWithScore]:
        dispatcher.event(ReRankEndEvent(nodes=results))
        return results

    # ------------------------------------------------------------------ sync / async

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        query, candidates = self._start(nodes, query_bundle)
        if not candidates.ids:
            return self._end(self._reorder(nodes, candidates, []))
        kwargs = self._prompt_kwargs(query, candidates)
        # a worker thread makes the timeout possible; the LLM's failure must not fail the query
        raw = within_thread(partial(self.llm.predict, self.rerank_prompt, **kwargs),
                            self.timeout, self._slots)
        return self._end(self._reorder(nodes, candidates,
                                        self._selection(raw, candidates, kwargs)))

    async def _apostprocess_nodes(self, nodes: list[NodeWithScore],
                                  query_bundle: QueryBundle | None = None
                                  ) -> list[NodeWithScore]:
        query, candidates = self._start(nodes, query_bundle)
        if not candidates.ids:
            return self._end(self._reorder(nodes, candidates, []))
        kwargs = self._prompt_kwargs(query, candidates)
        # the LLM's failure must not fail the query; a cancellation does
        raw = await within(self.llm.apredict(self.rerank_prompt, **kwargs), self.timeout)
        return self._end(self._reorder(nodes, candidates,
                                        self._selection(raw, candidates, kwargs)))
