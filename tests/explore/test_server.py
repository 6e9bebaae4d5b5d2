"""serve() and the command line: a real server on a free port, clean errors, exit codes."""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from llama_index_graphrag_milvus import GraphRAGIndex, InvalidInputError
from llama_index_graphrag_milvus.explore import serve
from llama_index_graphrag_milvus.explore.cli import main
from tests.explain_data import build

pytestmark = pytest.mark.milvus

ROOT = Path(__file__).resolve().parents[2]
EMBED = "tests.fakes:HashEmbedding"


@pytest.fixture
def index(tmp_path: Path) -> GraphRAGIndex:
    built = build(tmp_path / "family.db")
    yield built
    built.close()


def get_json(url: str) -> object:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


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


def test_importing_the_package_does_not_import_the_web_framework() -> None:
    code = ("import sys, llama_index_graphrag_milvus, llama_index_graphrag_milvus.explain, "
            "llama_index_graphrag_milvus.explore; "
            "print(sorted(m for m in ('starlette', 'uvicorn') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, cwd=ROOT)
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(("arguments", "message"), [
    (["--uri", "{tmp}/missing.db", "--embed-model", EMBED], "no Milvus Lite index there"),
    (["--uri", "{db}", "--embed-model", "no_such_module:model"], "cannot load it"),
    (["--uri", "{db}", "--embed-model", "tests.fakes"], "takes MODULE:CALLABLE"),
    (["--uri", "{db}", "--embed-model", EMBED, "--collection-prefix", "other"],
     "no index with --collection-prefix 'other'"),
])
def test_the_command_line_says_what_to_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           arguments: list[str], message: str) -> None:
    db = tmp_path / "family.db"
    build(db).close()
    argv = [a.format(tmp=tmp_path, db=db) for a in arguments]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


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
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get(
        "PYTHONPATH", "")])}
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_index_graphrag_milvus.explore", "--uri", str(db),
         "--embed-model", EMBED, "--port", "0"], cwd=ROOT, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            assert selector.select(timeout=120), "the explorer printed nothing in 120 s"
        line = process.stdout.readline()
        assert "open http://127.0.0.1:" in line, (line, process.stderr.read())
        url = line.split("open ")[1].split()[0]
        assert get_json(url + "api/summary")["counts"]["relations"] == 8
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
