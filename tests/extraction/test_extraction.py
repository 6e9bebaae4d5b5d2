"""Tests of triplet parsing, TripletExtractor and reading core's path-extractor metadata."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import Any

import pytest
from llama_index.core import Document
from llama_index.core.bridge.pydantic import PrivateAttr, ValidationError
from llama_index.core.graph_stores.types import (
    KG_NODES_KEY,
    KG_RELATIONS_KEY,
    EntityNode,
    Relation,
)
from llama_index.core.indices.property_graph import SimpleLLMPathExtractor
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.llms import CompletionResponse, CompletionResponseGen, CustomLLM, LLMMetadata
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.prompts import PromptTemplate
from llama_index.core.schema import BaseNode, MetadataMode, TextNode

from llama_index_graphrag_milvus import InvalidInputError, TripletExtractor
from llama_index_graphrag_milvus.extraction import (
    DEFAULT_TRIPLET_EXTRACT_PROMPT,
    EXTRACTION_ERROR_KEY,
    ExtractionCache,
    parse_triplets,
    to_triplets,
    triplets_from_node,
)
from llama_index_graphrag_milvus.limits import ENTITY_NAME_MAX_BYTES
from llama_index_graphrag_milvus.records import Triplet
from tests.support.fakes import HangingLLM, ScriptedLLM

EXTRACTION_LOGGER = "llama_index_graphrag_milvus.extraction"

EULER = Triplet("Leonhard Euler", "was born in", "Basel")
STUDENT = Triplet("Leonhard Euler", "was a student of", "Johann Bernoulli")


def as_lists(*triplets: Triplet) -> list[list[str]]:
    return [[t.subject, t.predicate, t.object] for t in triplets]


def triplets_json(*triplets: Triplet) -> str:
    return json.dumps({"triplets": as_lists(*triplets)})


def extraction_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name.startswith(EXTRACTION_LOGGER) and r.levelno == logging.WARNING]


def passage_of(prompt: str) -> str:
    """The passage text in a prompt of the default template."""
    return prompt.split("Passage:\n", 1)[1].rsplit("\n\nAnswer:", 1)[0]


# ---------------------------------------------------------------------------- parse_triplets


def test_parse_plain_json() -> None:
    assert parse_triplets(triplets_json(EULER, STUDENT)) == ([EULER, STUDENT], 0)


@pytest.mark.parametrize(
    "raw",
    [
        "```json\n" + triplets_json(EULER, STUDENT) + "\n```",
        "```\n" + triplets_json(EULER, STUDENT) + "\n```\nThese are all the triplets.",
        "Here you go:\n" + triplets_json(EULER, STUDENT) + "\nLet me know if you need more.",
        "From passage [1] I found: " + triplets_json(EULER, STUDENT),
        json.dumps(as_lists(EULER, STUDENT)),
        "Triplets:\n" + json.dumps(as_lists(EULER, STUDENT)) + "\nDone.",
    ],
    ids=["fenced", "fenced-trailing", "prose-around", "bracketed-prose-first", "bare-list",
         "bare-list-prose"],
)
def test_parse_tolerant_formats(raw: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=EXTRACTION_LOGGER):
        assert parse_triplets(raw) == ([EULER, STUDENT], 0)
    assert extraction_warnings(caplog) == []


def test_parse_dict_items() -> None:
    raw = json.dumps({"triplets": [
        {"subject": "Leonhard Euler", "predicate": "was born in", "object": "Basel"},
        {"subject": "Leonhard Euler", "predicate": "was a student of"},  # no object
        {"head": "a", "relation": "b", "tail": "c"},  # unknown keys
    ]})
    assert parse_triplets(raw) == ([EULER], 2)


def test_parse_drops_wrong_lengths_with_a_count() -> None:
    raw = json.dumps({"triplets": [
        ["Leonhard Euler", "was born in", "Basel"],
        ["Leonhard Euler", "Basel"],
        ["Leonhard Euler", "was born in", "Basel", "in 1707"],
        [],
        "Leonhard Euler was born in Basel",
        None,
    ]})
    assert parse_triplets(raw) == ([EULER], 5)


def test_parse_drops_empty_and_non_text_parts() -> None:
    raw = json.dumps({"triplets": [
        ["", "was born in", "Basel"],
        ["Leonhard Euler", "   ", "Basel"],
        ["Leonhard Euler", "was born in", None],
        ["Leonhard Euler", "was born in", ["Basel"]],
        ["Leonhard Euler", True, "Basel"],
        ["Leonhard Euler", "was born in", "Basel"],
    ]})
    assert parse_triplets(raw) == ([EULER], 5)


def test_parse_keeps_numbers_as_text() -> None:
    raw = json.dumps({"triplets": [["Eleanor", "was born in", 1122],
                                   ["Pi", "is about", 3.14]]})
    assert parse_triplets(raw) == ([Triplet("Eleanor", "was born in", "1122"),
                                    Triplet("Pi", "is about", "3.14")], 0)


def test_parse_single_flat_triplet() -> None:
    assert parse_triplets('["Leonhard Euler", "was born in", "Basel"]') == ([EULER], 0)


def test_parse_drops_names_longer_than_the_entity_limit() -> None:
    longest = "x" * ENTITY_NAME_MAX_BYTES
    too_long = "x" * (ENTITY_NAME_MAX_BYTES + 1)
    wide = "é" * (ENTITY_NAME_MAX_BYTES // 2 + 1)  # fewer characters than the limit, more bytes
    assert len(wide) < ENTITY_NAME_MAX_BYTES < len(wide.encode())
    raw = json.dumps({"triplets": [
        [too_long, "is", "long"],
        ["long", "is", too_long],
        [wide, "is", "wide"],
        ["name", too_long, "predicate"],
        [longest, "is", "at the limit"],
    ]})
    triplets, dropped = parse_triplets(raw)
    assert dropped == 4
    assert triplets == [Triplet(longest, "is", "at the limit")]


def test_parse_keeps_case_and_whitespace_variants_once() -> None:
    raw = json.dumps({"triplets": [
        ["Leonhard Euler", "was born in", "Basel"],
        ["  leonhard   EULER ", "Was Born\tIn", "basel\n"],
        ["Leonhard Euler", "was a student of", "Johann Bernoulli"],
        ["LEONHARD EULER", "was born in", "BASEL"],
    ]})
    # the first form is kept; duplicates are not counted as dropped
    assert parse_triplets(raw) == ([EULER, STUDENT], 0)


def test_parse_collapses_whitespace_but_keeps_case() -> None:
    raw = json.dumps({"triplets": [[" Leonhard\n  Euler ", "was  born in", "BASEL "]]})
    assert parse_triplets(raw) == ([Triplet("Leonhard Euler", "was born in", "BASEL")], 0)


@pytest.mark.parametrize(
    "raw",
    ["I could not find any triplets.", "", '{"triplets": ', '{"facts": [["a", "b", "c"]]}',
     '{"triplets": "Euler, born in, Basel"}',
     "I found no triplets (the passage, as written, is a list).",
     "Euler (a student, a teacher, a writer) was born in Basel."],
    ids=["prose", "empty", "truncated", "wrong-key", "not-a-list", "aside", "tuple-in-a-line"],
)
def test_parse_without_json_list_warns(raw: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=EXTRACTION_LOGGER):
        assert parse_triplets(raw) == ([], 0)
    warnings = extraction_warnings(caplog)
    assert len(warnings) == 1
    assert "no JSON list of triplets" in warnings[0]


@pytest.mark.parametrize(
    "raw",
    ["(Leonhard Euler, was born in, Basel)\n(Leonhard Euler, was a student of, Johann Bernoulli)",
     "Here are the triplets:\n1. (Leonhard Euler, was born in, Basel)\n"
     "2. (Leonhard Euler, was a student of, Johann Bernoulli).\nThat is all.",
     '- ("Leonhard Euler", "was born in", "Basel"),\n'
     "* ('Leonhard Euler', 'was a student of', 'Johann Bernoulli')",
     "  (Leonhard Euler,was born in,Basel)  \r\n\r\n(Leonhard Euler, was a student of, "
     "Johann Bernoulli);"],
    ids=["lines", "numbered-with-prose", "bulleted-quoted", "spacing-crlf"],
)
def test_parse_tuple_lines_without_json(raw: str, caplog: pytest.LogCaptureFixture) -> None:
    """Core's knowledge-graph prompts ask for ``(subject, predicate, object)`` lines: an
    answer in that format is read, not taken for "no triplets"."""
    with caplog.at_level(logging.WARNING, logger=EXTRACTION_LOGGER):
        assert parse_triplets(raw) == ([EULER, STUDENT], 0)
    assert extraction_warnings(caplog) == []


def test_parse_tuple_lines_drop_other_lengths_and_json_wins() -> None:
    raw = ("(Leonhard Euler, was born in, Basel)\n(Leonhard Euler, Basel)\n"
           "(Euler, was born in, Basel, Switzerland)\n( , is, empty)")
    assert parse_triplets(raw) == ([EULER], 3)
    assert parse_triplets("(Basel, is in, Switzerland)\n" + triplets_json(STUDENT)) \
        == ([STUDENT], 0)


def test_parse_empty_list_is_not_a_failure(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=EXTRACTION_LOGGER):
        assert parse_triplets('{"triplets": []}') == ([], 0)
    assert extraction_warnings(caplog) == []


def test_to_triplets_accepts_triplets_tuples_and_dicts() -> None:
    items = [EULER, ("Leonhard Euler", "was a student of", "Johann Bernoulli"),
             {"subject": "Basel", "predicate": "is in", "object": "Switzerland", "extra": 1},
             42]
    assert to_triplets(items) == ([EULER, STUDENT, Triplet("Basel", "is in", "Switzerland")],
                                  1)
    assert to_triplets(iter([])) == ([], 0)


# ---------------------------------------------------------------------------- TripletExtractor

FACTS = {
    "Basel": [EULER],
    "Bernoulli": [STUDENT],
    "Prussia": [Triplet("Frederick the Great", "invited", "Leonhard Euler"),
                Triplet("Leonhard Euler", "worked in", "Berlin")],
}


def fact_script(prompt: str) -> str:
    """Answers with the triplets of every FACTS keyword found in the passage."""
    passage = passage_of(prompt)
    found = [t for key, ts in FACTS.items() if key in passage for t in ts]
    return "```json\n" + triplets_json(*found) + "\n```"


def make_text_nodes() -> list[TextNode]:
    return [
        TextNode(id_="n1", text="Euler was born in Basel.", metadata={"title": "Birth"}),
        TextNode(id_="n2", text="Euler studied with Bernoulli."),
        TextNode(id_="n3", text="Euler went to Prussia."),
    ]


def stored(node: BaseNode) -> list[list[str]]:
    return node.metadata["graphrag_triplets"]


async def test_call_and_acall_write_metadata() -> None:
    for use_async in (False, True):
        llm = ScriptedLLM(fact_script)
        extractor = TripletExtractor(llm=llm)
        nodes = make_text_nodes()
        if use_async:
            out = await extractor.acall(nodes)
        else:
            out = extractor(nodes)
        assert list(out) == nodes
        assert stored(nodes[0]) == as_lists(EULER)
        assert stored(nodes[1]) == as_lists(STUDENT)
        assert stored(nodes[2]) == as_lists(*FACTS["Prussia"])
        assert len(llm.prompts) == 3
        # the prompt carries the passage with its LLM-visible metadata
        first = next(p for p in llm.prompts if "Basel" in passage_of(p))
        assert "title: Birth" in passage_of(first)
        assert "Extract at most 15 triplets" in first
        for node in nodes:
            assert "graphrag_triplets" in node.excluded_embed_metadata_keys
            assert "graphrag_triplets" in node.excluded_llm_metadata_keys
            assert "graphrag_triplets" not in node.get_content(metadata_mode=MetadataMode.LLM)
            assert "graphrag_triplets" not in node.get_content(
                metadata_mode=MetadataMode.EMBED)
            assert triplets_from_node(node)[0] == [Triplet(*t) for t in stored(node)]


async def test_sync_and_async_agree() -> None:
    sync_nodes, async_nodes = make_text_nodes(), make_text_nodes()
    TripletExtractor(llm=ScriptedLLM(fact_script))(sync_nodes)
    await TripletExtractor(llm=ScriptedLLM(fact_script)).acall(async_nodes)
    assert [n.metadata for n in sync_nodes] == [n.metadata for n in async_nodes]


async def test_rerun_does_not_show_old_triplets_to_the_llm() -> None:
    llm = ScriptedLLM(fact_script)
    extractor = TripletExtractor(llm=llm)
    nodes = make_text_nodes()
    extractor(nodes)
    await extractor.acall(nodes)
    assert len(llm.prompts) == 6
    assert all("Leonhard" not in passage_of(p) for p in llm.prompts)
    assert stored(nodes[0]) == as_lists(EULER)


def boom_on_bernoulli(prompt: str) -> str:
    if "Bernoulli" in passage_of(prompt):
        return RuntimeError("LLM unavailable")  # type: ignore[return-value]
    return fact_script(prompt)


@pytest.mark.parametrize("use_async", [False, True])
async def test_llm_exception_on_one_node(use_async: bool,
                                         caplog: pytest.LogCaptureFixture) -> None:
    extractor = TripletExtractor(llm=ScriptedLLM(boom_on_bernoulli), retry_base_delay=0.0)
    nodes = make_text_nodes()
    with caplog.at_level(logging.WARNING, logger=EXTRACTION_LOGGER):
        if use_async:
            await extractor.acall(nodes)
        else:
            extractor(nodes)
    assert stored(nodes[0]) == as_lists(EULER)
    assert stored(nodes[1]) == []
    assert stored(nodes[2]) == as_lists(*FACTS["Prussia"])
    assert "graphrag_triplets" in nodes[1].excluded_llm_metadata_keys
    warnings = extraction_warnings(caplog)
    assert len(warnings) == 1
    assert "n2" in warnings[0] and "LLM unavailable" in warnings[0]


@pytest.mark.parametrize("use_async", [False, True])
async def test_a_call_past_the_timeout_fails_its_passage_and_the_others_are_extracted(
        use_async: bool) -> None:
    llm = HangingLLM(fact_script, hang_on="Euler studied with Bernoulli")
    extractor = TripletExtractor(llm=llm, timeout=0.2, max_retries=1, retry_base_delay=0.0)
    nodes = make_text_nodes()
    try:
        report = await extractor.aextract(nodes) if use_async else extractor.extract(nodes)
        finished_before_release = llm.finished
    finally:
        llm.release()
    assert stored(nodes[0]) == as_lists(EULER)
    assert stored(nodes[2]) == as_lists(*FACTS["Prussia"])
    assert stored(nodes[1]) == []
    assert nodes[1].metadata[EXTRACTION_ERROR_KEY] == "NoAnswer: no answer within 0.2 s"
    assert report.failed_node_ids == ["n2"]
    assert llm.hung == 2  # the attempt past the timeout was retried once
    # the sync call returned while the given-up calls still hung in their threads
    assert finished_before_release == 0


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), True, "1"])
def test_timeout_must_be_positive_seconds(bad: object) -> None:
    with pytest.raises(InvalidInputError, match="TripletExtractor: timeout must be None or a "
                                                "finite number > 0"):
        TripletExtractor(llm=ScriptedLLM([]), timeout=bad)
    assert TripletExtractor(llm=ScriptedLLM([])).timeout is None


def test_calls_given_up_keep_their_slot_so_num_workers_bounds_the_calls_in_flight() -> None:
    llm = HangingLLM(fact_script, hang_on="Euler")  # every passage: none answers
    extractor = TripletExtractor(llm=llm, timeout=0.2, max_retries=2, retry_base_delay=0.0,
                                 num_workers=2)
    try:
        report = extractor.extract([TextNode(text=f"Euler wrote letter {i}.")
                                    for i in range(6)])
        started = llm.hung
    finally:
        llm.release()
    assert len(report.failures) == 6
    assert started == 2  # the later attempts waited for a slot the hung calls kept


async def test_answer_without_json_leaves_node_empty(caplog: pytest.LogCaptureFixture) -> None:
    # answers in list order: one request at a time
    extractor = TripletExtractor(llm=ScriptedLLM(["Sorry, I can't.", triplets_json(EULER)]),
                                 num_workers=1)
    nodes = make_text_nodes()[:2]
    with caplog.at_level(logging.WARNING, logger=EXTRACTION_LOGGER):
        extractor(nodes)
    assert stored(nodes[0]) == []
    assert stored(nodes[1]) == as_lists(EULER)
    (warning,) = extraction_warnings(caplog)
    assert "no JSON list of triplets" in warning and "Sorry" in warning


def test_dropped_triplets_logged_at_info(caplog: pytest.LogCaptureFixture) -> None:
    raw = json.dumps({"triplets": [["a", "b"], ["Leonhard Euler", "was born in", "Basel"]]})
    node = TextNode(id_="n9", text="x")
    with caplog.at_level(logging.INFO, logger=EXTRACTION_LOGGER):
        TripletExtractor(llm=ScriptedLLM([raw]))([node])
    assert stored(node) == as_lists(EULER)
    infos = [r.getMessage() for r in caplog.records
             if r.name.startswith(EXTRACTION_LOGGER) and r.levelno == logging.INFO]
    assert infos == ["triplet extraction: dropped 1 malformed triplets of node n9"]


@pytest.mark.parametrize("use_async", [False, True])
async def test_max_triplets_per_chunk(use_async: bool) -> None:
    many = [Triplet(f"Entity {i}", "links to", f"Entity {i + 1}") for i in range(6)]
    # the first two are one triplet: the cap counts distinct triplets
    answer = json.dumps({"triplets": [as_lists(many[0])[0], as_lists(many[0])[0],
                                      *as_lists(*many[1:])]})
    llm = ScriptedLLM([answer])
    extractor = TripletExtractor(llm=llm, max_triplets_per_chunk=3)
    node = TextNode(id_="n", text="A chain of entities.")
    if use_async:
        await extractor.acall([node])
    else:
        extractor([node])
    assert stored(node) == as_lists(*many[:3])
    assert "Extract at most 3 triplets" in llm.prompts[0]


@pytest.mark.parametrize(("bad", "message"), [
    ({"max_triplets_per_chunk": 0}, "max_triplets_per_chunk: Input should be greater than 0, "
                                    "got 0"),
    ({"num_workers": 0}, "num_workers: Input should be greater than 0, got 0"),
    ({"max_retries": -1}, "max_retries: Input should be greater than or equal to 0, got -1"),
    ({"retry_base_delay": "soon"}, "retry_base_delay: Input should be a valid number"),
])
def test_bad_arguments_raise_the_package_error(bad: dict[str, Any], message: str) -> None:
    # pydantic's ValidationError does not escape: a package error that names the field
    with pytest.raises(InvalidInputError, match=f"TripletExtractor arguments rejected: "
                                                f"{message}.*are integers > 0") as caught:
        TripletExtractor(llm=ScriptedLLM([]), **bad)
    assert isinstance(caught.value.__cause__, ValidationError)


class ConcurrencyLLM(CustomLLM):
    """An async LLM that records how many of its calls run at the same time."""

    active: int = 0
    peak: int = 0
    calls: int = 0
    _gate: Any = PrivateAttr(default=None)

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="concurrency-llm", is_chat_model=False)

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        raise AssertionError("the async path must not call complete()")

    async def acomplete(self, prompt: str, formatted: bool = False,
                        **kwargs: Any) -> CompletionResponse:
        self.calls += 1
        self.active += 1
        self.peak = max(self.peak, self.active)
        for _ in range(10):  # yield to the loop so that other calls can start
            await asyncio.sleep(0)
        self.active -= 1
        return CompletionResponse(text=triplets_json(EULER))

    def stream_complete(self, prompt: str, formatted: bool = False,
                        **kwargs: Any) -> CompletionResponseGen:
        raise NotImplementedError


@pytest.mark.parametrize("num_workers", [1, 2, 5])
async def test_num_workers_bounds_concurrency(num_workers: int) -> None:
    llm = ConcurrencyLLM()
    nodes = [TextNode(id_=f"n{i}", text=f"passage {i}") for i in range(8)]
    await TripletExtractor(llm=llm, num_workers=num_workers).acall(nodes)
    assert llm.calls == 8
    assert llm.peak == num_workers
    assert all(stored(n) == as_lists(EULER) for n in nodes)


def test_prompt_customizable() -> None:
    extractor = TripletExtractor(llm=ScriptedLLM([triplets_json(EULER)]),
                                 max_triplets_per_chunk=4)
    prompts = extractor.get_prompts()
    assert list(prompts) == ["extract_prompt"]
    assert prompts["extract_prompt"].get_template() == DEFAULT_TRIPLET_EXTRACT_PROMPT.get_template()
    custom = PromptTemplate("TEXT<{text}> MAX<{max_triplets}> JSON please")
    extractor.update_prompts({"extract_prompt": custom})
    assert extractor.get_prompts()["extract_prompt"].get_template() == custom.get_template()
    node = TextNode(id_="n", text="Euler was born in Basel.")
    extractor([node])
    assert extractor.llm.prompts == ["TEXT<Euler was born in Basel.> MAX<4> JSON please"]
    assert stored(node) == as_lists(EULER)


def test_a_prompt_asking_for_tuple_lines_gets_its_triplets(
        caplog: pytest.LogCaptureFixture) -> None:
    answer = ("Here are the knowledge triplets:\n(Leonhard Euler, was born in, Basel)\n"
              "(Leonhard Euler, was a student of, Johann Bernoulli)")
    extractor = TripletExtractor(llm=ScriptedLLM([answer]))
    extractor.update_prompts({"extract_prompt": PromptTemplate(
        "Extract up to {max_triplets} knowledge triplets as (subject, predicate, object) "
        "lines.\nText: {text}\nTriplets:\n")})
    node = TextNode(id_="n", text="Euler, born in Basel, studied under Johann Bernoulli.")
    with caplog.at_level(logging.WARNING, logger=EXTRACTION_LOGGER):
        report = extractor.extract([node])
    assert stored(node) == as_lists(EULER, STUDENT)
    assert EXTRACTION_ERROR_KEY not in node.metadata and report.failed_node_ids == []
    assert extraction_warnings(caplog) == []


def test_default_prompt_shows_literal_json() -> None:
    text = DEFAULT_TRIPLET_EXTRACT_PROMPT.format(text="PASSAGE", max_triplets=7)
    assert '{"triplets": [["subject", "predicate", "object"], ...]}' in text
    assert text.endswith("Passage:\nPASSAGE\n\nAnswer:")
    assert "at most 7 triplets" in text


def test_serializable_for_pipeline_cache() -> None:
    extractor = TripletExtractor(llm=ScriptedLLM([]), max_triplets_per_chunk=5)
    data = extractor.to_dict()
    assert data["max_triplets_per_chunk"] == 5
    assert data["class_name"] == "GraphRAGTripletExtractor"


DOCUMENT = (
    "Leonhard Euler was born in Basel. " * 3
    + "Later Euler studied with Johann Bernoulli, a famous mathematician. " * 3
    + "In 1741 Euler went to Prussia at the invitation of Frederick the Great. " * 3
)


@pytest.mark.parametrize("use_async", [False, True])
async def test_inside_ingestion_pipeline(use_async: bool) -> None:
    llm = ScriptedLLM(fact_script)
    pipeline = IngestionPipeline(transformations=[
        SentenceSplitter(chunk_size=40, chunk_overlap=0), TripletExtractor(llm=llm)])
    documents = [Document(text=DOCUMENT, metadata={"source": "euler.txt"})]
    if use_async:
        nodes = await pipeline.arun(documents=documents)
    else:
        nodes = pipeline.run(documents=documents)
    assert len(nodes) > 2
    assert len(llm.prompts) == len(nodes)
    found: list[list[str]] = [t for n in nodes for t in stored(n)]
    for triplet in (EULER, STUDENT, *FACTS["Prussia"]):
        assert [triplet.subject, triplet.predicate, triplet.object] in found
    for node in nodes:
        expected = [t for key, ts in FACTS.items() if key in node.get_content() for t in ts]
        assert stored(node) == as_lists(*expected)
        assert node.metadata["source"] == "euler.txt"
        assert "graphrag_triplets" not in node.get_content(metadata_mode=MetadataMode.EMBED)


# ---------------------------------------------------------------------------- core's extractors

_WORDS = re.compile(r"Text: (.*?)\nTriplets:", re.S)


def core_script(prompt: str) -> str:
    """Answers in the ``(subject, predicate, object)`` lines core's default parser reads."""
    text = _WORDS.findall(prompt)[-1]
    if "Basel" in text:
        return ("Here are the triplets:\n(Leonhard Euler, was born in, Basel)\n"
                "(Leonhard Euler, was a student of, Johann Bernoulli)\n"
                "not a triplet line\n")
    return "(Frederick the Great, invited, Leonhard Euler)"


