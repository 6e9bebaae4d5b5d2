"""The benchmark data: a folder with ``corpus.jsonl``, ``questions.jsonl`` (with
``supporting_ids``) and optionally ``triplets.jsonl``, the format of ``shared/benchmarks``."""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llama_index.core.schema import TextNode

from llama_index_graphrag_milvus.limits import PASSAGE_TEXT_MAX_BYTES

CORPUS_ID_KEY = "corpus_id"
"""Passage metadata key holding the dataset's passage id (kept out of the embedding text)."""
TITLE_KEY = "title"
"""Passage metadata key holding the passage title (part of the embedding text)."""
_HOP_ID = re.compile(r"^(\d+)hop")


@dataclass(frozen=True)
class Passage:
    """One line of ``corpus.jsonl``."""

    id: str
    title: str
    text: str


@dataclass(frozen=True)
class Question:
    """One line of ``questions.jsonl``: the question, its gold passages and its group.

    ``group`` is the hop count read from the id (``"2hop"`` for MuSiQue's ``2hop__...``), else
    the question ``type`` (HotpotQA's ``bridge`` / ``comparison``), else ``None``.
    """

    id: str
    question: str
    supporting_ids: tuple[str, ...]
    group: str | None


@dataclass(frozen=True)
class Dataset:
    """A benchmark folder, loaded. ``triplets`` is ``None`` when it has no triplets file."""

    name: str
    path: Path
    passages: tuple[Passage, ...]
    questions: tuple[Question, ...]
    triplets: dict[str, list[Any]] | None

    @property
    def group_kind(self) -> str | None:
        """What the question groups are: ``"hops"``, ``"type"`` or ``None``."""
        groups = {q.group for q in self.questions} - {None}
        if not groups:
            return None
        return "hops" if all(_HOP_ID.match(g or "") for g in groups) else "type"


def question_group(record: dict[str, Any]) -> str | None:
    """The group of a question record: hop count from the id, else its ``type`` field.

    >>> question_group({"id": "3hop1__9_8_7"}), question_group({"id": "x", "type": "bridge"})
    ('3hop', 'bridge')
    """
    match = _HOP_ID.match(str(record.get("id", "")))
    if match:
        return f"{match.group(1)}hop"
    kind = record.get("type")
    return str(kind) if isinstance(kind, str) and kind else None


class InputError(ValueError):
    """A benchmark folder or argument that cannot be measured as it is (the message names
    the file, the line and the fix); the commands print it on one line and exit with
    code 2 (:func:`guarded`)."""


def guarded(main: Callable[[], Any]) -> int:
    """Run a benchmark command's ``main`` for ``sys.exit``: its exit code when it returns
    one (else 0); a :class:`InputError` is one line on stderr and exit code 2, not a
    traceback."""
    try:
        result = main()
        return result if isinstance(result, int) else 0
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """The objects of a JSONL file with their line numbers (blank lines skipped)."""
    rows = []
    try:
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InputError(f"{path}:{number} is not a JSON object: {exc}") from exc
                if not isinstance(row, dict):
                    raise InputError(f"{path}:{number} is a JSON {type(row).__name__}, not "
                                     "an object: write one object per line")
                rows.append((number, row))
    except UnicodeDecodeError as exc:
        raise InputError(f"{path} is not UTF-8 text ({exc.reason}): save it as UTF-8") from exc
    return rows


def _text(where: str, row: dict[str, Any], key: str, required: bool = True) -> str:
    """Field ``key`` of a row as text (numbers allowed); empty when not required."""
    value = row.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise InputError(f"{where}: {key!r} must be a non-empty string, got {value!r}")
    return value


def _unique(kind: str, path: Path, ids: list[tuple[int, str]]) -> None:
    seen: dict[str, int] = {}
    for number, key in ids:
        if key in seen:
            raise InputError(f"{path}:{number}: {kind} id {key!r} is also on line "
                             f"{seen[key]}; ids must be unique")
        seen[key] = number


def _passages(folder: Path) -> tuple[Passage, ...]:
    path = folder / "corpus.jsonl"
    rows = [(n, row, f"{path}:{n}") for n, row in _read_jsonl(path)]
    passages = tuple(Passage(_text(where, row, "id"), _text(where, row, "title", False),
                             _text(where, row, "text")) for _, row, where in rows)
    if not passages:
        raise InputError(f"{path} holds no passage")
    for (number, _, _), passage in zip(rows, passages, strict=True):
        if len(passage.text.encode("utf-8", "surrogatepass")) > PASSAGE_TEXT_MAX_BYTES:
            raise InputError(f"{path}:{number}: passage {passage.id!r} holds more than the "
                             f"{PASSAGE_TEXT_MAX_BYTES:,} bytes Milvus stores in a passage "
                               "row: split it into passages of their own")
    _unique("passage", path, [(n, p.id) for (n, _, _), p in zip(rows, passages, strict=True)])
    return passages


