"""``graphrag-milvus FOLDER``: try Graph RAG on your own files in one command.

Indexes the files of a folder (offline by default: spaCy extracts the triplets,
all-MiniLM-L6-v2 embeds; a new index gets Milvus's full-text search where Milvus has it),
then asks questions (``--ask``: Milvus's hybrid search, dense + BM25, beside the graph's
passages; naive RAG's on an index made without full-text search) or opens the explorer on
the index (``--explore``). Run again, it skips the
documents already stored: Ctrl-C loses at most the batch in progress.

Exit codes: 0 when done, 2 for what the command line must change (one line on stderr; the
``--uri`` path is left untouched), 130 after Ctrl-C. ``python -m
llama_index_graphrag_milvus.cli`` is the same command.

Example::

    graphrag-milvus ./docs --ask "Who founded the company that made the first product?"
    graphrag-milvus ./docs --explore
"""

from __future__ import annotations

import argparse
import shutil
import socket
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llama_index_graphrag_milvus.cli.common import (
    INTERRUPTED,
    MAX_LISTED,
    check_lite_target,
    fail,
    is_server,
    load_embed_model,
    one_line,
    quiet_jieba,
    shorten,
)
from llama_index_graphrag_milvus.cli.folder import BATCH_PASSAGES
from llama_index_graphrag_milvus.cli.models import DEFAULT_EMBED_MODEL, extractor, load_llm
from llama_index_graphrag_milvus.errors import (
    EmbeddingModelError,
    GraphRAGError,
    InvalidInputError,
    UnsplitTextWarning,
)
from llama_index_graphrag_milvus.milvus.fulltext import JIEBA, runs_jieba

if TYPE_CHECKING:
    from llama_index_graphrag_milvus.cli.folder import Folder, Progress
    from llama_index_graphrag_milvus.index import GraphRAGIndex

PROG = "graphrag-milvus"
METHODS = ("bridge", "ppr", "pcst", "passage", "relation")


def parser() -> argparse.ArgumentParser:
    """The command line (see the module docstring)."""
    result = argparse.ArgumentParser(
        prog=PROG, description="Index a folder of files as a Graph RAG index on Milvus, then "
        "ask questions (naive RAG beside the graph) or explore it in the browser. Run again "
        "to go on after Ctrl-C or to add new files: what is stored is skipped.")
    result.add_argument("folder", type=Path, help="the folder of files to index (recursive)")
    result.add_argument("--uri", help="Milvus Lite path ending in .db, or a server URL "
                        "(default: ./FOLDER_NAME.db)")
    result.add_argument("--token", default="", help="server or Zilliz Cloud credentials")
    result.add_argument("--collection-prefix", default="graphrag",
                        help="the index's collection prefix (default %(default)s)")
    result.add_argument("--embed-model", default=DEFAULT_EMBED_MODEL, metavar="MODULE:CALLABLE",
                        help="a function returning the LlamaIndex embedding model (default: "
                             "all-MiniLM-L6-v2, offline, from the [examples] extra)")
    result.add_argument("--llm", metavar="MODULE:CALLABLE",
                        help="a function returning a LlamaIndex LLM to extract the triplets "
                             "(default: spaCy, offline, from the [nlp] extra)")
    result.add_argument("--extensions", help="only these file types, e.g. .txt,.md "
                        "(default: every file SimpleDirectoryReader reads)")
    result.add_argument("--chunk-size", type=int, default=1024,
                        help="tokens per passage (default %(default)s)")
    result.add_argument("--batch-size", type=int, default=BATCH_PASSAGES,
                        help="passages extracted and stored together (default %(default)s): "
                             "Ctrl-C loses at most one batch")
    result.add_argument("--ask", action="append", default=[], metavar="QUESTION",
                        help="a question to answer after indexing (repeatable)")
    result.add_argument("--method", choices=METHODS, default="bridge",
                        help="the graph retrieval method (default %(default)s)")
    result.add_argument("--top-k", type=int, default=5,
                        help="passages per list (default %(default)s)")
    result.add_argument("--explore", action="store_true",
                        help="open the explorer on the index after indexing (the "
                             "[explorer] extra; Ctrl-C stops it)")
    result.add_argument("--upgrade", action="store_true",
                        help="bring an index made by an earlier version to this version's "
                             "layout first (index.upgrade(); no other process may write to "
                             "it meanwhile)")
    result.add_argument("--host", default="127.0.0.1", help="explorer address")
    result.add_argument("--port", type=int, default=8765, help="explorer port (0: any)")
    return result


