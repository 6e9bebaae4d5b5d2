"""What importing the package loads, seen by a fresh interpreter: one subprocess per test
process for the tests that check an optional dependency stays out of ``import`` (they share
the ``package_imports`` xdist group, so one worker runs them and this subprocess once)."""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WATCHED = ("spacy", "starlette", "uvicorn")
"""Optional dependencies the package must import only when a feature that needs them is used."""
IMPORTS = ("import sys, llama_index_graphrag_milvus as m, llama_index_graphrag_milvus.explain, "
           "llama_index_graphrag_milvus.explore; m.SpacyTripletExtractor; "
           f"print(sorted(name for name in {WATCHED!r} if name in sys.modules))")
"""The package, its explanation and explorer modules, and the spaCy extractor's class (a lazy
name of the root): what a user imports without running anything."""


@functools.cache
def watched_modules_after_import() -> frozenset[str]:
    """The :data:`WATCHED` modules in ``sys.modules`` after :data:`IMPORTS`, in a fresh
    interpreter started in the checkout (so it imports this checkout's package)."""
    result = subprocess.run([sys.executable, "-c", IMPORTS], capture_output=True, text=True,
                            check=False, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 1, result.stdout  # nothing else printed on import
    return frozenset(ast.literal_eval(lines[0]))