def test_triplets_from_core_simple_llm_path_extractor() -> None:
    llm = ScriptedLLM(core_script)
    nodes = [TextNode(id_="c1", text="Euler was born in Basel and studied with Bernoulli."),
             TextNode(id_="c2", text="Frederick invited Euler to Berlin.")]
    SimpleLLMPathExtractor(llm=llm, num_workers=1)(nodes)
    assert len(llm.prompts) == 2
    assert KG_RELATIONS_KEY in nodes[0].metadata
    # core's default parser capitalizes each part ("Leonhard euler")
    assert triplets_from_node(nodes[0]) == ([
        Triplet("Leonhard euler", "Was born in", "Basel"),
        Triplet("Leonhard euler", "Was a student of", "Johann bernoulli"),
    ], 0)
    assert triplets_from_node(nodes[1]) == (
        [Triplet("Frederick the great", "Invited", "Leonhard euler")], 0)


def test_triplets_from_hand_built_core_metadata() -> None:
    euler = EntityNode(name='Leonhard "the Great" Euler', label="PERSON")
    basel = EntityNode(name="Basel", label="CITY")
    node = TextNode(id_="h", text="x", metadata={
        KG_NODES_KEY: [euler, basel],
        KG_RELATIONS_KEY: [
            Relation(label="BORN_IN", source_id=euler.id, target_id=basel.id),
            # an entity missing from the nodes list: its id is its name
            Relation(label="LIVED_IN", source_id="Daniel Bernoulli", target_id=basel.id),
            # dict forms (metadata read back from JSON)
            {"label": "VISITED", "source_id": "Basel", "target_id": "Berlin"},
            Relation(label="", source_id=euler.id, target_id=basel.id),  # no label: dropped
        ],
    })
    assert euler.id != euler.name  # core replaces the quotes in ids
    triplets, dropped = triplets_from_node(node)
    assert triplets == [
        Triplet('Leonhard "the Great" Euler', "BORN_IN", "Basel"),
        Triplet("Daniel Bernoulli", "LIVED_IN", "Basel"),
        Triplet("Basel", "VISITED", "Berlin"),
    ]
    assert dropped == 1


