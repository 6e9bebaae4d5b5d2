"""The graph-guided second hop: bridge choice, second queries, interleaving (pure), and the
retrieval on Milvus (calls made, filters, sync == async, rerank on top)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from llama_index.core.schema import MetadataMode, TextNode
from llama_index.core.vector_stores import MetadataFilter, MetadataFilters

from llama_index_graphrag_milvus import GraphRAGIndex, GraphRelationRerank, InvalidInputError
from llama_index_graphrag_milvus.graph import EntityRelationGraph
from llama_index_graphrag_milvus.index_cache import PASSAGE_COUNT, PASSAGES
from llama_index_graphrag_milvus.metadata import FOUND_BY_KEY, RELATIONS_KEY, TIMINGS_KEY
from llama_index_graphrag_milvus.records import CandidateRelation, RelationHit, Triplet
from llama_index_graphrag_milvus.retrieval.bridge import (
    DEFAULT_HUB_PASSAGES,
    Bridge,
    BridgeRetrieval,
    closest_bridge_first,
    content_words,
    distinct_bridges,
    endpoint_names,
    interleave,
    is_named,
    rank_bridges,
    second_query,
)
from llama_index_graphrag_milvus.retrieval.drivers import DriverContext, SyncDriver
from llama_index_graphrag_milvus.retrieval.method import QueryContext
from llama_index_graphrag_milvus.retrieval.neighbourhood import Spread, bridge_spreads
from llama_index_graphrag_milvus.retrieval.requests import (
    BridgeSpreads,
    RelationsAround,
    Together,
    advance,
)
from tests.conftest import FAMILY
from tests.support.fakes import ScriptedLLM
from tests.support.markers import LITE_ONLY

# Argument checks do not depend on the backend.

QUESTION = "What did the son of Euler's teacher contribute?"
EULER, DANIEL, JAKOB, FLUID = (p for p, _ in FAMILY)


def hit(subject: str, predicate: str, obj: str, score: float = 0.9,
        passage: str | None = None) -> RelationHit:
    t = Triplet(subject, predicate, obj)
    return RelationHit(t.id, t.text, score, t.subject_id, t.object_id,
                       passage_ids=(passage,) if passage else ())


def choose_bridges(question: str, hits: list[RelationHit], limit: int,
                   graph: EntityRelationGraph | None = None,
                   hub_passages: int = DEFAULT_HUB_PASSAGES,
                   fallback_hits: list[RelationHit] | tuple[()] = ()) -> list[Bridge]:
    """The bridge method's own steps: the distinct bridges of the hits, where they lead
    (``bridge_spreads``, answered by the in-memory source from ``graph`` when given), then
    their ranking."""
    candidates = distinct_bridges(question, hits, fallback_hits)
    spreads = None
    if graph is not None:
        context = DriverContext(store=None, embed_model=None,  # type: ignore[arg-type]
                                cache=SimpleNamespace(graph=lambda: graph))
        spreads = SyncDriver(context).run(bridge_spreads(
            QueryContext(question, [1.0, 0.0], 5),
            [(Triplet(b.name, "x", "y").subject_id, b.relation) for b in candidates],
            hub_passages + 1))
    return rank_bridges(candidates, limit, spreads, hub_passages)


def texts(hits: list) -> list[str]:
    return [h.node.get_content() for h in hits]


# ---------------------------------------------------------------------- pure steps


def test_named_entities_are_recognized_by_their_content_words() -> None:
    words = content_words("Who published the Journal of Psychotherapy Integration?")
    assert is_named("Journal of Psychotherapy Integration", words)
    assert is_named("the journal of psychotherapy integration", words)
    assert not is_named("American Psychological Association", words)
    assert is_named("the", words)  # no content word: never a bridge


def test_endpoint_names_come_back_from_the_relation_text() -> None:
    # names that share words with the predicate, and a one-word predicate
    assert endpoint_names(hit("New York", "New", "York Times")) == ("New York", "York Times")
    assert endpoint_names(hit("A B", "is", "C")) == ("A B", "C")
    # a relation written by another tool (text that does not hash to its ids)
    foreign = RelationHit("r", "some free text", 0.5, "x" * 32, "y" * 32)
    assert endpoint_names(foreign) is None


def test_bridges_are_the_endpoints_the_question_does_not_name() -> None:
    hits = [hit("Leonhard Euler", "was a student of", "Johann Bernoulli"),  # one named
            hit("Euler", "was born in", "Euler"),  # both named: no bridge
            hit("Daniel Bernoulli", "studied", "fluid dynamics"),  # neither: both
            hit("Johann Bernoulli", "taught", "Leonhard Euler")]  # the same bridge again
    bridges = choose_bridges(QUESTION, hits, limit=5)
    assert [b.name for b in bridges] == ["Johann Bernoulli", "Daniel Bernoulli",
                                         "fluid dynamics"]
    assert [b.named for b in bridges] == ["Leonhard Euler", None, None]
    assert [b.name for b in choose_bridges(QUESTION, hits, limit=1)] == ["Johann Bernoulli"]
    assert choose_bridges(QUESTION, [], limit=3) == []


def graph_of(triplets: list[tuple[str, tuple[str, str, str]]]) -> EntityRelationGraph:
    """A graph of (passage id, triplet) pairs, every relation vector the same."""
    rows = [{"id": Triplet(*t).id, "subject_id": Triplet(*t).subject_id,
             "object_id": Triplet(*t).object_id, "passage_ids": [p], "embedding": [1.0, 0.0]}
            for p, t in triplets]
    return EntityRelationGraph.from_rows([rows], dim=2)


def test_the_graph_puts_bridges_that_lead_elsewhere_first() -> None:
    """"Basel Academy" is named in the Euler passage only: it cannot lead to a second hop."""
    graph = graph_of([("p_euler", ("Basel Academy", "was joined by", "Leonhard Euler")),
                      ("p_euler", ("Leonhard Euler", "was a student of", "Johann Bernoulli")),
                      ("p_daniel", ("Daniel Bernoulli", "was the son of", "Johann Bernoulli"))])
    hits = [hit("Basel Academy", "was joined by", "Leonhard Euler", 0.95, "p_euler"),
            hit("Leonhard Euler", "was a student of", "Johann Bernoulli", 0.9, "p_euler")]
    question = "Who is the son of Leonhard Euler's teacher?"
    assert [b.name for b in choose_bridges(question, hits, 3)] == ["Basel Academy",
                                                                    "Johann Bernoulli"]
    assert [b.name for b in choose_bridges(question, hits, 3, graph)] == [
        "Johann Bernoulli", "Basel Academy"]
    assert [b.name for b in choose_bridges(question, hits, 1, graph)] == ["Johann Bernoulli"]


def test_hubs_come_after_entities_that_lead_somewhere_in_particular() -> None:
    """"United States" is in every passage: a second query about it finds any of them."""
    graph = graph_of([*((f"p{i}", (f"Town {i}", "is in", "United States")) for i in range(5)),
                      ("p_ada", ("Ada Kovar", "was born in", "Leeds")),
                      ("p_leeds", ("Leeds", "is a city in", "England"))])
    hits = [hit("Ada Kovar", "lived in", "United States", 0.95, "p_ada"),
            hit("Ada Kovar", "was born in", "Leeds", 0.9, "p_ada")]
    question = "Where was Ada Kovar's birthplace?"
    assert [b.name for b in choose_bridges(question, hits, 2, graph)] == [
        "United States", "Leeds"]  # five passages are not a hub with the default
    assert [b.name for b in choose_bridges(question, hits, 2, graph, hub_passages=4)] == [
        "Leeds", "United States"]


def test_concepts_are_a_last_resort_and_dates_never_bridges() -> None:
    hits = [hit("Kim Jong-chul", "is a", "son"),
            hit("Kim Jong-chul", "was born in", "1981"),
            hit("Kim Jong-chul", "is a son of", "Kim Jong-il")]
    question = "Who is the wife of Kim Jong-chul?"
    bridges = choose_bridges(question, hits, 3)
    # "Kim Jong-il" shares two of three words with the question, but the question names
    # "Kim Jong-chul" wholly: the other end is the bridge
    assert [(b.name, b.kind, b.named) for b in bridges] == [
        ("Kim Jong-il", "named", "Kim Jong-chul"), ("son", "concept", "Kim Jong-chul")]
    # a kind recorded with the relation (by the spaCy extractor) wins over the name's shape
    t = Triplet("Kim Jong-chul", "met", "Western Sea")
    recorded = RelationHit(t.id, t.text, 0.9, t.subject_id, t.object_id, "title", "concept")
    assert [b.kind for b in choose_bridges(question, [recorded], 3)] == ["concept"]


def test_a_date_recorded_as_named_is_never_a_bridge() -> None:
    # the spaCy extractor of 0.2 recorded a month the parser took for a proper noun as
    # named: "December" was a bridge, whose second query finds passages about Decembers
    question = "When did the company Novair International Airways is part of dissolve?"
    hits = []
    for obj, kind in (("7 December", "named"), ("December", "named"),
                      ("Rank Organisation", "named")):
        t = Triplet("Novair International Airways", "was formed on", obj)
        hits.append(RelationHit(t.id, t.text, 0.9, t.subject_id, t.object_id, "title", kind))
    assert [(b.name, b.kind) for b in choose_bridges(question, hits, 3)] == [
        ("Rank Organisation", "named")]


def test_bridges_of_the_named_entities_relations_come_after_the_hits() -> None:
    question = "What district is LaHave of the place of birth of David Morse located?"
    hits = [hit("David Morse", "born on", "October 31, 1954"),
            hit("David Morse", "is a", "Canadian politician"),
            hit("Jan Morse", "lived in", "Halifax")]
    fallback = [hit("David Morse", "born in", "Walden"),
                hit("David Morse", "represented", "Kings South")]
    assert [(b.name, b.fallback) for b in choose_bridges(question, hits, 3,
                                                         fallback_hits=fallback)] == [
        ("Halifax", False), ("Walden", True), ("Kings South", True)]
    assert [b.name for b in choose_bridges(question, hits[:2], 2, fallback_hits=fallback)
            ] == ["Walden", "Kings South"]  # before the concept of the hits


def scripted_candidates(question: str, hits: list[RelationHit], max_bridges: int,
                        fallback: list[RelationHit], spread: dict[str, list[str]]
                        ) -> tuple[list[Bridge], dict[str, Spread], list[list[str]]]:
    """The bridge method's candidate step driven by a script: the named entities'
    relations are ``fallback``, an entity's passages ``spread[name]``; also each round's
    request types (a ``Together`` as the list of its requests' types)."""
    passages = {Triplet(name, "x", "y").subject_id: ids for name, ids in spread.items()}

    def answer(request: Any) -> Any:
        if isinstance(request, Together):
            return tuple(answer(r) for r in request.requests)
        if isinstance(request, RelationsAround):
            return [CandidateRelation(h.id, h.score, 0, h.text, h.passage_ids, h.subject_id,
                                      h.object_id) for h in fallback]
        assert isinstance(request, BridgeSpreads), request
        return {e: Spread.of(passages.get(e, [])[:request.cap], h) for e, h in request.reached}

    rounds: list[list[str]] = []
    method = BridgeRetrieval(max_bridges=max_bridges)
    plan = method._candidates(QueryContext(question, [1.0, 0.0], 5), hits)
    request, value = advance(plan, None)
    while request is not None:
        rounds.append([type(r).__name__ for r in request.requests]
                      if isinstance(request, Together) else [type(request).__name__])
        request, value = advance(plan, answer(request))
    assert value is not None
    candidates, spreads = value
    return candidates, spreads, rounds


def test_the_named_entities_relations_are_read_only_when_the_hits_lack_bridges() -> None:
    question = "What district is LaHave of the place of birth of David Morse located?"
    hits = [hit("David Morse", "lived in", "Halifax", passage="p1"),
            hit("David Morse", "visited", "Dartmouth", passage="p2"),
            hit("Jan Morse", "lived in", "Truro", passage="p3")]
    fallback = [hit("David Morse", "born in", "Walden", passage="p4"),
                hit("David Morse", "represented", "Kings South", passage="p5")]
    spread = {"Halifax": ["p1"], "Dartmouth": ["p2"], "Truro": ["p3", "p9"]}
    for limit in (1, 2, 3):
        candidates, spreads, rounds = scripted_candidates(question, hits, limit, fallback,
                                                          spread)
        # three specific bridges from the hits: a fallback bridge can never be chosen, so
        # nothing is read yet (the spreads go out beside the second queries' search)
        assert rounds == [] and spreads == {}, rounds
        assert [b.name for b in candidates] == ["Halifax", "Dartmouth", "Truro"]
    for limit in (4, 5, 6):
        candidates, spreads, rounds = scripted_candidates(question, hits, limit, fallback,
                                                          spread)
        # too few: the named entities' relations are read beside the hits' spreads
        assert rounds == [["RelationsAround", "BridgeSpreads"]], rounds
        assert [(b.name, b.fallback) for b in candidates] == [
            ("Halifax", False), ("Dartmouth", False), ("Truro", False), ("Walden", True),
            ("Kings South", True)]
        assert spreads[Triplet("Truro", "x", "y").subject_id] == Spread(2, True)
        assert set(spreads) == {Triplet(n, "x", "y").subject_id for n in spread}


@pytest.mark.parametrize("graph", ["memory", "milvus"])
@pytest.mark.parametrize("overlap", [1, 2])
def test_second_queries_searched_beside_the_spreads_choose_what_reading_them_first_does(
        shared_family_index: GraphRAGIndex, graph: str, overlap: int,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The same passages, scores and explanations whether the bridges' spreads are read
    before their second queries are searched or beside (one round trip less)."""
    index = GraphRAGIndex(uri=shared_family_index.store.uri,
                          embed_model=shared_family_index.embed_model, graph=graph)
    questions = [QUESTION, "Who was the brother of Daniel Bernoulli's father?",
                 "What does the field Daniel Bernoulli contributed to explain?",
                 "Where was the student of Johann Bernoulli born?"]
    saved = 0
    try:
        for max_bridges in (1, 2, 4):
            retriever = index.as_retriever(method=BridgeRetrieval(max_bridges=max_bridges),
                                           similarity_top_k=3)
            for question in questions:
                monkeypatch.setattr(BridgeRetrieval, "OVERLAP_PER_BRIDGE", overlap)
                beside, beside_rounds = rounds_of(retriever, question)
                monkeypatch.setattr(BridgeRetrieval, "OVERLAP_PER_BRIDGE", 0)
                first, first_rounds = rounds_of(retriever, question)
                monkeypatch.undo()
                assert [(n.node.node_id, n.score, untimed(n.node.metadata)) for n in beside
                        ] == [(n.node.node_id, n.score, untimed(n.node.metadata)) for n in first]
                assert len(beside_rounds) <= len(first_rounds), (beside_rounds, first_rounds)
                saved += len(first_rounds) - len(beside_rounds)
        assert saved > 0
    finally:
        index.close()


def untimed(metadata: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in metadata.items() if k != TIMINGS_KEY}


def rounds_of(retriever: Any, question: str) -> tuple[list[Any], list[str]]:
    """A retrieval's results and the requests its plan sent, in order."""
    log: list[str] = []

    def recorded(plan: Any) -> Any:
        answer = None
        while True:
            request, value = advance(plan, answer)
            if request is None:
                return value
            log.append(type(request).__name__)
            answer = yield request

    found = retriever.run(question, lambda q: recorded(
        retriever.method.plan(q, retriever.seed_config)))
    return found, log


def test_accents_do_not_hide_a_named_entity() -> None:
    words = content_words("Who composed Aschenbrodel?")
    assert is_named("Aschenbrödel", words)
    [bridge] = choose_bridges("Who composed Aschenbrodel?",
                              [hit("Aschenbrödel", "written by", "Johann Strauss II")], 3)
    assert bridge.name == "Johann Strauss II"
    assert second_query("Who composed Aschenbrodel?", bridge) == "Who composed ? Johann " \
                                                                  "Strauss II"


def test_substitute_never_deletes_the_words_of_a_concept() -> None:
    question = "Who is the spouse of the director of film Night Harbour?"
    [bridge] = choose_bridges(question, [hit("director", "co-occurs with", "Shanghai")], 3)
    assert bridge.named is None  # "director" is a concept: its words stay in the question
    assert second_query(question, bridge) == f"{question} Shanghai"


def test_second_queries_substitute_the_resolved_entity_or_append() -> None:
    [bridge] = choose_bridges(QUESTION, [hit("Leonhard Euler", "was a student of",
                                             "Johann Bernoulli")], 3)
    assert second_query(QUESTION, bridge) == "What did the son of 's teacher contribute? " \
                                             "Johann Bernoulli"
    assert second_query(QUESTION, bridge, "append") == f"{QUESTION} Johann Bernoulli"
    # the question names neither endpoint: both are bridges, the question stays whole
    question = "Who explained the lift of wings?"
    unresolved = choose_bridges(question, [hit("Daniel Bernoulli", "studied",
                                               "fluid dynamics")], 3)
    assert [second_query(question, b) for b in unresolved] == [
        f"{question} Daniel Bernoulli", f"{question} fluid dynamics"]


def test_interleave_takes_each_lists_next_passage_in_turn() -> None:
    a, b, c, d = (TextNode(id_=i, text=i) for i in "abcd")
    lists = [[(a, 0.9), (b, 0.8), (d, 0.1)], [(a, 0.7), (c, 0.6)], []]
    ranked = interleave(lists, 10)
    assert [(r.node.node_id, r.source, r.round) for r in ranked] == [
        ("a", 0, 0), ("b", 0, 1), ("c", 1, 1), ("d", 0, 2)]
    assert [r.node.node_id for r in interleave(lists, 2)] == ["a", "b"]
    assert interleave([], 5) == [] and interleave([[], []], 5) == []


def test_the_closest_bridge_first_moves_only_first_round_places_within_a_rank() -> None:
    """Each bridge's first passage, by its similarity to its second query, within the
    bridges of one rank; the question's list, the words' lists, later rounds and the set of
    passages stay as the interleaving gave them."""
    import random

    randomly = random.Random(7)
    for _ in range(200):
        bridges = randomly.randint(0, 4)
        lists = [[(f"{source}-{i}-{randomly.randint(0, 3)}", randomly.random())
                  for i in range(randomly.randint(0, 4))] for source in range(1 + bridges)]
        words = [[(f"w{source}-{i}", 0.0) for i in range(randomly.randint(0, 2))]
                 for source in range(1 + bridges)]
        ranks = [(False, randomly.random() < 0.3, randomly.randint(0, 2))
                 for _ in range(bridges)]
        taken = interleave([*lists, *words], randomly.randint(1, 12), str)
        moved = closest_bridge_first(taken, ranks)
        assert sorted(r.node for r in moved) == sorted(r.node for r in taken)
        for before, after in zip(taken, moved, strict=True):
            if before != after:  # a bridge's first, swapped with one of the same rank
                assert before.round == after.round == 0
                assert 0 < before.source <= bridges and 0 < after.source <= bridges
                assert ranks[before.source - 1] == ranks[after.source - 1]
        for rank in set(ranks):
            firsts = [r.similarity for r in moved if r.round == 0 and 0 < r.source <= bridges
                      and ranks[r.source - 1] == rank]
            assert firsts == sorted(firsts, reverse=True)


# ---------------------------------------------------------------------- on Milvus


class CallSpy:
    """Counts Milvus search and read calls per collection (Milvus still answers)."""

    def __init__(self, index: GraphRAGIndex, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[str, str, int]] = []
        client = index.store.client
        for name in ("search", "get", "query"):
            original = getattr(client, name)

            def spy(*args: Any, _name: str = name, _original: Callable[..., Any] = original,
                    **kwargs: Any) -> Any:
                self.calls.append((_name, kwargs.get("collection_name", ""),
                                   len(kwargs.get("data") or ())))
                return _original(*args, **kwargs)

            monkeypatch.setattr(client, name, spy)


@pytest.mark.parametrize(("relation_search", "first_calls"), [
    ("auto", []),  # ranked in memory, texts included: the passage search alone
    ("milvus", [("search", "graphrag_relations", 1)]),
])
@LITE_ONLY  # counts the calls the plan makes
def test_bridge_makes_one_relation_call_and_one_batched_passage_search(
        family_index: GraphRAGIndex, monkeypatch: pytest.MonkeyPatch, relation_search: str,
        first_calls: list[tuple[str, str, int]]) -> None:
    family_index.graph  # noqa: B018 (loaded: the spy counts query-time calls only)
    spy = CallSpy(family_index, monkeypatch)
    retriever = family_index.as_retriever(max_bridges=2, relation_search=relation_search,
                                          passage_search="milvus")
    hits = retriever.retrieve(QUESTION)
    assert family_index.store.full_text  # the default: BM25 lists beside the lists by meaning
    *first, by_meaning, by_words = spy.calls
    assert first == first_calls
    assert by_meaning[:2] == by_words[:2] == ("search", "graphrag_passages")
    # the question and one or two bridges, one call for their vectors, one for their words
    assert 2 <= by_meaning[2] == by_words[2] <= 3
    assert DANIEL in texts(hits)[:2]
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    found = [h.node.metadata[FOUND_BY_KEY] for h in hits]
    assert found[0]["query"] == "question"
    assert any(f["query"] == "bridge" and f["bridge"] for f in found)
    assert retriever.describe()["passage_scoring"] == "bridge"
    assert all(TIMINGS_KEY in h.node.metadata for h in hits)


@LITE_ONLY
@pytest.mark.parametrize("method", [{"passage_scoring": "bridge"},
                                    {"passage_scoring": "passage"}, {"passage_scoring": "ppr"},
                                    {"passage_scoring": "pcst"}])
def test_with_the_seeds_in_memory_a_query_makes_one_milvus_call(
        family_index: GraphRAGIndex, monkeypatch: pytest.MonkeyPatch,
        method: dict[str, Any]) -> None:
    retriever = family_index.as_retriever(**method, similarity_top_k=3)
    warm = texts(retriever.retrieve(QUESTION))  # loads the graph, entity and passage tables
    spy = CallSpy(family_index, monkeypatch)
    assert texts(retriever.retrieve(QUESTION)) == warm
    calls = [(name, collection) for name, collection, _ in spy.calls]
    # passages ranked in memory, the chosen ones read by primary key
    assert calls == [("query", "graphrag_passages")]


def test_every_method_gives_relations_the_reranker_can_use(
        family_index: GraphRAGIndex) -> None:
    for scoring in ("bridge", "ppr", "passage"):
        hits = family_index.as_retriever(passage_scoring=scoring).retrieve(QUESTION)
        assert hits, scoring
        with_relations = [h for h in hits if h.node.metadata[RELATIONS_KEY]]
        assert with_relations, scoring
        for h in with_relations:
            assert {"id", "text", "score", "hop"} <= set(h.node.metadata[RELATIONS_KEY][0])
            assert h.node.metadata[RELATIONS_KEY][0]["text"]
        llm_text = hits[0].node.get_content(metadata_mode=MetadataMode.LLM)
        embed_text = hits[0].node.get_content(metadata_mode=MetadataMode.EMBED)
        for key in (RELATIONS_KEY, FOUND_BY_KEY, TIMINGS_KEY):
            assert key not in llm_text and key not in embed_text


def test_rerank_on_top_of_the_bridge_hop(family_index: GraphRAGIndex,
                                        caplog: pytest.LogCaptureFixture) -> None:
    """The reranker orders the bridge hop's passages by the relations its LLM picks: the
    scripted LLM reads the relations as the prompt numbers them ("[N] text") and answers
    the JSON the reranker parses ("useful_relationships"), the chain of the question
    (Euler's teacher, then his son)."""
    hits = family_index.as_retriever().retrieve(QUESTION)
    chain = ["Leonhard Euler was a student of Johann Bernoulli",
             "Daniel Bernoulli was the son of Johann Bernoulli"]
    numbers: dict[str, str] = {}

    def answer(prompt: str) -> str:
        for line in prompt.split("Now your turn", 1)[1].splitlines():  # not the example's
            number, _, text = line.partition("] ")
            if number.startswith("[") and text in chain:
                numbers[text] = f"{number}]"
        return json.dumps({"thought_process": "Euler's teacher, then the teacher's son.",
                           "useful_relationships": [f"{numbers.get(t, '[0]')} {t}"
                                                    for t in chain]})

    def carries(hit: Any, text: str) -> bool:
        return any(r["text"] == text for r in hit.node.metadata[RELATIONS_KEY])

    # the passages that carry the first choice, then the second's, then the rest; each
    # group in the retriever's order
    expected = texts(sorted(hits, key=lambda h: next(
        (rank for rank, text in enumerate(chain) if carries(h, text)), len(chain))))
    assert expected != texts(hits), "the choice would not change the retriever's order"

    rerank = GraphRelationRerank(llm=ScriptedLLM(answer), top_n=len(hits))
    reranked = rerank.postprocess_nodes(hits, query_str=QUESTION)
    assert set(numbers) == set(chain)  # both relations were in the prompt, numbered
    assert texts(reranked) == expected
    assert reranked[0].node.metadata["graphrag_rerank"]["relation_rank"] == 0
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == []


@pytest.mark.parametrize("scoring", ["bridge", "ppr", "passage", "relation"])
def test_sync_and_async_give_the_same_answers(family_index: GraphRAGIndex,
                                              scoring: str) -> None:
    retriever = family_index.as_retriever(passage_scoring=scoring, hops=2)
    sync = retriever.retrieve(QUESTION)
    async_ = asyncio.run(retriever.aretrieve(QUESTION))
    assert texts(sync) == texts(async_)
    assert [h.score for h in sync] == pytest.approx([h.score for h in async_])
    assert [h.node.metadata[RELATIONS_KEY] for h in sync] == [
        h.node.metadata[RELATIONS_KEY] for h in async_]


@pytest.mark.parametrize("scoring", ["bridge", "ppr"])
def test_filters_hold_on_every_search_of_the_new_methods(
        make_index: Callable[..., GraphRAGIndex], scoring: str) -> None:
    data = [(TextNode(text=text, metadata={"tenant_id": tenant}), triplets)
            for tenant, rows in (("acme", FAMILY[:2]), ("globex", FAMILY[2:]))
            for text, triplets in rows]
    index = make_index(data)
    only = MetadataFilters(filters=[MetadataFilter(key="tenant_id", value="acme")])
    hits = index.as_retriever(passage_scoring=scoring, filters=only).retrieve(QUESTION)
    assert hits and {h.node.metadata["tenant_id"] for h in hits} == {"acme"}


@LITE_ONLY  # the fallback is the methods' logic; the server adds nothing but time
def test_a_graph_without_relations_still_answers_by_similarity(
        make_index: Callable[..., GraphRAGIndex]) -> None:
    index = make_index([(text, []) for text, _ in FAMILY])
    for scoring in ("bridge", "ppr"):
        hits = index.as_retriever(passage_scoring=scoring, similarity_top_k=2).retrieve(
            "fluid dynamics wings")
        assert texts(hits)[0] == FLUID, scoring


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"max_bridges": 0}, "max_bridges must be an integer >= 1"),
    ({"max_bridges": "3"}, "max_bridges must be an integer >= 1"),
    ({"bridge_query": "replace"}, "bridge_query must be one of substitute, append"),
    ({"passage_scoring": "pagerank"}, "passage_scoring must be one of bridge, ppr"),
    ({"ppr_damping": 1.0}, r"damping must be a finite number in \[0, 1\)"),
    ({"ppr_passage_weight": 1.5}, "ppr_passage_weight must be a finite number in"),
    ({"similarity_top_k": True}, "similarity_top_k must be an integer >= 1"),
])
def test_bad_method_arguments_are_refused(shared_family_index: GraphRAGIndex,
                                          kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        shared_family_index.as_retriever(**kwargs)


@LITE_ONLY
@pytest.mark.parametrize("scoring", ["bridge", "passage", "pcst", "ppr"])
def test_passages_ranked_in_memory_equal_the_milvus_search(
        family_index: GraphRAGIndex, monkeypatch: pytest.MonkeyPatch, scoring: str) -> None:
    def results(passage_search: str) -> list[tuple[str, float]]:
        retriever = family_index.as_retriever(passage_scoring=scoring, similarity_top_k=3,
                                              passage_search=passage_search)
        found = [[(h.node.get_content(), round(h.score or 0.0, 4)) for h in hits]
                 for hits in (retriever.retrieve(QUESTION),
                              asyncio.run(retriever.aretrieve(QUESTION)))]
        assert found[0] == found[1]
        return found[0]

    milvus = results("milvus")
    memory = results("memory")  # loads the passage table
    assert memory == milvus
    spy = CallSpy(family_index, monkeypatch)
    assert results("auto") == milvus
    # the ranked passages are read by primary key (a query), twice: sync and async runs,
    # the async one on its own client, so the sync spy sees one call
    assert [(name, collection) for name, collection, _ in spy.calls] == [
        ("query", "graphrag_passages")]
    table = family_index.passage_table()
    assert table is not None and len(table) == 4 and table.nbytes == 4 * (16 + 4 * 64)


@LITE_ONLY
def test_a_filtered_passage_search_on_lite_reads_the_filters_passages_once(
        make_index: Callable[..., GraphRAGIndex], monkeypatch: pytest.MonkeyPatch) -> None:
    passages = [(TextNode(text=text, metadata={"tenant": tenant}), triplets)
                for tenant in ("a", "b") for text, triplets in FAMILY]
    index = make_index(passages)
    tenant_a = MetadataFilters(filters=[MetadataFilter(key="tenant", value="a")])
    in_milvus = index.as_retriever(passage_search="milvus", filters=tenant_a)
    expected = [(h.node.node_id, round(h.score or 0, 5)) for h in in_milvus.retrieve(QUESTION)]
    assert index.cache.peek(PASSAGES) is None  # "milvus": never read
    retriever = index.as_retriever(passage_search="memory", filters=tenant_a)
    spy = CallSpy(index, monkeypatch)
    hits = retriever.retrieve(QUESTION)
    # the same passages and scores (tied scores may come in another order from numpy)
    assert sorted((h.node.node_id, round(h.score or 0, 5)) for h in hits) == sorted(expected)
    assert {h.node.metadata["tenant"] for h in hits} == {"a"}
    # the filter's passages read once, the rankings in memory among them
    assert ("search", "graphrag_passages") not in [(n, c) for n, c, _ in spy.calls]
    assert index.cache.peek(PASSAGES) is not None
    first = len(spy.calls)
    assert sorted(h.node.node_id for h in retriever.retrieve(QUESTION)) == sorted(
        i for i, _ in expected)
    again = spy.calls[first:]
    assert len(again) < first and ("search", "graphrag_passages") not in [
        (n, c) for n, c, _ in again]
    # PageRank's passages are read by id alone: none outside the filter's
    reads: list[str] = []
    get_passages = index.store.get_passages
    monkeypatch.setattr(index.store, "get_passages", lambda ids, where="": (
        reads.append(where), get_passages(ids, where))[1])
    ppr = index.as_retriever(method="ppr", passage_search="memory", filters=tenant_a)
    assert {h.node.metadata["tenant"] for h in ppr.retrieve(QUESTION)} == {"a"}
    assert reads and set(reads) == {""}
    # a write forgets them: a passage of tenant a written since is found
    index.insert_triplets([(TextNode(text="Daniel Bernoulli wrote Hydrodynamica in Basel.",
                                     metadata={"tenant": "a"}),
                            [("Daniel Bernoulli", "wrote", "Hydrodynamica")])])
    found = retriever.retrieve("What did Daniel Bernoulli write? Hydrodynamica")
    assert any("Hydrodynamica" in h.node.get_content() for h in found)
    with pytest.raises(InvalidInputError, match="passage_search must be one of auto"):
        index.as_retriever(passage_search="gpu")


@LITE_ONLY
def test_the_passage_table_follows_writes_and_stays_out_above_its_budget(
        make_index: Callable[..., GraphRAGIndex], monkeypatch: pytest.MonkeyPatch) -> None:
    index = make_index()
    retriever = index.as_retriever(passage_search="auto")
    retriever.retrieve(QUESTION)
    table = index.passage_table()
    assert table is not None and len(table) == 4
    index.insert_triplets([("Leibniz corresponded with Johann Bernoulli.",
                            [("Gottfried Leibniz", "corresponded with", "Johann Bernoulli")])])
    hits = index.as_retriever(passage_scoring="passage", passage_search="auto").retrieve(
        "Leibniz corresponded with Johann Bernoulli.")
    assert "Leibniz corresponded with Johann Bernoulli." in texts(hits)
    assert len(index.passage_table() or ()) == 5  # read again after the write
    index.refresh()
    retriever = index.as_retriever(passage_search="auto",
                                   memory_search_max_floats=5 * 64 - 1)  # 5 passages, 64 dim
    spy = CallSpy(index, monkeypatch)
    retriever.retrieve(QUESTION)
    assert index.cache.peek(PASSAGES) is None  # one count decided it
    assert index.cache.peek(PASSAGE_COUNT) == 5
    assert ("search", "graphrag_passages") in [(n, c) for n, c, _ in spy.calls]


@LITE_ONLY
def test_each_retriever_keeps_its_own_memory_budget(
        make_index: Callable[..., GraphRAGIndex], monkeypatch: pytest.MonkeyPatch) -> None:
    """The budget is the retriever's, the passage count the index's: a retriever with a
    larger budget reads the table that a smaller one left in Milvus, and the smaller one
    keeps searching Milvus even once the table is in memory (sync and async alike)."""
    index = make_index()  # 4 passages of 64 dimensions
    small = index.as_retriever(passage_search="auto", memory_search_max_floats=4 * 64 - 1)
    large = index.as_retriever(passage_search="auto", memory_search_max_floats=4 * 64)
    spy = CallSpy(index, monkeypatch)
    expected = texts(small.retrieve(QUESTION))
    assert index.cache.peek(PASSAGES) is None and index.cache.peek(PASSAGE_COUNT) == 4
    assert texts(large.retrieve(QUESTION)) == expected
    assert index.cache.peek(PASSAGES) is not None  # the larger budget read it
    spy.calls.clear()
    assert texts(small.retrieve(QUESTION)) == expected
    assert ("search", "graphrag_passages") in [(n, c) for n, c, _ in spy.calls]
    assert texts(asyncio.run(small.aretrieve(QUESTION))) == expected
    spy.calls.clear()
    assert texts(large.retrieve(QUESTION)) == expected
    assert ("search", "graphrag_passages") not in [(n, c) for n, c, _ in spy.calls]
