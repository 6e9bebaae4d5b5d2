"""A folder of files into an index, resumable: what ``graphrag-milvus FOLDER`` runs.

:func:`read_folder` reads the files (LlamaIndex's ``SimpleDirectoryReader``, recursive, a
document per file or per page, each with its path as id) and splits them into passages.
:func:`stored_documents` says which documents the index already holds whole, and
:func:`ingest` extracts and writes the others, a batch at a time, with a progress bar.

A document is *stored* when every passage it splits into is in the passage collection, and
every relation of those passages is in the relation collection and links back to the
passage. Passages are written first and relations last (see
:mod:`~llama_index_graphrag_milvus.ingestion.write`), so a run stopped halfway (Ctrl-C)
leaves the documents of its last batch not stored: the next run extracts and writes them
again (an upsert: ids are deterministic) and skips the others. A file that changed since it
was stored splits into other passages: its old ones are deleted before it is stored again.
A passage whose LLM extraction failed is stored without triplets, marked: its document is
not stored whole, so the next run asks the LLM again.

Example::

    folder = read_folder(Path("./docs"))
    stored = stored_documents(index, folder)
    ingest(index, [d for d in folder.documents if d.doc_id not in stored], extractor)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from llama_index.core import Document, SimpleDirectoryReader
from llama_index.core.ingestion import run_transformations
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import BaseNode, MetadataMode, TransformComponent
from tqdm.auto import tqdm

from llama_index_graphrag_milvus.cli.common import MAX_LISTED, shorten
from llama_index_graphrag_milvus.cli.html_text import HTML_SUFFIXES, HtmlTextReader
from llama_index_graphrag_milvus.errors import InvalidInputError
from llama_index_graphrag_milvus.index import GraphRAGIndex
from llama_index_graphrag_milvus.ingestion.refresh import passage_ids, whole_documents
from llama_index_graphrag_milvus.validation import is_utf8
from llama_index_graphrag_milvus.words import mostly_han_or_kana, reads_as_english

DEFAULT_CHUNK_SIZE = 1024
"""Tokens per passage (LlamaIndex's ``SentenceSplitter`` default)."""
EMBED_EXCLUDED = ("file_path", "file_name", "file_type", "file_size", "creation_date",
                  "last_modified_date", "last_accessed_date")
"""File metadata ``SimpleDirectoryReader`` records, kept out of the embedded text (it
embeds ``file_path`` by default: every passage would carry its folder's path)."""
BATCH_PASSAGES = 16
"""Passages extracted and written together (one ingestion call, one progress step)."""


@dataclass(frozen=True)
class FolderDocument:
    """One document of the folder and the passages it splits into (without triplets yet),
    with their ids as the index computes them."""

    doc_id: str
    name: str
    passages: tuple[BaseNode, ...]
    passage_ids: tuple[str, ...]


@dataclass(frozen=True)
class Folder:
    """What :func:`read_folder` read: the documents with text, the files without (``empty``)
    and the files it did not read (``unread``: their paths under the folder and why, see
    :func:`unreadable`)."""

    path: Path
    documents: tuple[FolderDocument, ...]
    empty: tuple[str, ...] = ()
    unread: tuple[tuple[str, str], ...] = ()

    @property
    def passages(self) -> int:
        """Distinct passages of all the documents (a passage repeated word for word, in one
        file or in two, is stored once)."""
        return len({pid for d in self.documents for pid in d.passage_ids})

    def keyed(self, index_keys: Sequence[str] | str) -> Folder:
        """The same passages with the ids an index whose ``passage_identity_keys`` are
        ``index_keys`` gives them (the ids depend on that rule): the files are not read
        again, so the chunk size and the extensions the folder was read with hold."""
        return replace(self, documents=tuple(
            replace(d, passage_ids=passage_ids(d.passages, index_keys))
            for d in self.documents))

    def shown(self, doc_id: str) -> str:
        """A document id (a file's path) as the folder's files are named: under the folder,
        relative to it; elsewhere, whole.

        >>> Folder(Path("/notes"), ()).shown("/notes/a/b.txt")
        'a/b.txt'
        """
        found = Path(doc_id)
        root = self.path.resolve()
        return found.relative_to(root).as_posix() if found.is_relative_to(root) else doc_id

    @cached_property
    def languages(self) -> Languages:
        """What the passages are written in, as far as the command's defaults care."""
        texts = [p.get_content(metadata_mode=MetadataMode.NONE)
                 for d in self.documents for p in d.passages]
        told = [english for english in map(reads_as_english, texts) if english is not None]
        return Languages(told.count(False), len(told),
                         sum(map(mostly_han_or_kana, texts)), len(texts))


@dataclass(frozen=True)
class Languages:
    """The folder's passages by language: how many do not read as English of those long
    enough to tell (:func:`~llama_index_graphrag_milvus.words.reads_as_english`), and how
    many are mostly Chinese or Japanese of all."""

    not_english: int
    told: int
    han_or_kana: int
    passages: int

    @property
    def mostly_not_english(self) -> bool:
        return 2 * self.not_english > self.told

    @property
    def mostly_han_or_kana(self) -> bool:
        return 2 * self.han_or_kana > self.passages


def unreadable(path: Path, plain: bool = True) -> str | None:
    """Why a file is not read, or ``None`` when it is read: ``"not a regular file"`` (a named
    pipe or a device, whose read would wait forever), ``"unreadable"`` (the system refused
    to open it, with its reason), ``"file name not UTF-8"`` (a Latin-1 name from an old
    archive: Milvus could store neither its name nor its id); then, for a file read as
    plain text (``plain``: a type without a reader), ``"UTF-16"`` (its byte-order mark),
    ``"binary"`` (a NUL byte in its first 8 KiB: an image, an archive, a PDF without a
    reader) or ``"not UTF-8"`` (Latin-1, Shift JIS..., whose accented or other letters a
    plain read would drop)."""
    if not is_utf8(str(path)):
        return "file name not UTF-8"
    if not path.is_file():
        return "not a regular file"
    try:
        with path.open("rb") as file:
            data = file.read() if plain else b""
    except OSError as exc:
        return f"unreadable: {exc.strerror or type(exc).__name__}"
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "UTF-16"
    if b"\0" in data[:8192]:
        return "binary"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return "not UTF-8"
    return None


def _readable_files(reader: SimpleDirectoryReader, root: Path) -> dict[str, str]:
    """Keep in ``reader``'s list only the files it can read: regular files it may open and,
    among those it reads as plain text (a type without a reader), the UTF-8 ones. The others
    (path under ``root`` -> why, see :func:`unreadable`) are taken out of its list."""
    readers = {*SimpleDirectoryReader.supported_suffix_fn(), *(reader.file_extractor or {})
               } - set(HTML_SUFFIXES)  # HTML is text: checked as such
    kept, unread = [], {}
    for file in reader.input_files:
        reason = unreadable(Path(file), plain=Path(file).suffix.lower() not in readers)
        if reason is None:
            kept.append(file)
        else:
            name = Path(file).relative_to(root).as_posix()
            unread[name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")] = reason
    reader.input_files = kept
    return unread


def _leave_out(reader: SimpleDirectoryReader, excluded: Sequence[Path]) -> None:
    """Take the files under ``excluded`` out of ``reader``'s list."""
    if excluded:
        reader.input_files = [
            file for file in reader.input_files
            if not any(Path(file).resolve().is_relative_to(place) for place in excluded)]


PIECE_CHARS = 200_000
"""Characters of a document split at once (see :func:`pieces`)."""


def pieces(document: Document, size: int | None = None) -> list[Document]:
    """``document``, or for a text longer than ``size`` characters, copies of it holding
    consecutive pieces of its text, each cut after a line break (else a space) where there
    is one: the sentence splitter then never meets megabytes at once (NLTK's patterns time
    out there). Only the passages that would have spanned a cut differ.

    >>> [len(d.text) for d in pieces(Document(text="ab\\n" * 5, id_="d"), size=7)]
    [6, 6, 3]
    """
    text, size = document.text, size or PIECE_CHARS
    if len(text) <= size:
        return [document]
    parts, start = [], 0
    while start < len(text):
        end = min(start + size, len(text))
        if end < len(text):
            cut = text.rfind("\n", start, end)
            cut = cut if cut > start else text.rfind(" ", start, end)
            end = cut + 1 if cut > start else end
        part = document.model_copy()
        part.set_content(text[start:end])
        parts.append(part)
        start = end
    return parts


def read_folder(path: Path, index_keys: Sequence[str] | str = "*",
                chunk_size: int = DEFAULT_CHUNK_SIZE,
                extensions: Sequence[str] | None = None,
                excluded: Sequence[Path] = ()) -> Folder:
    """Read and split the files under ``path`` (recursive, hidden files skipped). A file
    that is not regular (a named pipe), that cannot be opened, or that is read as plain text
    (a type without a reader) but is not UTF-8 text is not read but listed in ``unread``
    with the reason (see :func:`unreadable`): a plain read would wait forever, drop its
    accented letters, or index the bytes of an image.

    ``index_keys`` are the index's ``passage_identity_keys`` (the passage ids depend on
    them); ``extensions`` (``[".txt", ".md"]``) keeps only those files; the files under
    ``excluded`` (the Milvus Lite index the folder is written to, when it lies inside) are
    not read. A text longer than :data:`PIECE_CHARS` is split a piece at a time (at line
    breaks): NLTK's sentence patterns give up on a few megabytes at once.

    Raises:
        InvalidInputError: ``path`` does not exist or is not a folder, it holds no file (of
            ``extensions``), no file holds text, or a file type needs a reader package
            that is not installed (the message names it).
    """
    if not path.exists():
        raise InvalidInputError(f"{path}: no such folder; give the folder of the files to "
                                "index")
    if not path.is_dir():
        raise InvalidInputError(f"{path} is a file; give the folder that holds it")
    try:
        root = path.resolve()
        reader = SimpleDirectoryReader(input_dir=str(root), recursive=True,
                                       filename_as_id=True, required_exts=list(extensions)
                                       if extensions else None,
                                       file_extractor={suffix: HtmlTextReader()
                                                       for suffix in HTML_SUFFIXES})
        _leave_out(reader, [p.resolve() for p in excluded])
        unread = _readable_files(reader, root)
        documents = reader.load_data() if reader.input_files else []
    except ImportError as exc:
        raise InvalidInputError(f"reading {path} needs a package that is not installed: "
                                f"{shorten(str(exc))}; install it, or keep other files with "
                                "--extensions .txt,.md") from exc
    except ValueError as exc:  # "No files found in ..."
        kinds = f" with the extensions {', '.join(extensions)}" if extensions else ""
        raise InvalidInputError(f"{path} holds no file{kinds} to index") from exc
    except RecursionError as exc:  # the reader walks folders recursively
        raise InvalidInputError(f"{path} nests folders too deep to be read; index a "
                                "folder further down") from exc
    except OSError as exc:  # a file removed or made unreadable while the folder is read
        raise InvalidInputError(f"reading {path} failed: {shorten(str(exc))}; run the command "
                                "again when the folder holds still") from exc
    splitter = SentenceSplitter(chunk_size=chunk_size,
                                chunk_overlap=min(200, chunk_size // 5))
    found, empty = _split(documents, splitter, index_keys, unread)
    listed = tuple(sorted(unread.items()))
    if not found:
        kinds = ", ".join([f"{len(empty)} empty",
                           *(f"{name}: {why}" for name, why in listed[:MAX_LISTED]),
                           *(["..."] if len(listed) > MAX_LISTED else [])])
        raise InvalidInputError(f"no file under {path} holds text ({kinds})"
                                + unread_hint(listed))
    return Folder(path, tuple(found), tuple(empty), listed)



SPLIT_PROGRESS_CHARS = 2_000_000
"""Characters of text from which splitting the folder shows a progress bar."""


def _split(documents: Sequence[Document], splitter: SentenceSplitter,
           index_keys: Sequence[str] | str, unread: dict[str, str]
           ) -> tuple[list[FolderDocument], list[str]]:
    """The documents split into passages, and the names of those without text; a document
    the sentence splitter gives up on (NLTK's time limit) joins ``unread``."""
    found: list[FolderDocument] = []
    empty: list[str] = []
    total = sum(len(d.text) for d in documents)
    with tqdm(total=total, unit="char", unit_scale=True, desc="Splitting into passages",
              disable=total < SPLIT_PROGRESS_CHARS, dynamic_ncols=True) as bar:
        for document in documents:
            name = str(document.metadata.get("file_name") or document.doc_id)
            # the path stays in the metadata (shown with each passage), out of the vectors
            document.excluded_embed_metadata_keys = list(dict.fromkeys(
                [*document.excluded_embed_metadata_keys, *EMBED_EXCLUDED]))
            if not document.get_content(metadata_mode=MetadataMode.NONE).strip():
                empty.append(name)
                bar.update(len(document.text))
                continue
            split: list[BaseNode] = []
            try:
                for piece in pieces(document):
                    split.extend(run_transformations([piece], [splitter]))
                    bar.update(len(piece.text))
            except TimeoutError:  # nltk's guard against slow sentence patterns
                unread[name] = "too slow to split into sentences"
                continue
            passages = [node for node in split
                        if node.get_content(metadata_mode=MetadataMode.NONE).strip()]
            found.append(FolderDocument(document.doc_id, name, tuple(passages),
                                        passage_ids(passages, index_keys)))
    return found, empty


def unread_hint(unread: Sequence[tuple[str, str]]) -> str:
    """What to do about the files :func:`read_folder` did not read (``Folder.unread``), as
    the end of a line: empty when nothing can be done (a named pipe, nothing unread).

    >>> unread_hint([("a.png", "binary"), ("b.txt", "not UTF-8")])
    '; save text files as UTF-8, or install a reader for their type (llama-index-readers-file for PDF and Word)'
    >>> unread_hint([("pipe", "not a regular file")])
    ''
    """  # noqa: E501
    reasons = {why for _, why in unread}
    hints = (["save text files as UTF-8"] if reasons & {"not UTF-8", "UTF-16"} else []) + (
        ["install a reader for their type (llama-index-readers-file for PDF and Word)"]
        if "binary" in reasons else [])
    return f"; {', or '.join(hints)}" if hints else ""


def stored_documents(index: GraphRAGIndex, folder: Folder) -> set[str]:
    """The ids of the documents the index holds whole (see
    :func:`~llama_index_graphrag_milvus.ingestion.refresh.whole_documents`)."""
    return whole_documents(index.store, {d.doc_id: d.passage_ids for d in folder.documents})


def files_gone(index: GraphRAGIndex, folder: Folder) -> list[str]:
    """The documents of the index read from files that are gone: those under the folder
    whose file no longer exists (deleted or renamed), and those under another path whose
    file no longer exists but whose path ends as a file of the folder does (the folder
    moved or renamed). Document ids are the files' paths (``filename_as_id``; a file of
    several documents, such as a PDF's pages, adds ``_part_N``)."""
    root = folder.path.resolve()
    current = {d.doc_id for d in folder.documents}
    tails = {Path(doc_id).relative_to(root).as_posix() for doc_id in current
             if Path(doc_id).is_relative_to(root)}
    gone = []
    for doc_id in sorted(index.store.document_ids(root.anchor) - current):
        file = Path(_PART.sub("", doc_id))
        if not file.is_absolute() or file.exists():
            continue
        if file.is_relative_to(root) or any(
                Path(*doc_id_parts).as_posix() in tails
                for doc_id_parts in _suffixes(Path(doc_id).parts)):
            gone.append(doc_id)
    return gone


_PART = re.compile(r"_part_\d+\Z")
"""The suffix of a document id for one of a file's documents (a PDF's page)."""


def _suffixes(parts: Sequence[str]) -> list[tuple[str, ...]]:
    """The path's ends: ``("a", "b", "c")`` -> ``("b", "c")``, ``("c",)``."""
    return [tuple(parts[i:]) for i in range(1, len(parts))]


@dataclass
class Progress:
    """What :func:`ingest` did so far (read after an interruption too)."""

    documents: int = 0
    passages: int = 0
    replaced: list[str] = field(default_factory=list)
    failed_extractions: int = 0


def batches(documents: Sequence[FolderDocument], size: int = BATCH_PASSAGES
            ) -> list[list[FolderDocument]]:
    """Documents grouped in order until a group holds ``size`` passages or more.

    >>> docs = [FolderDocument(str(i), str(i), (), ("p",) * n) for i, n in enumerate([3, 2, 5])]
    >>> [[d.doc_id for d in batch] for batch in batches(docs, 4)]
    [['0', '1'], ['2']]
    """
    groups: list[list[FolderDocument]] = []
    current: list[FolderDocument] = []
    count = 0
    for document in documents:
        current.append(document)
        count += len(document.passage_ids)
        if count >= size:
            groups.append(current)
            current, count = [], 0
    if current:
        groups.append(current)
    return groups


def ingest(index: GraphRAGIndex, documents: Sequence[FolderDocument],
           kg_extractor: TransformComponent, progress: Progress | None = None,
           batch_size: int = BATCH_PASSAGES,
           on_batch: Callable[[int, int], Any] | None = None) -> Progress:
    """Extract the triplets of ``documents`` and write them, a batch of about
    ``batch_size`` passages at a time; ``on_batch(documents, passages)`` is called
    after each batch is stored (a progress bar; ``passages`` counts the documents'
    ``passage_ids``: a passage repeated word for word in a file is one). A document with
    passages stored from an older version of its file has them deleted first. ``progress``
    is updated as batches are stored, so that a caller interrupted (``KeyboardInterrupt``)
    can say how far it got.
    """
    done = progress if progress is not None else Progress()
    for batch in batches(documents, batch_size):
        for document in batch:
            stale = {n.node_id for n in index.store.document_passages(document.doc_id)}
            if stale - set(document.passage_ids):  # the file changed since it was stored
                index.delete_ref_doc(document.doc_id)
                done.replaced.append(document.name)
        nodes = [node.model_copy(deep=True) for d in batch for node in d.passages]
        written = index.insert_nodes(kg_extractor(nodes))
        done.failed_extractions += written.failed_extractions
        stored = sum(len(d.passage_ids) for d in batch)
        done.documents += len(batch)
        done.passages += stored
        if on_batch is not None:
            on_batch(len(batch), stored)
    return done