def test_triplets_from_dict_nodes() -> None:
    node = TextNode(id_="d", text="x", metadata={
        KG_NODES_KEY: [{"name": "Euler", "id": "e1"}, {"name": "Basel", "id": "b1"},
                       {"text": "a chunk node, no name"}, "not a node", None],
        KG_RELATIONS_KEY: [{"label": "born in", "source_id": "e1", "target_id": "b1"},
                           {"label": "broken", "source_id": None, "target_id": "b1"},
                           "not a relation", None, 7],
    })
    assert triplets_from_node(node) == ([Triplet("Euler", "born in", "Basel")], 4)


def test_triplets_from_json_round_tripped_core_metadata() -> None:
    """Dumps of EntityNode carry no id; core's id of a quoted name differs from the name."""
    euler = EntityNode(name='Leonhard "the Great" Euler')
    relation = Relation(label="BORN_IN", source_id=euler.id, target_id="Basel")
    node = TextNode(id_="j", text="x", metadata={
        KG_NODES_KEY: [euler.model_dump(), EntityNode(name="Basel").model_dump()],
        KG_RELATIONS_KEY: [relation.model_dump()],
    })
    node = TextNode.model_validate_json(node.model_dump_json())
    assert "id" not in node.metadata[KG_NODES_KEY][0]
    assert triplets_from_node(node) == (
        [Triplet('Leonhard "the Great" Euler', "BORN_IN", "Basel")], 0)