def default_uri(folder: Path) -> str:
    """``./<folder name>.db`` in the current directory.

    >>> default_uri(Path("/home/me/my docs"))
    './my docs.db'
    """
    return f"./{folder.resolve().name or 'graphrag'}.db"


def check_port_free(host: str, port: int) -> None:
    """Refuse a taken explorer port before hours of indexing, not after.

    Raises:
        InvalidInputError: ``port`` (not 0) cannot be bound on ``host``.
    """
    if port == 0:
        return
    try:
        with socket.create_server((host, port)):
            pass
    except OSError as exc:
        raise InvalidInputError(
            f"the explorer cannot listen on {host}:{port} ({exc.strerror or exc}): pass "
            "another --port, or --port 0 for any free one") from exc


def say(text: str, end: str = "\n") -> None:
    print(text, end=end, flush=True)


def prepare(args: argparse.Namespace) -> tuple[Folder, Any, Any]:
    """Everything checked and loaded before the index is opened (a refused command leaves
    ``--uri`` as it was): the folder read and split, the models, the extractor."""
    from llama_index_graphrag_milvus.cli.folder import read_folder, unread_hint
    from llama_index_graphrag_milvus.validation import check_int, is_utf8

    check_int("--chunk-size", args.chunk_size, minimum=64)
    check_int("--batch-size", args.batch_size)
    check_int("--top-k", args.top_k, maximum=50)
    check_int("--port", args.port, minimum=0, maximum=65535, hint="0 takes a free one")
    check_lite_target(args.uri)
    for question in args.ask:  # refused before hours of indexing, not after
        if not question.strip():
            raise InvalidInputError("--ask takes a question, got an empty one")
        if not is_utf8(question):
            raise InvalidInputError(
                f"--ask {one_line(question)!r} holds bytes that are not UTF-8 text (the "
                "terminal's encoding is another one): set a UTF-8 locale (LANG=C.UTF-8) "
                "or type the question again")
    if args.explore:
        from llama_index_graphrag_milvus.explore.server import require_web

        require_web()
        check_port_free(args.host, args.port)
    extensions = ([e if e.startswith(".") else f".{e}" for e in args.extensions.split(",")
                   if e.strip()] if args.extensions else None)
    folder = read_folder(args.folder, chunk_size=args.chunk_size, extensions=extensions,
                         excluded=[] if is_server(args.uri) else [Path(args.uri)])
    say(f"Read {len(folder.documents)} documents ({folder.passages} passages) from "
        f"{args.folder}" + (f"; {len(folder.empty)} empty files skipped" if folder.empty
                            else ""))
    if folder.unread:
        say(f"Not read ({len(folder.unread)}): " + ", ".join(
            f"{shorten(name, 80)} ({why})" for name, why in folder.unread[:MAX_LISTED])
            + (", ..." if len(folder.unread) > MAX_LISTED else "") + unread_hint(folder.unread))
    languages = folder.languages
    if not args.llm and languages.mostly_not_english:
        tell = (f" long enough to tell (of {languages.passages})"
                if languages.told < languages.passages else "")
        say(f"Note: {languages.not_english} of {languages.told} passages{tell} do not read as "
            "English, and spaCy's English model extracts poor triplets from other languages "
            "(names run into words; none from Chinese or Japanese): pass --llm "
            "MODULE:CALLABLE to extract them with an LLM.")
    started = time.perf_counter()
    say("Loading the models...", end=" ")
    try:
        embed_model = load_embed_model(args.embed_model)
        llm = load_llm(args.llm) if args.llm else None
        kg_extractor = extractor(llm)
    except BaseException:
        say("failed")
        raise
    say(f"{time.perf_counter() - started:.1f} s")
    return folder, embed_model, kg_extractor


