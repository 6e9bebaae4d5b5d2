"""Two-hop questions composed from a benchmark folder's own triplets: a fresh development set
of the kind 2WikiMultihopQA is built from (a relation of an entity, then a relation of what it
leads to), for choices the folder's own questions have already been used to make::

    python -m benchmarks.multihop.composed ../shared/benchmarks/musique_train100 \\
        bench_out/composed/musique_train100 --questions 400
    python -m benchmarks.multihop bench_out/composed/musique_train100 --extractor spacy \\
        --validation 200 --tag composed

A question is composed from two passages, *A* (the page of an entity *X*, its title) and *B*
(the page of *Y*): *A* holds the triplet ``(X, p1, Y)`` and *B* the triplet ``(Y, p2, Z)``.
The question names *X* and both predicates, never *Y* nor *Z* ("Tennessee bordered by
something that is bordered by what?"); its gold passages are *A* and *B*; its answer is *Z*,
which *A*'s text must not hold (else one passage answers it). The bridge *Y* is the title of
*B*, as the second page of a 2Wiki question is the bridge entity's own.

Kept out: chains of two passages that are both gold of one of the folder's questions (those
were tuned on), predicates or answers longer than a short phrase, and a bridge or first
passage that would dominate (at most ``per_passage`` questions each). The questions are drawn
with a seeded generator: the same folder and seed give the same file.

Read the triplets only of a graph the retriever is not built from (``--extractor spacy``
beside the folder's LLM triplets): a question whose relations are the graph's own edges
flatters the graph. The output folder holds ``corpus.jsonl`` and ``triplets.jsonl`` as they
were (so ``--reuse-index`` reopens the source's index when the folder has the same name) and
the new ``questions.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.multihop.data import Dataset, InputError, guarded, load_dataset

TEMPLATES = (
    "{x} {p1} something that {p2} what?",
    "The one that {x} {p1}: {p2} what?",
)
"""How a chain becomes a question, one drawn per chain: both name X and the two predicates in
the order of the hops, neither the bridge nor the answer."""
MAX_PREDICATE_WORDS = 6
MAX_ANSWER_WORDS = 8


def _norm(text: str) -> str:
    """Lowercase words joined by single spaces (how titles, bridges and answers are matched).

    >>> _norm("  Hello Love (song) ")
    'hello love song'
    """
    return " ".join(re.findall(r"\w+", text.lower()))


@dataclass(frozen=True)
class Chain:
    """Two triplets that meet at a bridge: ``(x, p1, y)`` on passage ``first`` (the page of
    ``x``) and ``(y, p2, z)`` on passage ``second`` (the page of ``y``)."""

    first: str
    second: str
    x: str
    p1: str
    y: str
    p2: str
    z: str

    def question(self, template: str) -> str:
        """The chain as a question (``template`` one of :data:`TEMPLATES`)."""
        return template.format(x=self.x.strip(), p1=self.p1.strip(), p2=self.p2.strip())


def _page(title: str) -> str:
    """The entity a passage is the page of: its title without a parenthesised qualifier.

    >>> _page("Hello Love (song)")
    'hello love'
    """
    return _norm(re.sub(r"\s*\([^()]*\)\s*$", "", title))


def _short(text: str, words: int) -> bool:
    return 0 < len(_norm(text).split()) <= words


def _triples(items: list[object]) -> list[tuple[str, str, str]]:
    return [(t[0], t[1], t[2]) for t in items
            if isinstance(t, list) and len(t) == 3 and all(isinstance(v, str) for v in t)]


def chains(dataset: Dataset) -> list[Chain]:
    """Every chain of ``dataset`` a question can be composed from (see the module's text),
    in corpus order. Empty without triplets."""
    if not dataset.triplets:
        return []
    text = {p.id: _norm(f"{p.title} {p.text}") for p in dataset.passages}
    title = {p.id: _page(p.title) for p in dataset.passages}
    pages: dict[str, list[str]] = defaultdict(list)
    for passage in dataset.passages:
        if title[passage.id]:
            pages[title[passage.id]].append(passage.id)
    tuned = [set(q.supporting_ids) for q in dataset.questions]
    found = []
    for passage in dataset.passages:
        for x, p1, y in _triples(dataset.triplets.get(passage.id, [])):
            if _norm(x) != title[passage.id] or _norm(y) in ("", _norm(x)):
                continue
            if not _short(p1, MAX_PREDICATE_WORDS):
                continue
            for second in pages.get(_norm(y), []):
                if second == passage.id or any({passage.id, second} <= g for g in tuned):
                    continue
                for y2, p2, z in _triples(dataset.triplets.get(second, [])):
                    if _norm(y2) != _norm(y) or not _short(p2, MAX_PREDICATE_WORDS):
                        continue
                    if not _short(z, MAX_ANSWER_WORDS) or _norm(z) in text[passage.id]:
                        continue
                    found.append(Chain(passage.id, second, x, p1, y, p2, z))
    return found


def compose(dataset: Dataset, count: int, seed: int = 0,
            per_passage: int = 3) -> list[dict[str, Any]]:
    """Up to ``count`` question records (the ``questions.jsonl`` format) drawn from
    :func:`chains`: one chain per pair of passages, at most ``per_passage`` questions per
    first passage and per bridge passage, none whose text holds its bridge or its answer.

    Each record: ``id`` (``2hop_composed__<n>``), ``question``, ``answer`` (Z),
    ``supporting_ids`` ([A, B]), ``supporting_titles`` and ``composed_from`` (both triplets).
    """
    rng = random.Random(seed)
    by_pair: dict[tuple[str, str], list[Chain]] = defaultdict(list)
    for chain in chains(dataset):
        by_pair[(chain.first, chain.second)].append(chain)
    pairs = sorted(by_pair)
    rng.shuffle(pairs)
    used: dict[str, int] = defaultdict(int)
    titles = {p.id: p.title for p in dataset.passages}
    records: list[dict[str, Any]] = []
    for pair in pairs:
        if len(records) >= count:
            break
        if used["first:" + pair[0]] >= per_passage or used["bridge:" + pair[1]] >= per_passage:
            continue
        chain = rng.choice(by_pair[pair])
        question = chain.question(rng.choice(TEMPLATES))
        words = f" {_norm(question)} "
        if f" {_norm(chain.y)} " in words or f" {_norm(chain.z)} " in words:
            continue
        used["first:" + pair[0]] += 1
        used["bridge:" + pair[1]] += 1
        records.append({
            "id": f"2hop_composed__{len(records)}",
            "question": question,
            "answer": chain.z.strip(),
            "answer_aliases": [],
            "supporting_ids": [chain.first, chain.second],
            "supporting_titles": [titles[chain.first], titles[chain.second]],
            "composed_from": [[chain.x, chain.p1, chain.y], [chain.y, chain.p2, chain.z]],
        })
    return records


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.multihop.composed",
        description="Compose two-hop questions from a benchmark folder's triplets into a new "
                    "folder (same corpus and triplets, new questions.jsonl).")
    parser.add_argument("source", type=Path, help="folder with corpus.jsonl, questions.jsonl "
                                                  "and triplets.jsonl")
    parser.add_argument("out", type=Path, help="new folder; give it the source's name to "
                                               "reuse the source's benchmark index")
    parser.add_argument("--questions", type=int, default=400, help="how many (default 400)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-passage", type=int, default=3,
                        help="questions per first passage and per bridge passage (default 3)")
    args = parser.parse_args(argv)
    if args.questions < 1 or args.per_passage < 1:
        parser.error("--questions and --per-passage must be at least 1")

    def run() -> int:
        dataset = load_dataset(args.source)
        if dataset.triplets is None:
            raise InputError(f"{args.source} has no triplets.jsonl: questions are composed "
                             "from a folder's triplets")
        if args.out.resolve() == dataset.path:
            raise InputError(f"{args.out} is the source folder: give a new folder")
        records = compose(dataset, args.questions, args.seed, args.per_passage)
        if not records:
            raise InputError(f"no two-hop chain in {args.source}'s triplets: a chain needs a "
                             "triplet whose subject is its passage's title and whose object "
                             "is another passage's title")
        args.out.mkdir(parents=True, exist_ok=True)
        for name in ("corpus.jsonl", "triplets.jsonl"):
            shutil.copyfile(dataset.path / name, args.out / name)
        with (args.out / "questions.jsonl").open("w", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        print(f"{len(records)} questions (of {args.questions} asked) in "
              f"{args.out / 'questions.jsonl'}")
        return 0

    return guarded(run)


if __name__ == "__main__":
    sys.exit(main())
