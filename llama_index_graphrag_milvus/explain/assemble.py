"""From a filled :class:`~.trace.Trace` and the returned nodes to an
:class:`~.explanation.Explanation` (pure).

The final passages come from the nodes the method returned, with the reason read from
their metadata (``graphrag_found_by``, ``graphrag_relations``); the other steps from the
trace. Relation ends and entity names are taken from the passages' own triplets, or from
what the graph source read for the :class:`~.view.Lookup`.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import replace
from difflib import SequenceMatcher
from typing import Any

from llama_index.core.schema import BaseNode, NodeWithScore

from llama_index_graphrag_milvus.explain.explanation import (
    BridgeStep,
    CandidateList,
    EntityMass,
    Explanation,
    ListedPassage,
    NaivePassage,
    PassageStep,
    RelationRef,
    ReportStep,
    SeedEntity,
)
from llama_index_graphrag_milvus.explain.trace import Trace
from llama_index_graphrag_milvus.explain.view import Lookup, build_view
from llama_index_graphrag_milvus.ids import entity_id
from llama_index_graphrag_milvus.metadata import CONTEXT_KIND_KEY, FOUND_BY_KEY, RELATIONS_KEY
from llama_index_graphrag_milvus.records import CandidateRelation, EntityHit, RelationHit
from llama_index_graphrag_milvus.retrieval.steps import own_triplets
from llama_index_graphrag_milvus.words import LETTER, WORD, is_unspaced

MAX_POOL = 100
"""Pool relations an explanation lists (the pool itself is ``max_candidate_relations``)."""


def read_second_query(question: str, second_query: str, bridge: str) -> str:
    """A bridge's second query in words: the question with the words the query dropped
    replaced by the bridge, or the question followed by the bridge when it dropped none
    (``bridge_query="append"``). What is embedded is ``second_query`` itself: this is
    how to read it.

    >>> read_second_query("What did the son of Euler's teacher make?",
    ...                   "What did the son of 's teacher make? Johann Bernoulli",
    ...                   "Johann Bernoulli")
    "the question with 'Euler' replaced by the bridge: What did the son of Johann \
Bernoulli's teacher make?"
    >>> read_second_query("Who taught Euler?", "Who taught Euler? Johann Bernoulli",
    ...                   "Johann Bernoulli")
    'the question followed by the bridge: Who taught Euler? Johann Bernoulli'
    >>> read_second_query("欧拉的老师是谁？", "的老师是谁? 约翰·伯努利", "约翰·伯努利")
    "the question with '欧拉' replaced by the bridge: 约翰·伯努利的老师是谁?"
    """
    kept = second_query[:-len(bridge)].rstrip() if second_query.endswith(bridge) \
        else second_query
    units = WORD
    if is_unspaced(question):  # compared by characters, in the form the query dropped from
        question, units = unicodedata.normalize("NFKC", question), LETTER
    words = list(units.finditer(question))
    dropped = [(words[i1].start(), words[i2 - 1].end())
               for i1, i2 in _dropped([w.group() for w in words], units.findall(kept))]
    if not dropped:
        return f"the question followed by the bridge: {question} {bridge}"
    first = question[dropped[0][0]:dropped[0][1]]
    text = question
    for start, end in reversed(dropped):
        text = text[:start] + (bridge if start == dropped[0][0] else "") + text[end:]
    return f"the question with {first!r} replaced by the bridge: {' '.join(text.split())}"


MAX_DIFFED = 200
"""Words (characters, unspaced) of a question compared by :class:`difflib.SequenceMatcher`
(its time grows with the cube of the length: 14,400 characters took minutes); a longer
question is walked once, the query's words matched in order."""


def _dropped(question: Sequence[str], kept: Sequence[str]) -> list[tuple[int, int]]:
    """The spans ``(start, end)`` of ``question``'s words the second query did not keep.

    >>> _dropped(["who", "taught", "Euler"], ["who", "taught"])
    [(2, 3)]
    """
    if len(question) <= MAX_DIFFED:
        matcher = SequenceMatcher(None, question, kept, autojunk=False)
        return [(i1, i2) for tag, i1, i2, _, _ in matcher.get_opcodes()
                if tag in ("delete", "replace")]
    spans: list[tuple[int, int]] = []
    j = 0
    for i, word in enumerate(question):
        if j < len(kept) and word == kept[j]:
            j += 1
        elif spans and spans[-1][1] == i:
            spans[-1] = (spans[-1][0], i + 1)
        else:
            spans.append((i, i + 1))
    return spans


