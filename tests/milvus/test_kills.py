"""A write killed by SIGKILL at any step, then run again, leaves what a clean run leaves.

The operation runs in a child process (forked from a forkserver that has imported the
package once, so a child starts in a fraction of a second) that kills itself just before a
chosen store call; the child must die by SIGKILL, or the kill point was never reached.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator
from functools import cache
from multiprocessing.context import ForkServerContext
from typing import Any

import pytest

from tests.support import kill_scenarios
from tests.support.kill_scenarios import OPERATIONS, content, open_index, prepare

KILL_POINTS = [
    # (operation, store method killed before its first call, on the collection ending with)
    ("ingest", "upsert_rows", "_entities"),     # passages written, nothing else
    ("ingest", "upsert_rows", "_relations"),    # passages and entities written
    ("ingest", "flush", None),                  # every row written, not flushed
    ("delete", "delete_rows", "_entities"),     # nothing removed yet
    ("delete", "delete_rows", "_relations"),    # orphaned entities removed, relations not
    ("delete", "delete_rows", "_passages"),     # relations unlinked, passages still there
    ("update", "delete_rows", "_relations"),    # in the delete of the old content
    ("update", "upsert_passages", None),        # old content deleted, new not written
    ("update", "upsert_rows", "_entities"),     # new passages written, entities not
]
SERVER_KILL_POINTS = [KILL_POINTS[1], KILL_POINTS[4], KILL_POINTS[7]]
XDIST_GROUP = "kills"
"""The Lite tests run on one xdist worker, which starts the forkserver and makes the clean
runs (module fixtures) once; the server's tests make their own on the server's worker
(tests/conftest.py), which is the suite's longest: it would take them 30 s longer."""


@pytest.fixture(scope="module")
def forkserver() -> Iterator[ForkServerContext]:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["tests.support.kill_scenarios"])
    yield context


CleanRun = Callable[[str], dict[str, list[tuple[Any, ...]]]]


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory: pytest.TempPathFactory) -> CleanRun:
    """What each operation leaves when nothing kills it: computed once, on Milvus Lite (the
    stored rows are the same on a server: ids are hashes, and vectors are left out)."""
    uri = str(tmp_path_factory.mktemp("clean") / "clean.db")

    @cache
    def run(operation: str) -> dict[str, list[tuple[Any, ...]]]:
        prepare(uri, operation, operation)
        with open_index(uri, operation) as index:
            OPERATIONS[operation](index)
            return content(index)

    return run


def killed_then_rerun_equals_clean(context: ForkServerContext, clean_run: CleanRun, uri: str,
                                   operation: str, method: str, suffix: str | None) -> None:
    prepare(uri, "killed", operation)
    child = context.Process(target=kill_scenarios.run_killed,
                            args=(uri, "killed", operation, method, suffix))
    child.start()
    child.join()
    assert child.exitcode == -9, f"the child was not killed at {method} ({child.exitcode})"
    with open_index(uri, "killed") as index:
        OPERATIONS[operation](index)
        after_rerun = content(index)
    clean = clean_run(operation)
    assert after_rerun == clean
    assert clean["passages"], "the scenario must leave passages"


@pytest.mark.parametrize("milvus_uri", ["lite"], indirect=True)
@pytest.mark.parametrize(("operation", "method", "suffix"), KILL_POINTS)
def test_a_killed_write_run_again_equals_a_clean_run_lite(
        forkserver: ForkServerContext, clean_run: CleanRun, milvus_uri: str, operation: str,
        method: str, suffix: str | None) -> None:
    killed_then_rerun_equals_clean(forkserver, clean_run, milvus_uri, operation, method, suffix)


@pytest.mark.server
@pytest.mark.parametrize("milvus_uri", ["server"], indirect=True)
@pytest.mark.parametrize(("operation", "method", "suffix"), SERVER_KILL_POINTS)
def test_a_killed_write_run_again_equals_a_clean_run_server(
        forkserver: ForkServerContext, clean_run: CleanRun, milvus_uri: str, operation: str,
        method: str, suffix: str | None) -> None:
    killed_then_rerun_equals_clean(forkserver, clean_run, milvus_uri, operation, method, suffix)
