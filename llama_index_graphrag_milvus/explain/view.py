"""The drawn part of the graph: which relations and entities an explanation shows, with
their roles, and the names and relation ends they need (:class:`Lookup`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from llama_index.core.schema import BaseNode

from llama_index_graphrag_milvus.explain.explanation import (
    Explanation,
    GraphEdge,
    GraphNode,
    GraphView,
    RelationRef,
)
from llama_index_graphrag_milvus.explain.trace import Trace
from llama_index_graphrag_milvus.ids import clean_text
from llama_index_graphrag_milvus.records import Triplet
from llama_index_graphrag_milvus.retrieval.steps import own_triplets

MAX_EDGES = 120
"""Relations an explanation draws at most (a readable picture; the rest are counted)."""
MAX_CONTEXT_RELATIONS = 40
"""Local search relations drawn at most (its table holds up to ``max_context_relations``)."""


def predicate(text: str, subject: str, obj: str) -> str:
    """The predicate of a relation text ``"subject predicate object"`` when it starts with
    the subject's name and ends with the object's (case and spacing aside); else the text.

    >>> predicate("leonhard Euler was born in Basel", "Leonhard Euler", "Basel")
    'was born in'
    >>> predicate("something else", "A", "B")
    'something else'
    >>> predicate("GROSSE STRASSE is in Berlin", "Große Straße", "Berlin")
    'is in'
    """
    words, head, tail = clean_text(text), clean_text(subject), clean_text(obj)
    folded, head, tail = words.casefold(), head.casefold(), tail.casefold()
    if not (head and tail and folded.startswith(head + " ") and folded.endswith(" " + tail)):
        return words
    # cut where the folded lengths end: case folding can change a length ("ß" -> "ss")
    start, end = _unfolded(words, len(head) + 1), _unfolded(words, len(folded) - len(tail) - 1)
    return words[start:end] if start is not None and end is not None and start < end else words


def _unfolded(text: str, folded_length: int) -> int | None:
    """The index in ``text`` whose prefix folds to ``folded_length`` characters (``None``
    when the cut falls inside a character's folding).

    >>> _unfolded("Große Straße is", 14)  # "grosse strasse"
    12
    """
    length = 0
    for index, character in enumerate(text):
        if length == folded_length:
            return index
        length += len(character.casefold())
    return len(text) if length == folded_length else None


class Lookup:
    """Relation ends and entity names: the passages' own triplets first, then what was read
    (from the graph source: the in-memory graph and entity table, or Milvus) for the ids
    asked so far (:meth:`unknown`, :meth:`learn`). Only explanations use it.

    >>> lookup = Lookup()
    >>> lookup.ends(["r1"]), lookup.name("e1")
    ({}, 'e1')
    >>> lookup.unknown()
    (('r1',), ('e1',))
    >>> lookup.learn({"r1": ("e1", "e2")}, {"e1": "Euler"})
    >>> lookup.ends(["r1"]), lookup.name("e1")
    ({'r1': ('e1', 'e2')}, 'Euler')
    """

    def __init__(self) -> None:
        self._triplets: dict[str, Triplet] = {}
        self._ends: dict[str, tuple[str, str]] = {}
        self._names: dict[str, str] = {}
        self._asked_ends: dict[str, None] = {}
        self._asked_names: dict[str, None] = {}
        self._read: set[str] = set()  # ids asked once: not asked again

    def learn_triplets(self, nodes: Iterable[BaseNode]) -> None:
        """Take the relation ends and entity names of these passages' triplets."""
        for node in nodes:
            for triplet in own_triplets(node):
                self._triplets.setdefault(triplet.id, triplet)
                self._ends.setdefault(triplet.id, (triplet.subject_id, triplet.object_id))

    def learn(self, ends: Mapping[str, tuple[str, str]], names: Mapping[str, str]) -> None:
        """Take the ends and names read for the ids :meth:`unknown` gave; those not found stay
        unknown and are not asked again (relations without ends are not drawn; entities keep
        their id as name)."""
        self._ends.update(ends)
        self._names.update(names)
        self._read.update(self._asked_ends)
        self._read.update(self._asked_names)
        self._asked_ends.clear()
        self._asked_names.clear()

    def unknown(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The relation ids whose ends and entity ids whose names were asked and are not
        known yet."""
        return tuple(self._asked_ends), tuple(self._asked_names)

    def ends(self, relation_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """Subject and object ids of the known relations."""
        self._asked_ends.update(dict.fromkeys(rid for rid in relation_ids
                                              if rid not in self._ends
                                              and rid not in self._read))
        return {rid: self._ends[rid] for rid in relation_ids if rid in self._ends}

    def names(self, entity_ids: Sequence[str]) -> dict[str, str]:
        """Names of ``entity_ids`` (the index's; an unknown entity keeps its id, or the name
        its triplet gives)."""
        self._asked_names.update(dict.fromkeys(e for e in entity_ids if e not in self._names
                                               and e not in self._read))
        given = {eid: name for triplet in self._triplets.values()
                 for eid, name in ((triplet.subject_id, triplet.subject),
                                   (triplet.object_id, triplet.object))}
        return {eid: self._names.get(eid) or given.get(eid, eid) for eid in entity_ids}

    def name(self, entity_id: str) -> str:
        """One entity's name."""
        return self.names([entity_id])[entity_id]

    def label(self, relation_id: str, text: str, subject: str, obj: str) -> str:
        """The edge label: the triplet's predicate, else the text without the names."""
        triplet = self._triplets.get(relation_id)
        return triplet.predicate if triplet is not None else predicate(text, subject, obj)


def build_view(explanation: Explanation, trace: Trace, lookup: Lookup,
               passage_entities: Sequence[tuple[str, Sequence[str]]]) -> GraphView:
    """The graph of an explanation: the bridge relations, the relation seeds, the Steiner
    tree, the returned passages' relations, local search's relations, then the pool, at
    most :data:`MAX_EDGES`; the entities at their ends and those of the steps."""
    roles: dict[str, list[str]] = {}
    refs: dict[str, RelationRef] = {}

    def add(relations: Iterable[RelationRef], role: str) -> None:
        for ref in relations:
            refs.setdefault(ref.id, ref)
            if role not in roles.setdefault(ref.id, []):
                roles[ref.id].append(role)

    add((b.relation for b in explanation.bridges), "bridge")
    add(explanation.relation_seeds, "seed")
    add(explanation.subgraph, "subgraph")
    add((r for p in explanation.passages for r in p.relations), "passage")
    add((RelationRef(c.id, c.text, c.score, c.hop)
         for c in trace.context_relations[:MAX_CONTEXT_RELATIONS]), "context")
    add(explanation.pool, "pool")
    kept = list(refs)[:MAX_EDGES]
    ends = lookup.ends(kept)
    kept = [rid for rid in kept if rid in ends]
    node_roles: dict[str, list[str]] = {}

    def mark(entity_ids: Iterable[str], role: str | None) -> None:
        for eid in entity_ids:
            given = node_roles.setdefault(eid, [])
            if role is not None and role not in given:
                given.append(role)

    mark((e for rid in kept for e in ends[rid]), None)
    mark((h.id for h in explanation.entity_seeds), "seed")
    mark((e for r in explanation.relation_seeds if r.id in ends for e in ends[r.id]), "seed")
    mark((b.entity_id for b in explanation.bridges), "bridge")
    mark((m.id for m in explanation.pagerank), "pagerank")
    if trace.subgraph is not None:
        mark(trace.subgraph.entities, "subgraph")
    mark((h.id for h in explanation.context_entities), "context")
    found = {e for _, entities in passage_entities for e in entities}
    mark((e for e in node_roles if e in found), "found")
    names = lookup.names(list(node_roles))
    edges = []
    for rid in kept:
        subject, obj = ends[rid]
        ref = refs[rid]
        edges.append(GraphEdge(rid, subject, obj,
                               lookup.label(rid, ref.text, names[subject], names[obj]),
                               ref.text, ref.score, tuple(roles[rid])))
    nodes = tuple(GraphNode(eid, names[eid], tuple(r)) for eid, r in node_roles.items())
    return GraphView(nodes, tuple(edges), len(refs) - len(kept))
