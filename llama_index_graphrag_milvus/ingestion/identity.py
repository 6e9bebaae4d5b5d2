"""What an index is bound to: the identity of its passages and the embedding model it was
built with, recorded in the relation collection's properties at creation.

A passage's identity is its source document, its text and the metadata that makes it
distinct to the user (by default all of it, so that two tenants with the same handbook keep
two passages). The embedding model is recorded by class, name, dimension and a *probe*: the
leading components of the vector it gives to a fixed text. A reopened index embeds the probe
again; a model that gives different vectors (another model of the same dimension) is refused,
whatever its name, and a model that gives the same vectors under another name or path is
accepted.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.graph_stores.types import KG_NODES_KEY, KG_RELATIONS_KEY

from llama_index_graphrag_milvus.embeddings import answered, check_vectors
from llama_index_graphrag_milvus.errors import EmbeddingModelError, InvalidInputError
from llama_index_graphrag_milvus.metadata import RETRIEVAL_KEYS, TRIPLETS_KEY
from llama_index_graphrag_milvus.milvus.fulltext import (
    check_analyzer,
    check_lite_analyzer,
    same_analyzer,
)
from llama_index_graphrag_milvus.milvus.tenants import server_version

if TYPE_CHECKING:
    from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore

logger = logging.getLogger(__name__)

PROBE_TEXT = "llama_index_graphrag_milvus embedding probe: Euler studied with Johann Bernoulli."
"""The text whose vector identifies an embedding model."""
PROBE_COMPONENTS = 32
"""Leading vector components recorded for the probe."""
PROBE_MIN_COSINE = 0.99
"""Probe vectors less similar than this come from another model."""
ALL_METADATA = "*"
"""``passage_identity_keys`` value meaning: every metadata key is part of the identity."""

_MODEL_PROPERTY = "graphrag.embed_model"
_IDENTITY_PROPERTY = "graphrag.passage_identity_keys"
_NOT_IDENTITY = frozenset({TRIPLETS_KEY, *RETRIEVAL_KEYS, KG_NODES_KEY, KG_RELATIONS_KEY})
_PACKAGE_PREFIX = "graphrag_"
"""Metadata the package writes (triplets, descriptions, an extraction error...) is never
part of a passage's identity: the same passage extracted again, differently or after a
failure, must stay the same passage."""


def identity_metadata(metadata: Mapping[str, Any], keys: Sequence[str] | str
                      ) -> dict[str, Any]:
    """The part of ``metadata`` that is part of a passage's identity.

    >>> identity_metadata({"tenant_id": "acme", "page": 3}, ["tenant_id"])
    {'tenant_id': 'acme'}
    >>> identity_metadata({"tenant_id": "acme", "graphrag_triplets": [],
    ...                    "graphrag_extraction_error": "TimeoutError"}, "*")
    {'tenant_id': 'acme'}
    """
    chosen = metadata.keys() if keys == ALL_METADATA else [k for k in keys if k in metadata]
    return {k: metadata[k] for k in sorted(chosen)
            if k not in _NOT_IDENTITY and not k.startswith(_PACKAGE_PREFIX)}


def identity_key(metadata: Mapping[str, Any]) -> str:
    """A canonical text of identity metadata ('' when there is none), for hashing."""
    return json.dumps(dict(metadata), sort_keys=True, ensure_ascii=False,
                      default=str) if metadata else ""


def check_identity_keys(keys: Sequence[str] | str) -> tuple[str, ...] | str:
    """``keys`` as stored: ``"*"`` or a tuple of metadata key names."""
    if keys == ALL_METADATA:
        return ALL_METADATA
    if isinstance(keys, str) or not isinstance(keys, Sequence) or not all(
            isinstance(k, str) and k for k in keys):
        raise InvalidInputError(
            f"passage_identity_keys={keys!r}: give a list of metadata key names (for example "
            "['tenant_id']), [] for the text and source document only, or '*' for all "
            "metadata (the default).")
    return tuple(keys)


@dataclass(frozen=True)
class EmbedModelRecord:
    """What identifies an embedding model: class, name, dimension and probe vector."""

    class_name: str
    model_name: str
    dim: int
    probe: tuple[float, ...]

    @classmethod
    def of(cls, model: BaseEmbedding) -> EmbedModelRecord:
        """Embed the probe text with ``model`` (one call) and describe it."""
        with answered(model):
            answer = model.get_text_embedding(PROBE_TEXT)
        vector = check_vectors([answer], 1, model)[0]
        return cls(type(model).__name__, str(getattr(model, "model_name", "")), len(vector),
                   tuple(round(float(x), 6) for x in vector[:PROBE_COMPONENTS]))

    def to_json(self) -> str:
        return json.dumps({"class": self.class_name, "model_name": self.model_name,
                           "dim": self.dim, "probe": list(self.probe)})

    @classmethod
    def from_json(cls, text: str) -> EmbedModelRecord:
        data = json.loads(text)
        return cls(str(data["class"]), str(data["model_name"]), int(data["dim"]),
                   tuple(float(x) for x in data["probe"]))

    def same_vectors(self, other: EmbedModelRecord) -> bool:
        """Whether the two probes come from one model (cosine of the recorded components)."""
        if self.dim != other.dim or len(self.probe) != len(other.probe):
            return False
        a, b = np.asarray(self.probe), np.asarray(other.probe)
        norm = float(np.linalg.norm(a) * np.linalg.norm(b))
        if norm == 0.0:  # a model may give the probe a zero vector: the same one, or not
            return bool(np.array_equal(a, b))
        return float(a @ b) / norm >= PROBE_MIN_COSINE

    def describe(self) -> str:
        return f"{self.class_name}(model_name={self.model_name!r}, dim={self.dim})"


@dataclass(frozen=True)
class IndexSettings:
    """What an index records at creation (Milvus collection properties)."""

    embed_model: EmbedModelRecord | None
    passage_identity_keys: tuple[str, ...] | str

    def to_properties(self) -> dict[str, str]:
        properties = {_IDENTITY_PROPERTY: json.dumps(self.passage_identity_keys)}
        if self.embed_model is not None:
            properties[_MODEL_PROPERTY] = self.embed_model.to_json()
        return properties

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> IndexSettings | None:
        """The recorded settings, or ``None`` for an index created before they were kept."""
        if _IDENTITY_PROPERTY not in properties:
            return None
        keys = json.loads(properties[_IDENTITY_PROPERTY])
        model = properties.get(_MODEL_PROPERTY)
        return cls(EmbedModelRecord.from_json(model) if model else None,
                   keys if keys == ALL_METADATA else tuple(keys))


def check_embed_model(stored: EmbedModelRecord, current: EmbedModelRecord, where: str,
                      allow_change: bool) -> bool:
    """Whether ``current`` must replace ``stored`` in the record.

    Raises:
        EmbeddingModelError: the models give different vectors and ``allow_change`` is off.
    """
    if stored.same_vectors(current):
        if (stored.class_name, stored.model_name) != (current.class_name, current.model_name):
            logger.info("embedding model %s gives the vectors of %s, which built %s",
                        current.describe(), stored.describe(), where)
        return False
    if not allow_change:
        now = ("now gives" if stored.describe() == current.describe()
               else f"{current.describe()} gives")
        raise EmbeddingModelError(
            f"{where} was built with {stored.describe()}, and {now} "
            "different vectors: searches would compare vectors of two models and return "
            "noise. Pass the embedding model the index was built with, use a new "
            "collection_prefix for the new model, or, if the switch is deliberate (you "
            "re-embed everything, or the stored vectors are meant to be compared with this "
            "model), open the index with allow_embed_model_change=True."
        )
    logger.warning("%s was built with %s; recording %s instead (allow_embed_model_change)",
                   where, stored.describe(), current.describe())
    return True


def bind_tenant_key(store: MilvusGraphStore, tenant_key: str | None) -> None:
    """The tenant key of the index on ``store``: the recorded one for an existing index
    (``tenant_key`` must be ``None`` or the same), ``tenant_key`` for a new one.

    Raises:
        InvalidInputError: ``tenant_key`` differs from the recorded one.
    """
    if store.dim is None:
        store.tenant_key = tenant_key
        return
    if tenant_key is not None and tenant_key != store.tenant_key:
        raise InvalidInputError(
            f"the index {store.prefix!r} at {store.uri!r} was created with tenant_key="
            f"{store.tenant_key!r}, not {tenant_key!r}: its collections' layout follows the "
            "key chosen at creation. Leave tenant_key unset to use the recorded one, or build "
            "a new index (another collection_prefix) with this key.")


BM25_SINCE = (2, 5)
"""The first Milvus (and Milvus Lite) version with BM25 functions."""


def has_bm25(version: str) -> bool:
    """Whether a Milvus of ``version`` (as its client reports it) has BM25 functions: Milvus
    Lite and servers from :data:`BM25_SINCE`; a version that cannot be read is taken to be
    recent.

    >>> has_bm25("v2.3.5"), has_bm25("v2.5.4"), has_bm25("milvus_lite-3.2.2")
    (False, True, True)
    """
    return (server_version(version.removeprefix("milvus_lite-")) or BM25_SINCE) >= BM25_SINCE


def bind_full_text(store: MilvusGraphStore, full_text_search: bool | None,
                   analyzer: Mapping[str, Any] | None) -> None:
    """Whether the index on ``store`` has BM25 full-text search: for a new index
    ``full_text_search``, where ``None`` (the default) gives it one wherever Milvus has BM25
    (Milvus Lite, servers from 2.5; an older server's new index has none, the log says so);
    the collection's own for an existing one.

    Raises:
        InvalidInputError: ``full_text_search=True`` (or an analyzer) for an existing index
            created without it, or for a new one on a server before 2.5.
    """
    if full_text_search is not None and not isinstance(full_text_search, bool):
        raise InvalidInputError(
            f"full_text_search must be True, False or None, got {full_text_search!r}.")
    analyzer = check_analyzer(analyzer)
    if analyzer is not None and full_text_search is False:
        raise InvalidInputError(
            "full_text_analyzer is given with full_text_search=False: the analyzer splits "
            "the passages for BM25; pass full_text_search=True or drop the analyzer.")
    asked = bool(full_text_search) or analyzer is not None
    if store.dim is None:
        version = "" if full_text_search is False else str(store.client.get_server_version())
        available = full_text_search is not False and has_bm25(version)
        if asked and not available:
            raise InvalidInputError(
                f"full_text_search needs Milvus 2.5 or later (BM25 functions), and the "
                f"server at {store.uri!r} runs {version}: upgrade the server, use Milvus "
                "Lite, or create the index without full_text_search.")
        if analyzer is not None and store.is_lite:
            check_lite_analyzer(analyzer)
        if full_text_search is None and not available:
            logger.info("the Milvus at %r has no BM25 (before 2.5): the new index %r gets "
                        "dense search only", store.uri, store.prefix)
        store.full_text = asked or available
        store.full_text_analyzer = analyzer
        return
    where = f"the index {store.prefix!r} at {store.uri!r}"
    if asked and not store.full_text:
        raise InvalidInputError(
            f"{where} was created without full-text search, which Milvus adds only to a new "
            "collection: build a new index (another collection_prefix) with "
            "full_text_search=True, or leave it unset to open this one with dense search "
            "only.")
    if full_text_search is False and store.full_text:
        raise InvalidInputError(
            f"{where} was created with full-text search (BM25), which Milvus cannot take "
            "out of a collection: leave full_text_search unset to open it (its retrievers "
            "take as_retriever(match_words=False) to rank by meaning alone), or build a new "
            "index (another collection_prefix) with full_text_search=False.")
    if analyzer is not None and store.full_text and not same_analyzer(
            analyzer, store.full_text_analyzer):
        raise InvalidInputError(
            f"{where} splits its passages for BM25 with the analyzer "
            f"{store.full_text_analyzer or {'tokenizer': 'standard'}!r}, not {analyzer!r}: "
            "Milvus fixes it when the collection is created. Leave full_text_analyzer unset "
            "to open this index, or build a new one (another collection_prefix) with the "
            "analyzer.")


def bind_settings(store: MilvusGraphStore, embed_model: BaseEmbedding,
                  keys: tuple[str, ...] | str | None, allow_model_change: bool
                  ) -> tuple[str, ...] | str:
    """The passage identity rule an index opened on ``store`` uses: ``keys`` for a new
    index (all metadata when ``None``), the recorded rule for an existing one, whose
    embedding model is checked against ``embed_model`` (:func:`check_embed_model`; with
    ``allow_model_change`` the new model is recorded instead).

    Raises:
        InvalidInputError: ``keys`` differ from the recorded rule.
        EmbeddingModelError: the models give different vectors (see
            :func:`check_embed_model`).
    """
    where = f"the index {store.prefix!r} at {store.uri!r}"
    settings = IndexSettings.from_properties(store.properties)
    if settings is None:  # a new index, or one created before settings were recorded
        return ALL_METADATA if keys is None else keys
    if keys is not None and keys != settings.passage_identity_keys:
        raise InvalidInputError(
            f"{where} identifies passages by the metadata keys "
            f"{settings.passage_identity_keys!r}, not {keys!r}: changing the rule would "
            "store the same passages again under new ids. Leave passage_identity_keys "
            "unset to use the recorded rule, or build a new index.")
    if settings.embed_model is not None:
        current = EmbedModelRecord.of(embed_model)
        store.check_dimension(current.dim, "the embedding model")
        if check_embed_model(settings.embed_model, current, where, allow_model_change):
            store.set_properties(IndexSettings(
                current, settings.passage_identity_keys).to_properties())
    return settings.passage_identity_keys