def test_own_triplets_take_precedence_over_core_metadata() -> None:
    euler, basel = EntityNode(name="Euler"), EntityNode(name="Basel")
    node = TextNode(id_="p", text="x", metadata={
        "graphrag_triplets": [["Leonhard Euler", "was born in", "Basel"], ["bad"]],
        KG_NODES_KEY: [euler, basel],
        KG_RELATIONS_KEY: [Relation(label="BORN_IN", source_id="Euler", target_id="Basel")],
    })
    assert triplets_from_node(node) == ([EULER], 1)


def test_triplets_from_node_without_triplets() -> None:
    assert triplets_from_node(TextNode(text="plain")) == ([], 0)
    assert triplets_from_node(TextNode(text="x", metadata={"graphrag_triplets": None})) == (
        [], 0)
    assert triplets_from_node(TextNode(text="x", metadata={KG_NODES_KEY: [],
                                                           KG_RELATIONS_KEY: []})) == ([], 0)


# ------------------------------------------------------------- cut-off and blank answers


def test_an_answer_cut_off_keeps_its_complete_triplets(caplog: pytest.LogCaptureFixture
                                                       ) -> None:
    full = triplets_json(EULER, STUDENT, Triplet("Leonhard Euler", "moved to", "Berlin"))
    cut = full[:full.index("Berlin") + 2]  # the output-token limit hit in the third triplet
    with caplog.at_level(logging.WARNING, logger=EXTRACTION_LOGGER):
        assert parse_triplets(cut) == ([EULER, STUDENT], 0)
        assert parse_triplets("```json\n" + json.dumps(as_lists(EULER, STUDENT))[:-3]) == (
            [EULER], 0)  # a bare list of triplets cut off in its second
    assert sum("cut off" in w for w in extraction_warnings(caplog)) == 2


