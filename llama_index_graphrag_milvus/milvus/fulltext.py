"""Milvus full-text search (BM25) on the passage collection.

An index created with full-text search (``GraphRAGIndex(full_text_search=...)``, on by
default where Milvus has BM25) gets, on its passage
collection, what llama-index-vector-stores-milvus gives a ``MilvusVectorStore`` created with
``enable_sparse=True`` and a :class:`BM25BuiltInFunction` (a sparse field
``sparse_embedding`` that Milvus fills with BM25 terms on every insert, and a sparse index
on it), with one difference: the function reads :data:`LEXICAL_FIELD`, the passage as it is
embedded (text and the metadata the embedding sees, a title for example), not the bare
``text`` field, so that a title matches as words as it counts in the dense search. A
collection whose function reads ``text`` (made by the vector store alone) is used as it is.
The package does not write another BM25 path: the vector store's own ``"sparse"`` and
``"hybrid"`` query modes (dense + BM25, reciprocal rank fusion) are what
:meth:`~llama_index_graphrag_milvus.GraphRAGIndex.as_naive_retriever` uses.

The choice is made at creation (Milvus adds a function only to a new collection) and read
back from the collection's schema when the index is reopened.
"""

from __future__ import annotations

import json
import unicodedata
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from importlib.util import find_spec
from typing import Any, cast

from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import BaseNode, MetadataMode
from llama_index.core.utils import iter_batch
from llama_index.core.vector_stores.types import VectorStoreQuery
from llama_index.core.vector_stores.utils import metadata_dict_to_node, node_to_metadata_dict
from llama_index.vector_stores.milvus import MilvusVectorStore
from llama_index.vector_stores.milvus.utils import BM25BuiltInFunction
from pymilvus import AsyncMilvusClient, DataType, FunctionType, MilvusClient

from llama_index_graphrag_milvus.errors import InvalidInputError
from llama_index_graphrag_milvus.graph.word_table import DEFAULT_B, DEFAULT_K1
from llama_index_graphrag_milvus.limits import MILVUS_MAX_TOP_K
from llama_index_graphrag_milvus.milvus.schema import PASSAGE_FIELDS
from llama_index_graphrag_milvus.words import fold

FULL_TEXT_FIELD = "sparse_embedding"
"""The passage collection's BM25 field (the vector store's default sparse field)."""
TEXT_FIELD = "text"
"""The passage text (what a collection made by ``MilvusVectorStore`` alone analyses)."""
JIEBA = {"tokenizer": "jieba"}
"""Milvus's analyzer for Chinese (it also splits Japanese at the changes of script): a new
index whose first passages are mostly Chinese or Japanese takes it where Milvus has it."""


def runs_jieba(is_lite: bool) -> bool:
    """Whether the Milvus of an index can run :data:`JIEBA`: a server has it (from 2.5, as
    BM25), Milvus Lite runs it with the ``jieba`` package."""
    return not is_lite or find_spec("jieba") is not None


FOLD_PROPERTY = "graphrag_full_text_fold"
"""The index property (on the relation collection) that says its BM25 reads the passages
and the queries folded (:func:`folded_words`); set when the passage collection is created,
absent on an index created before."""
FOLD_ACCENTS = "accents"
""":data:`FOLD_PROPERTY`'s value: accents and case folded by :func:`folded_words`."""
NEW_INDEX_FOLD = FOLD_ACCENTS
"""What a passage collection created now records under :data:`FOLD_PROPERTY`."""
LEXICAL_FIELD = "full_text"
"""What the BM25 function reads in a collection the package creates: the passage as it is
embedded (``node.get_content(MetadataMode.EMBED)``: its text and the metadata the embedding
sees, such as a title), so that BM25 and the dense search read the same content."""
LEXICAL_MAX_BYTES = 65_535
RRF_K = 60
LITE_K1 = 1.5
"""BM25's term-frequency saturation on Milvus Lite when the index does not set it (a
server's is :data:`~llama_index_graphrag_milvus.graph.word_table.DEFAULT_K1`, 1.2)."""
"""Reciprocal rank fusion's constant in hybrid search (Milvus's and the literature's)."""