def _ref(relation: RelationHit | CandidateRelation | Mapping[str, Any]) -> RelationRef:
    if isinstance(relation, Mapping):
        return RelationRef(str(relation.get("id", "")), str(relation.get("text", "")),
                           _number(relation.get("score")), relation.get("hop"))
    hop = relation.hop if isinstance(relation, CandidateRelation) else None
    return RelationRef(relation.id, relation.text, float(relation.score), hop)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


def _seed(hit: EntityHit) -> SeedEntity:
    return SeedEntity(hit.id, hit.name, float(hit.score), hit.searched)


def _classify(found: Mapping[str, Any], relations: Sequence[RelationRef]) -> str:
    """``found_by`` of a passage from its ``graphrag_found_by`` metadata."""
    query = str(found.get("query", ""))
    if query in ("bridge", "question", "ppr", "pcst"):
        return query
    if query:  # a fallback: "question (the seeds reach nothing)"...
        return "similarity"
    return "pool" if relations else "similarity"


def reason(found_by: str, found: Mapping[str, Any], relations: Sequence[RelationRef]) -> str:
    """Why a passage was returned, in words.

    >>> reason("bridge", {"bridge": "Johann Bernoulli", "round": 0, "similarity": 0.62},
    ...        [RelationRef("r", "Leonhard Euler was a student of Johann Bernoulli", 0.7)])
    "second query for the bridge 'Johann Bernoulli' (round 1, similarity 0.620), \
reached by the relation 'Leonhard Euler was a student of Johann Bernoulli'"
    """
    similarity = _number(found.get("similarity"))
    words = _number(found.get("words"))
    sim = (f"similarity {similarity:.3f}" if similarity is not None
           else f"found by its words, BM25 {words:.3f}" if words is not None else "not scored")
    first = relations[0] if relations else None
    if found_by == "bridge":
        via = f", reached by the relation {first.text!r}" if first else ""
        return (f"second query for the bridge {found.get('bridge')!r} (round "
                f"{int(found.get('round', 0)) + 1}, {sim}){via}")
    if found_by == "question":
        return f"the question's own passage list (round {int(found.get('round', 0)) + 1}, {sim})"
    if found_by == "ppr":
        mass = _number(found.get("mass")) or 0.0
        return f"personalized PageRank mass {mass:.4f} ({sim})"
    if found_by == "pcst":
        via = f"; its first tree relation: {first.text!r}" if first else ""
        return f"a passage of the Steiner tree's relations ({sim}){via}"
    if found_by == "pool" and first is not None:
        hop = f"hop {first.hop}, " if first.hop is not None else ""
        score = f"similarity {first.score:.3f}" if first.score is not None else "not scored"
        return f"reached by the pool relation {first.text!r} ({hop}{score})"
    query = str(found.get("query", ""))
    why = query[query.find("(") + 1:query.rfind(")")] if "(" in query else ""
    return f"ranked by its own similarity to the question ({sim})" + (f": {why}" if why else "")


def is_passage(node: BaseNode) -> bool:
    """Whether a returned node is a passage: not a local-search report or table, nor the
    PCST subgraph's own node."""
    found = node.metadata.get(FOUND_BY_KEY) or {}
    return (node.metadata.get(CONTEXT_KIND_KEY, "passage") == "passage"
            and found.get("query") != "pcst subgraph")


