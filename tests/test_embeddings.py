"""The user's embedding model: what it returns is checked before anything is stored or
searched, names resolve as LlamaIndex resolves them, and second queries are embedded on the
query side of a model that has one. Milvus Lite: none of this depends on the backend."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import QueryBundle

from llama_index_graphrag_milvus import GraphRAGIndex, InvalidInputError
from llama_index_graphrag_milvus.embeddings import check_vectors, queries_apart
from llama_index_graphrag_milvus.errors import EmbeddingDimensionError, EmbeddingModelError
from tests.conftest import FAMILY
from tests.support.fakes import HashEmbedding

pytestmark = pytest.mark.milvus

QUESTION = "What did the son of Euler's teacher contribute?"


class BrokenEmbedding(HashEmbedding):
    """A :class:`HashEmbedding` whose batch answer for texts holding ``word`` is ``broken``
    (a vector, or ``"drop"``: one vector fewer)."""

    word: str = "Basel"
    broken: Any = None

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vector(text) if self.word not in text else self.broken

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        vectors: list[Any] = []
        for text in texts:
            if self.word not in text:
                vectors.append(self._vector(text))
            elif self.broken != "drop":
                vectors.append(self.broken)
        return vectors


class RecordingEmbedding(HashEmbedding):
    """A :class:`HashEmbedding` that records which side each call embeds on."""

    _calls: list[tuple[str, tuple[str, ...]]] = PrivateAttr(default_factory=list)

    def query_vector(self, query: str) -> list[float]:
        return self._vector(query)

    def _get_query_embedding(self, query: str) -> list[float]:
        self._calls.append(("query", (query,)))
        return self.query_vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        self._calls.append(("texts", tuple(texts)))
        return [self._vector(t) for t in texts]

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._get_text_embeddings(texts)

    def second_queries(self) -> list[tuple[str, tuple[str, ...]]]:
        """The calls that embedded a second query (a bridge's name in the question)."""
        return [(side, texts) for side, texts in self._calls
                if any("Bernoulli" in t and "teacher" in t for t in texts)]


class QueryInstructionEmbedding(RecordingEmbedding):
    """A model that embeds a query with an instruction (as BGE and E5 do), so the query's
    vector differs from the passage vector of its text."""

    def query_vector(self, query: str) -> list[float]:
        return self._vector(f"represent this question for retrieval {query}")


def counts(index: GraphRAGIndex) -> tuple[int, int, int]:
    store = index.store
    if store.dim is None:
        return (0, 0, 0)
    return tuple(store.client.query(name, output_fields=["count(*)"])[0]["count(*)"]
                 for name in (store.entity_collection, store.relation_collection,
                              store.passage_collection))  # type: ignore[return-value]


@pytest.mark.parametrize(("vectors", "count", "message"), [
    ([[1.0, 0.0]], 2, r"returned 1 vectors for 2 texts"),
    ([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]], 2, r"returned 3 vectors for 2 texts"),
    ([[1.0, 0.0], [1.0, 0.0, 0.5]], 2, r"vectors of different lengths \(2, 3\)"),
    ([[1.0, "x"], [1.0, 0.0]], 2, r"values that are not numbers"),
    ([[], []], 2, r"empty vectors"),
    ([[1.0, 0.0], [math.nan, 0.0]], 2, r"NaN or infinite values \(text 2 of 2\)"),
    ([[math.inf, 0.0]], 1, r"NaN or infinite values \(text 1 of 1\)"),
    ([[1e39, 0.0]], 1, r"NaN or infinite values"),  # past a 32-bit float: inf in Milvus
    (None, 1, r"returned no list for 1 texts"),
])
def test_a_batch_the_model_got_wrong_is_refused_with_what_is_wrong(
        vectors: Any, count: int, message: str) -> None:
    with pytest.raises(EmbeddingModelError, match=message):
        check_vectors(vectors, count, HashEmbedding())


def test_numbers_of_any_kind_are_accepted_as_floats() -> None:
    import numpy as np
    assert check_vectors(np.array([[1, 2]], np.int64), 1, None) == [[1.0, 2.0]]
    assert check_vectors([(0.5, np.float32(0.25))], 1, None) == [[0.5, 0.25]]
    assert check_vectors([], 0, None) == []


@pytest.mark.parametrize("broken", [[math.nan] * 64, [0.1] * 63, "drop", None])
@pytest.mark.parametrize("use_async", [False, True])
async def test_an_insert_with_a_bad_vector_stores_nothing_and_a_good_model_finishes_it(
        tmp_path: Path, broken: Any, use_async: bool) -> None:
    uri = str(tmp_path / "graph.db")
    # the passages embed well; one entity name ("Basel") does not
    bad = BrokenEmbedding(broken=broken, word="Basel")
    with GraphRAGIndex(uri=uri, embed_model=HashEmbedding()) as index:
        index.insert_triplets(FAMILY[1:])
        before = counts(index)
    with GraphRAGIndex(uri=uri, embed_model=bad, allow_embed_model_change=True) as index:
        with pytest.raises(EmbeddingModelError, match=r"BrokenEmbedding|63-dimensional"):
            if use_async:
                await index.ainsert_triplets(FAMILY[:1])
            else:
                index.insert_triplets(FAMILY[:1])
        assert counts(index) == before  # nothing written, passages included
    with GraphRAGIndex(uri=uri, embed_model=HashEmbedding()) as index:
        index.insert_triplets(FAMILY[:1])
        assert counts(index)[1] == before[1] + 2
        assert all(math.isfinite(x) for x in index.entity_table.vectors.ravel().tolist())


