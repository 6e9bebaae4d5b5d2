"""serve() and the command line: a real server on a free port, clean errors, exit codes."""

from __future__ import annotations

import re
import socket
from pathlib import Path
from typing import Any

import pytest

from llama_index_graphrag_milvus import GraphRAGIndex, InvalidInputError
from llama_index_graphrag_milvus.explore import serve
from llama_index_graphrag_milvus.explore.cli import main
from tests.support.commands import explorer_command, get_json
from tests.support.explain_data import FAMILY_WITH_HOSTILE_PASSAGES, build
from tests.support.fakes import HashEmbedding
from tests.support.imports import watched_modules_after_import

pytestmark = pytest.mark.milvus

ROOT = Path(__file__).resolve().parents[2]
EMBED = "tests.support.fakes:HashEmbedding"


@pytest.fixture
def index(tmp_path: Path) -> GraphRAGIndex:
    built = build(tmp_path / "family.db")
    yield built
    built.close()


def test_serve_runs_in_the_background_until_stopped(index: GraphRAGIndex) -> None:
    with serve(index, port=0) as server:
        assert server.url.startswith("http://127.0.0.1:") and server.running
        assert get_json(server.url + "api/summary")["counts"]["passages"] == 6
        assert index.as_retriever().retrieve("Euler")  # the index stays usable meanwhile
    assert not server.running


def test_a_port_in_use_is_a_clear_error(index: GraphRAGIndex) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(InvalidInputError, match=f"port {port} on 127.0.0.1 is in use"):
            serve(index, port=port)


@pytest.mark.parametrize(("host", "port", "message"), [
    ("127.0.0.1", 65536, "port must be an integer from 0 to 65535, got 65536"),
    ("127.0.0.1", "8765", "port must be an integer from 0 to 65535, got '8765'"),
    ("127.0.0.1", True, "port must be an integer from 0 to 65535, got True"),
    (None, 0, "host must be an address such as 127.0.0.1, got NoneType"),
])
def test_a_bad_address_is_a_clear_error(index: GraphRAGIndex, host: Any, port: Any,
                                        message: str) -> None:
    with pytest.raises(InvalidInputError, match=re.escape(message)):
        serve(index, host=host, port=port)


@pytest.mark.xdist_group("package_imports")
def test_importing_the_package_does_not_import_the_web_framework() -> None:
    # the package, .explain and .explore imported in a fresh interpreter (shared with the
    # check that spaCy stays out too)
    assert watched_modules_after_import().isdisjoint({"starlette", "uvicorn"})


def missing_model_files() -> object:
    """Fails as a model loader does when its path does not exist."""
    return open("/nonexistent/graphrag-model/config.json")


def tree(path: Path) -> list[tuple[str, int, int]] | None:
    """What is at ``path``: each file and folder with its size and modification time."""
    if not path.exists():
        return None
    found = [path, *sorted(path.rglob("*"))] if path.is_dir() else [path]
    return [(str(p.relative_to(path.parent)), p.stat().st_size, p.stat().st_mtime_ns)
            for p in found]


def make_path(tmp_path: Path, kind: str) -> Path:
    """The ``--uri`` of one refused case, made as a user would have it."""
    if kind == "index":
        build(tmp_path / "family.db").close()
        return tmp_path / "family.db"
    if kind == "plain folder":
        (tmp_path / "notes").mkdir()
        (tmp_path / "notes" / "a.txt").write_text("keep me", encoding="utf-8")
        return tmp_path / "notes"
    if kind == "empty file":
        (tmp_path / "x.db").touch()
        return tmp_path / "x.db"
    if kind == "empty folder":
        (tmp_path / "x.db").mkdir()
        return tmp_path / "x.db"
    return tmp_path / "missing.db"


@pytest.mark.parametrize(("kind", "arguments", "message"), [
    ("missing", [], "no Milvus Lite index there"),
    ("plain folder", [], "Milvus Lite opens only folders whose name ends in .db"),
    ("empty file", [], "is a file, not a Milvus Lite index"),
    ("empty folder", [], "holds no Milvus Lite index (no collections/ in it)"),
    ("index", ["--collection-prefix", "other"], "no index with --collection-prefix 'other'"),
    ("index", ["--embed-model", "no_such_module:model"], "cannot load it"),
    ("index", ["--embed-model", "tests.support.fakes"], "takes MODULE:CALLABLE"),
    ("index", ["--embed-model", "examples.bernoulli:QUESTION"],
     "examples.bernoulli:QUESTION names a str, neither a LlamaIndex embedding model"),
    ("index", ["--embed-model", "examples.bernoulli:first_line"],
     "examples.bernoulli:first_line needs arguments (hit)"),
    ("index", ["--embed-model", "tests.explore.test_server:missing_model_files"],
     "missing_model_files failed: FileNotFoundError: [Errno 2] No such file or directory"),
    ("index", ["--embed-model", "tests.support.fakes:ScriptedLLM"], "needs arguments (script)"),
    ("index", ["--port", "99999"], "port must be an integer from 0 to 65535, got 99999 (0 takes "
                                   "a free one)"),
    ("index", ["--port", "-1"], "port must be an integer from 0 to 65535, got -1"),
])
def test_the_command_line_says_what_to_fix_and_leaves_the_path_alone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, arguments: list[str],
        message: str) -> None:
    uri = make_path(tmp_path, kind)
    before = tree(uri)
    argv = ["--uri", str(uri), "--embed-model", EMBED, *arguments]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err, err
    assert tree(uri) == before  # a read-only command leaves a path it refuses as it was


def test_the_command_line_refuses_a_port_in_use(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "family.db"
    build(db).close()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        assert main(["--uri", str(db), "--embed-model", EMBED, "--port", port]) == 2
    assert f"port {port} on 127.0.0.1 is in use" in capsys.readouterr().err


def test_the_command_serves_until_interrupted(tmp_path: Path) -> None:
    db = tmp_path / "family.db"
    build(db).close()  # Milvus Lite: one process per file
    with explorer_command(db, "--embed-model", EMBED) as url:
        assert get_json(url + "api/summary")["counts"]["relations"] == 8


@pytest.mark.model
@pytest.mark.parametrize(("dim", "message"), [
    (64, "the embedding model gives 384-dimensional vectors"),
    # as all-MiniLM-L6-v2's: the default model loads, fits, and gives other vectors
    (384, "was built with HashEmbedding(model_name='unknown', dim=384)"),
])
def test_a_default_model_that_did_not_build_the_index_is_refused_with_the_flag_to_pass(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], dim: int, message: str) -> None:
    db = tmp_path / "family.db"
    GraphRAGIndex.from_triplets(FAMILY_WITH_HOSTILE_PASSAGES, uri=str(db),
                                embed_model=HashEmbedding(dim=dim)).close()
    before = tree(db)
    assert main(["--uri", str(db)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert err.startswith("error: pass --embed-model MODULE:CALLABLE, a function returning "
                          "the embedding model the index was built with (the default, "
                          "all-MiniLM-L6-v2, is not): "), err
    assert tree(db) == before