def index_folder(index: GraphRAGIndex, folder: Folder, kg_extractor: Any,
                 progress: Progress, batch_size: int) -> None:
    """Store the documents the index does not hold yet, with a progress bar and its ETA."""
    from tqdm.auto import tqdm

    from llama_index_graphrag_milvus.cli.folder import files_gone, ingest, stored_documents

    if index.passage_identity_keys != "*":  # the ids depend on the index's rule
        folder = folder.keyed(index.passage_identity_keys)
    gone = files_gone(index, folder)
    if gone:
        for doc_id in gone:
            index.delete_ref_doc(doc_id)
        say(f"Removed {len(gone)} documents whose files are gone (deleted, renamed or "
            "moved): " + ", ".join(shorten(folder.shown(doc_id), 80)
                                   for doc_id in gone[:MAX_LISTED])
            + (", ..." if len(gone) > MAX_LISTED else ""))
    stored = stored_documents(index, folder)
    todo = [d for d in folder.documents if d.doc_id not in stored]
    if stored:
        say(f"{len(stored)} of {len(folder.documents)} documents are stored already: "
            "skipped")
    if not todo:
        return
    with tqdm(total=sum(len(d.passage_ids) for d in todo), unit="passage",
              desc=f"Indexing {len(todo)} documents", dynamic_ncols=True) as bar:
        ingest(index, todo, kg_extractor, progress, batch_size,
               on_batch=lambda documents, passages: bar.update(passages))
    if progress.replaced:
        say("Changed since they were stored, replaced: "
            + ", ".join(shorten(name, 80) for name in progress.replaced))
    if progress.failed_extractions:
        say(f"{progress.failed_extractions} passages were stored without triplets: the LLM "
            "failed to extract them (see the warnings above); run the command again to "
            "ask it again")


def open_index(args: argparse.Namespace, embed_model: Any, han_or_kana: bool = False
               ) -> GraphRAGIndex:
    """The folder's index: a new one with Milvus's full-text search where Milvus has it
    (the index's default: the hybrid baseline, and BM25 in the second hop), an existing one
    as it was made. For passages mostly Chinese or Japanese (``han_or_kana``), which Milvus's
    standard analyzer leaves unsplit, a new index segments them with jieba (Milvus Lite
    needs the ``jieba`` package; a server has it)."""
    from llama_index_graphrag_milvus.index import GraphRAGIndex

    options = {"uri": args.uri, "token": args.token,
               "collection_prefix": args.collection_prefix, "embed_model": embed_model}
    if han_or_kana and runs_jieba(not is_server(args.uri)):
        try:
            return GraphRAGIndex(**options, full_text_analyzer=JIEBA)
        except InvalidInputError:  # made without it or with another analyzer, or a server
            # before Milvus 2.5
            pass
    return GraphRAGIndex(**options)


def segmentation_note(index: GraphRAGIndex) -> str | None:
    """What to say when most passages are Chinese or Japanese: how the index's BM25 splits
    them (``None``: it segments them)."""
    if not index.store.full_text or index.store.full_text_analyzer == JIEBA:
        return None
    how = ("install jieba (pip install jieba), then index the folder into a new index "
           "(--uri)" if not runs_jieba(index.store.is_lite)
           else "index the folder into a new index (--uri): it segments them with jieba")
    return ("Note: most passages are Chinese or Japanese, which this index's BM25 (Milvus's "
            "standard analyzer) does not split into words: the hybrid baseline and the "
            f"graph's word lists match little of them; {how}.")


