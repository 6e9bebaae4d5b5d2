"""Communities of the entity graph, their reports, and the community collection.

:func:`build_communities` runs hierarchical Leiden on the in-memory graph
(:mod:`~llama_index_graphrag_milvus.graph.leiden`), writes a report per community (an LLM
through :class:`~llama_index_graphrag_milvus.communities.report_writer.CommunityReporter`, or
the extractive report), embeds the reports and stores everything in ``{prefix}_communities``.
:func:`load_communities` reads them back into a :class:`CommunitySet`, what local and global
search use. Nothing is kept in side files.

A rebuild never leaves a half-written collection in use: the collection is marked
``building`` before the first write and ``complete`` after the last; community ids are
hashes of their level and members, so running an interrupted build again upserts the same
rows and deletes the rows of communities that no longer exist, which equals a clean build.
A community whose context (or extractive report) did not change keeps its stored report and
vector: only changed communities go to the LLM and the embedding model again.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from tqdm.auto import tqdm

from llama_index_graphrag_milvus.communities.around import (
    CommunityInfo,
    LocalCommunities,
    check_level,
    report_of,
)
from llama_index_graphrag_milvus.communities.descriptions import (
    DescriptionStats,
    DescriptionSummarizer,
    DescriptionTable,
    build_descriptions,
    read_description_table,
)
from llama_index_graphrag_milvus.communities.report_writer import (
    CommunityData,
    CommunityReporter,
    ReportContext,
    extractive_report,
    with_community,
)
from llama_index_graphrag_milvus.embeddings import embed_texts
from llama_index_graphrag_milvus.errors import (
    CommunitiesNotBuiltError,
    EmptyIndexError,
)
from llama_index_graphrag_milvus.graph import EntityRelationGraph
from llama_index_graphrag_milvus.graph.leiden import (
    CommunityHierarchy,
    LeidenConfig,
    hierarchical_communities,
    relation_weights,
)
from llama_index_graphrag_milvus.ids import clip_utf8, stable_id
from llama_index_graphrag_milvus.ingestion.write import timed_stage
from llama_index_graphrag_milvus.milvus.schema import (
    COMMUNITY_MEMBERS_PER_ROW,
    COMMUNITY_TEXT_MAX_BYTES,
)
from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore
from llama_index_graphrag_milvus.records import Community, CommunityReport, Finding

logger = logging.getLogger(__name__)

STATE_KEY = "graphrag_communities_state"
"""Community collection property: ``building`` during a build, ``complete`` after it."""
INFO_KEY = "graphrag_communities_info"
"""Community collection property: what the last complete build recorded (JSON)."""
_EXTRACTIVE_ROWS = 5


@dataclass(frozen=True)
class CommunityBuildStats:
    """What :meth:`GraphRAGIndex.build_communities` did.

    ``per_level`` counts the communities of each level (0 first); ``modularity`` is that of
    the complete partition at each level; ``reports_written`` went to the LLM (or were
    extracted), ``reports_reused`` were unchanged and kept; ``report_failures`` are LLM
    reports replaced by extractive ones (failed calls, answers without a JSON report);
    ``seconds`` per stage.
    """

    communities: int
    per_level: tuple[int, ...]
    modularity: tuple[float, ...]
    reports_written: int
    reports_reused: int
    report_failures: int
    llm_calls: int
    kind: str
    deleted: int
    seconds: dict[str, float] = field(default_factory=dict)
    descriptions: DescriptionStats | None = None
    """Merged entity and relation descriptions (``None`` when no passage has any)."""

    @property
    def levels(self) -> int:
        return len(self.per_level)


# ---------------------------------------------------------------------- structure


def _communities(hierarchy: CommunityHierarchy, graph: EntityRelationGraph) -> list[Community]:
    """The hierarchy's clusters as :class:`Community` records with stable ids."""
    entity_ids = [graph.entity_ids.ids(c.entities) for c in hierarchy.clusters]
    ids = [stable_id("community", f"{c.level}\x1f{','.join(sorted(members))}")
           for c, members in zip(hierarchy.clusters, entity_ids, strict=True)]
    passages = graph.relation_passages
    result = []
    for index, cluster in enumerate(hierarchy.clusters):
        linked = passages[cluster.relations].indices
        result.append(Community(
            id=ids[index], level=cluster.level,
            parent=ids[cluster.parent] if cluster.parent >= 0 else "",
            children=tuple(ids[child] for child in hierarchy.children[index]),
            entity_ids=tuple(entity_ids[index]), num_relations=int(cluster.relations.size),
            num_passages=int(np.unique(linked).size)))
    return result


