"""The retrieval methods under test: naive RAG, the LLM-free graph retriever, its fusion with
naive RAG (core's ``QueryFusionRetriever``), and the graph retriever with the LLM reranker."""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.llms import (
    CompletionResponse,
    CompletionResponseGen,
    CustomLLM,
    LLMMetadata,
)
from llama_index.core.llms.llm import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
from llama_index.core.schema import NodeWithScore, QueryBundle

from benchmarks.multihop.data import CORPUS_ID_KEY
from benchmarks.multihop.metrics import QuestionResult
from llama_index_graphrag_milvus import GraphRAGRetriever
from llama_index_graphrag_milvus.index import GraphRAGIndex
from llama_index_graphrag_milvus.metadata import RELATIONS_KEY, SUBGRAPH_KEY
from llama_index_graphrag_milvus.rerank import GraphRelationRerank
from llama_index_graphrag_milvus.retrieval.methods import KEYWORD_SETTINGS

UNLIMITED_PASSAGES = 1_000_000
"""Passage cap of the coverage retriever: every passage of the candidate pool comes back."""
NAIVE = "naive"
BM25 = "bm25"
"""Kind of Milvus's BM25 full-text search alone (``as_naive_retriever(search="bm25")``)."""
HYBRID = "hybrid"
"""Kind of Milvus's hybrid search, dense + BM25 (``as_naive_retriever(search="hybrid")``)."""
BASELINE_KINDS = (NAIVE, BM25, HYBRID)
"""The simple baselines a Milvus user tries first: dense, BM25 and hybrid search."""
GRAPH = "graph"
GRAPH_RERANK = "graph+rerank"
FUSION = "fusion"
"""Kind of the graph + naive RAG methods fused by core's ``QueryFusionRetriever``."""
FUSION_ALIGNED = "fusion-aligned"
"""Kind of the diagnostic fusion whose graph nodes lose ``graphrag_relations`` (see
:class:`RelationMetadataStripper`)."""
RRF_MODE = FUSION_MODES.RECIPROCAL_RANK
"""``mode="reciprocal_rerank"``."""
TIMINGS_KEY = "graphrag_timings"
"""Node metadata key where a retriever may report per-query timings (name -> seconds)."""


def retriever_default(name: str) -> Any:
    """The default of a :class:`GraphRAGRetriever` argument, or of a method setting of its
    keyword form: the benchmark's defaults follow the retriever's, so that a plain run
    measures what a user gets.

    >>> retriever_default("max_candidate_relations"), retriever_default("entity_top_k")
    (100, 3)
    """
    parameters = inspect.signature(GraphRAGRetriever.__init__).parameters
    if name in parameters:
        return parameters[name].default
    return KEYWORD_SETTINGS[name][2]


SET_BY_BENCHMARK = frozenset({"self", "index", "llm", "similarity_top_k", "ner_prompt",
                              "filters", "callback_manager", "verbose"})
""":class:`GraphRAGRetriever` arguments the benchmark sets itself (or that have no JSON
form): a graph method cannot set them."""
ROW_OPTIONS = ("label", "fusion", "coverage")
"""The keys of a ``--graph-methods`` row that are not retriever arguments."""


def retriever_arguments() -> frozenset[str]:
    """The :class:`GraphRAGRetriever` arguments a graph method may set: those of its
    signature and the method settings of its keyword form (so a new retrieval mode's options
    need no change here)."""
    parameters = inspect.signature(GraphRAGRetriever.__init__).parameters
    named = {name for name, p in parameters.items() if p.kind is not p.VAR_KEYWORD}
    return frozenset(named | set(KEYWORD_SETTINGS)) - SET_BY_BENCHMARK


