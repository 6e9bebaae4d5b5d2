"""GraphRAGRetriever: the shared query steps around one retrieval method.

The retriever checks the query, computes (or reuses) its vector, holds the seed settings and
the filters, and hands the rest to a method (:mod:`.bridge`, :mod:`.pagerank`, :mod:`.pcst`,
:mod:`.khop`, or one of yours: see :mod:`.method`), written once as a plan that
:class:`~.drivers.SyncDriver` and :class:`~.drivers.AsyncDriver` run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.llms.llm import LLM
from llama_index.core.prompts import BasePromptTemplate
from llama_index.core.prompts.mixin import PromptDictType
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.vector_stores import MetadataFilters

from llama_index_graphrag_milvus.errors import EmptyIndexError
from llama_index_graphrag_milvus.graph import ExpansionConfig, PageRankConfig
from llama_index_graphrag_milvus.graph.pcst import (
    DEFAULT_RELATION_PRIZES,
    PCSTConfig,
    load_solver,
)
from llama_index_graphrag_milvus.milvus.filters import to_milvus_expression
from llama_index_graphrag_milvus.retrieval.bridge import (
    DEFAULT_HUB_PASSAGES,
    DEFAULT_MAX_BRIDGES,
    DEFAULT_NAMED_RELATIONS,
    BridgeRetrieval,
)
from llama_index_graphrag_milvus.retrieval.drivers import AsyncDriver, DriverContext, SyncDriver
from llama_index_graphrag_milvus.retrieval.khop import KHopRetrieval
from llama_index_graphrag_milvus.retrieval.method import (
    MEMORY_SEARCH_MAX_FLOATS,
    SEED_SEARCHES,
    QueryContext,
    RetrievalMethod,
    SeedConfig,
)
from llama_index_graphrag_milvus.retrieval.pagerank import (
    DEFAULT_PASSAGE_WEIGHT,
    PageRankRetrieval,
)
from llama_index_graphrag_milvus.retrieval.pcst import PCSTRetrieval
from llama_index_graphrag_milvus.retrieval.steps import (
    DEFAULT_NER_PROMPT,
    DEFAULT_SIMILARITY_TOP_K,
    CheckedQueryMixin,
    check_query,
    check_vector,
    given_vector,
)
from llama_index_graphrag_milvus.validation import check_choice, check_instance, check_int

if TYPE_CHECKING:
    from llama_index_graphrag_milvus.explain import Explanation, Trace
    from llama_index_graphrag_milvus.index import GraphRAGIndex

PASSAGE_SCORINGS = ("bridge", "ppr", "pcst", "passage", "relation")
"""The retrieval methods, by their ``passage_scoring`` name."""

DEFAULT_PASSAGE_SCORING = "bridge"
"""The best LLM-free method measured (see the README's multi-hop benchmark)."""


class GraphRAGRetriever(CheckedQueryMixin, BaseRetriever):
    """Graph RAG retriever over the three Milvus collections of a :class:`GraphRAGIndex`.

    Every method returns passages as ``NodeWithScore``, each with
    ``metadata["graphrag_relations"]`` (the relations that reached it: ``id``, ``text``,
    ``score``, ``hop``; what :class:`GraphRelationRerank` reads) and
    ``metadata["graphrag_found_by"]`` (how the method found it). ``passage_scoring`` chooses
    the method:

    - ``"bridge"`` (default), the graph-guided second hop: the relations most similar to
      the query name *bridge* entities the question does not name ("Euler was a student of
      Johann Bernoulli" for "the son of Euler's teacher"); "question + bridge" become second
      passage queries, searched in one batch with the question, and the lists interleaved.
      No LLM, no NER. See :mod:`llama_index_graphrag_milvus.retrieval.bridge`.
    - ``"ppr"``: personalized PageRank over the entities and passages of the query's k-hop
      neighbourhood, restarting at the seed entities and (lightly) the most similar
      passages; passages ranked by PageRank mass.
    - ``"pcst"`` (G-Retriever): the prize-collecting Steiner tree of the k-hop pool, the
      small connected subgraph that collects the most relevant entities and relations;
      its passages by their own similarity, the subgraph itself (entities, relations and
      G-Retriever's CSV text) in ``metadata["graphrag_subgraph"]``. Needs the ``[pcst]``
      extra. See :mod:`llama_index_graphrag_milvus.retrieval.pcst`.
    - ``"passage"``: the passages of the k-hop candidate pool, by their own similarity.
    - ``"relation"``: the passages of the k-hop pool, by their best candidate relation.

    The k-hop pool (``"passage"``, ``"relation"``, ``"ppr"``, ``"pcst"``): entities named in
    the query (LLM NER when ``llm`` is given, otherwise the query vector) and the whole query are
    searched in Milvus; the hits are expanded ``hops`` steps through the entity-relation
    graph and the candidate relations are pruned to ``max_candidate_relations`` by
    similarity to the query. Whatever the method, a query whose graph steps find nothing
    gets the passages ranked by their own similarity, never an empty answer.

    Args:
        index: the :class:`GraphRAGIndex` to read.
        llm: used for query NER only, and only when given (no fall back to ``Settings.llm``);
            the ``"bridge"`` method does not use it.
        passage_scoring: the method, see above. Default ``"bridge"``. Or a
            :class:`~llama_index_graphrag_milvus.retrieval.method.RetrievalMethod` of your
            own (an instance), which gets the same query checks, seeds, filters and
            drivers (see :mod:`llama_index_graphrag_milvus.retrieval.method` for one).
        hops: expansion steps after the seed relations (0 = seeds only). Default 1.
        entity_top_k: entities searched per query entity name. Default 3.
        relation_top_k: relations searched with the query vector (for ``"bridge"``: the
            relations the bridges come from). Default 3.
        entity_similarity_threshold: drop entity hits with a lower cosine similarity.
        relation_similarity_threshold: drop relation hits with a lower cosine similarity.
        max_candidate_relations: size of the k-hop candidate pool. Default 100.
        per_hop_max_relations: new relations kept per hop (by similarity), before the next
            hop starts. Default 200.
        per_hop_max_entities: entities expanded per hop, those reached by the most similar
            relations first. Default 50.
        max_relations_per_passage: when set, the pool admits a relation only while one of
            its passages has fewer than this many relations in it. Default ``None``.
        per_hop_max_hub_relations: relations probed per hop across the hub entities of that
            hop, closest clusters to the query first. Default 2000.
        max_bridges: second queries per question for ``"bridge"``. Default 3.
        bridge_query: how ``"bridge"`` writes a second query: ``"substitute"`` (default)
            drops the words of the entity the question names and the relation resolves,
            then appends the bridge ("the son of Euler's teacher" + Johann Bernoulli ->
            "the son of 's teacher Johann Bernoulli"); ``"append"`` keeps the question whole.
        named_relations: for ``"bridge"``, the relations of the entities the question names
            (most similar to it) that may offer bridges after the relation hits. Default 5.
        hub_passages: for ``"bridge"``, an entity whose relations come from more passages
            than this is a hub, a bridge of last resort. Default 64.
        ppr_damping: probability of following an edge in PageRank. Default 0.5 (HippoRAG).
        ppr_passage_weight: share of PageRank's restart mass on the passages most similar
            to the query. Default 0.05 (HippoRAG 2).
        ppr_max_iterations: PageRank iteration cap. Default 50.
        ppr_tolerance: PageRank convergence tolerance (L1). Default 1e-6.
        pcst_entity_prizes: entity-search hits that get a PCST prize (``k .. 1`` by
            similarity). Default 3 (G-Retriever).
        pcst_relation_prizes: pool relations that get a PCST prize (``k .. 1`` by
            similarity); more gives a larger subgraph. Default 20 (G-Retriever: 3; see
            :data:`~llama_index_graphrag_milvus.graph.pcst.DEFAULT_RELATION_PRIZES`).
        pcst_edge_cost: cost of every relation in the PCST problem; higher gives a smaller
            subgraph. Default 0.5 (G-Retriever).
        pcst_subgraph_node: put the subgraph's text first, as a node of its own, for the
            LLM. Default ``False``.
        relation_search: where the relation seeds are searched: ``"memory"`` (the in-memory
            graph's relation vectors and texts, exact, no Milvus call), ``"milvus"`` (a
            search of the relation collection), ``"auto"`` (default): memory while
            ``relations * dim`` is at most 20 million (about 52,000 relations of 384
            dimensions), Milvus above; always memory on Milvus Lite, whose search scans the
            same vectors more slowly.
        entity_search: the same for the entity seeds (the methods that start from entities:
            k-hop, PageRank, PCST, local search): ``"memory"`` searches the index's entity
            table (every entity's vector and name, read from Milvus on first use: ``4 * dim``
            bytes per entity plus the name), ``"auto"`` (default) while ``entities * dim``
            is at most 20 million. With both in memory, a query's only Milvus call is the
            passage search, as with naive RAG.
        passage_search: where the passage searches are ranked: ``"memory"`` (the index's
            passage table: every passage's vector, read on first use, ``4 * dim + 16`` bytes
            per passage; only the passages returned are then read, by primary key, which
            is cheaper than a search), ``"milvus"`` (a search of the passage collection, as
            naive RAG's), ``"auto"`` (default): memory while ``passages * dim`` is at most
            20 million (about 52,000 passages of 384 dimensions), Milvus above. A retriever
            with ``filters`` always searches in Milvus.
        memory_search_max_floats: the budget of ``"auto"`` in the three settings above:
            ``rows * dim`` floats. Default 20 million
            (:data:`~llama_index_graphrag_milvus.retrieval.method.MEMORY_SEARCH_MAX_FLOATS`).
        similarity_top_k: passages returned. Default 20: generous, because a reranker can
            only choose among the passages it receives.
        ner_prompt: prompt with ``{query_str}`` that asks for ``{"named_entities": [...]}``.
        filters: LlamaIndex ``MetadataFilters`` on passage metadata (for example
            ``tenant_id``), applied in the Milvus passage searches: only matching passages
            are returned. Values are quoted, so any string is matched literally.

    Example::

        retriever = index.as_retriever(similarity_top_k=10)   # the second hop
        for hit in retriever.retrieve("What did the son of Euler's teacher contribute?"):
            print(hit.score, hit.node.metadata["graphrag_found_by"])
        ppr = index.as_retriever(passage_scoring="ppr", hops=2)
        tree = index.as_retriever(passage_scoring="pcst")  # pip install "...[pcst]"
        print(tree.retrieve("...")[0].node.metadata["graphrag_subgraph"]["text"])
    """

    def __init__(
        self,
        index: GraphRAGIndex,
        llm: LLM | None = None,
        hops: int = 1,
        entity_top_k: int = 3,
        relation_top_k: int = 3,
        entity_similarity_threshold: float | None = None,
        relation_similarity_threshold: float | None = None,
        max_candidate_relations: int = 100,
        per_hop_max_relations: int = 200,
        per_hop_max_entities: int = 50,
        max_relations_per_passage: int | None = None,
        per_hop_max_hub_relations: int = 2000,
        passage_scoring: str | RetrievalMethod = DEFAULT_PASSAGE_SCORING,
        max_bridges: int = DEFAULT_MAX_BRIDGES,
        bridge_query: str = "substitute",
        named_relations: int = DEFAULT_NAMED_RELATIONS,
        hub_passages: int = DEFAULT_HUB_PASSAGES,
        ppr_damping: float = 0.5,
        ppr_passage_weight: float = DEFAULT_PASSAGE_WEIGHT,
        ppr_max_iterations: int = 50,
        ppr_tolerance: float = 1e-6,
        pcst_entity_prizes: int = 3,
        pcst_relation_prizes: int = DEFAULT_RELATION_PRIZES,
        pcst_edge_cost: float = 0.5,
        pcst_subgraph_node: bool = False,
        relation_search: str = "auto",
        entity_search: str = "auto",
        passage_search: str = "auto",
        memory_search_max_floats: int = MEMORY_SEARCH_MAX_FLOATS,
        similarity_top_k: int = DEFAULT_SIMILARITY_TOP_K,
        ner_prompt: BasePromptTemplate | None = None,
        filters: MetadataFilters | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        self._seeds = SeedConfig(entity_top_k, relation_top_k, entity_similarity_threshold,
                                 relation_similarity_threshold, relation_search, entity_search)
        self._similarity_top_k = check_int("similarity_top_k", similarity_top_k)
        self._passage_search = check_choice("passage_search", passage_search, SEED_SEARCHES)
        self._memory_budget = check_int("memory_search_max_floats", memory_search_max_floats,
                                        minimum=0)
        expansion = ExpansionConfig(
            hops, per_hop_max_relations, max_candidate_relations, per_hop_max_entities,
            max_relations_per_passage=max_relations_per_passage,
            per_hop_max_hub_relations=per_hop_max_hub_relations)
        self._expansion = expansion
        methods: dict[str, RetrievalMethod] = {  # all built: every argument is checked
            "bridge": BridgeRetrieval(max_bridges, bridge_query, hub_passages, named_relations),
            "ppr": PageRankRetrieval(expansion, PageRankConfig(ppr_damping, ppr_tolerance,
                                                               ppr_max_iterations),
                                     ppr_passage_weight),
            "pcst": PCSTRetrieval(expansion, PCSTConfig(pcst_entity_prizes,
                                                        pcst_relation_prizes, pcst_edge_cost),
                                  pcst_subgraph_node),
            "passage": KHopRetrieval(expansion, "passage"),
            "relation": KHopRetrieval(expansion, "relation"),
        }
        if isinstance(passage_scoring, RetrievalMethod):
            self._method = passage_scoring
        else:
            self._method = methods[check_choice("passage_scoring", passage_scoring,
                                                PASSAGE_SCORINGS, "a RetrievalMethod")]
        if passage_scoring == "pcst":
            load_solver()  # a missing extra fails here, with the command that installs it
        self._settings = {k: v for method in methods.values()
                          for k, v in method.describe().items()}
        check_instance("llm", llm, LLM, "a llama_index LLM (for query NER)", optional=True)
        check_instance("callback_manager", callback_manager, CallbackManager,
                       "a llama_index CallbackManager", optional=True)
        check_instance("ner_prompt", ner_prompt, BasePromptTemplate,
                       "a PromptTemplate with {query_str} (wrap a text: PromptTemplate(text))",
                       optional=True)
        self._index = index
        self._llm = llm
        self._ner_prompt = ner_prompt or DEFAULT_NER_PROMPT
        self._where = to_milvus_expression(filters) if filters is not None else ""
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @property
    def method(self) -> RetrievalMethod:
        """The retrieval method this retriever runs."""
        return self._method

    # ------------------------------------------------------------------ prompts

    def _get_prompts(self) -> PromptDictType:
        return {"ner_prompt": self._ner_prompt}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        if "ner_prompt" in prompts:
            self._ner_prompt = prompts["ner_prompt"]

    # ------------------------------------------------------------------ the shared steps

    def _check_not_empty(self) -> None:
        if not self._index.store.open_if_created():
            raise EmptyIndexError(
                f"no graph under collection_prefix={self._index.store.prefix!r} at "
                f"{self._index.store.uri!r}: ingest passages first (GraphRAGIndex.from_triplets "
                "or from_documents), or point uri/collection_prefix at the ingested store."
            )

    def _context(self, query: str, vector: list[float], query_bundle: QueryBundle,
                 graph_mode: str, trace: Trace | None = None) -> QueryContext:
        vector = check_vector(vector)
        self._index.store.check_dimension(len(vector), "the embedding model")
        query_bundle.embedding = vector  # other retrievers of a fusion reuse it
        return QueryContext(query, list(vector), self._similarity_top_k, self._where,
                            self._passage_search, self._index.store.is_lite,
                            self._memory_budget, graph_mode == "milvus", trace)

    def _driver_context(self) -> DriverContext:
        return DriverContext(self._index, self._llm, self._ner_prompt)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = check_query(query_bundle)
        self._check_not_empty()
        vector = (given_vector(query_bundle)
                  or self._index.embed_model.get_query_embedding(query))
        context = self._context(query, vector, query_bundle, self._index.graph_mode)
        return SyncDriver(self._driver_context()).run(self._method.plan(context, self._seeds))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = check_query(query_bundle)
        self._check_not_empty()
        vector = (given_vector(query_bundle)
                  or await self._index.embed_model.aget_query_embedding(query))
        context = self._context(query, vector, query_bundle,
                                await self._index.aget_graph_mode())
        return await AsyncDriver(self._driver_context()).run(self._method.plan(context,
                                                                               self._seeds))

    def explain(self, query: str | QueryBundle) -> Explanation:
        """Retrieve for ``query`` and say why: the seeds, bridges, lists, pool, PageRank
        entities, subgraph or reports the method went through, the passages it returns
        (the same as :meth:`retrieve`'s) with the reason for each, and naive RAG's list beside
        them. See :mod:`llama_index_graphrag_milvus.explain`.

        Example::

            explanation = retriever.explain("What did the son of Euler's teacher make?")
            explanation.save_html("why.html")
        """
        from llama_index_graphrag_milvus.explain.run import explain

        return explain(self, query)

    async def aexplain(self, query: str | QueryBundle) -> Explanation:
        """Async twin of :meth:`explain`."""
        from llama_index_graphrag_milvus.explain.run import aexplain

        return await aexplain(self, query)

    def describe(self) -> dict[str, Any]:
        """The retriever's configuration, for logs and benchmark reports."""
        return {
            "hops": self._expansion.hops,
            "entity_top_k": self._seeds.entity_top_k,
            "relation_top_k": self._seeds.relation_top_k,
            "entity_similarity_threshold": self._seeds.entity_threshold,
            "relation_similarity_threshold": self._seeds.relation_threshold,
            "relation_search": self._seeds.relation_search,
            "entity_search": self._seeds.entity_search,
            "passage_search": self._passage_search,
            "memory_search_max_floats": self._memory_budget,
            "max_candidate_relations": self._expansion.max_candidate_relations,
            "max_relations_per_passage": self._expansion.max_relations_per_passage,
            "per_hop_max_relations": self._expansion.per_hop_max_relations,
            "per_hop_max_entities": self._expansion.per_hop_max_entities,
            "per_hop_max_hub_relations": self._expansion.per_hop_max_hub_relations,
            "similarity_top_k": self._similarity_top_k,
            "ner": self._llm is not None,
            "filters": self._where,
            **self._settings,  # every method's settings, so that a report holds them all
            "passage_scoring": self._method.name,
            **self._method.describe(),
        }
