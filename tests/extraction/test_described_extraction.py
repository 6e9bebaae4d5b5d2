"""Tests of the described extraction (Microsoft GraphRAG's entity and relation descriptions):
the prompt, ``parse_described``, the node metadata, the cache and the sync/async paths."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from llama_index.core.prompts import PromptTemplate
from llama_index.core.schema import MetadataMode, TextNode
from llama_index.core.storage.kvstore import SimpleKVStore

from llama_index_graphrag_milvus.errors import InvalidInputError
from llama_index_graphrag_milvus.extraction import (
    DEFAULT_DESCRIBED_EXTRACT_PROMPT,
    DEFAULT_TRIPLET_EXTRACT_PROMPT,
    EXTRACTION_ERROR_KEY,
    DescribedExtraction,
    ExtractionCache,
    TripletExtractor,
    descriptions_from_node,
    parse_described,
)
from llama_index_graphrag_milvus.extraction.described import (
    DEFAULT_RELATION_PREDICATE,
    parse_strength,
)
from llama_index_graphrag_milvus.extraction.prompts import DEFAULT_ENTITY_TYPES
from llama_index_graphrag_milvus.metadata import (
    ENTITY_DESCRIPTIONS_KEY,
    RELATION_DESCRIPTIONS_KEY,
    TRIPLETS_KEY,
)
from llama_index_graphrag_milvus.records import EntityDescription, RelationDescription, Triplet
from tests.support.fakes import ScriptedLLM

EXTRACTION_LOGGER = "llama_index_graphrag_milvus.extraction"
PASSAGE = ("Leonhard Euler was born in Basel in 1707. He studied mathematics at the University "
           "of Basel under Johann Bernoulli.")

EULER = EntityDescription("Leonhard Euler", "PERSON",
                          "A mathematician born in Basel in 1707, a student of Johann Bernoulli.")
BASEL = EntityDescription("Basel", "GEO", "The Swiss city where Leonhard Euler was born.")
BERNOULLI = EntityDescription("Johann Bernoulli", "PERSON",
                              "A mathematician who taught Leonhard Euler at the University.")
BORN = RelationDescription("Leonhard Euler", "was born in", "Basel",
                           "Leonhard Euler was born in Basel in 1707.", 9.0)
STUDENT = RelationDescription("Leonhard Euler", "was a student of", "Johann Bernoulli",
                              "Johann Bernoulli taught Euler mathematics.", 8.0)
UNIVERSITY = RelationDescription("Leonhard Euler", "studied at", "University of Basel",
                                 "Euler studied mathematics at the University of Basel.", 7.0)

REALISTIC_ANSWER = """Here is the extraction you asked for:

```json
{
  "entities": [
    {"name": "Leonhard Euler", "type": "person",
     "description": "A mathematician born in Basel in 1707, a student of  Johann Bernoulli."},
    {"name": "Basel", "type": "Geo",
     "description": "The Swiss city where Leonhard Euler was born."},
    {"name": "Johann Bernoulli", "type": "PERSON",
     "description": "A mathematician who taught\\nLeonhard Euler at the University."}
  ],
  "relations": [
    {"source": "Leonhard Euler", "predicate": "was born in", "target": "Basel",
     "description": "Leonhard Euler was born in Basel in 1707.", "strength": 9},
    {"source": "Leonhard Euler", "predicate": "was a student of", "target": "Johann Bernoulli",
     "description": "Johann Bernoulli taught Euler mathematics.", "strength": "8"},
    {"source": "Leonhard Euler", "predicate": "studied at", "target": "University of Basel",
     "description": "Euler studied mathematics at the University of Basel.", "strength": 7.0}
  ]
}
```