def check_retriever_kwargs(names: Iterable[str], where: str,
                           options: Sequence[str] = ()) -> None:
    """Raise ``ValueError`` naming what is allowed when ``names`` has an argument that
    :func:`retriever_arguments` does not allow (``options``: the other keys ``where``
    takes, for the message)."""
    names = set(names)
    allowed = retriever_arguments()
    rejected = sorted(names - allowed)
    if rejected:
        besides = f" (besides the row options {', '.join(options)})" if options else ""
        raise ValueError(f"{where}: unknown GraphRAGRetriever argument(s) "
                         f"{', '.join(rejected)}; expected {', '.join(sorted(allowed))}"
                         f"{besides}")


KHOP_SCORING = "passage"
"""The method of the benchmark's ``--hops`` rows and sweep: the k-hop pool, by passage."""


@dataclass(frozen=True)
class GraphConfig:
    """The knobs of one LLM-free graph retriever configuration.

    ``extra`` holds further :class:`GraphRAGRetriever` arguments (``--graph-kwargs``), as
    sorted ``(name, value)`` pairs so that the configuration stays hashable.
    """

    hops: int = retriever_default("hops")
    entity_top_k: int = retriever_default("entity_top_k")
    relation_top_k: int = retriever_default("relation_top_k")
    max_candidate_relations: int = retriever_default("max_candidate_relations")
    extra: tuple[tuple[str, Any], ...] = ()

    @property
    def label(self) -> str:
        """A short name, for tables: ``h1 e3 r3 pool100``."""
        label = (f"h{self.hops} e{self.entity_top_k} r{self.relation_top_k} "
                 f"pool{self.max_candidate_relations}")
        return " ".join([label, *(f"{k}={v}" for k, v in self.extra)])

    def retriever_kwargs(self) -> dict[str, Any]:
        """Arguments of :meth:`GraphRAGIndex.as_retriever`. The knobs here are those of the
        k-hop method, so a configuration runs it (``passage_scoring="passage"``) unless its
        ``extra`` names another method."""
        return {"passage_scoring": KHOP_SCORING, "hops": self.hops,
                "entity_top_k": self.entity_top_k,
                "relation_top_k": self.relation_top_k,
                "max_candidate_relations": self.max_candidate_relations, **dict(self.extra)}

    def updated(self, kwargs: Mapping[str, Any]) -> GraphConfig:
        """This configuration with some retriever arguments set: the four knobs by name,
        the others in ``extra``.

        >>> GraphConfig(1, 3, 3, 100).updated({"hops": 2, "passage_scoring": "relation"}).label
        'h2 e3 r3 pool100 passage_scoring=relation'
        """
        knobs = {k: v for k, v in kwargs.items() if k in _KNOBS}
        extra = {**dict(self.extra), **{k: v for k, v in kwargs.items() if k not in _KNOBS}}
        return replace(self, **knobs, extra=tuple(sorted(extra.items())))


_KNOBS = frozenset(f.name for f in fields(GraphConfig)) - {"extra"}


@dataclass(frozen=True)
class GraphRow:
    """One LLM-free graph configuration of the comparison and the methods made from it.

    Args:
        label: its name in the tables (``graph <label>``, ``fusion <label>``).
        config: the retriever arguments.
        fusion: also evaluate its fusion with naive RAG (``fusion <label>``).
        coverage: measure its pool coverage (its retriever again, with no passage cap).
        alone: evaluate the graph retriever on its own (and with the LLM reranker); ``False``
            for a configuration that only joins as a fusion (the sweep's best fusion).
    """

    label: str
    config: GraphConfig
    fusion: bool = True
    coverage: bool = True
    alone: bool = True


