"""Concurrent, cached, resumable extraction: the concurrency bound, the extraction cache,
resuming after a crash, retries with backoff and the failure report."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from llama_index.core import Document
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.ingestion import IngestionCache
from llama_index.core.llms import CompletionResponse, CompletionResponseGen, CustomLLM, LLMMetadata
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.prompts import PromptTemplate
from llama_index.core.schema import MetadataMode, TextNode
from llama_index.core.storage.kvstore import SimpleKVStore

from llama_index_graphrag_milvus import GraphRAGIndex, TripletExtractor
from llama_index_graphrag_milvus.extraction import (
    EXTRACTION_ERROR_KEY,
    ExtractionCache,
    ExtractionReport,
    extraction_failures,
)
from llama_index_graphrag_milvus.records import Triplet
from tests.support.fakes import HashEmbedding

EXTRACTION_LOGGER = "llama_index_graphrag_milvus.extraction"


class SimulatedCrash(BaseException):
    """Not an ``Exception``: like a KeyboardInterrupt it ends the run instead of being retried."""


def passage_of(prompt: str) -> str:
    return prompt.split("Passage:\n", 1)[1].rsplit("\n\nAnswer:", 1)[0]


def answer_for(passage: str) -> str:
    """One triplet naming the passage: ``[<passage>, "is", "passage"]``."""
    return json.dumps({"triplets": [[passage, "is", "passage"]]})


class RecordingLLM(CustomLLM):
    """Answers :func:`answer_for` the passage, through its sync and async API, and records
    every call and how many were in flight at once. ``failures[passage]`` exceptions are
    raised, one per call, before it answers; after ``crash_after`` calls it raises
    :class:`SimulatedCrash`. With ``gate``, a call waits (up to 5 s) until ``gate`` calls
    are in flight or ``expected`` calls have started: the peak then shows the bound whatever
    the machine's speed."""

    model: str = "recording-llm"
    pause: float = 0.0
    gate: int = 0
    expected: int = 0
    crash_after: int | None = None
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _failures: dict[str, list[BaseException]] = PrivateAttr(default_factory=dict)
    _calls: list[str] = PrivateAttr(default_factory=list)
    _active: int = PrivateAttr(default=0)
    _peak: int = PrivateAttr(default=0)

    def __init__(self, failures: dict[str, list[BaseException]] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._failures = {k: list(v) for k, v in (failures or {}).items()}

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name=self.model, is_chat_model=False)

    @property
    def calls(self) -> list[str]:
        return list(self._calls)

    @property
    def peak(self) -> int:
        return self._peak

    def _enter(self, prompt: str) -> str:
        passage = passage_of(prompt)
        with self._lock:
            if self.crash_after is not None and len(self._calls) >= self.crash_after:
                raise SimulatedCrash(f"crash before {passage}")
            self._calls.append(passage)
            self._active += 1
            self._peak = max(self._peak, self._active)
        return passage

    def _gate_open(self) -> bool:
        return self._active >= self.gate or len(self._calls) >= self.expected

    def _leave(self, passage: str) -> CompletionResponse:
        with self._lock:
            self._active -= 1
            pending = self._failures.get(passage)
            error = pending.pop(0) if pending else None
        if error is not None:
            raise error
        return CompletionResponse(text=answer_for(passage))

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        passage = self._enter(prompt)
        deadline = time.monotonic() + 5
        while not self._gate_open() and time.monotonic() < deadline:
            time.sleep(0.001)
        threading.Event().wait(self.pause)
        return self._leave(passage)

    async def acomplete(self, prompt: str, formatted: bool = False,
                        **kwargs: Any) -> CompletionResponse:
        passage = self._enter(prompt)
        deadline = time.monotonic() + 5
        while not self._gate_open() and time.monotonic() < deadline:
            await asyncio.sleep(0.001)
        await asyncio.sleep(self.pause)
        return self._leave(passage)

    def stream_complete(self, prompt: str, formatted: bool = False,
                        **kwargs: Any) -> CompletionResponseGen:
        raise NotImplementedError