Let me know if you need more entities (e.g. [1] the year)."""


def answer(entities: list[Any] | None = None, relations: list[Any] | None = None) -> str:
    value: dict[str, Any] = {}
    if entities is not None:
        value["entities"] = entities
    if relations is not None:
        value["relations"] = relations
    return json.dumps(value)


def relation(source: Any, target: Any, **extra: Any) -> dict[str, Any]:
    return {"source": source, "target": target, "predicate": "knew", **extra}


def passage_node(node_id: str = "n1", text: str = PASSAGE) -> TextNode:
    return TextNode(id_=node_id, text=text, metadata={"title": "Euler"})


def described(llm: ScriptedLLM, **kwargs: Any) -> TripletExtractor:
    return TripletExtractor(llm=llm, describe=True, **kwargs)


def stored(node: TextNode) -> dict[str, Any]:
    keys = (TRIPLETS_KEY, ENTITY_DESCRIPTIONS_KEY, RELATION_DESCRIPTIONS_KEY)
    return {k: node.metadata[k] for k in keys if k in node.metadata}


def extraction_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name.startswith(EXTRACTION_LOGGER) and r.levelno == logging.WARNING]


async def run(extractor: TripletExtractor, nodes: list[TextNode], use_async: bool) -> Any:
    return await extractor.aextract(nodes) if use_async else extractor.extract(nodes)


PATHS = pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])

# ---------------------------------------------------------------------------- the prompt


def test_default_prompt_formats_literal_json_without_doubled_braces() -> None:
    text = DEFAULT_DESCRIBED_EXTRACT_PROMPT.format(
        text="PASSAGE", max_triplets=7, entity_types=", ".join(DEFAULT_ENTITY_TYPES))
    assert "{{" not in text and "}}" not in text
    assert '{"entities": [{"name": "...", "type": "...", "description": "..."}]' in text
    assert '"relations": [{"source": "...", "predicate": "...", "target": "..."' in text
    assert "of these types: organization, person, geo, event." in text
    assert "at most 7 relations" in text
    assert text.endswith("Passage:\nPASSAGE\n\nAnswer:")
    assert set(DEFAULT_DESCRIBED_EXTRACT_PROMPT.template_vars) == {
        "text", "max_triplets", "entity_types"}


def test_prompt_example_answer_is_what_the_parser_reads() -> None:
    example = DEFAULT_DESCRIBED_EXTRACT_PROMPT.get_template().split("Example answer: ", 1)[1]
    found = parse_described(example.split("\n\nPassage:", 1)[0])
    assert found is not None and found.dropped == 0
    assert found.triplets == [Triplet("Leonhard Euler", "was born in", "Basel"),
                              Triplet("Leonhard Euler", "was a student of", "Johann Bernoulli")]
    assert [(e.name, e.type) for e in found.entities] == [
        ("Leonhard Euler", "PERSON"), ("Basel", "GEO"), ("Johann Bernoulli", "PERSON")]
    assert [r.strength for r in found.relations] == [9.0, 8.0]


def test_describe_uses_the_described_prompt_with_the_entity_types() -> None:
    llm = ScriptedLLM([REALISTIC_ANSWER])
    extractor = described(llm, entity_types=("person", " geo  place ", "person"),
                          max_triplets_per_chunk=5)
    assert extractor.entity_types == ("person", "geo place")  # cleaned, duplicates dropped
    assert extractor.get_prompts()["extract_prompt"].get_template() == (
        DEFAULT_DESCRIBED_EXTRACT_PROMPT.get_template())
    extractor([passage_node()])
    (prompt,) = llm.prompts
    assert "of these types: person, geo place." in prompt
    assert "at most 5 relations" in prompt
    assert prompt.endswith(f"Passage:\ntitle: Euler\n\n{PASSAGE}\n\nAnswer:")
    assert "{" + "entity_types}" not in prompt and "{{" not in prompt


def test_describe_off_by_default_keeps_the_triplet_prompt_and_metadata() -> None:
    llm = ScriptedLLM([json.dumps({"triplets": [["Leonhard Euler", "was born in", "Basel"]]})])
    extractor = TripletExtractor(llm=llm)
    assert extractor.describe is False
    assert extractor.entity_types == DEFAULT_ENTITY_TYPES
    assert extractor.extract_prompt.get_template() == DEFAULT_TRIPLET_EXTRACT_PROMPT.get_template()
    node = passage_node()
    extractor([node])
    assert llm.prompts == [DEFAULT_TRIPLET_EXTRACT_PROMPT.format(
        text=node.get_content(metadata_mode=MetadataMode.LLM), max_triplets=15)]
    assert stored(node) == {TRIPLETS_KEY: [["Leonhard Euler", "was born in", "Basel"]]}


def test_a_given_prompt_wins_over_the_described_default() -> None:
    custom = PromptTemplate("TYPES<{entity_types}> MAX<{max_triplets}> TEXT<{text}>")
    llm = ScriptedLLM([REALISTIC_ANSWER])
    extractor = described(llm, extract_prompt=custom, entity_types=("person",),
                          max_triplets_per_chunk=3)
    assert extractor.extract_prompt is custom
    node = TextNode(id_="n", text="Euler was born in Basel.")
    extractor([node])
    assert llm.prompts == ["TYPES<person> MAX<3> TEXT<Euler was born in Basel.>"]
    assert node.metadata[TRIPLETS_KEY] == [[BORN.subject, BORN.predicate, BORN.object],
                                           [STUDENT.subject, STUDENT.predicate, STUDENT.object],
                                           [UNIVERSITY.subject, UNIVERSITY.predicate,
                                            UNIVERSITY.object]]


def test_prompt_none_means_the_default_of_the_mode_and_update_prompts_works() -> None:
    with_describe = described(ScriptedLLM([]), extract_prompt=None).extract_prompt
    assert with_describe.get_template() == DEFAULT_DESCRIBED_EXTRACT_PROMPT.get_template()
    without = TripletExtractor(llm=ScriptedLLM([]), extract_prompt=None).extract_prompt
    assert without.get_template() == DEFAULT_TRIPLET_EXTRACT_PROMPT.get_template()
    extractor = described(ScriptedLLM([]))
    custom = PromptTemplate("{text} {max_triplets}")
    extractor.update_prompts({"extract_prompt": custom})
    assert extractor.get_prompts() == {"extract_prompt": custom}


def test_serialized_with_the_new_fields() -> None:
    data = described(ScriptedLLM([]), entity_types=("person",)).to_dict()
    assert data["describe"] is True
    assert list(data["entity_types"]) == ["person"]


@pytest.mark.parametrize(("entity_types", "match"), [
    ((), r"entity_types must be a non-empty sequence of type names, got \(\)"),
    ("person", r"entity_types must be a non-empty sequence.*got 'person'"),
    (("person", "  "), r"got \('person', '  '\); for example \('organization'"),
    (("person", 3), r"got \('person', 3\)"),
])
def test_bad_entity_types(entity_types: Any, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        TripletExtractor(llm=ScriptedLLM([]), describe=True, entity_types=entity_types)


# ---------------------------------------------------------------------------- parsing


def test_parse_a_realistic_fenced_answer_with_prose() -> None:
    found = parse_described(REALISTIC_ANSWER)
    assert found == DescribedExtraction([BORN.triplet, STUDENT.triplet, UNIVERSITY.triplet],
                                        [EULER, BASEL, BERNOULLI],
                                        [BORN, STUDENT, UNIVERSITY], 0)


@pytest.mark.parametrize(("strength", "expected"), [
    (9, 9.0), (7.5, 7.5), ("8", 8.0), (" 6.5 ", 6.5), (12, 10.0), ("11", 10.0), (0, 1.0),
    (-3, 1.0), ("high", 1.0), ("8/10", 1.0), (None, 1.0), (True, 1.0), ([8], 1.0),
    ("nan", 1.0), (float("inf"), 1.0), (10**400, 1.0),
])
def test_strength(strength: Any, expected: float) -> None:
    assert parse_strength(strength) == expected
    if strength is not None and not isinstance(strength, float):  # JSON has no inf
        found = parse_described(answer(relations=[relation("A", "B", strength=strength)]))
        assert found is not None and found.relations[0].strength == expected


def test_missing_strength_is_the_weakest() -> None:
    found = parse_described(answer(relations=[relation("A", "B")]))
    assert found is not None and found.relations[0].strength == 1.0


@pytest.mark.parametrize("predicate", [None, "", "   ", "missing"])
def test_missing_predicate_falls_back(predicate: Any) -> None:
    item: dict[str, Any] = {"source": "Leonhard Euler", "target": "Daniel Bernoulli",
                            "description": "Friends in Saint Petersburg.", "strength": 6}
    if predicate != "missing":
        item["predicate"] = predicate
    found = parse_described(answer(relations=[item]))
    assert found is not None and found.dropped == 0
    assert found.triplets == [Triplet("Leonhard Euler", DEFAULT_RELATION_PREDICATE,
                                      "Daniel Bernoulli")]
    assert found.relations[0].triplet.text == "Leonhard Euler related to Daniel Bernoulli"


def test_malformed_entities_and_relations_are_dropped_and_counted() -> None:
    raw = answer(
        entities=[{"type": "person", "description": "no name"}, {"name": "  "},
                  {"name": None}, "Leonhard Euler", 42,
                  {"name": "Basel", "type": None, "description": ["a", "list"]},
                  {"name": "basel ", "type": "GEO", "description": "a duplicate"}],
        relations=[relation("Euler", None), relation("", "Basel"), {"source": "Euler"},
                   relation("Euler", ["Basel"]), relation("Euler", "Basel", predicate=True),
                   "Euler knew Basel", relation("Euler", "Basel"),
                   relation("EULER", " basel")])  # same relation id: kept once, not dropped
    found = parse_described(raw)
    assert found is not None
    assert found.entities == [EntityDescription("Basel", "", "")]
    assert found.relations == [RelationDescription("Euler", "knew", "Basel", "", 1.0)]
    assert found.dropped == 5 + 6


def test_numbers_are_kept_as_text_and_unlisted_endpoints_still_count() -> None:
    raw = answer(entities=[{"name": 1707, "type": "event", "description": "Euler's birth."}],
                 relations=[{"source": "Leonhard Euler", "predicate": "was born in",
                             "target": 1707, "description": "Born in 1707.", "strength": 5}])
    found = parse_described(raw)
    assert found is not None
    assert found.entities == [EntityDescription("1707", "EVENT", "Euler's birth.")]
    # "Leonhard Euler" is not in the entity list: the relation counts all the same
    assert found.triplets == [Triplet("Leonhard Euler", "was born in", "1707")]


def test_alternative_keys_and_list_items() -> None:
    raw = json.dumps({
        "entities": [{"entity_name": "Basel", "entity_type": "geo",
                      "entity_description": "A city."}, ["Euler", "person"]],
        "relationships": [{"subject": "Euler", "relation": "born in", "object": "Basel",
                           "relationship_strength": 9},
                          ["Euler", "lived in", "Berlin", "Worked for Frederick.", "7"]]})
    found = parse_described(raw)
    assert found is not None and found.dropped == 0
    assert found.entities == [EntityDescription("Basel", "GEO", "A city."),
                              EntityDescription("Euler", "PERSON", "")]
    assert found.relations == [RelationDescription("Euler", "born in", "Basel", "", 9.0),
                               RelationDescription("Euler", "lived in", "Berlin",
                                                   "Worked for Frederick.", 7.0)]


@pytest.mark.parametrize("raw", [
    "Sorry, I cannot help with that.",
    '{"triplets": [["Euler", "born in", "Basel"]]}',
    '[["Euler", "born in", "Basel"]]',
    "```json\n{\"entities\": [{\"name\": \"Euler\"\n```",  # cut off
    "",
])
def test_no_usable_json_is_none_with_a_warning(raw: str,
                                               caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=EXTRACTION_LOGGER):
        assert parse_described(raw) is None
    (warning,) = extraction_warnings(caplog)
    assert "no JSON object with entities or relations" in warning


def test_entities_only_and_wrong_shapes() -> None:
    found = parse_described('See [1]. {"entities": [{"name": "Euler", "type": "person"}]}')
    assert found == DescribedExtraction([], [EntityDescription("Euler", "PERSON", "")], [], 0)
    found = parse_described('{"entities": "Euler", "relations": null}')
    assert found == DescribedExtraction([], [], [], 1)


# ---------------------------------------------------------------------------- the extractor


@PATHS
async def test_descriptions_stored_and_hidden_from_models(use_async: bool) -> None:
    node = passage_node()
    report = await run(described(ScriptedLLM([REALISTIC_ANSWER])), [node], use_async)
    assert (report.passages, report.llm_calls, report.triplets) == (1, 1, 3)
    assert node.metadata[TRIPLETS_KEY] == [["Leonhard Euler", "was born in", "Basel"],
                                           ["Leonhard Euler", "was a student of",
                                            "Johann Bernoulli"],
                                           ["Leonhard Euler", "studied at",
                                            "University of Basel"]]
    assert node.metadata[ENTITY_DESCRIPTIONS_KEY] == [
        ["Leonhard Euler", "PERSON",
         "A mathematician born in Basel in 1707, a student of Johann Bernoulli."],
        ["Basel", "GEO", "The Swiss city where Leonhard Euler was born."],
        ["Johann Bernoulli", "PERSON",
         "A mathematician who taught Leonhard Euler at the University."]]
    assert node.metadata[RELATION_DESCRIPTIONS_KEY][1] == [
        "Leonhard Euler", "was a student of", "Johann Bernoulli",
        "Johann Bernoulli taught Euler mathematics.", 8.0]
    for mode in (MetadataMode.LLM, MetadataMode.EMBED):
        assert node.get_content(metadata_mode=mode) == f"title: Euler\n\n{PASSAGE}"
    assert descriptions_from_node(node) == ([EULER, BASEL, BERNOULLI],
                                            [BORN, STUDENT, UNIVERSITY])
    # the metadata is JSON: it survives a round trip through a vector store's node content
    again = TextNode.model_validate_json(node.model_dump_json())
    assert descriptions_from_node(again) == descriptions_from_node(node)


async def test_sync_and_async_give_the_same_nodes() -> None:
    answers = [REALISTIC_ANSWER, answer(relations=[relation("A", "B", strength="3")]),
               "no JSON at all"]

    def script(prompt: str) -> str:
        return answers[int(prompt.rsplit("passage ", 1)[1][0])]

    def nodes() -> list[TextNode]:
        return [TextNode(id_=f"n{i}", text=f"passage {i}") for i in range(3)]

    sync_nodes, async_nodes = nodes(), nodes()
    sync_report = described(ScriptedLLM(script)).extract(sync_nodes)
    async_report = await described(ScriptedLLM(script)).aextract(async_nodes)
    assert [n.metadata for n in sync_nodes] == [n.metadata for n in async_nodes]
    assert (sync_report.llm_calls, sync_report.triplets) == (
        async_report.llm_calls, async_report.triplets) == (3, 4)
    assert stored(sync_nodes[2]) == {TRIPLETS_KEY: [], ENTITY_DESCRIPTIONS_KEY: [],
                                     RELATION_DESCRIPTIONS_KEY: []}


async def test_malformed_answers_give_no_triplets_and_no_retry(
        caplog: pytest.LogCaptureFixture) -> None:
    llm = ScriptedLLM(["I could not find anything.", '{"triplets": [["a", "b", "c"]]}'])
    nodes = [TextNode(id_="a", text="first"), TextNode(id_="b", text="second")]
    with caplog.at_level(logging.WARNING, logger=EXTRACTION_LOGGER):
        report = await described(llm, num_workers=1).aextract(nodes)
    # prose is an answer ("nothing here"); JSON in another format is a failure, not retried
    assert (report.llm_calls, report.triplets) == (2, 0)
    assert [(f.node_id, f.error[:40]) for f in report.failures] == [
        ("b", "the answer is JSON without a list of rel")]
    assert all(stored(n) == {TRIPLETS_KEY: [], ENTITY_DESCRIPTIONS_KEY: [],
                             RELATION_DESCRIPTIONS_KEY: []} for n in nodes)
    assert len(extraction_warnings(caplog)) == 3  # two "no JSON object", one failure


def test_dropped_items_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    raw = answer(entities=[{"description": "no name"}], relations=[relation("A", "B")])
    node = TextNode(id_="n", text="x")
    with caplog.at_level(logging.INFO, logger=EXTRACTION_LOGGER):
        described(ScriptedLLM([raw]))([node])
    assert "dropped 1 malformed entities or relations of node n" in caplog.text
    assert node.metadata[TRIPLETS_KEY] == [["A", "knew", "B"]]


def test_entities_and_relations_are_cut_at_max_triplets() -> None:
    raw = answer(entities=[{"name": f"E{i}"} for i in range(6)],
                 relations=[relation(f"E{i}", f"E{i + 1}") for i in range(5)])
    node = TextNode(id_="n", text="x")
    report = described(ScriptedLLM([raw]), max_triplets_per_chunk=2).extract([node])
    assert report.triplets == 2
    assert node.metadata[TRIPLETS_KEY] == [["E0", "knew", "E1"], ["E1", "knew", "E2"]]
    assert [e[0] for e in node.metadata[ENTITY_DESCRIPTIONS_KEY]] == ["E0", "E1"]
    assert len(node.metadata[RELATION_DESCRIPTIONS_KEY]) == 2


def test_failed_passage_gets_empty_descriptions_and_the_error() -> None:
    node = TextNode(id_="n", text="x")
    report = described(ScriptedLLM([TimeoutError("slow")]), max_retries=0).extract([node])
    assert report.failed_node_ids == ["n"]
    assert node.metadata[EXTRACTION_ERROR_KEY] == "TimeoutError: slow"
    assert stored(node) == {TRIPLETS_KEY: [], ENTITY_DESCRIPTIONS_KEY: [],
                            RELATION_DESCRIPTIONS_KEY: []}


def test_a_plain_run_removes_stale_descriptions() -> None:
    node = passage_node()
    described(ScriptedLLM([REALISTIC_ANSWER]))([node])
    plain = TripletExtractor(llm=ScriptedLLM([json.dumps({"triplets": [["A", "b", "C"]]})]))
    plain([node])
    assert stored(node) == {TRIPLETS_KEY: [["A", "b", "C"]]}
    assert descriptions_from_node(node) == ([], [])


def test_descriptions_from_node_skips_malformed_entries() -> None:
    node = TextNode(text="x", metadata={
        ENTITY_DESCRIPTIONS_KEY: [["Basel", "GEO", "A city."], ["", "GEO", ""], None, "Euler",
                                  ["Euler"], ["a", "b", "c", "d"]],
        RELATION_DESCRIPTIONS_KEY: [["Euler", "born in", "Basel", "Born there.", 9.0],
                                    ["Euler", "born in"], {"nonsense": 1}, 7,
                                    ["Euler", "lived in", "Berlin", 12, "strong"]],
    })
    entities, relations = descriptions_from_node(node)
    assert entities == [EntityDescription("Basel", "GEO", "A city."),
                        EntityDescription("Euler", "", "")]
    assert relations == [RelationDescription("Euler", "born in", "Basel", "Born there.", 9.0),
                         RelationDescription("Euler", "lived in", "Berlin", "12", 1.0)]
    assert descriptions_from_node(TextNode(text="x")) == ([], [])
    assert descriptions_from_node(TextNode(text="x", metadata={
        ENTITY_DESCRIPTIONS_KEY: "not a list", RELATION_DESCRIPTIONS_KEY: None})) == ([], [])


# ---------------------------------------------------------------------------- the cache


@PATHS
async def test_cache_round_trip_makes_no_llm_call(use_async: bool, tmp_path: Any) -> None:
    path = tmp_path / "extraction.json"
    first_nodes = [passage_node()]
    await run(described(ScriptedLLM([REALISTIC_ANSWER]), cache=ExtractionCache(path)),
              first_nodes, use_async)
    llm = ScriptedLLM([])
    second_nodes = [passage_node()]
    report = await run(described(llm, cache=ExtractionCache(path)), second_nodes, use_async)
    assert llm.prompts == []
    assert (report.cached, report.llm_calls, report.triplets) == (1, 0, 3)
    assert [n.metadata for n in second_nodes] == [n.metadata for n in first_nodes]
    assert descriptions_from_node(second_nodes[0]) == ([EULER, BASEL, BERNOULLI],
                                                       [BORN, STUDENT, UNIVERSITY])


async def test_cached_entries_are_cut_at_max_triplets() -> None:
    cache = ExtractionCache()
    extractor = described(ScriptedLLM([]), cache=cache, max_triplets_per_chunk=1)
    node = passage_node()
    key = extractor.cache_key(node.get_content(metadata_mode=MetadataMode.LLM))
    cache.put_described(key, parse_described(REALISTIC_ANSWER) or DescribedExtraction([], [], []))
    report = await extractor.aextract([node])
    assert (report.cached, report.triplets) == (1, 1)
    assert descriptions_from_node(node) == ([EULER], [BORN])


@PATHS
async def test_old_cache_entry_with_triplets_only_is_read(use_async: bool) -> None:
    kvstore = SimpleKVStore()
    cache = ExtractionCache(kvstore=kvstore)
    llm = ScriptedLLM([])
    extractor = described(llm, cache=cache)
    node = passage_node()
    key = extractor.cache_key(node.get_content(metadata_mode=MetadataMode.LLM))
    kvstore.put(key, {"triplets": [["Leonhard Euler", "was born in", "Basel"]]},
                collection="graphrag_triplets")
    report = await run(extractor, [node], use_async)
    assert llm.prompts == [] and report.cached == 1
    assert stored(node) == {TRIPLETS_KEY: [["Leonhard Euler", "was born in", "Basel"]],
                            ENTITY_DESCRIPTIONS_KEY: [], RELATION_DESCRIPTIONS_KEY: []}
    assert cache.get_described(key) == DescribedExtraction([BORN.triplet], [], [])


async def test_cache_api_keeps_the_triplet_format() -> None:
    cache = ExtractionCache()
    cache.put("plain", [BORN.triplet])
    await cache.aput_described("described", DescribedExtraction(
        [BORN.triplet], [BASEL], [BORN]))
    assert cache.kvstore.get("plain", collection=cache.collection) == {
        "triplets": [["Leonhard Euler", "was born in", "Basel"]]}
    assert cache.kvstore.get("described", collection=cache.collection) == {
        "triplets": [["Leonhard Euler", "was born in", "Basel"]],
        "entities": [["Basel", "GEO", "The Swiss city where Leonhard Euler was born."]],
        "relations": [["Leonhard Euler", "was born in", "Basel",
                       "Leonhard Euler was born in Basel in 1707.", 9.0]]}
    assert cache.get("described") == [BORN.triplet]  # the plain reader still works
    assert await cache.aget_described("described") == DescribedExtraction(
        [BORN.triplet], [BASEL], [BORN])
    assert await cache.aget_described("missing") is None


def test_cache_key_covers_describe_and_entity_types() -> None:
    llm = ScriptedLLM([])
    prompt = DEFAULT_DESCRIBED_EXTRACT_PROMPT
    keys = {
        TripletExtractor(llm=llm).cache_key("x"),
        TripletExtractor(llm=llm, extract_prompt=prompt).cache_key("x"),
        described(llm).cache_key("x"),
        described(llm, entity_types=("person",)).cache_key("x"),
        described(llm, entity_types=("person", "geo")).cache_key("x"),
    }
    assert len(keys) == 5
    assert described(llm).cache_key("x") == described(
        llm, entity_types=DEFAULT_ENTITY_TYPES, extract_prompt=prompt).cache_key("x")
    # without describe the key is that of earlier versions: old caches stay valid
    assert TripletExtractor(llm=llm, entity_types=("person",)).cache_key("x") == (
        TripletExtractor(llm=llm).cache_key("x"))


@pytest.mark.parametrize("cut_in", ["relations", "entities"])
def test_an_answer_cut_off_keeps_its_complete_entities_and_relations(
        cut_in: str, caplog: pytest.LogCaptureFixture) -> None:
    relations = [relation("Euler", "Basel"), relation("Euler", "Bernoulli")]
    entities = [{"name": "Euler", "type": "person"}, {"name": "Basel", "type": "geo"}]
    full = json.dumps({"entities": entities, "relations": relations} if cut_in == "relations"
                      else {"relations": relations, "entities": entities})
    cut = full[:full.rindex('"Bernoulli"' if cut_in == "relations" else '"Basel"') + 3]
    with caplog.at_level(logging.WARNING, logger=EXTRACTION_LOGGER):
        found = parse_described(cut)
    assert found is not None
    kept = ([Triplet("Euler", "knew", "Basel")] if cut_in == "relations"
            else [Triplet("Euler", "knew", "Basel"), Triplet("Euler", "knew", "Bernoulli")])
    assert found.triplets == kept
    assert [e.name for e in found.entities] == (["Euler", "Basel"] if cut_in == "relations"
                                                else ["Euler"])
    assert "cut off" in caplog.text
    node = passage_node()
    report = described(ScriptedLLM([cut])).extract([node])
    assert report.failures == ()
    assert node.metadata[TRIPLETS_KEY] == [[t.subject, t.predicate, t.object] for t in kept]


def test_an_echo_of_the_prompt_is_not_read_as_the_answer() -> None:
    node = passage_node()
    llm = ScriptedLLM(lambda prompt: prompt + answer(relations=[relation("Euler", "Basel")]))
    described(llm).extract([node])
    assert node.metadata[TRIPLETS_KEY] == [["Euler", "knew", "Basel"]]