@dataclass(frozen=True)
class GraphMethodSpec:
    """One row of ``--graph-methods``: a JSON object of :class:`GraphRAGRetriever`
    arguments (``passage_scoring``, ``hops``, a mode's own options...) plus the options
    ``label`` (default: the configuration's label), ``fusion`` and ``coverage`` (default
    ``true``: see :class:`GraphRow`). The arguments it leaves out take the run's values
    (``entity_top_k``, ``relation_top_k``, ``max_candidate_relations``, ``graph_kwargs``) and
    the retriever's defaults.
    """

    kwargs: tuple[tuple[str, Any], ...] = ()
    label: str | None = None
    fusion: bool = True
    coverage: bool = True

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> GraphMethodSpec:
        """Check a parsed JSON object; raise ``ValueError`` saying what is wrong.

        >>> spec = GraphMethodSpec.from_json({"label": "rel", "passage_scoring": "relation",
        ...                                   "fusion": False})
        >>> spec.kwargs, spec.label, spec.fusion, spec.coverage
        ((('passage_scoring', 'relation'),), 'rel', False, True)
        """
        where = f"graph method {json.dumps(value)}"
        label = value.get("label")
        if label is not None and (not isinstance(label, str) or not label.strip()):
            raise ValueError(f"{where}: 'label' must be a non-empty string, got {label!r}")
        for option in ("fusion", "coverage"):
            if not isinstance(value.get(option, True), bool):
                raise ValueError(f"{where}: {option!r} must be true or false, got "
                                 f"{value[option]!r}")
        kwargs = {k: v for k, v in value.items() if k not in ROW_OPTIONS}
        check_retriever_kwargs(kwargs, where, ROW_OPTIONS)
        return cls(tuple(sorted(kwargs.items())), label, value.get("fusion", True),
                   value.get("coverage", True))

    def row(self, base: GraphConfig) -> GraphRow:
        """The row, its arguments laid over ``base``."""
        config = base.updated(dict(self.kwargs))
        return GraphRow(self.label or config.label, config, self.fusion, self.coverage)


def graph_rows(specs: Sequence[GraphMethodSpec], base: GraphConfig) -> list[GraphRow]:
    """The rows of ``specs`` over ``base``; ``ValueError`` when two have the same label."""
    rows = [spec.row(base) for spec in specs]
    labels = [row.label for row in rows]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise ValueError(f"graph methods need distinct labels; {repeated} name more than one "
                         "(give each row its own \"label\")")
    return rows


