"""Benchmarks of llama_index_graphrag_milvus, run as modules from a checkout of the repository
(they are not part of the wheel), for example::

    pip install -e ".[bench]"
    python -m benchmarks.multihop --help
    python -m benchmarks.multihop ../shared/benchmarks/musique_train100 --out bench_out
    python -m benchmarks.scale --sizes 10000 100000 --out bench_out/scale

The others: ``benchmarks.communities``, ``benchmarks.global_search``,
``benchmarks.extraction``, ``benchmarks.ingest``, ``benchmarks.consistency``,
``benchmarks.throughput``, ``benchmarks.restart``, ``benchmarks.explorer``,
``benchmarks.served``, ``benchmarks.load`` (each module's docstring says how).

They need the ``bench`` extra (matplotlib for the charts; all-MiniLM-L6-v2 for the default
embedding model), imported lazily so that importing this package costs nothing.
"""

from __future__ import annotations

import argparse


def command_parser(module: str, doc: str | None) -> argparse.ArgumentParser:
    """The argument parser of ``python -m <module>``: that as its usage name, and the first
    paragraph of the module's docstring, whole, as its description."""
    paragraph = " ".join((doc or "").split("\n\n")[0].split())
    return argparse.ArgumentParser(prog=f"python -m {module}", description=paragraph or None)