@pytest.mark.parametrize("raw", [
    '{"triplets": [["Ada", "was born in", 1815], ["Ada", "wrote", "Notes"], ["Ada", "met", "Bab',
    '{"triplets": [["Ada", "b", "c", "d"], ["Ada", "was born in", 1815], ["Ada", "wrote", '
    '"Notes"], ["Ad',
    'Per [1]: {"triplets": [["Ada", "was born in", 1815], ["Ada", "wrote", "Notes"], ["Ad',
    '{"triplets": [["Ada", "was born in", ' + "9" * 5000 + '], ["Ada", "was born in", 1815], '
    '["Ada", "wrote", "Notes"]]}',
])
def test_an_odd_first_triplet_or_an_aside_loses_nothing_else(raw: str) -> None:
    """A number, a 4-part list or a bracketed aside before a cut-off list, or an integer
    past Python's digit limit, cost only their own triplet."""
    triplets, _ = parse_triplets(raw)
    assert triplets == [Triplet("Ada", "was born in", "1815"), Triplet("Ada", "wrote", "Notes")]


def test_an_echo_of_the_prompt_is_not_read_as_the_answer() -> None:
    node = TextNode(id_="n1", text="Ada Lovelace wrote the Notes.")
    llm = ScriptedLLM(lambda prompt: prompt + triplets_json(Triplet("Ada", "wrote", "Notes")))
    TripletExtractor(llm=llm).extract([node])
    assert stored(node) == [["Ada", "wrote", "Notes"]]  # not the prompt's example