class NeverCalledLLM(CustomLLM):
    """The ``llm`` of the fusion retrievers: with ``num_queries=1`` core's
    ``QueryFusionRetriever`` generates no extra query, so an LLM call would be a bug (and it
    would make the "LLM-free" figures wrong). Raises ``RuntimeError`` if called."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="never-called", is_chat_model=False)

    def complete(self, prompt: str, formatted: bool = False,
                 **kwargs: Any) -> CompletionResponse:
        raise RuntimeError(f"NeverCalledLLM was called (prompt {prompt[:80]!r}): the "
                           "LLM-free fusion must not call an LLM")

    def stream_complete(self, prompt: str, formatted: bool = False,
                        **kwargs: Any) -> CompletionResponseGen:
        raise RuntimeError(f"NeverCalledLLM was called (prompt {prompt[:80]!r}): the "
                           "LLM-free fusion must not call an LLM")


class RelationMetadataStripper(BaseRetriever):
    """Diagnostic: the graph retriever's nodes without ``metadata["graphrag_relations"]``.

    Core's reciprocal rank fusion matches nodes by ``node.hash`` (text + metadata). The
    graph retriever adds the relations that reached a passage to its metadata; its passage
    nodes leave those retrieval keys out of their hash, so the same passage from the graph
    and from naive RAG matches and its two reciprocal ranks add up. This row strips the key
    (on copies) as a regression check: its fusion must equal the unstripped one; if the
    hashes ever diverged again, the fusion would degrade to an interleaving of the two lists
    and the two rows would differ.
    """

    def __init__(self, retriever: BaseRetriever) -> None:
        super().__init__()
        self._inner = retriever

    @staticmethod
    def _strip(hits: list[NodeWithScore]) -> list[NodeWithScore]:
        stripped = []
        for hit in hits:
            node = hit.node.model_copy()
            node.metadata = {k: v for k, v in hit.node.metadata.items() if k != RELATIONS_KEY}
            stripped.append(NodeWithScore(node=node, score=hit.score))
        return stripped

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._strip(self._inner.retrieve(query_bundle))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._strip(await self._inner.aretrieve(query_bundle))


class ReplayRetriever(BaseRetriever):
    """Returns the nodes stored for a query string (fresh ``NodeWithScore`` wrappers, since
    fusion overwrites scores): lets the sweep fuse results it already has with core's
    ``QueryFusionRetriever`` instead of retrieving them again."""

    def __init__(self) -> None:
        super().__init__()
        self.hits: dict[str, list[NodeWithScore]] = {}

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [NodeWithScore(node=h.node, score=h.score)
                for h in self.hits.get(query_bundle.query_str, [])]


def fusion_retriever(graph: BaseRetriever, naive: BaseRetriever, top_k: int
                     ) -> QueryFusionRetriever:
    """How a user composes the graph retriever with naive RAG: core's reciprocal rank fusion
    of the two lists, the original query only (no LLM call). ``similarity_top_k`` keeps every
    fused node (each input has at most ``top_k``): core cuts the fused list before
    ``retrieve()`` drops repeated node ids, so ``top_k`` would leave fewer than ``top_k``
    distinct passages when a passage comes from both lists (see
    :class:`RelationMetadataStripper`)."""
    return QueryFusionRetriever([graph, naive], llm=NeverCalledLLM(), mode=RRF_MODE,
                                similarity_top_k=2 * top_k, num_queries=1, use_async=False)


def describe_fusion(fusion: QueryFusionRetriever, graph: GraphRAGRetriever,
                    naive: dict[str, Any], strip_relations: bool = False) -> dict[str, Any]:
    """The configuration of a fusion method, with every argument of its graph retriever."""
    return {"retriever": "QueryFusionRetriever", "mode": str(fusion.mode.value),
            "num_queries": fusion.num_queries, "use_async": fusion.use_async,
            "similarity_top_k": fusion.similarity_top_k, "llm": None,
            "graph": graph.describe(), "naive": naive,
            "graph_nodes_without_relations_metadata": strip_relations}


@dataclass
class Method:
    """A retrieval method under test: a retriever, maybe a postprocessor, its results.

    ``top_k`` distinct passages of what it returns are scored.
    """

    name: str
    kind: str
    retriever: BaseRetriever
    config: dict[str, Any]
    postprocessor: BaseNodePostprocessor | None = None
    top_k: int = 5
    coverage_retriever: BaseRetriever | None = None
    results: list[QuestionResult] = field(default_factory=list)

    def run(self, bundle: QueryBundle) -> list[NodeWithScore]:
        """Retrieve (and rerank) for one query; the nodes best first."""
        nodes = self.retriever.retrieve(bundle)
        if self.postprocessor is not None:
            nodes = self.postprocessor.postprocess_nodes(nodes, query_bundle=bundle)
        return nodes


def corpus_ids(nodes: Sequence[NodeWithScore]) -> tuple[str, ...]:
    """The dataset ids of retrieved passages, in order, without repeats."""
    ids = (str(n.node.metadata.get(CORPUS_ID_KEY, n.node.node_id)) for n in nodes)
    return tuple(dict.fromkeys(ids))


def node_timings(nodes: Sequence[NodeWithScore]) -> dict[str, float] | None:
    """The per-query timings a retriever reported (``metadata["graphrag_timings"]``: name ->
    seconds, on the first node that has it), ``None`` when none did."""
    for hit in nodes:
        timings = hit.node.metadata.get(TIMINGS_KEY)
        if isinstance(timings, dict):
            return {str(name): float(seconds) for name, seconds in timings.items()
                    if isinstance(seconds, (int, float))}
    return None


def pool_sizes(nodes: Sequence[NodeWithScore]) -> dict[str, float]:
    """Size of a coverage retriever's pool beyond its passages: the distinct ``relations``
    its passages carry (``graphrag_relations``) and, when the method reports its subgraph
    (``graphrag_subgraph``), the subgraph's ``entities``."""
    relations = {str(r.get("id")) for hit in nodes
                 for r in hit.node.metadata.get(RELATIONS_KEY) or () if isinstance(r, dict)}
    sizes = {"relations": float(len(relations))}
    for hit in nodes:
        subgraph = hit.node.metadata.get(SUBGRAPH_KEY)
        if isinstance(subgraph, dict):
            sizes["entities"] = float(len(subgraph.get("entities") or ()))
            break
    return sizes