class SleepRecorder:
    """An async sleep that returns at once and records the delays asked for."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def make_nodes(count: int) -> list[TextNode]:
    return [TextNode(id_=f"n{i}", text=f"passage {i}") for i in range(count)]


def stored(node: TextNode) -> list[list[str]]:
    return node.metadata["graphrag_triplets"]


async def run(extractor: TripletExtractor, nodes: list[TextNode], use_async: bool,
              show_progress: bool = False) -> ExtractionReport:
    if use_async:
        return await extractor.aextract(nodes, show_progress=show_progress)
    # from a plain thread: the sync path as a script would call it (no running loop)
    return await asyncio.to_thread(extractor.extract, nodes, show_progress)


PATHS = pytest.mark.parametrize("use_async", [True, False], ids=["async", "sync"])


# ---------------------------------------------------------------------------- concurrency


@PATHS
@pytest.mark.parametrize("num_workers", [1, 3, 8])
async def test_num_workers_bounds_requests_in_flight(use_async: bool, num_workers: int) -> None:
    llm = RecordingLLM(gate=num_workers, expected=16)
    nodes = make_nodes(16)
    report = await run(TripletExtractor(llm=llm, num_workers=num_workers), nodes, use_async)
    assert len(llm.calls) == 16
    assert llm.peak == num_workers  # bounded, and the bound is used
    assert report == ExtractionReport(16, 0, 16, 16, (), report.seconds)
    assert all(stored(n) == [[f"passage {i}", "is", "passage"]] for i, n in enumerate(nodes))


async def test_concurrency_shortens_the_wall_time() -> None:
    slow, fast = RecordingLLM(pause=0.05), RecordingLLM(pause=0.05)
    one = await TripletExtractor(llm=slow, num_workers=1).aextract(make_nodes(12))
    twelve = await TripletExtractor(llm=fast, num_workers=12).aextract(make_nodes(12))
    assert one.seconds >= 0.55  # 12 x 0.05 s, one at a time
    assert twelve.seconds < one.seconds / 3


async def test_sync_call_inside_a_running_loop() -> None:
    """``__call__`` from a coroutine (a notebook) runs on a helper thread's own loop."""
    llm = RecordingLLM()
    nodes = make_nodes(5)
    assert TripletExtractor(llm=llm, num_workers=2)(nodes) is nodes
    assert sorted(llm.calls) == sorted(n.text for n in nodes)


async def test_identical_passages_cost_one_request() -> None:
    llm = RecordingLLM()
    nodes = [TextNode(id_="a", text="same"), TextNode(id_="b", text="same"),
             TextNode(id_="c", text="other")]
    report = await TripletExtractor(llm=llm).aextract(nodes)
    assert sorted(llm.calls) == ["other", "same"]
    assert stored(nodes[0]) == stored(nodes[1]) == [["same", "is", "passage"]]
    assert (report.passages, report.llm_calls, report.triplets) == (3, 2, 3)


# ---------------------------------------------------------------------------- the cache


@PATHS
async def test_rerun_with_the_cache_calls_the_llm_zero_times(use_async: bool,
                                                             tmp_path: Path) -> None:
    path = tmp_path / "cache" / "extraction.json"
    first_llm = RecordingLLM()
    first_nodes = make_nodes(6)
    first = await run(TripletExtractor(llm=first_llm, cache=ExtractionCache(path)),
                      first_nodes, use_async)
    assert (first.cached, first.llm_calls) == (0, 6)
    assert path.exists()

    # a new process: a fresh cache object loaded from the file
    second_llm = RecordingLLM()
    second_nodes = make_nodes(6)
    second = await run(TripletExtractor(llm=second_llm, cache=ExtractionCache(path)),
                       second_nodes, use_async)
    assert second_llm.calls == []
    assert (second.passages, second.cached, second.llm_calls, second.triplets) == (6, 6, 0, 6)
    assert [n.metadata for n in second_nodes] == [n.metadata for n in first_nodes]


