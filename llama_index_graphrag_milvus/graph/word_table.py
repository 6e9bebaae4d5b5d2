"""BM25 over the passages held in memory: Milvus's full-text search without a Milvus call.

Milvus Lite scores BM25 in Python, posting list by posting list: a batch of four texts costs
about as much as a whole dense query on a few thousand passages. Where the index's passage
table is held in memory (see :class:`~llama_index_graphrag_milvus.graph.tables.PassageTable`)
the passages' words can be too: a sparse matrix of each passage's BM25 term weights, which a
batch of texts multiplies in well under a millisecond.

It computes what Milvus computes with its standard analyzer: words are runs of ``\\w``
characters, lower-cased (Milvus Lite's standard analyzer exactly; a server's splits words by
Unicode's rules, which differ on apostrophes and on scripts written without spaces), or the
words another function gives (on Milvus Lite, the analyzer of the index, jieba's for
Chinese: see :func:`~llama_index_graphrag_milvus.index_cache.memory_analyzer`); a text's
term counts are its query weights; the score of a passage is
``sum idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))`` with
``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))``, over the whole collection (Lite weighs
each of its segments apart). Passages that share no word with a text are not listed.

>>> table = WordTable.from_texts([(["p1", "p2", "p3"], [
...     "Euler was born in Basel.", "Bernoulli taught Euler.", "Daniel Bernoulli"])])
>>> [[pid for pid, _ in hits] for hits in table.search(["Who taught Euler?", "Paris"], 5)]
[['p2', 'p1'], []]
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

import numpy as np
from scipy import sparse

from llama_index_graphrag_milvus.graph.tables import IdTable, top_rows

_WORD = re.compile(r"\w+")

DEFAULT_K1 = 1.2
"""BM25's term-frequency saturation on a Milvus server (Milvus Lite's default is 1.5)."""
DEFAULT_B = 0.75
"""BM25's length normalisation (Milvus's default)."""


Analyzer = Callable[[str], list[str]]
"""A function that splits a text into the words BM25 counts."""


def analyze(text: str) -> list[str]:
    """The words of ``text`` as Milvus's standard analyzer gives them to BM25.

    >>> analyze("Euler's teacher, Johann BERNOULLI")
    ['euler', 's', 'teacher', 'johann', 'bernoulli']
    """
    return _WORD.findall(text.lower())


class WordTable:
    """Every passage's BM25 term weights (rows: passages in id order; columns: words),
    searched by a batch of texts.

    Args:
        ids: the passages' ids (a passage's row is its id's).
        weights: ``len(ids) x len(vocabulary)`` BM25 weights (compressed sparse columns).
        vocabulary: word -> column.
        analyzer: the function that splits a text into its words (the passages' and the
            searched texts'): :func:`analyze` by default.
    """

    def __init__(self, ids: IdTable, weights: sparse.csc_matrix,
                 vocabulary: dict[str, int], analyzer: Analyzer = analyze) -> None:
        self.ids = ids
        self.weights = weights
        self.vocabulary = vocabulary
        self.analyzer = analyzer

    @classmethod
    def from_texts(cls, batches: Iterable[tuple[Sequence[str], Sequence[str]]],
                   k1: float = DEFAULT_K1, b: float = DEFAULT_B,
                   analyzer: Analyzer = analyze, query_analyzer: Analyzer | None = None
                   ) -> WordTable:
        """The table of ``(ids, texts)`` batches (one text per id), with BM25's ``k1`` and
        ``b``, words split by ``analyzer``; the searched texts' by ``query_analyzer``
        (default ``analyzer``: another where the stored texts were prepared already, such
        as folded, and only a query's still need it)."""
        ids: list[str] = []
        vocabulary: dict[str, int] = {}
        rows: list[int] = []
        columns: list[int] = []
        counts: list[int] = []
        for batch_ids, texts in batches:
            for pid, text in zip(batch_ids, texts, strict=True):
                for word, count in Counter(analyzer(text)).items():
                    rows.append(len(ids))
                    columns.append(vocabulary.setdefault(word, len(vocabulary)))
                    counts.append(count)
                ids.append(pid)
        keys = IdTable.encode(ids)
        order = np.argsort(keys, kind="stable")
        position = np.empty(len(ids), np.int64)
        position[order] = np.arange(len(ids))
        tf = sparse.csr_matrix(
            (np.asarray(counts, np.float64), (position[np.asarray(rows, np.int64)],
                                              np.asarray(columns, np.int64))),
            shape=(len(ids), len(vocabulary)))
        return cls(IdTable(keys[order]), _bm25_weights(tf, k1, b), vocabulary,
                   query_analyzer or analyzer)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def nbytes(self) -> int:
        """The matrix's bytes (the vocabulary's strings besides)."""
        w = self.weights
        return int(w.data.nbytes + w.indices.nbytes + w.indptr.nbytes + self.ids.nbytes)

    def search(self, texts: Sequence[str], limit: int) -> list[list[tuple[str, float]]]:
        """Per text, the ``limit`` passages its words match best as ``(id, BM25 score)``,
        best first, ties by id."""
        lists: list[list[tuple[str, float]]] = []
        for text in texts:
            terms = Counter(w for w in self.analyzer(text) if w in self.vocabulary)
            if not terms or limit <= 0:
                lists.append([])
                continue
            columns = [self.vocabulary[w] for w in terms]
            scores = self.weights[:, columns] @ np.asarray(list(terms.values()), np.float64)
            found = np.flatnonzero(scores)
            rows = found[top_rows(scores[found], limit)]
            lists.append(list(zip(self.ids.ids(rows), scores[rows].tolist(), strict=True)))
        return lists


def _bm25_weights(tf: sparse.csr_matrix, k1: float, b: float) -> sparse.csc_matrix:
    """``tf`` (passages x words, counts) as BM25 weights ``idf * tf * (k1 + 1) / (tf + k1 *
    (1 - b + b * dl / avgdl))``."""
    passages = tf.shape[0]
    lengths = np.asarray(tf.sum(axis=1)).ravel()
    average = lengths.sum() / passages if passages and lengths.sum() else 1.0
    df = np.bincount(tf.indices, minlength=tf.shape[1])
    idf = np.log(1.0 + (passages - df + 0.5) / (df + 0.5))
    norm = k1 * (1.0 - b + b * lengths / average)  # per passage
    weights = tf.copy()
    per_row = np.repeat(norm, np.diff(tf.indptr))
    weights.data = idf[tf.indices] * tf.data * (k1 + 1.0) / (tf.data + per_row)
    return weights.tocsc()