def _questions(folder: Path, known: set[str]) -> tuple[Question, ...]:
    path = folder / "questions.jsonl"
    questions, ids = [], []
    for number, record in _read_jsonl(path):
        where = f"{path}:{number}"
        qid = _text(where, record, "id")
        gold_ids = record.get("supporting_ids")
        if not isinstance(gold_ids, list) or not all(
                isinstance(i, (str, int)) and not isinstance(i, bool) for i in gold_ids):
            raise InputError(f"{where}: 'supporting_ids' of question {qid!r} must be a list "
                             f"of corpus ids, got {gold_ids!r}")
        gold = tuple(dict.fromkeys(str(i) for i in gold_ids))
        unknown = [i for i in gold if i not in known]
        if not gold or unknown:
            raise InputError(
                f"{where}: question {qid!r} needs supporting_ids that are corpus ids; got "
                f"{list(gold)} (unknown: {unknown}).")
        questions.append(Question(qid, _text(where, record, "question"), gold,
                                  question_group(record)))
        ids.append((number, qid))
    if not questions:
        raise InputError(f"{path} holds no question")
    _unique("question", path, ids)
    return tuple(questions)


def _triplets(folder: Path, known: set[str]) -> dict[str, list[Any]] | None:
    path = folder / "triplets.jsonl"
    if not path.is_file():
        return None
    triplets: dict[str, list[Any]] = {}
    for number, record in _read_jsonl(path):
        where = f"{path}:{number}"
        pid = _text(where, record, "id")
        if pid not in known:
            raise InputError(f"{where}: triplets of {pid!r}, which is not a corpus id")
        items = record.get("triplets") or []
        if not isinstance(items, list) or not all(isinstance(t, list) for t in items):
            raise InputError(f"{where}: 'triplets' must be a list of [subject, predicate, "
                             f"object] lists, got {str(items)[:80]}")
        triplets.setdefault(pid, []).extend(items)
    return triplets


def load_dataset(path: str | Path) -> Dataset:
    """Load a benchmark folder.

    Raises:
        InputError: a file is missing, not JSONL, or holds rows without their fields, ids
            twice, gold or triplet ids that are not corpus ids, or no passage or question.
    """
    folder = Path(path)
    missing = [n for n in ("corpus.jsonl", "questions.jsonl") if not (folder / n).is_file()]
    if missing:
        raise InputError(
            f"{folder} is not a benchmark folder: {', '.join(missing)} missing. Expected "
            "corpus.jsonl ({id, title, text}), questions.jsonl ({id, question, "
            "supporting_ids}) and optionally triplets.jsonl ({id, triplets})."
        )
    passages = _passages(folder)
    known = {p.id for p in passages}
    return Dataset(folder.resolve().name, folder.resolve(), passages,
                   _questions(folder, known), _triplets(folder, known))


def check_split(validation: int, dataset: Dataset) -> int:
    """``validation`` (the first questions, tuned on) when it leaves questions held out."""
    if not isinstance(validation, int) or not 0 <= validation < len(dataset.questions):
        raise InputError(
            f"--validation {validation}: give 0 (no split) or fewer than the "
            f"{len(dataset.questions)} questions of {dataset.path.name}, so that some are "
            "held out")
    return validation


def fingerprint(dataset: Dataset) -> str:
    """A digest of the passages and triplets an index of ``dataset`` is built from: a
    reused index must have been built from the same (not just a folder of the same name)."""
    digest = hashlib.sha256()
    for passage in dataset.passages:
        digest.update(json.dumps([passage.id, passage.title, passage.text]).encode())
    digest.update(json.dumps(dataset.triplets, sort_keys=True, default=str).encode())
    return digest.hexdigest()[:16]


def passage_nodes(dataset: Dataset) -> list[TextNode]:
    """The passages as nodes: title in metadata (embedded), corpus id in metadata (not)."""
    return [
        TextNode(text=p.text, metadata={TITLE_KEY: p.title, CORPUS_ID_KEY: p.id},
                 excluded_embed_metadata_keys=[CORPUS_ID_KEY],
                 excluded_llm_metadata_keys=[CORPUS_ID_KEY])
        for p in dataset.passages
    ]

