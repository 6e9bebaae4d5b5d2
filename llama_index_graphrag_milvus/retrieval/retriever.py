"""GraphRAGRetriever: the shared query steps around one retrieval method.

The retriever checks the query, computes (or reuses) its vector, holds the seed settings,
where the searches run and the filters, and hands the rest to a method object
(:class:`~.bridge.BridgeRetrieval`, :class:`~.pagerank.PageRankRetrieval`,
:class:`~.pcst.PCSTRetrieval`, :class:`~.khop.KHopRetrieval`, or one of yours: see
:mod:`.method`), written once as a plan that :class:`~.drivers.SyncDriver` and
:class:`~.drivers.AsyncDriver` run against the query's graph source (:mod:`.sources`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.llms.llm import LLM
from llama_index.core.prompts import BasePromptTemplate
from llama_index.core.prompts.mixin import PromptDictType
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.vector_stores import MetadataFilters

from llama_index_graphrag_milvus.embeddings import aembed_question, embed_question
from llama_index_graphrag_milvus.errors import EmptyIndexError, InvalidInputError
from llama_index_graphrag_milvus.graph.steiner_tree import load_solver
from llama_index_graphrag_milvus.llm import CallSlots
from llama_index_graphrag_milvus.milvus.tenants import pinned_tenants
from llama_index_graphrag_milvus.retrieval.drivers import (
    AsyncDriver,
    DriverContext,
    Scope,
    SyncDriver,
)
from llama_index_graphrag_milvus.retrieval.method import (
    OWN_RELATIONS_PER_PASSAGE,
    QueryContext,
    RetrievalMethod,
    SeedConfig,
    check_own_relations,
    method_plan,
)
from llama_index_graphrag_milvus.retrieval.methods import PassageScoring, method_of
from llama_index_graphrag_milvus.retrieval.pcst import PCSTRetrieval
from llama_index_graphrag_milvus.retrieval.requests import Plan
from llama_index_graphrag_milvus.retrieval.settings import (
    MEMORY_SEARCH_MAX_FLOATS,
    GraphMode,
    SearchPlace,
    SearchSettings,
)
from llama_index_graphrag_milvus.retrieval.steps import (
    DEFAULT_NER_PROMPT,
    DEFAULT_SIMILARITY_TOP_K,
    CheckedQueryMixin,
    check_query,
    check_vector,
    given_vector,
    query_input,
)
from llama_index_graphrag_milvus.retrieval.threads import (
    DEFAULT_BLAS_THREADS,
    MAX_BLAS_THREADS,
    PROCESS_BLAS,
)
from llama_index_graphrag_milvus.validation import check_instance, check_int, check_optional_number

if TYPE_CHECKING:
    from llama_index_graphrag_milvus.explain import Explanation, Trace
    from llama_index_graphrag_milvus.index import GraphRAGIndex

NER_THREADS = 16
"""Sync query NER calls a retriever runs at once at most, given-up ones (``ner_timeout``)
included: an LLM that never answers leaves at most this many threads; past them the query
goes on without NER names."""
T = TypeVar("T")



class GraphRAGRetriever(CheckedQueryMixin, BaseRetriever):
    """Graph RAG retriever over the three Milvus collections of a :class:`GraphRAGIndex`.

    Every method returns passages as ``NodeWithScore``, each with
    ``metadata["graphrag_relations"]`` (the relations that reached it: ``id``, ``text``,
    ``score``, ``hop``; what :class:`GraphRelationRerank` reads) and
    ``metadata["graphrag_found_by"]`` (how the method found it). ``method`` chooses the
    method, an object that owns its settings:

    - :class:`~.bridge.BridgeRetrieval` (default, ``"bridge"``), the graph-guided second
      hop: the relations most similar to the query name *bridge* entities the question does
      not name ("Euler was a student of Johann Bernoulli" for "the son of Euler's teacher");
      "question + bridge" become second passage queries, searched in one batch with the
      question, and the lists interleaved. No LLM, no NER.
    - :class:`~.pagerank.PageRankRetrieval` (``"ppr"``): personalized PageRank over the
      entities and passages of the query's k-hop neighbourhood, restarting at the seed
      entities and (lightly) the most similar passages.
    - :class:`~.pcst.PCSTRetrieval` (``"pcst"``, G-Retriever): the prize-collecting Steiner
      tree of the k-hop pool; its passages by their own similarity, the subgraph in
      ``metadata["graphrag_subgraph"]``. Needs the ``[pcst]`` extra.
    - :class:`~.khop.KHopRetrieval` (``"passage"``, ``"relation"``): the passages of the
      k-hop pool, by their own similarity or by their best candidate relation.
    - a :class:`~.method.RetrievalMethod` of your own.

    The k-hop pool: entities named in the query (LLM NER when ``llm`` is given, otherwise the
    query vector) and the whole query are searched; the hits are expanded ``hops`` steps
    through the entity-relation graph and pruned by similarity to the query. Whatever the
    method, a query whose graph steps find nothing gets the passages ranked by their own
    similarity, never an empty answer. The same methods run whether the index holds its graph
    in memory or Milvus serves it (``GraphRAGIndex(graph=...)``).

    Args:
        index: the :class:`GraphRAGIndex` to read.
        llm: used for query NER only, and only when given (no fall back to ``Settings.llm``);
            the bridge method does not use it.
        method: the method (an object, or a built-in's name with its defaults:
            :class:`~.methods.PassageScoring`). Default :class:`~.bridge.BridgeRetrieval`.
        similarity_top_k: passages returned. Default 20: generous, because a reranker can
            only choose among the passages it receives.
        filters: LlamaIndex ``MetadataFilters`` on passage metadata (for example
            ``tenant_id``), applied in the Milvus passage searches: only matching passages
            are returned. Values are quoted, so any string is matched literally.
        entity_top_k: entities searched per query entity name. Default 3.
        relation_top_k: relations searched with the query vector (for the bridge method:
            the relations the bridges come from). Default 3.
        entity_similarity_threshold: drop entity hits with a lower cosine similarity.
        relation_similarity_threshold: drop relation hits with a lower cosine similarity.
        match_entity_names: without NER names (no ``llm``), the entities whose whole name
            the query holds as words ("Kim Jong-il" in "Who succeeded Kim Jong-il?"; any
            run of an unspaced script such as Japanese) join the entity seeds after the
            entity hits, each scored by its similarity to the query like an entity hit
            (one more entity search among those names, sent with the seed searches).
            Used by the methods that start from entities (k-hop, PageRank, PCST); the
            bridge method starts from relations. Default ``True``.
        own_relations: the relations of each result's own passage (its stored triplets,
            most similar to the query first) that join the relations that reached it in
            ``metadata["graphrag_relations"]``, at most this many. Default 5
            (:data:`~.method.OWN_RELATIONS_PER_PASSAGE`). They cost one read per query (on a
            graph served by Milvus, one Milvus request: about a third of the default
            method's time there); 0 skips it, and each result keeps only the relations that
            reached it (a passage the question's own search found may then have none), so
            :class:`GraphRelationRerank` and the explanation have fewer to show. The passages
            and their order do not change. Read by the bridge method and PageRank (and the
            fallback to the passages' own similarity); k-hop and PCST attach the relations
            of their pool to their results and read none.
        relation_search: where the relation seeds are searched when the graph is in memory
            (:class:`~.settings.SearchPlace`): ``"memory"`` (the in-memory graph's relation
            vectors and texts, exact, no Milvus call), ``"milvus"`` (a search of the relation
            collection), ``"auto"`` (default): memory while ``relations * dim`` is at most
            ``memory_search_max_floats``, Milvus above; always memory on Milvus Lite, whose
            search scans the same vectors more slowly.
        entity_search: the same for the entity seeds (the methods that start from entities:
            k-hop, PageRank, PCST, local search): ``"memory"`` searches the index's entity
            table (every entity's vector and name, read from Milvus on first use: ``4 * dim``
            bytes per entity plus the name).
        passage_search: where the passage searches are ranked: ``"memory"`` (the index's
            passage table: every passage's vector, read on first use, ``4 * dim + 16`` bytes
            per passage; only the passages returned are then read, by primary key, which
            is cheaper than a search), ``"milvus"`` (a search of the passage collection, as
            naive RAG's), ``"auto"`` (default): memory while ``passages * dim`` is at most
            ``memory_search_max_floats``. With ``filters``, the searches over every passage
            run in Milvus with the filter, except on Milvus Lite with the graph in memory:
            there the filter's passages are read once (one query of ids per filter,
            remembered until the index is written to; Lite evaluates a filter in Python
            over every passage at each request) and the searches run in memory among them.
            One among given passages (PageRank's, PCST's, the k-hop pool's) is ranked among
            those the filter keeps.
            On an index with full-text search the passages' words follow the same setting:
            BM25 (the bridge's and PageRank's ``match_words``) is then computed in memory,
            as Milvus's analyzer and BM25 compute it (a filtered retrieval, or another
            analyzer than the standard one on a server, uses Milvus's); on Milvus Lite,
            whose BM25 is Python code run at every query, the words are held in memory
            above ``memory_search_max_floats`` too (``"milvus"`` still sends them to Lite).
        memory_search_max_floats: this retriever's budget of ``"auto"`` in the three settings
            above: ``rows * dim`` floats. Default 20 million (about 52,000 rows of 384
            dimensions; :data:`~.settings.MEMORY_SEARCH_MAX_FLOATS`). Each retriever of an
            index has its own: a copy another retriever loaded is used only within this
            one's budget.
        blas_threads: numpy's OpenBLAS threads in this process, set by the first query.
            Default 1: the in-memory searches are small products, and OpenBLAS's idle
            threads spin after each one, taking the cores from the embedding model (on 2
            cores the default method ran about twice as fast, its embeddings included; see
            :mod:`~.threads`). Like ``OPENBLAS_NUM_THREADS``, which when set in the
            environment is kept. ``None`` leaves the threads alone.
        ner_prompt: prompt with ``{query_str}`` that asks for ``{"named_entities": [...]}``.
        ner_timeout: seconds to wait for the query NER's LLM call (with ``llm``); past it
            the query goes on without the names, as when the call fails (a warning). Default
            ``None``: as long as the LLM client waits. A sync call given up is left to
            finish in its thread.
        passage_scoring: the former name of ``method`` (deprecated).
        **method_settings: the deprecated keyword form of the built-in methods' settings
            (``hops``, ``max_bridges``, ``ppr_damping``...: see
            :data:`~.methods.KEYWORD_SETTINGS`); they build the named method, with a
            ``DeprecationWarning`` that shows the object to pass instead.

    Example::

        retriever = index.as_retriever(similarity_top_k=10)   # the second hop
        for hit in retriever.retrieve("What did the son of Euler's teacher contribute?"):
            print(hit.score, hit.node.metadata["graphrag_found_by"])
        ppr = index.as_retriever(method=PageRankRetrieval(hops=2))
        tree = index.as_retriever(method="pcst")  # pip install "...[pcst]"
        print(tree.retrieve("...")[0].node.metadata["graphrag_subgraph"]["text"])
    """

    def __init__(
        self,
        index: GraphRAGIndex,
        llm: LLM | None = None,
        *,
        method: RetrievalMethod | PassageScoring | str | None = None,
        similarity_top_k: int = DEFAULT_SIMILARITY_TOP_K,
        filters: MetadataFilters | None = None,
        entity_top_k: int = 3,
        relation_top_k: int = 3,
        entity_similarity_threshold: float | None = None,
        relation_similarity_threshold: float | None = None,
        match_entity_names: bool = True,
        own_relations: int = OWN_RELATIONS_PER_PASSAGE,
        relation_search: SearchPlace | str = SearchPlace.AUTO,
        entity_search: SearchPlace | str = SearchPlace.AUTO,
        passage_search: SearchPlace | str = SearchPlace.AUTO,
        memory_search_max_floats: int = MEMORY_SEARCH_MAX_FLOATS,
        blas_threads: int | None = DEFAULT_BLAS_THREADS,
        ner_prompt: BasePromptTemplate | None = None,
        ner_timeout: float | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        passage_scoring: RetrievalMethod | PassageScoring | str | None = None,
        **method_settings: Any,
    ) -> None:
        self._seeds = SeedConfig(entity_top_k, relation_top_k, entity_similarity_threshold,
                                 relation_similarity_threshold, match_entity_names)
        self._searches = SearchSettings(relation_search, entity_search, passage_search,
                                        memory_search_max_floats)
        self._similarity_top_k = check_int("similarity_top_k", similarity_top_k)
        self._own_relations = check_own_relations(own_relations)
        self._blas_threads = (check_int("blas_threads", blas_threads, maximum=MAX_BLAS_THREADS)
                              if blas_threads is not None else None)
        self._method = method_of(method, passage_scoring, method_settings)
        if filters is not None and self._method.unscoped:
            raise InvalidInputError(f"{self._method.name} does not take filters: "
                                    f"{self._method.unscoped}")
        if isinstance(self._method, PCSTRetrieval) and self._method.solver is None:
            load_solver()  # a missing extra fails here, with the command that installs it
        check_instance("llm", llm, LLM, "a llama_index LLM (for query NER)", optional=True)
        check_instance("callback_manager", callback_manager, CallbackManager,
                       "a llama_index CallbackManager", optional=True)
        check_instance("ner_prompt", ner_prompt, BasePromptTemplate,
                       "a PromptTemplate with {query_str} (wrap a text: PromptTemplate(text))",
                       optional=True)
        self._index = index
        self._llm = llm
        self._ner_prompt = ner_prompt or DEFAULT_NER_PROMPT
        self._ner_timeout = check_optional_number("ner_timeout", ner_timeout, low=0,
                                                  low_open=True, hint="seconds")
        self._ner_slots = CallSlots(NER_THREADS)
        self._filters = filters
        self._where = index.store.filter_expression(filters)
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @property
    def method(self) -> RetrievalMethod:
        """The retrieval method this retriever runs."""
        return self._method

    @property
    def seed_config(self) -> SeedConfig:
        """The seed searches' settings every method is given."""
        return self._seeds

    @property
    def index(self) -> GraphRAGIndex:
        """The index this retriever reads."""
        return self._index

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

    def _prepared(self, query_bundle: QueryBundle) -> str:
        query = check_query(query_bundle)
        self._check_not_empty()
        return query

    def _context(self, query: str, vector: list[float], query_bundle: QueryBundle,
                 embedding_s: float, trace: Trace | None, given: bool) -> QueryContext:
        vector = check_vector(vector)
        self._index.store.check_dimension(len(vector), "the embedding model", given)
        query_bundle.embedding = vector  # other retrievers of a fusion reuse it
        if trace is not None:
            trace.on_query_embedding(embedding_s)
        return QueryContext(query, list(vector), self._similarity_top_k, self._where, trace,
                            self._own_relations)

    def _driver_context(self, graph: str) -> DriverContext:
        """One query's context; with ``filters``, a fresh scope (what the query learns of
        which passages match is its own)."""
        return DriverContext.of(self._index, llm=self._llm, ner_prompt=self._ner_prompt,
                                ner_timeout=self._ner_timeout, ner_slots=self._ner_slots,
                                searches=self._searches, graph=GraphMode(graph),
                                scope=Scope(self._where, pinned_tenants(
                                    self._filters, self._index.store.tenant_key))
                                if self._where else None)

    def run(self, query: str | QueryBundle, plan: Callable[[QueryContext], Plan[T]],
            trace: Trace | None = None) -> T:
        """Run ``plan`` for ``query`` as :meth:`retrieve` runs the method's: the same checks,
        query vector, filters and graph source (``retrieve`` is ``run(query,
        lambda q: retriever.method.plan(q, retriever.seed_config))``); ``trace`` collects
        what the method reports (see :mod:`llama_index_graphrag_milvus.explain`)."""
        bundle = _bundle(query)
        text = self._prepared(bundle)
        PROCESS_BLAS.limit(self._blas_threads)
        started = time.perf_counter()
        given = given_vector(bundle)
        vector = given or embed_question(self._index.embed_model, text, bundle)
        context = self._context(text, vector, bundle, time.perf_counter() - started, trace,
                                given is not None)
        return SyncDriver(self._driver_context(self._index.graph_mode)).run(plan(context))

    async def arun(self, query: str | QueryBundle, plan: Callable[[QueryContext], Plan[T]],
                   trace: Trace | None = None) -> T:
        """Async twin of :meth:`run`."""
        bundle = _bundle(query)
        text = self._prepared(bundle)
        PROCESS_BLAS.limit(self._blas_threads)
        started = time.perf_counter()
        given = given_vector(bundle)
        vector = given or await aembed_question(self._index.embed_model, text, bundle)
        context = self._context(text, vector, bundle, time.perf_counter() - started, trace,
                                given is not None)
        driver = AsyncDriver(self._driver_context(await self._index.aget_graph_mode()))
        return await driver.run(plan(context))

    def _method_plan(self, query: QueryContext) -> Plan[list[NodeWithScore]]:
        return method_plan(self._method, query, self._seeds)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self.run(query_bundle, self._method_plan)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await self.arun(query_bundle, self._method_plan)

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
        """The retriever's configuration, for logs and benchmark reports: its own settings,
        then its method's."""
        return {
            "entity_top_k": self._seeds.entity_top_k,
            "relation_top_k": self._seeds.relation_top_k,
            "entity_similarity_threshold": self._seeds.entity_threshold,
            "relation_similarity_threshold": self._seeds.relation_threshold,
            "match_entity_names": self._seeds.entity_names,
            "own_relations": self._own_relations,
            "relation_search": str(self._searches.relation_search),
            "entity_search": str(self._searches.entity_search),
            "passage_search": str(self._searches.passage_search),
            "memory_search_max_floats": self._searches.memory_search_max_floats,
            "blas_threads": self._blas_threads,
            "similarity_top_k": self._similarity_top_k,
            "ner": self._llm is not None,
            "ner_timeout": self._ner_timeout,
            "filters": self._where,
            "passage_scoring": self._method.name,
            **self._method.describe(),
        }


def _bundle(query: str | QueryBundle) -> QueryBundle:
    """``query`` as a ``QueryBundle``; anything but a string or a bundle is an
    :class:`~llama_index_graphrag_milvus.errors.InvalidInputError`."""
    given = query_input(query)
    return given if isinstance(given, QueryBundle) else QueryBundle(given)