@pytest.mark.parametrize("answer", ["", "  \n", '{"triplets": [["Leonhard Euler", "was bo'])
async def test_a_blank_or_cut_off_answer_fails_the_passage_and_is_asked_again(
        answer: str, caplog: pytest.LogCaptureFixture) -> None:
    cache = ExtractionCache()
    node = TextNode(id_="n1", text="Leonhard Euler was born in Basel.")
    with caplog.at_level(logging.WARNING, logger=EXTRACTION_LOGGER):
        report = await TripletExtractor(llm=ScriptedLLM([answer]), cache=cache).aextract([node])
    assert [(f.node_id, f.attempts) for f in report.failures] == [("n1", 1)]
    expected = "answered nothing" if not answer.strip() else "cut off before its first"
    assert expected in report.failures[0].error
    assert expected in node.metadata[EXTRACTION_ERROR_KEY] and stored(node) == []
    warnings = extraction_warnings(caplog)
    assert any(expected in w and "n1" in w for w in warnings)
    assert len(warnings) == 1 or answer.strip()  # a blank answer: one warning, not two
    # not cached: the next run asks the LLM again, and its answer replaces the failure
    llm = ScriptedLLM([triplets_json(EULER)])
    report = await TripletExtractor(llm=llm, cache=cache).aextract([node])
    assert (report.failures, report.llm_calls, len(llm.prompts)) == ((), 1, 1)
    assert stored(node) == as_lists(EULER) and EXTRACTION_ERROR_KEY not in node.metadata


