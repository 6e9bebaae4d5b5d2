"""The retriever's ``blas_threads``: numpy's OpenBLAS set to that many threads by the first
query (its idle threads otherwise spin and slow the embedding model), left alone with
``None`` or when the environment chose (``OPENBLAS_NUM_THREADS``)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import numpy as np
import pytest
from threadpoolctl import ThreadpoolController

from llama_index_graphrag_milvus import GraphRAGIndex
from llama_index_graphrag_milvus.retrieval import retriever as retriever_module
from llama_index_graphrag_milvus.retrieval.threads import BlasThreads

XDIST_GROUP = "blas_threads"  # one worker builds the module's index once

assert np  # numpy's OpenBLAS is loaded
QUESTION = "What did the son of Euler's teacher contribute?"


def numpy_threads() -> int:
    """The threads of numpy's OpenBLAS, as threadpoolctl reads them."""
    [library] = [info for info in ThreadpoolController().info()
                 if info["internal_api"] == "openblas" and "numpy" in info["filepath"]]
    return int(library["num_threads"])


@pytest.fixture
def three_threads() -> Iterator[None]:
    """numpy's OpenBLAS on 3 threads (as on a 3-core machine), put back afterwards."""
    controller = ThreadpoolController().select(internal_api="openblas")
    limiter = controller.limit(limits=3)
    try:
        yield
    finally:
        limiter.restore_original_limits()


def test_the_threads_are_set_once_and_kept(three_threads: None) -> None:
    assert numpy_threads() == 3
    threads = BlasThreads(environ={})
    threads.limit(1)
    assert numpy_threads() == 1 and threads.threads == 1
    threads.limit(2)  # another retriever's setting
    assert numpy_threads() == 2


@pytest.mark.parametrize(("environ", "threads"), [({}, None),
                                                  ({"OPENBLAS_NUM_THREADS": "3"}, 1)])
def test_none_or_the_environments_setting_leaves_them(three_threads: None,
                                                      environ: dict[str, str],
                                                      threads: int | None) -> None:
    setter = BlasThreads(environ=environ)
    setter.limit(threads)
    assert numpy_threads() == 3 and setter.threads is None


@pytest.mark.parametrize(("blas_threads", "expected", "asynchronous"),
                         [(None, 3, False), (1, 1, False), (2, 2, False), (1, 1, True)])
def test_the_first_query_sets_them(three_threads: None, shared_family_index: GraphRAGIndex,
                                   monkeypatch: pytest.MonkeyPatch, blas_threads: int | None,
                                   expected: int, asynchronous: bool) -> None:
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.setattr(retriever_module, "PROCESS_BLAS", BlasThreads())
    retriever = shared_family_index.as_retriever(similarity_top_k=3, blas_threads=blas_threads)
    assert numpy_threads() == 3  # not before a query
    assert (asyncio.run(retriever.aretrieve(QUESTION)) if asynchronous
            else retriever.retrieve(QUESTION))
    assert numpy_threads() == expected
    assert retriever.describe()["blas_threads"] == blas_threads