async def test_cache_key_covers_text_prompt_and_model() -> None:
    cache = ExtractionCache()
    assert cache and len(cache) == 0
    await TripletExtractor(llm=RecordingLLM(), cache=cache).aextract(make_nodes(2))
    assert len(cache) == 2
    variants: list[tuple[TripletExtractor, list[TextNode]]] = [
        (TripletExtractor(llm=RecordingLLM(model="another-model"), cache=cache),
         make_nodes(2)),
        (TripletExtractor(llm=RecordingLLM(), cache=cache, max_triplets_per_chunk=3),
         make_nodes(2)),
        (TripletExtractor(llm=RecordingLLM(), cache=cache, extract_prompt=PromptTemplate(
            "Triplets of ({max_triplets} at most), JSON.\nPassage:\n{text}\n\nAnswer:")),
         make_nodes(2)),
        # the LLM sees the metadata: other metadata, another passage
        (TripletExtractor(llm=RecordingLLM(), cache=cache),
         [TextNode(id_=n.node_id, text=n.text, metadata={"title": "T"}) for n in make_nodes(2)]),
    ]
    for extractor, nodes in variants:
        report = await extractor.aextract(nodes)
        assert (report.cached, report.llm_calls) == (0, 2)
    assert len(cache) == 10
    unchanged = await TripletExtractor(llm=RecordingLLM(), cache=cache).aextract(make_nodes(2))
    assert (unchanged.cached, unchanged.llm_calls) == (2, 0)


async def test_cache_in_any_kvstore_and_shared_with_an_ingestion_cache() -> None:
    ingestion_cache = IngestionCache()
    cache = ExtractionCache.from_ingestion_cache(ingestion_cache)
    await TripletExtractor(llm=RecordingLLM(), cache=cache).aextract(make_nodes(3))
    assert cache.kvstore is ingestion_cache.cache
    assert len(ingestion_cache.cache.get_all(collection="graphrag_triplets")) == 3
    assert ingestion_cache.cache.get_all(collection=ingestion_cache.collection) == {}
    again = ExtractionCache(kvstore=ingestion_cache.cache)
    report = await TripletExtractor(llm=RecordingLLM(), cache=again).aextract(make_nodes(3))
    assert report.llm_calls == 0


def test_cache_persists_every_n_entries_atomically(tmp_path: Path) -> None:
    path = tmp_path / "extraction.json"
    cache = ExtractionCache(path, persist_every=2)
    for i in range(5):
        cache.put(f"k{i}", [Triplet(f"E{i}", "is", "x")])
    # a kill now loses at most persist_every - 1 entries
    assert len(ExtractionCache(path)) == 4
    assert [p.name for p in tmp_path.iterdir()] == ["extraction.json"]  # no temporary left
    cache.persist()
    reloaded = ExtractionCache(path)
    assert len(reloaded) == 5
    assert reloaded.get("k4") == [Triplet("E4", "is", "x")]


def test_cache_ignores_unreadable_entries() -> None:
    kvstore = SimpleKVStore()
    kvstore.put("k", {"not triplets": 1}, collection="graphrag_triplets")
    assert ExtractionCache(kvstore=kvstore).get("k") is None


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"persist_path": "x.json", "kvstore": SimpleKVStore()}, "both persist_path and kvstore"),
    ({"persist_every": 0}, "persist_every must be an integer >= 1, got 0"),
])
def test_cache_bad_arguments(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ExtractionCache(**kwargs)


def test_cache_file_that_is_not_json(tmp_path: Path) -> None:
    path = tmp_path / "extraction.json"
    path.write_text("{half a file")
    with pytest.raises(ValueError, match=r"is not a JSON kvstore file.*delete it"):
        ExtractionCache(path)


@pytest.mark.parametrize("bad", [{"max_retries": -1}, {"retry_base_delay": -0.5}])
def test_bad_retry_arguments(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(bad))):
        TripletExtractor(llm=RecordingLLM(), **bad)


# ---------------------------------------------------------------------------- crash and resume


