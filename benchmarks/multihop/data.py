"""The benchmark data: a folder with ``corpus.jsonl``, ``questions.jsonl`` (with
``supporting_ids``) and optionally ``triplets.jsonl``, the format of ``shared/benchmarks``."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llama_index.core.schema import TextNode

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


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number} is not a JSON object: {exc}") from exc
    return rows


def load_dataset(path: str | Path) -> Dataset:
    """Load a benchmark folder; raise ``ValueError`` on missing files or unknown ids."""
    folder = Path(path)
    missing = [n for n in ("corpus.jsonl", "questions.jsonl") if not (folder / n).is_file()]
    if missing:
        raise ValueError(
            f"{folder} is not a benchmark folder: {', '.join(missing)} missing. Expected "
            "corpus.jsonl ({id, title, text}), questions.jsonl ({id, question, "
            "supporting_ids}) and optionally triplets.jsonl ({id, triplets})."
        )
    passages = tuple(Passage(str(r["id"]), str(r.get("title") or ""), str(r["text"]))
                     for r in _read_jsonl(folder / "corpus.jsonl"))
    known = {p.id for p in passages}
    questions = []
    for record in _read_jsonl(folder / "questions.jsonl"):
        gold = tuple(dict.fromkeys(str(i) for i in record.get("supporting_ids") or []))
        unknown = [i for i in gold if i not in known]
        if not gold or unknown:
            raise ValueError(
                f"question {record.get('id')!r} in {folder / 'questions.jsonl'} needs "
                f"supporting_ids that are corpus ids; got {list(gold)} (unknown: {unknown})."
            )
        questions.append(Question(str(record["id"]), str(record["question"]), gold,
                                  question_group(record)))
    triplets: dict[str, list[Any]] | None = None
    if (folder / "triplets.jsonl").is_file():
        triplets = {}
        for record in _read_jsonl(folder / "triplets.jsonl"):
            triplets.setdefault(str(record["id"]), []).extend(record.get("triplets") or [])
    return Dataset(folder.resolve().name, folder.resolve(), passages, tuple(questions),
                   triplets)


def passage_nodes(dataset: Dataset) -> list[TextNode]:
    """The passages as nodes: title in metadata (embedded), corpus id in metadata (not)."""
    return [
        TextNode(text=p.text, metadata={TITLE_KEY: p.title, CORPUS_ID_KEY: p.id},
                 excluded_embed_metadata_keys=[CORPUS_ID_KEY],
                 excluded_llm_metadata_keys=[CORPUS_ID_KEY])
        for p in dataset.passages
    ]