class NoQueryVector(HashEmbedding):
    """A model whose query answer is ``None`` (a wrapper that forgot its ``return``)."""

    def _get_query_embedding(self, query: str) -> Any:
        return None

    async def _aget_query_embedding(self, query: str) -> Any:
        return None


async def test_a_model_answering_none_is_named_in_the_package_error(tmp_path: Path) -> None:
    """LlamaIndex's own event refused the answer with a pydantic ValidationError."""
    uri = str(tmp_path / "graph.db")
    GraphRAGIndex.from_triplets(FAMILY, uri=uri, embed_model=HashEmbedding()).close()
    with GraphRAGIndex(uri=uri, embed_model=NoQueryVector()) as index:
        for retriever in (index.as_retriever(), index.as_naive_retriever()):
            with pytest.raises(EmbeddingModelError, match=r"the embedding model "
                                                          r"\(NoQueryVector.*not a list of "
                                                          r"numbers per text.*got None"):
                retriever.retrieve(QUESTION)
            with pytest.raises(EmbeddingModelError, match="NoQueryVector"):
                await retriever.aretrieve(QUESTION)


def test_a_new_index_with_a_model_that_gives_nan_creates_nothing(tmp_path: Path) -> None:
    nan_model = BrokenEmbedding(broken=[math.nan] * 64, word="")  # every text
    with GraphRAGIndex(uri=str(tmp_path / "graph.db"), embed_model=nan_model) as index:
        with pytest.raises(EmbeddingModelError, match="NaN"):
            index.insert_triplets(FAMILY)
        assert index.store.client.list_collections() == []
    with GraphRAGIndex(uri=str(tmp_path / "graph.db"), embed_model=HashEmbedding()) as index:
        index.insert_triplets(FAMILY)  # nothing half made, no probe of NaN recorded
        assert counts(index)[2] == len(FAMILY)


@pytest.mark.parametrize("bad", ["nonsense", "local:", 42, print])
def test_an_embed_model_that_is_not_one_is_refused_at_construction(tmp_path: Path,
                                                                   bad: Any) -> None:
    with pytest.raises(InvalidInputError, match="embed_model"):
        GraphRAGIndex(uri=str(tmp_path / "graph.db"), embed_model=bad)
    GraphRAGIndex(uri=str(tmp_path / "graph.db"), embed_model=HashEmbedding()).close()