@PATHS
@pytest.mark.parametrize("num_workers", [1, 4])
async def test_resume_after_a_crash_extracts_only_what_is_missing(
        use_async: bool, num_workers: int, tmp_path: Path) -> None:
    path = tmp_path / "extraction.json"
    crashing = RecordingLLM(crash_after=7, pause=0.005)
    with pytest.raises(SimulatedCrash):
        await run(TripletExtractor(llm=crashing, num_workers=num_workers,
                                   cache=ExtractionCache(path, persist_every=1000)),
                  make_nodes(20), use_async)
    assert len(crashing.calls) == 7
    saved = len(ExtractionCache(path))  # written on the way out, persist_every not reached
    assert 7 - num_workers < saved <= 7  # what finished before the crash; in flight is lost

    clean = RecordingLLM()
    nodes = make_nodes(20)
    report = await run(TripletExtractor(llm=clean, num_workers=num_workers,
                                        cache=ExtractionCache(path)), nodes, use_async)
    assert len(clean.calls) == 20 - saved
    assert set(clean.calls).isdisjoint(crashing.calls[:saved] if num_workers == 1 else [])
    assert (report.cached, report.llm_calls, report.failures) == (saved, 20 - saved, ())
    assert all(stored(n) == [[n.text, "is", "passage"]] for n in nodes)
    assert len(ExtractionCache(path)) == 20


# ---------------------------------------------------------------------------- retries, failures