@dataclass(frozen=True)
class GraphText:
    """Names of entities and texts of relations, read from Milvus once per build, and the
    merged descriptions when the passages were extracted with them."""

    names: dict[str, str]
    texts: dict[str, str]
    descriptions: DescriptionTable = field(default_factory=lambda: DescriptionTable({}, {}))

    def entity_description(self, eid: str) -> str:
        found = self.descriptions.entities.get(eid)
        if found is None or not found[1]:
            return ""
        return f"{found[0]}: {found[1]}" if found[0] else found[1]

    def relation_description(self, rid: str) -> str:
        found = self.descriptions.relations.get(rid)
        return found[0] if found is not None else ""


def _community_data(hierarchy: CommunityHierarchy, communities: Sequence[Community],
                    graph: EntityRelationGraph, text: GraphText, rows: int
                    ) -> list[CommunityData]:
    """Each community's entities by degree and relations by combined degree then support,
    the first ``rows`` of each."""
    degree = graph.entity_degrees
    support = np.diff(graph.relation_passages.indptr)
    ends = graph.endpoints
    result = []
    for cluster, community in zip(hierarchy.clusters, communities, strict=True):
        entities = cluster.entities[np.lexsort((cluster.entities, -degree[cluster.entities]))]
        relations = cluster.relations
        combined = graph.combined_degrees(relations)
        relations = relations[np.lexsort((relations, -support[relations], -combined))]
        entities, relations = entities[:rows], relations[:rows]
        entity_ids = graph.entity_ids.ids(entities)
        relation_ids = graph.relation_ids.ids(relations)
        subjects = graph.entity_ids.ids(ends[relations, 0])
        objects = graph.entity_ids.ids(ends[relations, 1])
        result.append(CommunityData(
            community,
            tuple((eid, text.names.get(eid, eid), int(degree[row]),
                   text.entity_description(eid))
                  for eid, row in zip(entity_ids, entities.tolist(), strict=True)),
            tuple((rid, text.names.get(s, s), text.names.get(o, o), text.texts.get(rid, rid),
                   int(degree[ends[row, 0]] + degree[ends[row, 1]]), int(support[row]),
                   text.relation_description(rid))
                  for rid, s, o, row in zip(relation_ids, subjects, objects,
                                            relations.tolist(), strict=True))))
    return result


# ---------------------------------------------------------------------- rows


def _findings_json(findings: Sequence[Finding]) -> str:
    """The findings that fit the field, in order: one too long for what is left is skipped,
    not the ones after it."""
    kept: list[dict[str, str]] = []
    for finding in findings:
        candidate = [*kept, asdict(finding)]
        if len(json.dumps(candidate, ensure_ascii=False).encode()) > COMMUNITY_TEXT_MAX_BYTES:
            continue
        kept = candidate
    return json.dumps(kept, ensure_ascii=False)