def test_no_embed_model_and_no_openai_says_to_pass_one(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from llama_index.core import Settings
    monkeypatch.setattr(Settings, "_embed_model", None)
    monkeypatch.delenv("IS_TESTING", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(InvalidInputError, match=r"pass embed_model=\.\.\. .* or set "
                                                r"Settings\.embed_model"):
        GraphRAGIndex(uri=str(tmp_path / "graph.db"))


async def test_a_query_vector_of_the_wrong_dimension_names_the_query_bundle(
        tmp_path: Path) -> None:
    with GraphRAGIndex.from_triplets(FAMILY, uri=str(tmp_path / "graph.db"),
                                     embed_model=HashEmbedding()) as index:
        bundle = QueryBundle(QUESTION, embedding=[0.1] * 16)
        for retriever in (index.as_retriever(), index.as_naive_retriever(),
                          index.as_report_retriever()):
            with pytest.raises(EmbeddingDimensionError,
                               match=r"QueryBundle\.embedding has 16 dimensions"):
                retriever.retrieve(bundle)
            with pytest.raises(EmbeddingDimensionError, match=r"QueryBundle\.embedding"):
                await retriever.aretrieve(QueryBundle(QUESTION, embedding=[0.1] * 16))


async def test_a_question_the_model_embeds_as_nan_is_the_model_s_error(tmp_path: Path) -> None:
    uri = str(tmp_path / "graph.db")
    GraphRAGIndex.from_triplets(FAMILY, uri=uri, embed_model=HashEmbedding()).close()

    class NanQueries(HashEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            return [math.nan] * self.dim

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

    with GraphRAGIndex(uri=uri, embed_model=NanQueries()) as index:
        for retriever in (index.as_retriever(), index.as_naive_retriever()):
            with pytest.raises(EmbeddingModelError, match=r"NanQueries.*returned NaN"):
                retriever.retrieve(QUESTION)
            with pytest.raises(EmbeddingModelError, match="returned NaN"):
                await retriever.aretrieve(QUESTION)


def test_a_model_that_gives_the_probe_a_zero_vector_reopens_its_index(tmp_path: Path) -> None:
    # the probe text shares no word with the model's vocabulary: a zero vector
    zero = BrokenEmbedding(broken=[0.0] * 64, word="embedding probe")
    uri = str(tmp_path / "graph.db")
    GraphRAGIndex.from_triplets(FAMILY, uri=uri, embed_model=zero).close()
    with GraphRAGIndex(uri=uri, embed_model=zero) as index:
        assert index.as_retriever().retrieve(QUESTION)


@pytest.mark.parametrize("use_async", [False, True])
async def test_second_queries_are_embedded_as_queries_by_a_model_with_a_query_side(
        tmp_path: Path, use_async: bool) -> None:
    model = QueryInstructionEmbedding()
    assert queries_apart(model) and not queries_apart(RecordingEmbedding())
    with GraphRAGIndex.from_triplets(FAMILY, uri=str(tmp_path / "graph.db"),
                                     embed_model=model) as index:
        retriever = index.as_retriever()
        hits = await retriever.aretrieve(QUESTION) if use_async else retriever.retrieve(QUESTION)
        assert hits
        second = model.second_queries()
        assert second and all(side == "query" for side, _ in second)
        assert all(len(texts) == 1 for _, texts in second)  # one query per call


async def test_second_queries_of_a_model_without_a_query_side_are_one_batch(
        tmp_path: Path) -> None:
    model = RecordingEmbedding()
    with GraphRAGIndex.from_triplets(FAMILY, uri=str(tmp_path / "graph.db"),
                                     embed_model=model) as index:
        retriever = index.as_retriever()
        sync_hits = retriever.retrieve(QUESTION)
        async_hits = await retriever.aretrieve(QUESTION)
        second = model.second_queries()
        assert [side for side, _ in second] == ["texts", "texts"]  # one batch per query
        assert [h.node.node_id for h in sync_hits] == [h.node.node_id for h in async_hits]


class SyncOnlyEmbedding(QueryInstructionEmbedding):
    """A model whose async API was never written: every async call raises
    ``NotImplementedError`` (a quick wrapper of a sync client)."""

    async def _aget_query_embedding(self, query: str) -> list[float]:
        raise NotImplementedError

    async def _aget_text_embedding(self, text: str) -> list[float]:
        raise NotImplementedError

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        raise NotImplementedError


@pytest.mark.parametrize("method", ["bridge", "naive"])
async def test_a_model_without_an_async_api_answers_async_queries_through_its_sync_one(
        tmp_path: Path, method: str) -> None:
    model = SyncOnlyEmbedding()
    with GraphRAGIndex.from_triplets(FAMILY, uri=str(tmp_path / "graph.db"),
                                     embed_model=model) as index:
        retriever = (index.as_naive_retriever() if method == "naive"
                     else index.as_retriever())
        sync_hits = retriever.retrieve(QUESTION)
        async_hits = await retriever.aretrieve(QUESTION)
        assert async_hits and [h.node.node_id for h in sync_hits] == \
            [h.node.node_id for h in async_hits]
        if method == "bridge":  # the second queries too, on the query side
            assert [side for side, _ in model.second_queries()][-1] == "query"


@pytest.mark.parametrize("use_async", [False, True])
async def test_custom_embedding_strs_are_embedded_as_core_s_retrievers_do(
        tmp_path: Path, use_async: bool) -> None:
    """A HyDE transform's texts (``QueryBundle.custom_embedding_strs``) make the query
    vector, as in core's ``VectorIndexRetriever``: the mean of their query vectors; the
    question's words still choose the graph's names and second queries."""
    model = RecordingEmbedding()
    chosen = ["Daniel Bernoulli worked on fluid dynamics.", QUESTION]
    with GraphRAGIndex.from_triplets(FAMILY, uri=str(tmp_path / "graph.db"),
                                     embed_model=model) as index:
        for retriever in (index.as_retriever(), index.as_naive_retriever()):
            bundle = QueryBundle(QUESTION, custom_embedding_strs=chosen)
            model._calls.clear()
            hits = (await retriever.aretrieve(bundle) if use_async
                    else retriever.retrieve(bundle))
            assert hits
            asked = [texts[0] for side, texts in model._calls if side == "query"]
            assert chosen[0] in asked
            if bundle.embedding is not None:  # the naive retriever keeps it, as core's does
                assert bundle.embedding == pytest.approx(
                    model.get_agg_embedding_from_queries(chosen))


class ShortQueryEmbedding(HashEmbedding):
    """Gives a 10-dimensional query vector for texts holding "short"."""

    def _get_query_embedding(self, query: str) -> list[float]:
        return [0.1] * 10 if "short" in query else self._vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


@pytest.mark.parametrize("use_async", [False, True])
async def test_a_model_that_breaks_on_a_chosen_text_is_the_model_s_error(
        tmp_path: Path, use_async: bool) -> None:
    with GraphRAGIndex.from_triplets(FAMILY, uri=str(tmp_path / "graph.db"),
                                     embed_model=ShortQueryEmbedding()) as index:
        bundle = QueryBundle(QUESTION, custom_embedding_strs=["a short answer", "fine"])
        retriever = index.as_retriever()
        with pytest.raises(EmbeddingModelError, match="different lengths"):
            await retriever.aretrieve(bundle) if use_async else retriever.retrieve(bundle)