@pytest.mark.parametrize("answer", ['{"relations": [["Ada", "met", "Babbage"]]}',
                                    '{"triplets": null}', '{"triplets": "Ada met Babbage"}'])
def test_json_without_a_list_of_triplets_fails_the_passage(answer: str) -> None:
    cache = ExtractionCache()
    node = TextNode(id_="n1", text="Ada met Babbage.")
    report = TripletExtractor(llm=ScriptedLLM([answer]), cache=cache).extract([node])
    assert [f.node_id for f in report.failures] == ["n1"]
    assert "JSON without a list of triplets" in report.failures[0].error
    llm = ScriptedLLM([triplets_json(Triplet("Ada", "met", "Babbage"))])
    TripletExtractor(llm=llm, cache=cache).extract([node])  # not cached: asked again
    assert stored(node) == [["Ada", "met", "Babbage"]]


@pytest.mark.parametrize("answer", ["I could not find any triplets.", '{"triplets": []}'])
def test_an_answer_that_finds_nothing_is_not_a_failure(answer: str) -> None:
    cache = ExtractionCache()
    node = TextNode(id_="n1", text="Basel is a city.")
    report = TripletExtractor(llm=ScriptedLLM([answer]), cache=cache).extract([node])
    assert report.failures == () and stored(node) == []
    llm = ScriptedLLM([triplets_json(EULER)])
    TripletExtractor(llm=llm, cache=cache).extract([node])
    assert llm.prompts == []  # cached: "nothing here" is an answer