def upgrade(index: GraphRAGIndex, asked: bool) -> None:
    """Upgrade an index made by an earlier version when ``asked`` (``--upgrade``), else
    say that it is one and how to upgrade it."""
    if not index.store.needs_upgrade():
        return
    if not asked:
        say("Note: this index was made by an earlier version (its BM25 matches accents as "
            "written, or its entities do not list their passages): pass --upgrade to bring "
            "it to this version's layout, with no other process writing to it.")
        return
    say("Upgrading the index to this version's layout...", end=" ")
    started = time.perf_counter()
    written = index.upgrade()
    say(f"{written} rows written, {time.perf_counter() - started:.1f} s")


def answer(index: GraphRAGIndex, question: str, method: str, top_k: int) -> None:
    """Print the baseline a Milvus user would try first (hybrid search on a full-text index,
    else naive RAG) beside the graph method's passages for ``question``."""
    from llama_index_graphrag_milvus.cli.compare import side_by_side

    search, baseline = (("hybrid", "hybrid RAG (dense + BM25), RRF scores")
                        if index.store.full_text
                        else ("dense", "naive RAG"))
    naive = index.as_naive_retriever(similarity_top_k=top_k, search=search
                                     ).retrieve(question)
    graph = index.as_retriever(method=method, similarity_top_k=top_k
                               ).retrieve(question)
    width = shutil.get_terminal_size((120, 24)).columns
    say(f"\nQuestion: {one_line(question)}\n{side_by_side(naive, graph, method, width, baseline)}")


def explore(index: GraphRAGIndex, host: str, port: int) -> None:
    """Serve the explorer on ``index`` until Ctrl-C."""
    from llama_index_graphrag_milvus.explore import serve

    server = serve(index, host=host, port=port)
    say(f"\nExplorer: open {server.url}  (Ctrl-C stops it)")
    try:
        server.wait()
    except KeyboardInterrupt:
        pass  # how the explorer is stopped
    finally:
        server.stop()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; see the module docstring for the exit codes."""
    from llama_index_graphrag_milvus.cli.folder import Progress

    args = parser().parse_args(argv)
    args.uri = args.uri or default_uri(args.folder)
    quiet_jieba()
    index = None
    progress = Progress()
    try:
        folder, embed_model, kg_extractor = prepare(args)
        han_or_kana = folder.languages.mostly_han_or_kana
        index = open_index(args, embed_model, han_or_kana)
        note = segmentation_note(index) if han_or_kana else None
        if note:
            say(note)
        upgrade(index, args.upgrade)
        with warnings.catch_warnings():  # the note above says it in the command's words
            warnings.simplefilter("ignore", UnsplitTextWarning)
            index_folder(index, folder, kg_extractor, progress, args.batch_size)
        where = args.uri if is_server(args.uri) else str(Path(args.uri).resolve())
        say(f"Index: {where} ({args.collection_prefix}), "
            f"{index.store.count(index.store.passage_collection)} passages, "
            f"{index.graph.num_relations} relations")
        for question in args.ask:
            answer(index, question, args.method, args.top_k)
        if args.explore:
            explore(index, args.host, args.port)
        elif not args.ask:
            say(f'\nNext: {PROG} {args.folder} --ask "your question"   or   '
                f"{PROG} {args.folder} --explore")
    except EmbeddingModelError as exc:  # its advice names the API's options
        return fail(f"{exc} From this command: pass the --embed-model the index was built "
                    "with, or another --collection-prefix (or --uri) for this model.")
    except GraphRAGError as exc:
        return fail(exc)
    except KeyboardInterrupt:
        print(f"\nInterrupted: {progress.documents} more documents stored (and perhaps "
              "the batch being written). Run the same command again to go on: what is "
              "stored is skipped.", file=sys.stderr,
              flush=True)
        return INTERRUPTED
    finally:
        if index is not None:
            index.close()
    return 0


def run() -> None:
    """The console script's entry point."""
    sys.exit(main())
