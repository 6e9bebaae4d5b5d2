"""The query steps every retrieval method shares, as pure functions.

Query checks, NER parsing, the passages a pool of candidate relations reaches, the texts of
those relations, and the ``NodeWithScore`` results with ``metadata["graphrag_relations"]``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence, Sized
from typing import Any

from llama_index.core.prompts import PromptTemplate
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle

from llama_index_graphrag_milvus.errors import InvalidInputError
from llama_index_graphrag_milvus.limits import QUERY_MAX_BYTES
from llama_index_graphrag_milvus.metadata import (
    RELATIONS_KEY,
    RETRIEVAL_KEYS,
    TRIPLETS_KEY,
    GraphPassageNode,
    hide_from_models,
)
from llama_index_graphrag_milvus.parsing import keyed_list, string_list
from llama_index_graphrag_milvus.records import CandidateRelation, Triplet
from llama_index_graphrag_milvus.validation import is_utf8

logger = logging.getLogger(__name__)

DEFAULT_NER_PROMPT = PromptTemplate(
    "List the named entities (people, places, organisations, works, concepts with a name) "
    "that the question mentions, written as in the question. Answer with JSON only, in the "
    'form {"named_entities": ["...", "..."]}.\n\n'
    "Question: What contribution did the son of Euler's teacher make?\n"
    'Answer: {"named_entities": ["Euler"]}\n\n'
    "Question: {query_str}\nAnswer:"
)
"""The default query NER prompt; variable ``{query_str}``."""

DEFAULT_SIMILARITY_TOP_K = 20
"""Default passage cap: generous, because a reranker can only choose among what it gets."""


ScoredPassages = Sequence[tuple[BaseNode, float | None]]
"""Passages fetched from Milvus, each with its own similarity (``None``: not scored)."""


def query_input(str_or_query_bundle: Any) -> str | QueryBundle:
    """What ``retrieve`` may be given: a string or a ``QueryBundle``; anything else is an
    :class:`InvalidInputError` (before core's instrumentation sees it)."""
    if isinstance(str_or_query_bundle, (str, QueryBundle)):
        return str_or_query_bundle
    hint = " (decode bytes first)" if isinstance(str_or_query_bundle, bytes) else ""
    raise InvalidInputError(
        f"the query must be a string or a QueryBundle, got "
        f"{type(str_or_query_bundle).__name__}{hint}.")


class CheckedQueryMixin:
    """``retrieve``/``aretrieve`` that refuse non-text queries with a package error."""

    def retrieve(self, str_or_query_bundle: str | QueryBundle) -> list[NodeWithScore]:
        return super().retrieve(query_input(str_or_query_bundle))  # type: ignore[misc]

    async def aretrieve(self, str_or_query_bundle: str | QueryBundle) -> list[NodeWithScore]:
        return await super().aretrieve(  # type: ignore[misc]
            query_input(str_or_query_bundle))


def check_query(query_bundle: QueryBundle) -> str:
    """The query text, stripped; :class:`InvalidInputError` when it is not a non-empty string
    of at most :data:`~..limits.QUERY_MAX_BYTES` UTF-8 bytes."""
    query = query_bundle.query_str
    if not isinstance(query, str) or not query.strip():
        raise InvalidInputError(
            "the query is empty or whitespace; pass the question as a non-empty string."
        )
    if not is_utf8(query):
        raise InvalidInputError(
            "the query holds characters UTF-8 cannot encode (lone surrogates such as "
            "'\\ud800', often from text decoded with errors='surrogateescape'), which Milvus "
            "cannot search for; clean it, for example text.encode('utf-8', 'replace')"
            ".decode('utf-8').")
    size = len(query.encode("utf-8"))
    if size > QUERY_MAX_BYTES:
        raise InvalidInputError(
            f"the query is {size} UTF-8 bytes long, over the {QUERY_MAX_BYTES} a retriever "
            "takes (the longest passage the index stores): pass the question, not a "
            "document; to find passages like a document, split it and retrieve each part.")
    return query.strip()


FLOAT32_MAX = 3.4028234663852886e38
"""The largest 32-bit float: Milvus stores and searches vectors as such."""


def check_vector(vector: Any) -> list[float]:
    """The query vector as floats; :class:`InvalidInputError` unless it is a sequence of
    finite numbers (a ``QueryBundle.embedding`` given by the caller, or a broken model's)."""
    try:
        values = [float(x) for x in vector]
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidInputError(
            f"the query vector must be a list of numbers, got {str(vector)[:80]}; set "
            "QueryBundle.embedding to the embedding model's vector, or leave it None.") from exc
    if not all(math.isfinite(x) and abs(x) <= FLOAT32_MAX for x in values):
        raise InvalidInputError(
            "the query vector holds NaN or infinite values (or values past a 32-bit float's "
            "range, as Milvus searches); set QueryBundle.embedding to the embedding model's "
            "vector, or leave it None (check the embedding model).")
    return values


def given_vector(query_bundle: QueryBundle) -> list[float] | None:
    """``query_bundle.embedding`` checked by :func:`check_vector` (a list or a numpy
    array), and not all zeros (no direction: every passage would score alike, in an
    arbitrary order); ``None`` when it is not set or empty: the retriever embeds the query
    then."""
    embedding: Any = query_bundle.embedding
    if embedding is None or (isinstance(embedding, Sized) and len(embedding) == 0):
        return None
    vector = check_vector(embedding)
    if not any(vector):
        raise InvalidInputError(
            "QueryBundle.embedding is all zeros: a zero vector has no direction, so every "
            "passage would score alike; set it to the embedding model's vector, or leave it "
            "None.")
    return vector


def parse_ner(raw: str | BaseException) -> list[str]:
    """Entity names from the NER answer; an empty list (and a warning) when unusable."""
    if isinstance(raw, BaseException):
        logger.warning("query NER failed (%r); searching entities with the query vector", raw)
        return []
    value, _ = keyed_list(raw, "named_entities")  # cut off: its complete names
    names = string_list(value, "named_entities")
    if names is None:
        logger.warning("query NER answer has no JSON named_entities list (%.200r); searching "
                       "entities with the query vector", raw)
        return []
    return list(dict.fromkeys(names))


def select_passages(candidates: Sequence[CandidateRelation], limit: int
                    ) -> dict[str, list[CandidateRelation]]:
    """Passage ids in order of their best candidate relation, each with its relations.

    ``candidates`` come best first; the first ``limit`` passages they reach are kept.
    """
    passages: dict[str, list[CandidateRelation]] = {}
    for candidate in candidates:
        for pid in candidate.passage_ids:
            if pid in passages:
                passages[pid].append(candidate)
            elif len(passages) < limit:
                passages[pid] = [candidate]
    return passages


def own_triplets(node: BaseNode) -> list[Triplet]:
    """The triplets a passage carries in ``metadata["graphrag_triplets"]`` (ingestion
    writes them); malformed entries are skipped."""
    return [Triplet(*t) for t in node.metadata.get(TRIPLETS_KEY) or ()
            if isinstance(t, (list, tuple)) and len(t) == 3
            and all(isinstance(part, str) for part in t)]


def attached_relations(hits: ScoredPassages,
                       passages: Mapping[str, Sequence[CandidateRelation]]) -> list[str]:
    """Ids of the relations attached to the fetched passages (their texts are then read,
    from the in-memory graph first: see ``read_relation_texts``)."""
    return list(dict.fromkeys(c.id for node, _ in hits for c in passages.get(node.node_id, ())))


def own_relations(node: BaseNode, scores: Mapping[str, float], hop: int, limit: int
                  ) -> list[CandidateRelation]:
    """A passage's own triplets as candidate relations, best ``scores`` first (relations
    without a score, unknown to the graph, are left out)."""
    relations = {t.id: t for t in own_triplets(node)}
    ranked = sorted((rid for rid in relations if rid in scores), key=lambda r: -scores[r])
    return [CandidateRelation(id=rid, score=scores[rid], hop=hop, text=relations[rid].text,
                              passage_ids=(node.node_id,)) for rid in ranked[:limit]]


def as_result(node: BaseNode, score: float | None,
              relations: Sequence[CandidateRelation], texts: Mapping[str, str] | None = None,
              **extra: Any) -> NodeWithScore:
    """A retrieved passage: ``metadata["graphrag_relations"]`` lists the relations that
    reached it (``id``, ``text``, ``score``, ``hop``); ``extra`` metadata keys are added.
    All are kept out of LLM and embedding text and out of the node's hash."""
    passage = GraphPassageNode.from_node(node)
    texts = texts or {}
    passage.metadata[RELATIONS_KEY] = [
        {**c.as_metadata(), "text": texts.get(c.id, c.text)} for c in relations]
    passage.metadata.update(extra)
    hide_from_models(passage, *(k for k in RETRIEVAL_KEYS if k in passage.metadata))
    return NodeWithScore(node=passage, score=score)


def build_results(hits: ScoredPassages, passages: Mapping[str, Sequence[CandidateRelation]],
                  texts: Mapping[str, str]) -> list[NodeWithScore]:
    """The fetched passages with the relations that reached them; a passage without its own
    score gets its best relation's."""
    results = []
    for fetched, own_score in hits:
        relations = passages[fetched.node_id]
        score = relations[0].score if own_score is None else own_score
        results.append(as_result(fetched, score, relations, texts))
    return results