def test_a_blank_described_answer_fails_the_passage() -> None:
    node = TextNode(id_="n1", text="Leonhard Euler was born in Basel.")
    extractor = TripletExtractor(llm=ScriptedLLM(['{"entities": [{"name": "Leonh']),
                                 describe=True)
    report = extractor.extract([node])
    assert [f.node_id for f in report.failures] == ["n1"]
    assert "cut off" in report.failures[0].error


HUNG_LLM_SCRIPT = """
import threading, sys
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.schema import TextNode
from llama_index_graphrag_milvus import TripletExtractor

class Hung(CustomLLM):
    @property
    def metadata(self):
        return LLMMetadata(model_name="hung")
    def complete(self, prompt, formatted=False, **kwargs):
        threading.Event().wait()  # never answers
    def stream_complete(self, prompt, formatted=False, **kwargs):
        raise NotImplementedError

report = TripletExtractor(llm=Hung(), timeout=0.3, max_retries=0).extract(
    [TextNode(text="Euler was born in Basel.")])
print(report.failed_node_ids == [report.failures[0].node_id], report.failures[0].error)
"""


def test_a_process_whose_llm_hangs_returns_and_exits_after_the_timeout() -> None:
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    # a pool's threads are joined at exit: a call that never returns held the process
    done = subprocess.run([sys.executable, "-c", HUNG_LLM_SCRIPT], cwd=root, text=True,
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True NoAnswer: no answer within 0.3 s"