@PATHS
async def test_retry_with_backoff_then_failure_report(use_async: bool, tmp_path: Path,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "extraction.json"
    llm = RecordingLLM(failures={
        "passage 1": [TimeoutError("slow"), ConnectionError("reset")],  # then succeeds
        "passage 3": [RuntimeError("rate limited")] * 3,  # fails every attempt
    })
    sleep = SleepRecorder()
    extractor = TripletExtractor(llm=llm, cache=ExtractionCache(path), max_retries=2,
                                 retry_base_delay=0.5, sleep=sleep, num_workers=1)
    nodes = make_nodes(5)
    with caplog.at_level(logging.INFO, logger=EXTRACTION_LOGGER):
        report = await run(extractor, nodes, use_async)

    assert sleep.delays == [0.5, 1.0, 0.5, 1.0]  # base, then doubled; never slept for real
    assert llm.calls.count("passage 1") == 3 and llm.calls.count("passage 3") == 3
    assert stored(nodes[1]) == [["passage 1", "is", "passage"]]
    assert EXTRACTION_ERROR_KEY not in nodes[1].metadata
    assert stored(nodes[3]) == []
    assert nodes[3].metadata[EXTRACTION_ERROR_KEY] == "RuntimeError: rate limited"
    for mode in (MetadataMode.LLM, MetadataMode.EMBED):
        assert "rate limited" not in nodes[3].get_content(metadata_mode=mode)
    assert extraction_failures(nodes) == {"n3": "RuntimeError: rate limited"}

    assert report.failed_node_ids == ["n3"]
    assert (report.passages, report.llm_calls, report.triplets) == (5, 9, 4)
    assert report.failures[0].attempts == 3
    records = [r for r in caplog.records if r.name.startswith(EXTRACTION_LOGGER)]
    warnings = [r.getMessage() for r in records if r.levelno == logging.WARNING]
    assert warnings == ["triplet extraction of node n3 failed after 3 attempts: "
                        "RuntimeError('rate limited')"]
    retries = [r.getMessage() for r in records if "retrying" in r.getMessage()]
    assert len(retries) == 4 and "attempt 1 of 3" in retries[0]
    assert report.summary() in [r.getMessage() for r in records]
    assert "failed: n3 (RuntimeError: rate limited)" in report.summary()

    # the failure is not cached: the next run retries just that passage, and clears the error
    healthy = RecordingLLM()
    again = await run(TripletExtractor(llm=healthy, cache=ExtractionCache(path)), nodes,
                      use_async)
    assert healthy.calls == ["passage 3"]
    assert (again.cached, again.llm_calls, again.failures) == (4, 1, ())
    assert stored(nodes[3]) == [["passage 3", "is", "passage"]]
    assert extraction_failures(nodes) == {}


async def test_no_retries_when_max_retries_is_zero() -> None:
    llm = RecordingLLM(failures={"passage 0": [RuntimeError("down")]})
    sleep = SleepRecorder()
    report = await TripletExtractor(llm=llm, max_retries=0, sleep=sleep).aextract(
        make_nodes(1))
    assert (report.llm_calls, report.failed_node_ids, sleep.delays) == (1, ["n0"], [])


async def test_progress_bar_shows_passages_triplets_failures(
        capsys: pytest.CaptureFixture[str]) -> None:
    llm = RecordingLLM(failures={"passage 2": [RuntimeError("down")]})
    await TripletExtractor(llm=llm, max_retries=0).aextract(make_nodes(4), show_progress=True)
    bar = capsys.readouterr().err
    assert "Extracting triplets" in bar and "4/4" in bar
    assert "triplets=3" in bar and "failures=1" in bar and "cached=0" in bar


# ---------------------------------------------------------------------------- through the index


@pytest.mark.milvus
def test_index_from_documents_resumes_with_the_extraction_cache(tmp_path: Path) -> None:
    documents = [Document(text=f"passage {i}", doc_id=f"doc{i}") for i in range(8)]
    cache_path = tmp_path / "extraction.json"
    kwargs: dict[str, Any] = {"uri": str(tmp_path / "graph.db"),
                              "embed_model": HashEmbedding(dim=32),
                              "transformations": [SentenceSplitter(chunk_size=64, chunk_overlap=0)]}
    crashing = RecordingLLM(crash_after=5)
    with pytest.raises(SimulatedCrash):
        GraphRAGIndex.from_documents(documents, llm=crashing, extraction_workers=1,
                                     extraction_cache=ExtractionCache(cache_path), **kwargs)
    clean = RecordingLLM()
    index = GraphRAGIndex.from_documents(documents, llm=clean, extraction_workers=2,
                                         extraction_cache=ExtractionCache(cache_path), **kwargs)
    assert sorted(clean.calls) == [f"passage {i}" for i in range(5, 8)]
    assert clean.peak <= 2
    store = index.store
    assert store.count(store.relation_collection) == 8
    assert store.count(store.passage_collection) == 8
    # update and insert take the same options
    again = RecordingLLM()
    index.update(documents[0], llm=again, extraction_cache=ExtractionCache(cache_path))
    index.insert(documents[1], llm=again, extraction_cache=ExtractionCache(cache_path))
    assert again.calls == []


@pytest.mark.milvus
def test_index_rejects_extraction_options_with_kg_extractor(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="with kg_extractor, set them on it instead"):
        GraphRAGIndex.from_documents(
            [Document(text="x")], kg_extractor=TripletExtractor(llm=RecordingLLM()),
            extraction_cache=ExtractionCache(), uri=str(tmp_path / "graph.db"),
            embed_model=HashEmbedding(dim=32))


@pytest.mark.milvus
def test_an_insert_counts_the_passages_whose_extraction_failed(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    documents = [Document(text=f"passage {i}", doc_id=f"doc{i}") for i in range(3)]
    index = GraphRAGIndex(uri=str(tmp_path / "graph.db"), embed_model=HashEmbedding(dim=32))
    down = RecordingLLM(failures={"passage 1": [RuntimeError("rate limited")]})
    with caplog.at_level(logging.WARNING):
        stats = index.insert_documents(
            documents, kg_extractor=TripletExtractor(llm=down, max_retries=0))
    assert (stats.passages, stats.relations, stats.failed_extractions) == (3, 2, 1)
    assert "1 of 3 passages were written without triplets" in caplog.text
    stats = index.insert_documents(documents[1:2], llm=RecordingLLM())  # asked again
    assert (stats.passages, stats.relations, stats.failed_extractions) == (1, 1, 0)
