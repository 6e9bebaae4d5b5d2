"""Ingestion, second step: an :class:`~llama_index_graphrag_milvus.ingestion.plan.IngestionPlan`
embedded and written to Milvus.

:func:`prepare_write` embeds what is new (before the graph's write lock is taken, see
:mod:`~llama_index_graphrag_milvus.milvus.gate`) and :func:`commit_write` writes passages
first, then entities, then relations, so a relation never points at a row that is missing;
an interrupted run is repaired by running it again (ids are deterministic, writes are
upserts, a relation's passage links are merged with the stored ones).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import BaseNode, MetadataMode, TextNode

from llama_index_graphrag_milvus.embeddings import embed_texts, vector_matrix
from llama_index_graphrag_milvus.errors import (
    EmbeddingDimensionError,
    EmbeddingModelError,
    InvalidInputError,
    MilvusStoreError,
    UnsplitTextWarning,
    warn,
)
from llama_index_graphrag_milvus.extraction.extraction_report import EXTRACTION_ERROR_KEY
from llama_index_graphrag_milvus.extraction.kinds import stronger_kind
from llama_index_graphrag_milvus.ingestion.deletion import drop_stale_links
from llama_index_graphrag_milvus.ingestion.entity_rows import (
    grown_entities,
    of_ends,
    passages_of_ends,
)
from llama_index_graphrag_milvus.ingestion.plan import IngestionPlan
from llama_index_graphrag_milvus.ingestion.spreads import refresh_spreads, spread, with_spreads
from llama_index_graphrag_milvus.ingestion.tenants import (
    entity_tenants,
    passage_tenants,
    relation_tenants,
)
from llama_index_graphrag_milvus.milvus.fulltext import JIEBA, runs_jieba
from llama_index_graphrag_milvus.milvus.schema import MAX_PASSAGES_PER_RELATION, SPREAD_CAP
from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore
from llama_index_graphrag_milvus.words import mostly_han_or_kana

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class IngestionStats:
    """What one ingestion call wrote (counts of rows upserted, triplets skipped) and where
    its time went (``seconds`` per stage: ``embed_passages``, ``embed_entities``,
    ``embed_relations``, ``read_stored``, ``create``, ``write_passages``, ``write_entities``,
    ``write_relations``, ``stale_links``, ``flush``). ``failed_extractions``: passages
    written without triplets because their LLM extraction failed (marked
    ``metadata["graphrag_extraction_error"]``; run the insert again to retry them)."""

    passages: int
    new_entities: int
    relations: int
    dropped_triplets: int
    seconds: dict[str, float] = field(default_factory=dict, compare=False)
    failed_extractions: int = 0


def _merge_passage_ids(stored: Sequence[str], new: Sequence[str], relation_id: str) -> list[str]:
    merged = list(dict.fromkeys([*stored, *new]))
    if len(merged) > MAX_PASSAGES_PER_RELATION:
        logger.warning(
            "relation %s is supported by %d passages; Milvus arrays hold %d, the rest are "
            "not linked", relation_id, len(merged), MAX_PASSAGES_PER_RELATION,
        )
        merged = merged[:MAX_PASSAGES_PER_RELATION]
    return merged


def _links(plan: IngestionPlan) -> dict[str, set[str]]:
    """Each planned passage and the relations it supports."""
    links: dict[str, set[str]] = {p.node_id: set() for p in plan.passages}
    for relation_id, planned in plan.relations.items():
        for passage in planned.passage_ids:
            links[passage].add(relation_id)
    return links


def _embed(embed_model: BaseEmbedding, texts: list[str], show_progress: bool,
           store: MilvusGraphStore, dim: int | None = None) -> list[list[float]]:
    """The vectors of ``texts``, checked (:func:`~llama_index_graphrag_milvus.embeddings.
    check_vectors`) and of the index's dimension (or ``dim``, that of the passages of a
    first write) before anything is written."""
    vectors = embed_texts(embed_model, texts, show_progress)
    if vectors:
        if dim is not None and len(vectors[0]) != dim:
            raise EmbeddingModelError(
                f"the passages' vectors have {dim} dimensions and the embedding model gives "
                f"{len(vectors[0])}-dimensional ones for entity or relation texts: check the "
                "model, or the passages' own embeddings (node.embedding, used as they are); "
                "nothing was stored.")
        store.check_dimension(len(vectors[0]), "the embedding model")
    return vectors


def _passage_vectors(passages: Sequence[TextNode], embed_model: BaseEmbedding,
                     show_progress: bool, store: MilvusGraphStore) -> list[list[float]]:
    """The passages' vectors: a node's own ``embedding`` where it has one, as core's
    ``VectorStoreIndex`` uses it (an ingestion pipeline's embedding step made it), the
    model's for the others; checked, all of one dimension, the index's."""
    own = [i for i, node in enumerate(passages) if node.embedding is not None]
    todo = [i for i, node in enumerate(passages) if node.embedding is None]
    vectors: list[list[float]] = [[] for _ in passages]
    embedded = _embed(embed_model, [passages[i].get_content(metadata_mode=MetadataMode.EMBED)
                                    for i in todo], show_progress, store)
    for i, vector in zip(todo, embedded, strict=True):
        vectors[i] = vector
    if own:
        given = _own_vectors([passages[i] for i in own], [i + 1 for i in own], store)
        if embedded and len(embedded[0]) != len(given[0]):
            raise EmbeddingDimensionError(
                f"passage {own[0] + 1}'s own embedding (node.embedding) has {len(given[0])} "
                f"dimensions, and the embedding model gives {len(embedded[0])}: give every "
                "node an embedding of the index's model, or none (node.embedding = None). "
                "Nothing was stored.")
        for i, vector in zip(own, given, strict=True):
            vectors[i] = vector
    return vectors


def _own_vectors(passages: Sequence[TextNode], positions: Sequence[int],
                 store: MilvusGraphStore) -> list[list[float]]:
    """The passages' own embeddings, checked: finite numbers, one length, the index's."""
    fix = ("set node.embedding to a vector of the index's embedding model, or to None to have "
           "the model embed the passage; nothing was stored.")
    lengths = {len(node.embedding or []) for node in passages}
    if len(lengths) > 1 or 0 in lengths:
        raise InvalidInputError(
            f"the passages' own embeddings (node.embedding) have lengths "
            f"{sorted(lengths)[:4]} (passages {list(positions)[:4]}...): {fix}")
    try:
        array, first = vector_matrix([node.embedding for node in passages])
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"the passages' own embeddings (node.embedding) hold values that are not numbers: "
            f"{fix}") from exc
    if first is not None:
        raise InvalidInputError(
            f"passage {positions[first]}'s own embedding "
            f"(node.embedding) holds NaN or infinite values (or beyond a 32-bit float's "
            f"range): {fix}")
    store.check_dimension(array.shape[1], "node.embedding (a passage's own vector)")
    return array.tolist()


@dataclass
class PreparedWrite:
    """An ingestion plan embedded (:func:`prepare_write`), waiting for the graph's write
    lock (:func:`commit_write`): the passages' vectors, the vectors of the entities and
    relations that were not stored, the stored rows read (with their vectors), and the
    gate's generation they were read at."""

    plan: IngestionPlan
    passage_vectors: list[list[float]]
    vectors: dict[str, list[float]]
    stored_entities: dict[str, dict[str, Any]]
    stored_relations: dict[str, dict[str, Any]]
    generation: int
    seconds: dict[str, float]

    def vector(self, key: str) -> list[float]:
        """The vector of an entity or relation of the plan: embedded here, or read with its
        stored row (which another write may have deleted since)."""
        found = self.vectors.get(key)
        if found is not None:
            return found
        row = self.stored_entities.get(key) or self.stored_relations[key]
        return list(row["embedding"])


def _read_stored(plan: IngestionPlan, store: MilvusGraphStore
                 ) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """The stored rows (with their vectors) of the plan's entities and relations."""
    if store.dim is None:
        return {}, {}
    return (store.get_rows(store.entity_collection, list(plan.entities),
                           store.entity_row_fields, for_write=True),
            store.get_rows(store.relation_collection, list(plan.relations),
                           store.relation_fields(["passage_ids", "embedding"]), for_write=True))


def planned_spreads(entities: Iterable[str], stored: Mapping[str, Mapping[str, Any]],
                    written: Sequence[Mapping[str, Any]]
                    ) -> tuple[dict[str, int], dict[str, int]]:
    """The spreads of the plan's ``entities`` once the entity rows ``written`` are (the
    ``stored`` rows for the others), and those of them whose other relations may record
    another: the entities under :data:`~..milvus.schema.SPREAD_CAP` before the write."""
    lists = {eid: row.get("passage_ids") or () for eid, row in stored.items()}
    before = {eid: spread(passages) for eid, passages in lists.items()}
    lists.update((row["id"], row.get("passage_ids") or ()) for row in written)
    counts = {eid: spread(lists.get(eid, ())) for eid in entities}
    return counts, {eid: count for eid, count in counts.items()
                    if before.get(eid, 0) < SPREAD_CAP}


def prepare_write(plan: IngestionPlan, store: MilvusGraphStore, embed_model: BaseEmbedding,
                  show_progress: bool = False) -> PreparedWrite:
    """Embed the passages of ``plan`` and the entities and relations not stored yet, without
    holding the graph's write lock: concurrent writes embed side by side."""
    seconds: dict[str, float] = {}
    timed = partial(timed_stage, seconds)
    with timed("embed_passages"):
        passage_vectors = _passage_vectors(plan.passages, embed_model, show_progress, store)
    dim = len(passage_vectors[0]) if passage_vectors else None
    generation = store.gate.generation
    with timed("read_stored"):
        stored_entities, stored_relations = _read_stored(plan, store)
    vectors: dict[str, list[float]] = {}
    new_entities = [eid for eid in plan.entities if eid not in stored_entities]
    with timed("embed_entities"):
        vectors.update(zip(new_entities, _embed(
            embed_model, [plan.entities[e] for e in new_entities], show_progress, store, dim),
            strict=True))
    new_relations = [rid for rid in plan.relations if rid not in stored_relations]
    with timed("embed_relations"):
        vectors.update(zip(new_relations, _embed(
            embed_model, [plan.relations[r].triplet.text for r in new_relations],
            show_progress, store, dim), strict=True))
    return PreparedWrite(plan, passage_vectors, vectors, stored_entities, stored_relations,
                         generation, seconds)


def commit_write(prepared: PreparedWrite, store: MilvusGraphStore,
                 properties: Mapping[str, str] | None = None) -> IngestionStats:
    """Upsert ``prepared`` (passages, entities, then relations); call it holding
    ``store.gate.writing()``. When the graph changed since its rows were read (another
    write of this process went first), they are read again, so nothing that write added is
    dropped.

    Passages stored before with other triplets lose their old links (see
    :func:`~llama_index_graphrag_milvus.ingestion.deletion.drop_stale_links`). ``properties`` are
    recorded on the collections if this call creates them.
    """
    try:
        return _commit(prepared, store, properties)
    finally:
        store.gate.changed()


def _commit(prepared: PreparedWrite, store: MilvusGraphStore,
            properties: Mapping[str, str] | None) -> IngestionStats:
    plan, passage_vectors, seconds = prepared.plan, prepared.passage_vectors, prepared.seconds
    timed = partial(timed_stage, seconds)
    tenant_key = store.tenant_key
    tenant_of = passage_tenants(plan.passages, tenant_key) if tenant_key else {}
    stored_entities, stored_relations = prepared.stored_entities, prepared.stored_relations
    if store.gate.generation != prepared.generation:
        with timed("read_stored"):
            store.layout_read_again()
            stored_entities, stored_relations = _read_stored(plan, store)
    new_entities = [eid for eid in plan.entities if eid not in stored_entities]
    entity_vectors = [prepared.vector(eid) for eid in new_entities]
    existed = store.dim is not None
    if not existed and passage_vectors:
        with timed("create"):
            chosen = choose_analyzer(store, plan.passages)
            try:
                store.create(len(passage_vectors[0]), properties)
            except MilvusStoreError:
                if not chosen:
                    raise
                logger.warning("Milvus refused its jieba analyzer for %r: the standard one "
                               "splits the passages' words instead", store.prefix)
                store.full_text_analyzer = None
                store.create(len(passage_vectors[0]), properties)

    for node, vector in zip(plan.passages, passage_vectors, strict=True):
        node.embedding = vector
    with timed("write_passages"):
        store.upsert_passages(plan.passages)
    warn_unsplit(store, plan.passages)
    relation_rows: list[dict[str, Any]] = []
    for rid, planned in plan.relations.items():
        stored = stored_relations.get(rid)
        passage_ids = _merge_passage_ids(stored["passage_ids"] if stored else [],
                                         planned.passage_ids, rid)
        relation_rows.append({
            "id": rid,
            "text": planned.triplet.text,
            "subject_id": planned.triplet.subject_id,
            "object_id": planned.triplet.object_id,
            "passage_ids": passage_ids,
            "embedding": list(stored["embedding"]) if stored else prepared.vector(rid),
            "subject_kind": stronger_kind(planned.subject_kind,
                                          (stored or {}).get("subject_kind") or ""),
            "object_kind": stronger_kind(planned.object_kind,
                                         (stored or {}).get("object_kind") or ""),
            **(relation_tenants(passage_ids, tenant_of, stored) if tenant_key else {}),
        })
    linked = of_ends(relation_rows, "tenants")
    passages = passages_of_ends(relation_rows) if store.records_entity_passages else None
    entity_rows = [
        *({"id": eid, "name": plan.entities[eid], "embedding": vector,
           **({"tenants": entity_tenants(linked.get(eid, ()))} if tenant_key else {}),
           **({"passage_ids": passages.get(eid, [])} if passages is not None else {})}
          for eid, vector in zip(new_entities, entity_vectors, strict=True)),
        *grown_entities(stored_entities, linked if tenant_key else None, passages),
    ]
    # where the ends lead, from the lists the entity rows will hold; the other relations of
    # the entities under the cap are refreshed before the entity rows are written, so that
    # a killed run, run again, reads the same entity rows and refreshes them again
    counts, refreshed = planned_spreads(plan.entities, stored_entities, entity_rows)
    if passages is not None:
        relation_rows = with_spreads(relation_rows, counts)
    with timed("write_relations"):
        store.upsert_rows(store.relation_collection, relation_rows)
        if passages is not None:
            refresh_spreads(store, refreshed, known=counts)
    with timed("write_entities"):
        store.upsert_rows(store.entity_collection, entity_rows)
    if existed:
        with timed("stale_links"):
            stale = drop_stale_links(store, _links(plan))
        if stale.relations_updated or stale.relations_deleted:
            logger.info("ingestion: passages ingested again with other triplets: %s", stale)
    with timed("flush"):
        store.flush()
    failed = sum(EXTRACTION_ERROR_KEY in p.metadata for p in plan.passages)
    if failed:
        logger.warning("ingestion: %d of %d passages were written without triplets: their "
                       "LLM extraction failed (extraction_failures(nodes) lists them; run "
                       "the insert again to retry them)", failed, len(plan.passages))
    return IngestionStats(len(plan.passages), len(new_entities), len(relation_rows),
                          plan.dropped_triplets, seconds, failed)


@contextmanager
def timed_stage(seconds: dict[str, float], stage: str) -> Iterator[None]:
    """Add the seconds spent in the ``with`` block to ``seconds[stage]``."""
    start = time.perf_counter()
    try:
        yield
    finally:
        seconds[stage] = seconds.get(stage, 0.0) + time.perf_counter() - start


def mostly_unsplit(passages: Sequence[BaseNode]) -> bool:
    """Whether most ``passages`` are Chinese or Japanese, whose words Milvus's standard
    analyzer does not split (it keeps a run of such characters between punctuation marks as
    one word)."""
    unsplit = sum(mostly_han_or_kana(p.get_content(metadata_mode=MetadataMode.NONE))
                  for p in passages)
    return 2 * unsplit > len(passages)


def choose_analyzer(store: MilvusGraphStore, passages: Sequence[BaseNode]) -> bool:
    """For a new index with full-text search and no analyzer given, whose first passages
    are mostly Chinese or Japanese: Milvus's ``jieba`` analyzer, which splits their words,
    where Milvus has it (a server; Milvus Lite with the ``jieba`` package). Else the
    standard analyzer stays, and :func:`warn_unsplit` says what to do. Returns whether it
    chose jieba."""
    if (not store.full_text or store.full_text_analyzer is not None or not passages
            or not mostly_unsplit(passages)):
        return False
    if not runs_jieba(store.is_lite):
        return False
    store.full_text_analyzer = dict(JIEBA)
    logger.info("most passages are Chinese or Japanese: the full-text search of %r splits "
                "their words with Milvus's jieba analyzer", store.prefix)
    return True


def warn_unsplit(store: MilvusGraphStore, passages: Sequence[BaseNode]) -> None:
    """Warn (once per process, as Python shows a warning) when most ``passages`` are Chinese
    or Japanese and the index's full-text search uses Milvus's standard analyzer, which
    keeps a run of such characters between punctuation marks as one word: BM25 would match
    almost nothing in them."""
    if not store.full_text or store.full_text_analyzer is not None or not passages:
        return
    if mostly_unsplit(passages):
        warn(
            "most of these passages are Chinese or Japanese, which the standard analyzer of "
            "this index's full-text search does not split into words: BM25 (hybrid search, "
            "the second hop's word lists) will match little of them. Create the index with "
            "full_text_analyzer={'tokenizer': 'jieba'} (Milvus Lite: pip install jieba; "
            "then a new index written with such passages first takes it by itself), or "
            "with full_text_search=False to go without BM25.",
            UnsplitTextWarning)