def graph_retriever(index: GraphRAGIndex, similarity_top_k: int, graph_config: GraphConfig,
                    **kwargs: Any) -> GraphRAGRetriever:
    """The graph retriever of ``graph_config`` returning ``similarity_top_k`` passages."""
    return index.as_retriever(similarity_top_k=similarity_top_k,
                              **graph_config.retriever_kwargs(), **kwargs)


def make_methods(index: GraphRAGIndex, rows: Sequence[GraphRow], llm: LLM | None,
                 has_graph: bool, *, top_k: int, fusion: bool, rerank_candidates: int,
                 aligned: GraphRow | None = None) -> list[Method]:
    """Naive RAG (dense; BM25 and hybrid when the index has full-text search); one LLM-free
    graph method per row (``alone``); when ``fusion``, the fusion
    with naive RAG of every row with ``fusion`` and the diagnostic fusion of ``aligned``
    (default the last fused row); with ``llm``, one rerank method per row (``alone``)."""
    naive_config = {"retriever": "VectorIndexRetriever (index.as_naive_retriever)",
                    "similarity_top_k": top_k}

    def naive() -> BaseRetriever:
        return index.as_naive_retriever(similarity_top_k=top_k)

    def fused(row: GraphRow, strip: bool) -> Method:
        graph = graph_retriever(index, top_k, row.config)
        inner: BaseRetriever = RelationMetadataStripper(graph) if strip else graph
        retriever = fusion_retriever(inner, naive(), top_k)
        name = (f"fusion {row.label}, relations metadata stripped (diagnostic)" if strip
                else f"fusion {row.label}")
        return Method(name, FUSION_ALIGNED if strip else FUSION, retriever,
                      describe_fusion(retriever, graph, naive_config, strip), top_k=top_k)

    methods = [Method("naive RAG", NAIVE, naive(), naive_config, top_k=top_k)]
    if index.store.full_text:
        methods += [Method(name, search, index.as_naive_retriever(similarity_top_k=top_k,
                                                                  search=search),
                           {**naive_config, "search": search}, top_k=top_k)
                    for name, search in (("BM25 (Milvus full-text search)", BM25),
                                         ("hybrid RAG (dense + BM25, RRF k=60)", HYBRID))]
    if not has_graph:
        return methods
    alone = [row for row in rows if row.alone]
    for row in alone:
        retriever = graph_retriever(index, top_k, row.config)
        methods.append(Method(
            f"graph {row.label}", GRAPH, retriever, {**retriever.describe(), "llm": None},
            top_k=top_k,
            coverage_retriever=(graph_retriever(index, UNLIMITED_PASSAGES, row.config)
                                if row.coverage else None),
        ))
    fused_rows = [row for row in rows if row.fusion]
    if fusion and fused_rows:
        methods += [fused(row, strip=False) for row in fused_rows]
        methods.append(fused(aligned or fused_rows[-1], strip=True))
    if llm is not None:
        for row in alone:
            retriever = graph_retriever(index, rerank_candidates, row.config, llm=llm)
            methods.append(Method(
                f"graph+rerank {row.label}", GRAPH_RERANK, retriever,
                {**retriever.describe(), "rerank_top_n": top_k,
                 "llm": llm.metadata.model_name},
                postprocessor=GraphRelationRerank(llm=llm, top_n=top_k), top_k=top_k,
            ))
    return methods
