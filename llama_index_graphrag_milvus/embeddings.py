"""How the package calls the embedding model: every batch checked, queries on their side.

An embedding model is the user's: a local model, an API, a wrapper of their own. What it
returns is checked before anything is written or searched (:func:`check_vectors`): one vector
per text, all of one length, finite numbers also once stored as Milvus's 32-bit floats. A
model that breaks this gets an :class:`~llama_index_graphrag_milvus.errors.
EmbeddingModelError` naming it, and nothing is stored: a NaN stored in an entity's vector
would stay there (later writes reuse stored vectors) and blank every search it meets.

Some models embed a question differently from a passage (BGE's and E5's query instructions,
``input_type`` of Cohere or Voyage). The question is embedded as a query by LlamaIndex; the
second queries the bridge method writes are questions too, so they are embedded as queries
when the model tells the two apart (:func:`queries_apart`, probed once per index), and in one
batch of texts when it does not (the same vectors, one call).

A model whose async API is not written (``_aget_query_embedding`` raising
``NotImplementedError``, as a quick wrapper's often does) is called through its sync API in
a worker thread on the async paths (:func:`asynchronously`), as LlamaIndex's own defaults do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import ValidationError
from llama_index.core.embeddings.utils import resolve_embed_model
from llama_index.core.schema import QueryBundle
from llama_index.core.settings import Settings

from llama_index_graphrag_milvus.errors import EmbeddingModelError, InvalidInputError

SIDES_PROBE = "Which mathematician studied with Johann Bernoulli in Basel?"
"""The text embedded as a query and as a passage to learn whether a model tells them apart."""
SAME_SIDE_COSINE = 0.9999
"""A query vector at least this similar to the passage vector of the same text: one side."""

T = TypeVar("T")


async def asynchronously(call: Callable[[], Awaitable[T]], fallback: Callable[[], T]) -> T:
    """``await call()``, or ``fallback()`` in a worker thread when the model's async API
    raises ``NotImplementedError``.

    >>> async def missing() -> int:
    ...     raise NotImplementedError
    >>> asyncio.run(asynchronously(missing, lambda: 3))
    3
    """
    try:
        return await call()
    except NotImplementedError:
        return await asyncio.to_thread(fallback)


def resolve_model(embed_model: Any) -> BaseEmbedding:
    """An index's embedding model: ``embed_model`` itself, what LlamaIndex makes of a name
    (``"local:BAAI/bge-small-en-v1.5"``, ``"default"``) or of a LangChain model, or
    ``Settings.embed_model`` when it is ``None``.

    Raises:
        InvalidInputError: no model given and LlamaIndex's default (OpenAI) cannot be
            loaded, or something that is not an embedding model.

    >>> from llama_index.core.embeddings import MockEmbedding
    >>> resolve_model(MockEmbedding(embed_dim=4)).embed_dim
    4
    >>> resolve_model(42)
    Traceback (most recent call last):
    ...
    llama_index_graphrag_milvus.errors.InvalidInputError: embed_model must be a LlamaIndex embedding model (a BaseEmbedding, such as HuggingFaceEmbedding(model_name=...)) or a name LlamaIndex resolves ("local:<model name>"), got int 42
    """  # noqa: E501
    if embed_model is None:
        try:
            return Settings.embed_model
        except (ImportError, ValueError) as exc:
            raise InvalidInputError(
                "no embedding model: pass embed_model=... (any LlamaIndex BaseEmbedding, such "
                "as HuggingFaceEmbedding(model_name=...)) or set Settings.embed_model; "
                f"LlamaIndex's default, OpenAI, could not be loaded: {exc}") from exc
    if not isinstance(embed_model, BaseEmbedding):
        try:  # a name, a LangChain model: core's resolution (it asserts a BaseEmbedding)
            embed_model = resolve_embed_model(embed_model)
        except AssertionError:
            pass
        except (ValueError, ImportError, AttributeError) as exc:  # a name core cannot load
            raise InvalidInputError(f"embed_model {embed_model!r} cannot be loaded: {exc}"
                                    ) from exc
    if not isinstance(embed_model, BaseEmbedding):
        raise InvalidInputError(
            "embed_model must be a LlamaIndex embedding model (a BaseEmbedding, such as "
            'HuggingFaceEmbedding(model_name=...)) or a name LlamaIndex resolves ("local:'
            f'<model name>"), got {type(embed_model).__name__} {str(embed_model)[:80]}')
    return embed_model


def model_name(model: Any) -> str:
    """The embedding model as an error names it: its class and ``model_name``.

    >>> from llama_index.core.embeddings import MockEmbedding
    >>> model_name(MockEmbedding(embed_dim=4))
    "MockEmbedding 'unknown'"
    """
    return f"{type(model).__name__} {getattr(model, 'model_name', None)!r}"


def vector_matrix(rows: Sequence[Any]) -> tuple[np.ndarray, int | None]:
    """``rows`` as a matrix of floats, and the position of the first row holding a NaN, an
    infinity or a value beyond a 32-bit float's range (Milvus stores them as such), or None.

    Raises:
        TypeError, ValueError: values that are not numbers, or rows of different lengths.

    >>> vector_matrix([[1, 2], [3, float("inf")]])[1]
    1
    """
    with np.errstate(over="ignore", invalid="ignore"):
        array = np.asarray(rows, dtype=np.float64)
        finite = np.isfinite(array.astype(np.float32))
    if not array.size:
        return array, None
    bad = np.flatnonzero(~finite.reshape(len(array), -1).all(axis=1))
    return array, (int(bad[0]) if len(bad) else None)


def check_vectors(vectors: Any, count: int, model: Any) -> list[list[float]]:
    """The ``count`` vectors ``model`` returned for ``count`` texts, as lists of floats.

    Raises:
        EmbeddingModelError: another number of vectors than texts, vectors of different
            lengths or of none, values that are not numbers, or NaN or infinite ones (a
            value beyond a 32-bit float's range included: Milvus stores them as such).

    >>> check_vectors([[1, 0.5]], 1, None)
    [[1.0, 0.5]]
    >>> check_vectors([[1.0, float("nan")]], 1, None)
    Traceback (most recent call last):
    ...
    llama_index_graphrag_milvus.errors.EmbeddingModelError: the embedding model (NoneType None) returned NaN or infinite values (text 1 of 1): check the model (a NaN often comes from an empty or over-long text, or from a half-precision overflow); nothing was stored or searched.
    """  # noqa: E501
    fix = "nothing was stored or searched."
    try:
        rows = list(vectors)
    except TypeError:
        rows = None
    if rows is None or len(rows) != count:
        got = "no list" if rows is None else f"{len(rows)} vectors"
        raise EmbeddingModelError(f"the embedding model ({model_name(model)}) returned {got} "
                                  f"for {count} texts: check the model; {fix}")
    if not rows:
        return []
    try:
        array, first = vector_matrix(rows)
    except (TypeError, ValueError) as exc:
        lengths = sorted({len(r) for r in rows if hasattr(r, "__len__")})
        what = (f"vectors of different lengths ({', '.join(map(str, lengths[:4]))})"
                if len(lengths) > 1 else "values that are not numbers")
        raise EmbeddingModelError(f"the embedding model ({model_name(model)}) returned "
                                  f"{what}: check the model; {fix}") from exc
    if array.ndim != 2 or array.shape[1] == 0:
        raise EmbeddingModelError(f"the embedding model ({model_name(model)}) returned "
                                  f"empty vectors or no vectors of numbers: check the model; "
                                  f"{fix}")
    if first is not None:
        raise EmbeddingModelError(
            f"the embedding model ({model_name(model)}) returned NaN or infinite values (text "
            f"{first + 1} of {count}): check the model (a NaN often comes from an empty or "
            f"over-long text, or from a half-precision overflow); {fix}")
    return array.tolist()


@contextmanager
def answered(model: Any) -> Iterator[None]:
    """Calls of ``model`` whose answers LlamaIndex itself refused (its embedding event takes
    lists of numbers only: a model returning ``None`` failed there) raise the package's
    :class:`EmbeddingModelError` naming the model."""
    try:
        yield
    except ValidationError as exc:
        problems = "; ".join(f"{error['msg']} (got {error['input']!r:.40})"
                             for error in exc.errors()[:2])
        raise EmbeddingModelError(
            f"the embedding model ({model_name(model)}) returned something that is not a "
            f"list of numbers per text, which LlamaIndex refused: {problems}; check the "
            "model; nothing was stored or searched.") from exc


def embed_query(model: BaseEmbedding, text: str) -> list[float]:
    """The query vector of ``text``, checked (:func:`check_vectors`)."""
    with answered(model):
        vector = model.get_query_embedding(text)
    return check_vectors([vector], 1, model)[0]


async def aembed_query(model: BaseEmbedding, text: str) -> list[float]:
    """:func:`embed_query` through the model's async API."""
    with answered(model):
        vector = await _aquery(model, text)
    return check_vectors([vector], 1, model)[0]


def chosen_strs(bundle: QueryBundle | None) -> list[str]:
    """The texts a caller chose to embed for a query (``QueryBundle.custom_embedding_strs``,
    as a HyDE transform writes them: a hypothetical answer, the question), the blank ones
    left out; empty when it chose none (the question itself is embedded then).

    >>> chosen_strs(QueryBundle("q", custom_embedding_strs=["an answer", " ", "q"]))
    ['an answer', 'q']
    """
    strs = bundle.custom_embedding_strs if bundle is not None else None
    return [s for s in strs or () if isinstance(s, str) and s.strip()]


def embed_question(model: BaseEmbedding, text: str, bundle: QueryBundle | None = None
                   ) -> list[float]:
    """The query vector of a question as core's retrievers make it: the mean of the query
    vectors of ``bundle``'s chosen texts (:func:`chosen_strs`; core's
    ``get_agg_embedding_from_queries``, each vector checked first), else that of ``text``."""
    strs = chosen_strs(bundle)
    if not strs:
        return embed_query(model, text)
    with answered(model):
        vectors = [model.get_query_embedding(s) for s in strs]
    return _mean(check_vectors(vectors, len(strs), model))


async def aembed_question(model: BaseEmbedding, text: str, bundle: QueryBundle | None = None
                          ) -> list[float]:
    """:func:`embed_question` through the model's async API."""
    strs = chosen_strs(bundle)
    if not strs:
        return await aembed_query(model, text)
    with answered(model):
        vectors = await asyncio.gather(*(_aquery(model, s) for s in strs))
    return _mean(check_vectors(vectors, len(strs), model))


def _mean(vectors: list[list[float]]) -> list[float]:
    """The mean of checked vectors (core's aggregation of a bundle's texts)."""
    return np.mean(np.asarray(vectors, np.float64), axis=0).tolist()


def _aquery(model: BaseEmbedding, text: str) -> Awaitable[list[float]]:
    return asynchronously(lambda: model.aget_query_embedding(text),
                          lambda: model.get_query_embedding(text))


def embed_texts(model: BaseEmbedding, texts: Sequence[str], show_progress: bool = False
                ) -> list[list[float]]:
    """The passage-side vectors of ``texts``, one batch call, checked."""
    if not texts:
        return []
    with answered(model):
        vectors = model.get_text_embedding_batch(list(texts), show_progress=show_progress)
    return check_vectors(vectors, len(texts), model)


async def aembed_texts(model: BaseEmbedding, texts: Sequence[str]) -> list[list[float]]:
    """:func:`embed_texts` through the model's async API."""
    if not texts:
        return []
    with answered(model):
        vectors = await asynchronously(lambda: model.aget_text_embedding_batch(list(texts)),
                                       lambda: model.get_text_embedding_batch(list(texts)))
    return check_vectors(vectors, len(texts), model)


def _apart(query: Any, text: Any, model: BaseEmbedding) -> bool:
    q, t = (np.asarray(v, np.float64) for v in check_vectors([query, text], 2, model))
    norms = float(np.linalg.norm(q) * np.linalg.norm(t))
    return (norms == 0.0 and not np.array_equal(q, t)) or \
        (norms > 0.0 and float(q @ t) / norms < SAME_SIDE_COSINE)


def queries_apart(model: BaseEmbedding) -> bool:
    """Whether ``model`` embeds a text as a query otherwise than as a passage (two calls,
    on :data:`SIDES_PROBE`).

    >>> from llama_index.core.embeddings import MockEmbedding
    >>> queries_apart(MockEmbedding(embed_dim=4))
    False
    """
    with answered(model):
        query, text = (model.get_query_embedding(SIDES_PROBE),
                       model.get_text_embedding(SIDES_PROBE))
    return _apart(query, text, model)


async def aqueries_apart(model: BaseEmbedding) -> bool:
    """:func:`queries_apart` through the model's async API."""
    query, text = await asyncio.gather(aembed_query(model, SIDES_PROBE),
                                       aembed_texts(model, [SIDES_PROBE]))
    return _apart(query, text[0], model)


def embed_queries(model: BaseEmbedding, texts: Sequence[str], apart: bool
                  ) -> list[list[float]]:
    """The query-side vectors of ``texts``: one call per text when the model embeds queries
    apart (``apart``, from :func:`queries_apart`), else one batch of texts; checked."""
    if not apart:
        return embed_texts(model, texts)
    with answered(model):
        vectors = [model.get_query_embedding(t) for t in texts]
    return check_vectors(vectors, len(texts), model)


async def aembed_queries(model: BaseEmbedding, texts: Sequence[str], apart: bool
                         ) -> list[list[float]]:
    """:func:`embed_queries` through the model's async API (the calls side by side)."""
    if not apart:
        return await aembed_texts(model, texts)
    with answered(model):
        vectors = await asyncio.gather(*(_aquery(model, t) for t in texts))
    return check_vectors(vectors, len(texts), model)
