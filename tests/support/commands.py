"""The explorer's command in a process of its own, as a user starts and stops it."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def ctrl_c_as_in_a_terminal() -> None:
    """For ``Popen(preexec_fn=...)``: the child takes Ctrl-C (SIGINT) as in a terminal even
    when the tests run in the background (``nohup ... &``), where a shell starts commands
    with SIGINT ignored and every child inherits that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def get_json(url: str) -> Any:
    import urllib.request

    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


@contextmanager
def explorer_command(uri: Path, *arguments: str) -> Iterator[str]:
    """``python -m llama_index_graphrag_milvus.explore --uri URI --port 0 ARGUMENTS``
    started from the checkout; yields the URL it prints, then stops it with Ctrl-C (SIGINT)
    and checks that it exits with 0."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get(
        "PYTHONPATH", "")])}
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_index_graphrag_milvus.explore", "--uri", str(uri),
         "--port", "0", *arguments], cwd=ROOT, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=ctrl_c_as_in_a_terminal)
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)  # type: ignore[arg-type]
            assert selector.select(timeout=120), "the explorer printed nothing in 120 s"
        line = process.stdout.readline()  # type: ignore[union-attr]
        assert "open http://127.0.0.1:" in line, (line, process.stderr.read())  # type: ignore[union-attr]
        yield line.split("open ")[1].split()[0]
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 0, process.stderr.read()  # type: ignore[union-attr]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