def community_rows(report: CommunityReport, vector: Sequence[float], context_hash: str
                   ) -> list[dict[str, Any]]:
    """The rows of one community: the report and the first members in part 0, more members
    (and children) in parts 1, 2, ... when there are more than a row holds."""
    community = report.community
    size = COMMUNITY_MEMBERS_PER_ROW
    parts = max(1, -(-len(community.entity_ids) // size), -(-len(community.children) // size))
    head = {
        "community_id": community.id, "level": community.level, "parent": community.parent,
        "num_entities": len(community.entity_ids), "num_relations": community.num_relations,
        "num_passages": community.num_passages, "title": clip_utf8(report.title, 2048),
        "summary": clip_utf8(report.summary, COMMUNITY_TEXT_MAX_BYTES),
        "findings": _findings_json(report.findings), "rating": float(report.rating),
        "rating_explanation": clip_utf8(report.rating_explanation, 8192), "kind": report.kind,
        "context_hash": context_hash, "embedding": list(vector),
    }
    rows = []
    for part in range(parts):
        rows.append({**head, "id": community.id if part == 0 else f"{community.id}.{part}",
                     "part": part,
                     "entity_ids": list(community.entity_ids[part * size:(part + 1) * size]),
                     "children": list(community.children[part * size:(part + 1) * size])})
    return rows


@dataclass(frozen=True)
class StoredCommunity:
    """A community as read back from Milvus: its report, vector and context hash."""

    report: CommunityReport
    vector: np.ndarray
    context_hash: str


def communities_from_rows(rows: Sequence[dict[str, Any]]) -> dict[str, StoredCommunity]:
    """Community rows (parts in any order) back into records, by community id."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(str(row["community_id"]), []).append(row)
    result = {}
    for cid, parts in groups.items():
        parts.sort(key=lambda r: int(r["part"]))
        head = parts[0]
        report = report_of({**head, "community_id": cid},
                           tuple(c for p in parts for c in p["children"]),
                           tuple(e for p in parts for e in p["entity_ids"]))
        result[cid] = StoredCommunity(report, np.asarray(head["embedding"], np.float32),
                                      str(head["context_hash"]))
    return result


# ---------------------------------------------------------------------- build


def _read_text(store: MilvusGraphStore, descriptions: DescriptionTable) -> GraphText:
    names = {r["id"]: r["name"] for r in store.read_all(store.entity_collection, ["name"])}
    texts = {r["id"]: r["text"] for r in store.read_all(store.relation_collection, ["text"])}
    return GraphText(names, texts, descriptions)


def _extractive_hash(report: CommunityReport) -> str:
    return stable_id("extractive-report", f"{report.as_text()}\x1f{report.rating}")


@dataclass
class _Reports:
    """The reports of one build, filled level by level (deepest first)."""

    reports: dict[int, CommunityReport] = field(default_factory=dict)
    hashes: dict[int, str] = field(default_factory=dict)
    vectors: dict[int, np.ndarray] = field(default_factory=dict)
    written: int = 0
    reused: int = 0
    failures: int = 0
    llm_calls: int = 0


def _write_level(indices: Sequence[int], data: Sequence[CommunityData],
                 hierarchy: CommunityHierarchy, reporter: CommunityReporter | None,
                 existing: dict[str, StoredCommunity], done: _Reports, progress: tqdm) -> None:
    """The reports of one level's communities: reused when unchanged, else written."""
    pending: list[tuple[int, ReportContext, CommunityData, str]] = []
    for index in indices:
        item = data[index]
        if reporter is None:
            report = extractive_report(item)
            key = _extractive_hash(report)
        else:
            children = [(data[c], done.reports[c]) for c in hierarchy.children[index]
                        if c in done.reports]
            context = reporter.contexts.build(item, children)
            key = reporter.cache_key(context)
        stored = existing.get(item.community.id)
        if stored is not None and stored.context_hash == key:
            done.reports[index] = with_community(stored.report, item.community)
            done.vectors[index] = stored.vector
            done.hashes[index] = key
            done.reused += 1
            progress.update(1)
        elif reporter is None:
            done.reports[index], done.hashes[index] = report, key
            done.written += 1
            progress.update(1)
        else:
            pending.append((index, context, item, key))
    if reporter is None or not pending:
        return
    outcomes = reporter.write([(context, item) for _, context, item, _ in pending], progress)
    for (index, _, _, key), outcome in zip(pending, outcomes, strict=True):
        done.reports[index] = outcome.report
        done.llm_calls += outcome.llm_calls
        done.written += 1
        if outcome.error is None:
            done.hashes[index] = key
        else:  # not cached: the next build asks the LLM again
            done.failures += 1
            done.hashes[index] = "failed:" + key[:24]


def write_reports(graph: EntityRelationGraph, text: GraphText,
                  reporter: CommunityReporter | None, config: LeidenConfig,
                  existing: dict[str, StoredCommunity], seconds: dict[str, float],
                  show_progress: bool = False
                  ) -> tuple[CommunityHierarchy, list[Community], _Reports]:
    """The in-memory part of a build: Leiden, the communities, and their reports (reused
    from ``existing`` when unchanged); ``seconds`` gets the time of each stage."""
    with timed_stage(seconds, "leiden"):
        hierarchy = hierarchical_communities(graph.endpoints,
                                             relation_weights(graph.relation_passages),
                                             graph.num_entities, config)
        communities = _communities(hierarchy, graph)
    rows = (_EXTRACTIVE_ROWS if reporter is None
            else max(_EXTRACTIVE_ROWS, reporter.contexts.max_input_tokens // 4))
    done = _Reports()
    with timed_stage(seconds, "reports"):
        data = _community_data(hierarchy, communities, graph, text, rows)
        progress = tqdm(total=len(communities), desc="Writing community reports",
                        disable=not show_progress)
        try:
            for level in reversed(range(hierarchy.num_levels)):
                indices = [i for i, c in enumerate(hierarchy.clusters) if c.level == level]
                _write_level(indices, data, hierarchy, reporter, existing, done, progress)
        finally:
            progress.close()
    return hierarchy, communities, done


def build_communities(store: MilvusGraphStore, graph: EntityRelationGraph,
                      embed_model: BaseEmbedding, reporter: CommunityReporter | None = None,
                      config: LeidenConfig | None = None, show_progress: bool = False,
                      written: str | None = None) -> CommunityBuildStats:
    """Compute the communities of ``graph``, write their reports and store them (see the
    module docstring); ``reporter`` ``None`` writes extractive reports (no LLM);
    ``written``: the write token the graph was read after (recorded, see
    :func:`warn_if_stale`)."""
    config = config or LeidenConfig()
    if graph.num_relations == 0:
        raise EmptyIndexError(
            "the index holds no relations: ingest triplets before building communities"
            + (" (drop_communities() removes those built before every relation was deleted)"
               if store.dim is not None and store.communities.open() else ""))
    seconds: dict[str, float] = {}
    with timed_stage(seconds, "descriptions"):
        summarizer = None if reporter is None else DescriptionSummarizer(
            reporter.llm, num_workers=reporter.num_workers, max_retries=reporter.max_retries,
            retry_base_delay=reporter.retry_base_delay, sleep=reporter.sleep,
            timeout=reporter.timeout)
        descriptions, described = build_descriptions(store, graph, embed_model, summarizer,
                                                     show_progress)
    with timed_stage(seconds, "read"):
        text = _read_text(store, descriptions)
        existing: dict[str, StoredCommunity] = {}
        if store.communities.exists():
            existing = communities_from_rows(store.communities.read())
    hierarchy, communities, done = write_reports(graph, text, reporter, config, existing,
                                                 seconds, show_progress)
    with timed_stage(seconds, "embed"):
        missing = [i for i in range(len(communities)) if i not in done.vectors]
        vectors = embed_texts(embed_model, [done.reports[i].embedding_text() for i in missing],
                              show_progress)
        for index, vector in zip(missing, vectors, strict=True):
            done.vectors[index] = np.asarray(vector, np.float32)
    with timed_stage(seconds, "write"):
        deleted = _write(store, communities, done, existing, hierarchy, config, graph,
                         "extractive" if reporter is None else "llm", written)
    stats = CommunityBuildStats(
        len(communities), tuple(sum(c.level == lv for c in communities)
                                for lv in range(hierarchy.num_levels)),
        tuple(round(m, 4) for m in hierarchy.modularity), done.written, done.reused,
        done.failures, done.llm_calls, "extractive" if reporter is None else "llm", deleted,
        seconds, described if described.entities or described.relations else None)
    logger.info("communities built: %s", stats)
    return stats


def _write(store: MilvusGraphStore, communities: Sequence[Community], done: _Reports,
           existing: dict[str, StoredCommunity], hierarchy: CommunityHierarchy,
           config: LeidenConfig, graph: EntityRelationGraph, kind: str,
           written: str | None) -> int:
    """Store the build: ``building``, rows, stale rows deleted, ``complete`` (with what the
    build read: counts, settings, the graph's write token)."""
    store.communities.create()
    store.communities.set_properties({STATE_KEY: "building"})
    rows = [row for index in range(len(communities))
            for row in community_rows(done.reports[index], done.vectors[index].tolist(),
                                      done.hashes[index])]
    store.upsert_rows(store.community_collection, rows)
    keep = {row["id"] for row in rows}
    stale = [r["id"] for r in store.read_all(store.community_collection, [], for_write=True)
             if r["id"] not in keep]
    store.delete_rows(store.community_collection, stale)
    store.flush_collection(store.community_collection)
    info = {"levels": hierarchy.num_levels, "communities": len(communities),
            "relations": graph.num_relations, "entities": graph.num_entities,
            "max_cluster_size": config.max_cluster_size, "seed": config.seed,
            "resolution": config.resolution, "kind": kind, "written": written,
            "modularity": [round(m, 4) for m in hierarchy.modularity]}
    store.communities.set_properties({STATE_KEY: "complete", INFO_KEY: json.dumps(info)})
    return len({cid for cid in existing} - {c.id for c in communities})


# ---------------------------------------------------------------------- the loaded set


class CommunitySet:
    """The communities of an index, loaded from Milvus: reports, vectors, membership.

    Levels: 0 holds the most general communities; a community at level ``n`` with children
    is split at level ``n + 1``. The reports *at* a level (global search, the report
    retriever) are that level's communities plus the communities of lower levels that are
    not split further, so that every entity is covered once.
    """

    def __init__(self, stored: dict[str, StoredCommunity], info: dict[str, Any],
                 descriptions: DescriptionTable | None = None) -> None:
        self.info = info
        self.descriptions = descriptions or DescriptionTable({}, {})
        """Merged entity and relation descriptions (empty without described extraction)."""
        order = sorted(stored, key=lambda cid: (stored[cid].report.level, cid))
        self.reports: dict[str, CommunityReport] = {cid: stored[cid].report for cid in order}
        self.ids = order
        vectors = (np.stack([stored[cid].vector for cid in order]) if order
                   else np.zeros((0, 0), np.float32))
        norms = np.linalg.norm(vectors, axis=1, keepdims=True) if order else vectors
        self.vectors = vectors / np.where(norms > 0, norms, 1.0) if order else vectors
        self.num_levels = 1 + max((r.level for r in self.reports.values()), default=-1)
        self._membership: dict[str, list[str]] = {}
        for cid in order:  # levels ascending: an entity's list is its path from the root
            for entity in self.reports[cid].community.entity_ids:
                self._membership.setdefault(entity, []).append(cid)

    def __len__(self) -> int:
        return len(self.reports)

    def check_level(self, level: int | None) -> int:
        """``level`` itself (the deepest level for ``None``); :class:`InvalidInputError`
        when the index has no such level."""
        return check_level(self.num_levels, level)

    def info_record(self) -> CommunityInfo:
        """The levels, and whether descriptions are stored."""
        return CommunityInfo(self.num_levels, bool(self.descriptions), len(self))

    def around(self, entity_ids: Sequence[str], depth: int) -> LocalCommunities:
        """The communities of ``entity_ids`` at level ``depth`` (see
        :meth:`community_of`) with their reports."""
        found = {e: self.community_of(e, depth) for e in dict.fromkeys(entity_ids)}
        community = {e: cid for e, cid in found.items() if cid is not None}
        return LocalCommunities(community, {cid: self.reports[cid]
                                            for cid in dict.fromkeys(community.values())})

    def at_level(self, level: int | None = None) -> list[CommunityReport]:
        """The reports covering the graph at ``level`` (``None``: the most specific)."""
        level = self.check_level(level)
        return [r for r in self.reports.values()
                if r.level == level or (r.level < level and not r.community.children)]

    def community_of(self, entity_id: str, level: int | None = None) -> str | None:
        """The community of an entity at ``level`` (or the deepest above it when its
        community is not split that far); ``None`` for an entity in no community."""
        path = self._membership.get(entity_id)
        if not path:
            return None
        depth = self.check_level(level)
        return path[min(depth, len(path) - 1)]


def warn_if_stale(store: MilvusGraphStore, info: Mapping[str, Any]) -> None:
    """Log a warning when the graph has changed since the communities were built: another
    write token than the build recorded (every write and delete leaves a new one, so a
    delete and an insert of as many relations are seen too), or, for communities built
    before tokens were recorded, another number of relations."""
    now = None if "written" in info else store.count(store.relation_collection)
    changed = (store.written_token() != info["written"] if now is None
               else info.get("relations") not in (None, now))
    if not changed:
        return
    if (store.count(store.relation_collection) if now is None else now) == 0:
        logger.warning("the communities of %r were built on relations since deleted, all of "
                       "them: index.drop_communities() removes them", store.prefix)
    else:
        logger.warning("the graph of %r has changed since its communities were built: run "
                       "build_communities() again to include the changes", store.prefix)


def built_info(store: MilvusGraphStore) -> dict[str, Any]:
    """What the last complete build recorded (levels, counts, settings: one describe of the
    community collection); :class:`CommunitiesNotBuiltError` when there are no communities
    or the last build did not finish."""
    properties = store.communities.properties() if store.dim is not None else {}
    state = properties.get(STATE_KEY)
    if state != "complete":
        what = ("its last build_communities() was interrupted" if state == "building"
                else "its communities were never built")
        raise CommunitiesNotBuiltError(
            f"the index {store.prefix!r} at {store.uri!r} has no communities to search: "
            f"{what}. Run index.build_communities() (extractive reports) or "
            "index.build_communities(llm=llm) (LLM reports) first; it needs "
            'pip install "llama-index-graphrag-milvus[communities]".')
    info: dict[str, Any] = json.loads(properties.get(INFO_KEY, "{}"))
    return info


def load_communities(store: MilvusGraphStore) -> CommunitySet:
    """The stored communities, all of them; :class:`CommunitiesNotBuiltError` when there
    are none or the last build did not finish."""
    info = built_info(store)
    rows = store.communities.read()
    descriptions = (read_description_table(store.descriptions.read())
                    if store.descriptions.exists() else None)
    return CommunitySet(communities_from_rows(rows), info, descriptions)