def _passage_steps(nodes: Sequence[NodeWithScore], naive_rank: Mapping[str, int]
                   ) -> list[PassageStep]:
    steps = []
    for rank, hit in enumerate([n for n in nodes if is_passage(n.node)], 1):
        metadata = hit.node.metadata
        found = metadata.get(FOUND_BY_KEY) or {}
        relations = tuple(_ref(r) for r in metadata.get(RELATIONS_KEY) or ())
        found_by = _classify(found, relations)
        ends = [(t.subject_id, t.object_id) for t in own_triplets(hit.node)]
        steps.append(PassageStep(
            rank=rank, id=hit.node.node_id, text=hit.node.get_content(), score=hit.score,
            found_by=found_by, reason=reason(found_by, found, relations),
            bridge=found.get("bridge"), round=found.get("round"),
            similarity=_number(found.get("similarity")), relations=relations,
            entity_ids=tuple(dict.fromkeys(e for pair in ends for e in pair)),
            naive_rank=naive_rank.get(hit.node.node_id), words=_number(found.get("words"))))
    return steps


def _reports(trace: Trace, nodes: Sequence[NodeWithScore]) -> list[ReportStep]:
    used = {str(n.node.metadata.get("graphrag_community", {}).get("id", ""))
            for n in nodes if n.node.metadata.get(CONTEXT_KIND_KEY) == "report"}
    return [ReportStep(report.id, report.level, report.title, float(report.rating), matches,
                       report.as_text(), report.id in used) for report, matches in trace.reports]


def _bridges(trace: Trace, question: str) -> list[BridgeStep]:
    return [BridgeStep(entity_id(bridge.name), bridge.name, bridge.kind, _ref(bridge.relation),
                       query, bridge.named, bridge.fallback,
                       read_second_query(question, query, bridge.name))
            for bridge, query in trace.bridges]


def _lists(trace: Trace, question: str) -> list[CandidateList]:
    lists = []
    for source, hits in enumerate(trace.lists):
        bridge = trace.bridges[source - 1] if 0 < source <= len(trace.bridges) else None
        lists.append(CandidateList(source, bridge[1] if bridge else question,
                                   bridge[0].name if bridge else None,
                                   tuple(ListedPassage(pid, score) for pid, score in hits)))
    return lists


def build_explanation(trace: Trace, question: str, method: str, settings: dict[str, Any],
                      nodes: Sequence[NodeWithScore],
                      naive: Sequence[tuple[BaseNode, float]], lookup: Lookup,
                      timings: dict[str, float]) -> Explanation:
    """The explanation of one retrieval (see the module docstring)."""
    naive_rank = {node.node_id: rank for rank, (node, _) in enumerate(naive, 1)}
    passages = _passage_steps(nodes, naive_rank)
    graph_rank = {p.id: p.rank for p in passages}
    chosen = trace.subgraph
    subgraph = [_ref(c) for c in chosen.relations] if chosen is not None else []
    lookup.learn_triplets([n.node for n in nodes] + [node for node, _ in naive])
    explanation = Explanation(
        question=question, method=method, settings=dict(settings), passages=tuple(passages),
        naive=tuple(NaivePassage(rank, node.node_id, node.get_content(), float(score),
                                 graph_rank.get(node.node_id))
                    for rank, (node, score) in enumerate(naive, 1)),
        entity_seeds=tuple(_seed(h) for h in trace.entity_hits),
        relation_seeds=tuple(_ref(h) for h in trace.relation_hits),
        bridges=tuple(_bridges(trace, question)), candidate_lists=tuple(_lists(trace, question)),
        pool=tuple(_ref(c) for c in trace.pool[:MAX_POOL]),
        pagerank=tuple(EntityMass(eid, lookup.name(eid), mass)
                       for eid, mass in trace.pagerank),
        subgraph=tuple(subgraph), reports=tuple(_reports(trace, nodes)),
        context_entities=tuple(_seed(h) for h in trace.context_entities),
        timings=timings, milvus_requests=trace.milvus_requests)
    view = build_view(explanation, trace, lookup,
                      [(p.id, p.entity_ids) for p in passages])
    notes = list(trace.notes)
    if view.omitted:
        notes.append(f"the drawing leaves out {view.omitted} relations of the pool")
    if len(trace.pool) > MAX_POOL:
        notes.append(f"the pool holds {len(trace.pool)} relations; the first {MAX_POOL} "
                     "are listed")
    return replace(explanation, graph=view, notes=tuple(notes))