class ReadsAtLevel:
    """A Milvus client (sync or async) whose searches and queries read at ``level`` unless
    a call names its own. ``MilvusVectorStore`` sends its searches without a consistency
    level, so Milvus reads them at the level the collection was created with: an index
    opened at ``"Strong"`` over collections created at ``"Bounded"`` had its naive RAG
    (dense, BM25, hybrid) read at ``"Bounded"`` (a deleted passage returned after its delete
    was acknowledged) while its graph methods read at ``"Strong"``. Everything else is the
    client's.

    >>> class Client:
    ...     def search(self, **kwargs): return kwargs
    ...     def close(self): return "closed"
    >>> reads = ReadsAtLevel(Client(), "Strong")
    >>> reads.search(limit=2), reads.search(consistency_level="Session")["consistency_level"]
    ({'consistency_level': 'Strong', 'limit': 2}, 'Session')
    >>> reads.close()
    'closed'
    """

    def __init__(self, client: Any, level: str) -> None:
        self._client = client
        self._level = level

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def _at(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        return {"consistency_level": self._level, **kwargs}

    def search(self, *args: Any, **kwargs: Any) -> Any:
        return self._client.search(*args, **self._at(kwargs))

    def hybrid_search(self, *args: Any, **kwargs: Any) -> Any:
        return self._client.hybrid_search(*args, **self._at(kwargs))

    def query(self, *args: Any, **kwargs: Any) -> Any:
        return self._client.query(*args, **self._at(kwargs))


class PassageVectorStore(MilvusVectorStore):
    """``MilvusVectorStore`` of the passages. With full-text search it creates and fills
    :data:`LEXICAL_FIELD` (the passage as embedded), which its BM25 function reads, and its
    BM25 search (``"sparse"`` / ``"text_search"`` query modes) sends no
    ``drop_ratio_search``: the vector store asks for 0.2, which Milvus refuses on a BM25
    field ("only drop_ratio_search=0 is supported"). Its scores are BM25's, positive on
    every Milvus."""

    _loop_clients: weakref.WeakMethod[Callable[[], AsyncMilvusClient]] | None = PrivateAttr(
        default=None)
    _reads: ReadsAtLevel | None = PrivateAttr(default=None)
    _folds: bool = PrivateAttr(default=False)

    def fold_words(self, folds: bool) -> None:
        """Whether BM25 reads the passages this store writes and the texts it searches
        folded (:func:`folded_words`; the graph store's ``folds_words``)."""
        self._folds = folds

    def _for_words(self, query: VectorStoreQuery) -> VectorStoreQuery:
        """``query`` with its text folded when this store folds (its vector unchanged: only
        BM25 reads the text)."""
        if not self._folds or not query.query_str:
            return query
        return replace(query, query_str=folded_words(query.query_str))

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> Any:
        return super().query(self._for_words(query), **kwargs)

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> Any:
        return await super().aquery(self._for_words(query), **kwargs)

    def use_loop_clients(self, clients: Callable[[], AsyncMilvusClient]) -> None:
        """Take the async client of each event loop from ``clients`` (the graph store's
        ``aclient``, held weakly: the store holds this vector store, and a cycle would keep
        both, and a Milvus Lite file, until the garbage collector runs): the one
        ``MilvusVectorStore`` makes is bound to the first loop that uses it, so a second
        ``asyncio.run`` found its channel closed."""
        self._loop_clients = weakref.WeakMethod(clients)

    @property
    def client(self) -> MilvusClient:
        """The Milvus client, its searches and queries at the store's consistency level
        (:class:`ReadsAtLevel`; one wrapper per client, so that what is set on it stays)."""
        reads = self._reads
        if reads is None or reads._client is not self._milvusclient:
            reads = self._reads = ReadsAtLevel(self._milvusclient, self.consistency_level)
        return cast(MilvusClient, reads)

    @property
    def aclient(self) -> AsyncMilvusClient | None:
        """The running event loop's async client (see :meth:`use_loop_clients`), its
        searches and queries at the store's consistency level (:class:`ReadsAtLevel`)."""
        clients = self._loop_clients() if self._loop_clients is not None else None
        found = clients() if clients is not None else self._async_milvusclient
        return (None if found is None
                else cast(AsyncMilvusClient, ReadsAtLevel(found, self.consistency_level)))

    def _reads_lexical_field(self) -> bool:
        function = self.sparse_embedding_function
        return (self.enable_sparse and isinstance(function, BM25BuiltInFunction)
                and function.input_field_names in (LEXICAL_FIELD, [LEXICAL_FIELD]))

    def _add_fields_to_schema(self, schema: Any) -> Any:
        schema = super()._add_fields_to_schema(schema)
        if self._reads_lexical_field():
            assert isinstance(self.sparse_embedding_function, BM25BuiltInFunction)
            schema.add_field(field_name=LEXICAL_FIELD, datatype=DataType.VARCHAR,
                             max_length=LEXICAL_MAX_BYTES,
                             **self.sparse_embedding_function.get_field_kwargs())
        return schema

    def _rows(self, nodes: Sequence[BaseNode]) -> list[dict[str, Any]]:
        """The rows ``MilvusVectorStore.add`` writes, with the lexical field."""
        rows = []
        for node in nodes:
            row = node_to_metadata_dict(node, remove_text=True, text_field=self.text_key)
            row[self.text_key] = node.dict()[self.text_key]
            row["id"] = node.node_id
            row[self.embedding_field] = node.embedding
            row[LEXICAL_FIELD] = lexical_text(node, self._folds)
            rows.append(row)
        return rows

    def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        if not self._reads_lexical_field():
            return super().add(list(nodes), **add_kwargs)
        for batch in iter_batch(self._rows(nodes), self.batch_size):
            self.client.upsert(self.collection_name, batch)
        return [node.node_id for node in nodes]

    async def async_add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        if not self._reads_lexical_field():
            return await super().async_add(list(nodes), **add_kwargs)
        assert self.aclient is not None, "the passage store is opened with an async client"
        for batch in iter_batch(self._rows(nodes), self.batch_size):
            await self.aclient.upsert(self.collection_name, batch)
        return [node.node_id for node in nodes]

    def _bm25_request(self, query: VectorStoreQuery, string_expr: str,
                      output_fields: list[str], kwargs: dict[str, Any]) -> dict[str, Any]:
        return {**words_search_kwargs(self.collection_name, [query.query_str or ""],
                                      query.similarity_top_k, string_expr, output_fields,
                                      self.sparse_embedding_field),
                "partition_names": kwargs.get("milvus_partition_names")}

    def _bm25_hits(self, result: Any) -> tuple[list[BaseNode], list[float], list[str]]:
        """Nodes, BM25 scores (positive, best first: Milvus Lite reports them negated, a
        server as they are) and ids."""
        nodes, scores, ids = self._parse_from_milvus_results(result)
        return nodes, [abs(float(score)) for score in scores], ids

    def _sparse_search(self, query: VectorStoreQuery, string_expr: str,
                       output_fields: list[str], **kwargs: Any
                       ) -> tuple[list[BaseNode], list[float], list[str]]:
        if not isinstance(self.sparse_embedding_function, BM25BuiltInFunction):
            return super()._sparse_search(query, string_expr, output_fields, **kwargs)
        result = self.client.search(
            **self._bm25_request(query, string_expr, output_fields, kwargs))
        return self._bm25_hits(result)

    async def _async_sparse_search(self, query: VectorStoreQuery, string_expr: str,
                                   output_fields: list[str], **kwargs: Any
                                   ) -> tuple[list[BaseNode], list[float], list[str]]:
        if not isinstance(self.sparse_embedding_function, BM25BuiltInFunction):
            return await super()._async_sparse_search(query, string_expr, output_fields,
                                                      **kwargs)
        assert self.aclient is not None, "the passage store is opened with an async client"
        result = await self.aclient.search(
            **self._bm25_request(query, string_expr, output_fields, kwargs))
        return self._bm25_hits(result)


def check_analyzer(analyzer: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The analyzer parameters as Milvus takes them (a ``dict``), or ``None`` for Milvus's
    standard analyzer.

    >>> check_analyzer({"tokenizer": "jieba"})
    {'tokenizer': 'jieba'}
    >>> check_analyzer(None) is None
    True
    """
    if analyzer is None:
        return None
    if not isinstance(analyzer, Mapping) or not analyzer:
        raise InvalidInputError(
            f"full_text_analyzer must be a non-empty dict of Milvus analyzer parameters, "
            f"got {analyzer!r}: for example {{'tokenizer': 'jieba'}} (Chinese) or "
            "{'tokenizer': 'standard', 'filter': ['lowercase']} (see Milvus's analyzer "
            "documentation).")
    return dict(analyzer)


LITE_FILTERS = ("lowercase", "stop")
"""The analyzer filters Milvus Lite applies (words are always lower-cased there; ``stop``
as ``{"type": "stop", "stop_words": [...]}``). It takes any other filter and ignores it."""


def lite_ignored_filters(analyzer: Mapping[str, Any]) -> list[Any]:
    """The filters of ``analyzer`` that Milvus Lite takes and does not apply (see
    :data:`LITE_FILTERS`).

    >>> lite_ignored_filters({"tokenizer": "standard", "filter": ["lowercase", "asciifolding",
    ...                       {"type": "stop", "stop_words": ["the"]}, {"type": "stemmer"}]})
    ['asciifolding', {'type': 'stemmer'}]
    """
    filters = analyzer.get("filter") or []
    if not isinstance(filters, list):
        filters = [filters]
    return [f for f in filters
            if (f.get("type") if isinstance(f, Mapping) else f) not in LITE_FILTERS]


def check_lite_analyzer(analyzer: Mapping[str, Any]) -> None:
    """Refuse an analyzer Milvus Lite cannot run (Lite runs analyzers in Python: its
    standard and jieba tokenizers, lower-casing and stop words), before a collection is
    created with it: an unknown tokenizer, or a filter Lite would take and silently not
    apply ("asciifolding": "Aschenbrodel" would not match "Aschenbrödel" on Lite, and
    would on a server). An older Lite without its analyzer module is not checked.

    >>> check_lite_analyzer({"tokenizer": "icu"})
    Traceback (most recent call last):
    ...
    llama_index_graphrag_milvus.errors.InvalidInputError: Milvus Lite cannot run the analyzer {'tokenizer': 'icu'}: unknown tokenizer type: 'icu' (supported: 'standard', 'jieba'). Use one it runs ({'tokenizer': 'jieba'} for Chinese and Japanese), or a Milvus server for the others.
    """  # noqa: E501
    try:
        from milvus_lite.analyzer import create_analyzer
    except ImportError:  # pragma: no cover - an older milvus-lite
        return
    try:
        create_analyzer(dict(analyzer))
    except Exception as exc:
        raise InvalidInputError(
            f"Milvus Lite cannot run the analyzer {dict(analyzer)!r}: {exc}. Use one it runs "
            "({'tokenizer': 'jieba'} for Chinese and Japanese), or a Milvus server for the "
            "others.") from exc
    ignored = lite_ignored_filters(analyzer)
    if ignored:
        raise InvalidInputError(
            f"Milvus Lite takes the analyzer filters {ignored!r} of {dict(analyzer)!r} but "
            "does not apply them (it lower-cases words and drops "
            "{'type': 'stop', 'stop_words': [...]}, nothing else), so BM25 on Lite would "
            "differ from a server's with the same analyzer. Drop those filters (a new "
            "index's BM25 reads words without accents or case already), or use a Milvus "
            "server for them.")


def folded_words(text: str) -> str:
    """``text`` as a folding index's BM25 reads it, passage and query alike: case-folded and
    without the accents of Latin, Greek and Cyrillic letters (:func:`~..words.fold`),
    other marks composed again, so that "Aschenbrodel" matches "Aschenbrödel", "SAO PAULO"
    "São Paulo", and a kana keeps its voicing. Milvus's ``asciifolding`` filter would do it
    on a server only (Milvus Lite ignores it); folding the text BM25 is given holds on both.

    >>> folded_words("Aschenbrödel, Café de Flore"), folded_words("ガリレオ") == "ガリレオ"
    ('aschenbrodel, cafe de flore', True)
    """
    return unicodedata.normalize("NFC", fold(text))


def lexical_text(node: BaseNode, folds: bool = False) -> str:
    """What BM25 reads of a passage: its content as embedded (:func:`folded_words` when
    ``folds``), cut to what the field holds.

    >>> from llama_index.core.schema import TextNode
    >>> print(lexical_text(TextNode(text="Euler was born in Basel.",
    ...                             metadata={"title": "Euler"})))
    title: Euler
    <BLANKLINE>
    Euler was born in Basel.
    """
    content = node.get_content(metadata_mode=MetadataMode.EMBED)
    return fitted(folded_words(content) if folds else content)


def fitted(content: str) -> str:
    """``content`` cut to what the BM25 input field holds (:data:`LEXICAL_MAX_BYTES` of
    UTF-8, at a character's end).

    >>> cut = fitted("é" * LEXICAL_MAX_BYTES)  # two bytes each: cut after the last whole one
    >>> len(cut.encode()), set(cut), fitted("Euler")
    (65534, {'é'}, 'Euler')
    """
    encoded = content.encode("utf-8")
    if len(encoded) <= LEXICAL_MAX_BYTES:
        return content
    return encoded[:LEXICAL_MAX_BYTES].decode("utf-8", errors="ignore")


def vector_store_kwargs(analyzer: Mapping[str, Any] | None,
                        reads: str = LEXICAL_FIELD) -> dict[str, Any]:
    """What ``MilvusVectorStore`` takes to create (or open) a passage collection with BM25
    full-text search whose function reads the field ``reads``."""
    function = BM25BuiltInFunction(input_field_names=reads,
                                   output_field_names=FULL_TEXT_FIELD,
                                   analyzer_params=dict(analyzer) if analyzer else None)
    return {"enable_sparse": True, "sparse_embedding_field": FULL_TEXT_FIELD,
            "sparse_embedding_function": function, "hybrid_ranker": "RRFRanker",
            "hybrid_ranker_params": {"k": RRF_K}}


def full_text_input(collection_info: Mapping[str, Any]) -> str | None:
    """The field a described collection's BM25 function reads (``describe_collection``), or
    ``None`` when it has none."""
    for function in collection_info.get("functions") or ():
        kind = function.get("type")
        if kind in (FunctionType.BM25, "BM25", int(FunctionType.BM25)):
            inputs = function.get("input_field_names") or [TEXT_FIELD]
            return str(inputs[0])
    return None


def analyzer_of(collection_info: Mapping[str, Any], field: str) -> dict[str, Any] | None:
    """The analyzer parameters of ``field`` in a described collection (``None``: Milvus's
    standard analyzer)."""
    for described in collection_info.get("fields") or ():
        if described.get("name") == field:
            params = (described.get("params") or {}).get("analyzer_params")
            if isinstance(params, str):
                params = json.loads(params) if params.strip() else None
            return dict(params) if params else None
    return None


def same_analyzer(first: Mapping[str, Any] | None, second: Mapping[str, Any] | None
                  ) -> bool:
    """Whether two analyzer parameters split words alike as far as they can be compared:
    both Milvus's standard analyzer, or the same parameters.

    >>> same_analyzer({"tokenizer": "standard"}, None), same_analyzer(None, {"tokenizer": "jieba"})
    (True, False)
    """
    if is_standard(first) and is_standard(second):
        return True
    return dict(first or {}) == dict(second or {})


def is_standard(analyzer: Mapping[str, Any] | None) -> bool:
    """Whether ``analyzer`` is Milvus's standard analyzer (words lower-cased, no stop
    words), the one BM25 in memory reproduces.

    >>> is_standard(None), is_standard({"type": "standard"})
    (True, True)
    >>> is_standard({"tokenizer": "standard", "filter": ["lowercase"]})
    True
    >>> is_standard({"tokenizer": "jieba"}), is_standard({"type": "english"})
    (False, False)
    """
    if not analyzer:
        return True
    if dict(analyzer) == {"type": "standard"}:
        return True
    return (analyzer.get("tokenizer") == "standard"
            and set(analyzer) <= {"tokenizer", "filter"}
            and list(analyzer.get("filter") or ["lowercase"]) == ["lowercase"])


def bm25_parameters(index_info: Mapping[str, Any], is_lite: bool) -> tuple[float, float]:
    """BM25's ``(k1, b)`` of a described sparse index: its own, else the Milvus default
    (``k1`` 1.5 on Milvus Lite, 1.2 on a server; ``b`` 0.75).

    >>> bm25_parameters({"bm25_k1": "1.3"}, is_lite=True), bm25_parameters({}, False)
    ((1.3, 0.75), (1.2, 0.75))
    """
    params = {**index_info, **(index_info.get("params") or {})}
    k1 = params.get("bm25_k1", LITE_K1 if is_lite else DEFAULT_K1)
    return float(k1), float(params.get("bm25_b", DEFAULT_B))


def words_search_kwargs(collection: str, texts: Sequence[str], limit: int, where: str = "",
                        output_fields: Sequence[str] = PASSAGE_FIELDS,
                        field: str = FULL_TEXT_FIELD) -> dict[str, Any]:
    """The arguments of one batched BM25 search of the passage collection (no
    ``drop_ratio_search``: Milvus refuses it on a BM25 field)."""
    return {**({"filter": where} if where else {}), "collection_name": collection,
            "data": list(texts), "anns_field": field, "limit": min(limit, MILVUS_MAX_TOP_K),
            "output_fields": list(output_fields), "search_params": {"metric_type": "BM25"}}


def bm25_score(hit: Mapping[str, Any]) -> float:
    """A BM25 search hit's score, positive on every Milvus (Milvus Lite reports it negated).

    >>> bm25_score({"distance": -2.5}), bm25_score({"distance": 2.5})
    (2.5, 2.5)
    """
    return abs(float(hit["distance"]))


def parse_words_hits(lists: Sequence[Sequence[Mapping[str, Any]]]
                     ) -> list[list[tuple[BaseNode, float]]]:
    """``(node, BM25 score)`` lists of ranked BM25 hits (in their order)."""
    return [[(metadata_dict_to_node(h["entity"], text=h["entity"].get("text")), bm25_score(h))
             for h in hits] for hits in lists]
