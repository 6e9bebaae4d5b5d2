"""``python -m llama_index_graphrag_milvus.explore``: the explorer on an existing index.

Exit codes: 0 after Ctrl-C, 2 for what the command line must change (a wrong ``--uri`` or
prefix, an embedding model that does not load or does not fit, a port in use, the
``[explorer]`` extra missing), with one line on stderr that says what to do.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from llama_index.core.vector_stores import MetadataFilter, MetadataFilters

from llama_index_graphrag_milvus.cli.common import (
    USAGE_ERROR,
    check_lite_index,
    fail,
    load_embed_model,
    quiet_jieba,
)
from llama_index_graphrag_milvus.cli.models import DEFAULT_EMBED_MODEL
from llama_index_graphrag_milvus.errors import (
    EmbeddingModelError,
    GraphRAGError,
    InvalidInputError,
)

__all__ = ["USAGE_ERROR", "check_uri", "filters_of", "load_embed_model", "main", "parser"]


def check_uri(uri: str) -> None:
    """A Milvus Lite path must hold an index: the explorer opens one, it never creates one,
    and it leaves a path it refuses as it found it (see
    :func:`~llama_index_graphrag_milvus.cli.common.check_lite_index`)."""
    check_lite_index(uri)


def parser() -> argparse.ArgumentParser:
    result = argparse.ArgumentParser(
        prog="python -m llama_index_graphrag_milvus.explore",
        description="Explore a Graph RAG index in the browser: counts, entities and their "
                    "neighbourhoods, questions explained beside naive RAG, communities, "
                    "passages. Read-only.")
    result.add_argument("--uri", required=True,
                        help="Milvus Lite path (./graphrag.db) or server URL")
    result.add_argument("--collection-prefix", default="graphrag",
                        help="the index's collection prefix (default %(default)s)")
    result.add_argument("--token", default="", help="server or Zilliz Cloud credentials")
    result.add_argument("--embed-model", default=DEFAULT_EMBED_MODEL, metavar="MODULE:CALLABLE",
                        help="a function returning the LlamaIndex embedding model the index "
                             "was built with (default: all-MiniLM-L6-v2, offline, from the "
                             "[examples] extra: the model graphrag-milvus FOLDER builds with)")
    result.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default %(default)s: this machine only)")
    result.add_argument("--port", type=int, default=8765, help="default %(default)s; 0: any")
    result.add_argument("--filter", action="append", default=[], metavar="KEY=VALUE",
                        help="show only what the passages whose metadata KEY equals VALUE "
                             "support (one tenant's: --filter tenant_id=acme); repeat to "
                             "require several")
    return result


def filters_of(pairs: Sequence[str]) -> MetadataFilters | None:
    """``KEY=VALUE`` pairs as metadata filters (all must hold); ``None`` for none.

    >>> filters_of(["tenant_id=acme"]).filters[0].value
    'acme'
    >>> filters_of(["tenant_id"])
    Traceback (most recent call last):
    ...
    llama_index_graphrag_milvus.errors.InvalidInputError: --filter takes KEY=VALUE (the metadata key, then its value), got 'tenant_id'
    """  # noqa: E501
    if not pairs:
        return None
    found: list[MetadataFilter | MetadataFilters] = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidInputError(f"--filter takes KEY=VALUE (the metadata key, then its "
                                    f"value), got {pair!r}")
        found.append(MetadataFilter(key=key.strip(), value=value))
    return MetadataFilters(filters=found)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the explorer until Ctrl-C; see the module docstring for the exit codes."""
    args = parser().parse_args(argv)
    from llama_index_graphrag_milvus.explore.server import require_web, serve
    quiet_jieba()
    from llama_index_graphrag_milvus.index import GraphRAGIndex

    index = None
    try:
        require_web()
        check_uri(args.uri)
        embed_model = load_embed_model(args.embed_model)
        index = GraphRAGIndex(uri=args.uri, token=args.token,
                              collection_prefix=args.collection_prefix,
                              embed_model=embed_model)
        if index.store.dim is None:
            raise InvalidInputError(
                f"no index with --collection-prefix {args.collection_prefix!r} at {args.uri}; "
                f"collections there: {sorted(index.store.client.list_collections())}")
        server = serve(index, host=args.host, port=args.port,
                       filters=filters_of(args.filter))
    except GraphRAGError as exc:
        if index is not None:
            index.close()
        if isinstance(exc, EmbeddingModelError) and args.embed_model == DEFAULT_EMBED_MODEL:
            return fail("pass --embed-model MODULE:CALLABLE, a function returning the "
                        "embedding model the index was built with (the default, "
                        f"all-MiniLM-L6-v2, is not): {exc}")
        return fail(exc)
    print(f"Explorer of {args.uri} ({args.collection_prefix}): open {server.url}  "
          "(Ctrl-C stops it)", flush=True)
    try:
        server.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        index.close()
    return 0
