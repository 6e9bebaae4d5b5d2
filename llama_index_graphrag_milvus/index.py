"""GraphRAGIndex: the entry point that ingests, reopens and hands out retrievers."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.chat_engine.types import BaseChatEngine, ChatMode
from llama_index.core.indices.vector_store import VectorStoreIndex
from llama_index.core.llms.llm import LLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import BaseNode, Document
from llama_index.core.settings import Settings
from llama_index.core.vector_stores import MetadataFilters

from llama_index_graphrag_milvus.communities.build import (
    CommunityBuildStats,
    CommunitySet,
    build_communities,
)
from llama_index_graphrag_milvus.communities.global_search import GlobalSearchQueryEngine
from llama_index_graphrag_milvus.communities.local_search import (
    LocalSearchRetriever,
    refuse_filters,
)
from llama_index_graphrag_milvus.communities.report_retriever import CommunityReportRetriever
from llama_index_graphrag_milvus.communities.report_writer import (
    DEFAULT_MAX_INPUT_TOKENS,
    CommunityReporter,
    choose_reporter,
)
from llama_index_graphrag_milvus.embeddings import resolve_model
from llama_index_graphrag_milvus.engines import chat_engine, query_engine
from llama_index_graphrag_milvus.graph import DEFAULT_HUB_DEGREE, EntityRelationGraph
from llama_index_graphrag_milvus.graph.leiden import LeidenConfig
from llama_index_graphrag_milvus.graph.tables import EntityTable, PassageTable
from llama_index_graphrag_milvus.index_cache import (
    COMMUNITIES,
    COMMUNITY_INFO,
    IndexCache,
)
from llama_index_graphrag_milvus.ingestion.documents import (
    split_options,
)
from llama_index_graphrag_milvus.ingestion.identity import (
    bind_full_text,
    bind_settings,
    bind_tenant_key,
    check_identity_keys,
)
from llama_index_graphrag_milvus.ingestion.maintenance import DocumentMaintenance
from llama_index_graphrag_milvus.ingestion.plan import (
    PassageInput,
)
from llama_index_graphrag_milvus.milvus.store import MilvusGraphStore
from llama_index_graphrag_milvus.milvus.tenants import check_tenant_key
from llama_index_graphrag_milvus.records import CommunityReport
from llama_index_graphrag_milvus.retrieval import GraphRAGRetriever, RetrievalMethod
from llama_index_graphrag_milvus.retrieval.naive import NaiveRetriever
from llama_index_graphrag_milvus.retrieval.settings import GraphMode, NaiveSearch
from llama_index_graphrag_milvus.validation import check_int

GRAPH_SETTINGS = tuple(mode.value for mode in GraphMode)
"""Where queries read the graph (the ``graph`` argument of :class:`GraphRAGIndex`, a
:class:`~llama_index_graphrag_milvus.retrieval.settings.GraphMode`)."""
DEFAULT_GRAPH_MEMORY_BUDGET = 1 << 30
"""``graph="auto"`` holds the graph in memory up to this many bytes (1 GiB)."""

logger = logging.getLogger(__name__)


class GraphRAGIndex(DocumentMaintenance):
    """A knowledge graph of entities, relations and passages in three Milvus collections.

    Open an existing index with the constructor (the graph is rebuilt from Milvus: no side
    files), or build one with :meth:`from_triplets`, :meth:`from_nodes` or
    :meth:`from_documents`.

    Documents are maintained with LlamaIndex's names: :meth:`insert` / :meth:`insert_nodes`
    (and :meth:`insert_documents`, :meth:`insert_triplets`), :meth:`update_ref_doc`,
    :meth:`delete_ref_doc`, each with an async twin (``ainsert``, ``ainsert_nodes``,
    ``aupdate_ref_doc``, ``adelete_ref_doc``...). :meth:`update` and :meth:`delete`, the
    names of 0.1.0, are aliases of the last two.

    The in-memory graph is a cache of the relation collection. It is built on the first
    query, rebuilt after this object's own inserts, and rebuilt on :meth:`refresh` after
    another process wrote to the same collections.

    Args:
        uri: Milvus Lite path (``"./graphrag.db"``) or server URL (``"http://host:19530"``).
        token: credentials for a server or Zilliz Cloud (``"user:password"`` or an API key).
        collection_prefix: names the three collections ``{prefix}_entities``,
            ``{prefix}_relations``, ``{prefix}_passages``.
        embed_model: the embedding model (or a name LlamaIndex resolves, such as
            ``"local:BAAI/bge-small-en-v1.5"``); defaults to ``Settings.embed_model``. A
            reopened index must use the model it was built with.
        consistency_level: Milvus consistency of the created collections (default
            ``"Strong"``: a query sees every write that finished before it).
        show_progress: progress bars while embedding and loading the graph.
        milvus_client_kwargs: passed to ``pymilvus.MilvusClient`` (timeouts, TLS...).
        hub_degree: entities with more relations are hubs; expansion probes only the
            clusters of a hub's relations closest to the query (about ``hub_degree``
            relations), so one hub costs the same per query whatever its size.
        passage_identity_keys: the metadata keys that make two passages with the same text
            (and source document) distinct: ``"*"`` (all metadata, the default for a new
            index), a list such as ``["tenant_id"]`` (metadata changes of other keys then
            update the passage in place), or ``[]`` (text and source document only).
            Recorded at creation; ``None`` (the default) uses the recorded rule when
            reopening.
        allow_embed_model_change: a reopened index checks that ``embed_model`` gives the
            vectors of the model it was built with (one embedding of a fixed probe text)
            and raises :class:`~llama_index_graphrag_milvus.errors.EmbeddingModelError`
            otherwise. ``True`` accepts the new model and records it instead (for a
            deliberate switch).
        graph: where queries read the graph: ``"memory"`` (the process holds it: built
            from the relation collection on the first query and after this index's writes;
            the fastest for small and medium indexes), ``"milvus"`` (served by Milvus: every
            query reads a bounded number of rows, the process holds nothing that grows with
            the corpus; any number of stateless workers can query one cluster), or
            ``"auto"`` (default): memory while the graph's estimated size fits
            ``graph_memory_budget``, Milvus above it (one count query decides, again after
            each write; the choice is logged).
        graph_memory_budget: the bytes ``"auto"`` lets the in-memory graph take (default
            1 GiB: about 600,000 relations of 384 dimensions, 160,000 of 1,536).
        tenant_key: the metadata key that names each passage's tenant (``"tenant_id"``), for
            an index of many tenants: the passage collection gets it as its Milvus partition
            key, and relation and entity rows record which tenants' passages support them,
            so that a query filtered to a tenant reads that tenant's rows. Every passage then
            names its tenant (a non-empty string). Chosen at creation and recorded; ``None``
            (the default) reuses the recorded key when reopening. Filters keep a tenant's
            answers its own with or without it (see the tenants documentation).
        full_text_search: give the passage collection Milvus's BM25 full-text search (an
            analysed ``text`` field and a sparse field Milvus fills on insert), for the
            second hop's word lists (:class:`BridgeRetrieval`'s ``match_words``) and
            ``as_naive_retriever(search="bm25")`` or ``"hybrid"`` (dense + BM25, fused by
            reciprocal rank). Chosen at creation; ``None`` (the default) gives a new index
            full-text search wherever Milvus has BM25 (Milvus Lite, servers from 2.5; an
            older server's new index has none) and reads it from an existing index;
            ``False`` keeps a new index to dense search (a smaller collection, faster
            writes).
        full_text_analyzer: Milvus analyzer parameters for that search (default Milvus's
            ``standard`` analyzer; ``{"tokenizer": "jieba"}`` for Chinese text). Implies
            ``full_text_search=True``.
        index_type: the vector index of the collections a new index creates (passages,
            entities and relations): ``"AUTOINDEX"`` (default on a server, tuned by
            Milvus), ``"HNSW"``, ``"IVF_FLAT"``, ``"FLAT"`` (exact, a scan of every row per
            search)... Milvus Lite builds ``FLAT`` only. An existing index keeps the indexes
            it was built with.
        index_params: the index's build parameters, for example ``{"M": 16,
            "efConstruction": 200}`` for ``"HNSW"``.

    Example::

        index = GraphRAGIndex.from_triplets(
            [("Euler was a student of Johann Bernoulli.",
              [("Euler", "was a student of", "Johann Bernoulli")])],
            uri="./graphrag.db", embed_model=embed_model)
        nodes = index.as_retriever().retrieve("Who taught Euler?")
    """

    def __init__(
        self,
        uri: str = "./graphrag.db",
        token: str = "",
        collection_prefix: str = "graphrag",
        embed_model: BaseEmbedding | str | None = None,
        consistency_level: str = "Strong",
        show_progress: bool = False,
        milvus_client_kwargs: dict[str, Any] | None = None,
        hub_degree: int = DEFAULT_HUB_DEGREE,
        passage_identity_keys: Sequence[str] | str | None = None,
        allow_embed_model_change: bool = False,
        graph: GraphMode | str = GraphMode.AUTO,
        graph_memory_budget: int = DEFAULT_GRAPH_MEMORY_BUDGET,
        tenant_key: str | None = None,
        full_text_search: bool | None = None,
        full_text_analyzer: Mapping[str, Any] | None = None,
        index_type: str | None = None,
        index_params: Mapping[str, Any] | None = None,
    ) -> None:
        keys = None if passage_identity_keys is None else check_identity_keys(
            passage_identity_keys)
        check_int("hub_degree", hub_degree)
        self.graph_setting: GraphMode = GraphMode.of("graph", graph)
        self.graph_memory_budget = check_int(
            "graph_memory_budget", graph_memory_budget,
            hint="the bytes the in-memory graph may take with graph='auto'; "
                 "graph='milvus' serves the graph from Milvus whatever its size")
        self.embed_model: BaseEmbedding = resolve_model(embed_model)
        self.store = MilvusGraphStore(uri, token=token, collection_prefix=collection_prefix,
                                      consistency_level=consistency_level,
                                      client_kwargs=milvus_client_kwargs,
                                      index_type=index_type, index_params=index_params)
        self.show_progress = show_progress
        self.hub_degree = hub_degree
        try:
            bind_tenant_key(self.store, check_tenant_key(tenant_key))
            bind_full_text(self.store, full_text_search, full_text_analyzer)
            self.passage_identity_keys: tuple[str, ...] | str = bind_settings(
                self.store, self.embed_model, keys, allow_embed_model_change)
        except BaseException:
            self.store.close()  # a refused open must not keep a Milvus Lite file held
            raise
        self.cache = IndexCache(self.store, hub_degree, show_progress)

    # ------------------------------------------------------------------ building

    @classmethod
    def from_triplets(
        cls,
        data: Iterable[tuple[PassageInput, Iterable[Any]]],
        **kwargs: Any,
    ) -> GraphRAGIndex:
        """Build (or extend) an index from passages paired with their triplets.

        Args:
            data: ``(passage, [(subject, predicate, object), ...])`` pairs; a passage is a
                string or a LlamaIndex node (its metadata and source document are kept).
            **kwargs: the constructor's arguments (``uri``, ``embed_model``...).

        Triplets that are not three non-empty strings are skipped and counted in the log.
        Raises :class:`~llama_index_graphrag_milvus.errors.InvalidInputError` before writing
        anything when a passage is empty or longer than Milvus allows.
        """
        return cls._filled(kwargs, lambda index: index.insert_triplets(data))

    @classmethod
    def from_nodes(cls, nodes: Sequence[BaseNode], **kwargs: Any) -> GraphRAGIndex:
        """Build an index from nodes whose metadata carries triplets (see :meth:`insert_nodes`)."""
        return cls._filled(kwargs, lambda index: index.insert_nodes(nodes))

    @classmethod
    def from_documents(cls, documents: Sequence[Document], **kwargs: Any) -> GraphRAGIndex:
        """Split documents into passages, extract triplets with an LLM, and ingest them.

        Args:
            documents: the documents to ingest.
            **kwargs: the extraction options (``llm``, ``transformations``,
                ``kg_extractor``, ``extraction_cache``, ``extraction_workers``: see
                :class:`~llama_index_graphrag_milvus.ingestion.documents.ExtractionOptions`)
                and the constructor's arguments (``uri``, ``embed_model``...).

        Example::

            index = GraphRAGIndex.from_documents(
                documents, llm=llm, uri="http://milvus:19530", extraction_workers=16,
                extraction_cache=ExtractionCache("./extraction_cache.json"),
                show_progress=True)
        """
        options, constructor = split_options(kwargs)
        return cls._filled(constructor,
                           lambda index: index.insert_documents(documents, **options))

    @classmethod
    def _filled(cls, constructor: dict[str, Any], fill: Callable[[GraphRAGIndex], object]
                ) -> GraphRAGIndex:
        """The index the ``constructor`` arguments open, after ``fill``; closed when
        ``fill`` raises (refused input, an interrupted build): the caller has no handle to
        close it, and it would keep a Milvus Lite file held until the process ends."""
        index = cls(**constructor)
        try:
            fill(index)
        except BaseException:
            index.close()
            raise
        return index

    # ------------------------------------------------------------------ the in-memory copies

    @property
    def graph_mode(self) -> GraphMode:
        """Where queries read the graph now: ``GraphMode.MEMORY`` or ``GraphMode.MILVUS``
        (equal to ``"memory"`` and ``"milvus"``: the ``graph`` setting, or ``"auto"``'s
        choice)."""
        return GraphMode(self.cache.graph_mode(self.graph_setting, self.graph_memory_budget))

    async def aget_graph_mode(self) -> GraphMode:
        """:attr:`graph_mode` without blocking the event loop for ``"auto"``'s count."""
        return GraphMode(await self.cache.agraph_mode(self.graph_setting,
                                                      self.graph_memory_budget))

    @property
    def graph(self) -> EntityRelationGraph:
        """The in-memory graph, built from the relation collection on first use (also with
        ``graph="milvus"``, for the tools that need the whole graph)."""
        return self.cache.graph()

    async def aget_graph(self) -> EntityRelationGraph:
        """:attr:`graph` without blocking the event loop when it has to be built."""
        return await self.cache.aget_graph()

    @property
    def entity_table(self) -> EntityTable:
        """Every entity's id, name and vector, read from the entity collection on first use
        (entity seed searches in memory; see ``entity_search`` of :meth:`as_retriever`)."""
        return self.cache.entity_table()

    async def aget_entity_table(self) -> EntityTable:
        """:attr:`entity_table` without blocking the event loop when it has to be read."""
        return await self.cache.aget_entity_table()

    def passage_table(self, max_floats: int | None = None) -> PassageTable | None:
        """Every passage's id and vector, read from the passage collection on first use
        (passage searches in memory; see ``passage_search`` of :meth:`as_retriever`);
        ``None`` when ``passages * dim`` is above ``max_floats`` (one count query decides,
        and is remembered until the next write or :meth:`refresh`)."""
        return self.cache.passage_table(max_floats)

    async def aget_passage_table(self, max_floats: int | None = None) -> PassageTable | None:
        """:meth:`passage_table` without blocking the event loop when it has to be read."""
        return await self.cache.apassage_table(max_floats)

    def is_stale(self) -> bool:
        """Whether the relation, entity or passage collection now holds another number of
        rows than the in-memory copies were built from: another process (or a tool other
        than this index) wrote since. A count query per loaded copy; ``False`` when nothing
        is loaded yet (the first use reads Milvus anyway). A write that keeps the counts (an
        update in place) is not seen: call :meth:`refresh` after such writes.

        Example::

            if index.is_stale():  # e.g. before each batch of questions, in a reader process
                index.refresh()
        """
        return self.cache.is_stale()

    def refresh(self) -> EntityRelationGraph | None:
        """Forget what was read from Milvus (after another process wrote to it): the entity
        and passage tables, the communities and ``graph="auto"``'s choice are read again on
        their next use; the in-memory graph is rebuilt now and returned, or ``None`` when
        the graph is served by Milvus (nothing to rebuild: served queries read Milvus)."""
        self.store.layout_read_again()  # an upgrade() elsewhere changes how entities are read
        self.cache.drop()
        return self.graph if self.graph_mode == "memory" else None

    # ------------------------------------------------------------------ communities

    def build_communities(
        self,
        llm: LLM | None = None,
        reporter: CommunityReporter | None = None,
        max_cluster_size: int = 10,
        seed: int = 0xDEADBEEF,
        resolution: float = 1.0,
        max_input_tokens: int = DEFAULT_MAX_INPUT_TOKENS,
        report_workers: int = 4,
    ) -> CommunityBuildStats:
        """Compute the communities of the entity graph (hierarchical Leiden), write a
        report for each and store them in ``{prefix}_communities`` (Microsoft GraphRAG).

        Run it again after inserts, updates and deletes: communities are recomputed, and
        only the reports of communities whose context changed are written again (the
        others, and their vectors, are kept). An interrupted build leaves the collection
        marked unfinished (searches refuse it with
        :class:`~llama_index_graphrag_milvus.errors.CommunitiesNotBuiltError`); running it
        again completes it.

        Args:
            llm: writes the reports (JSON: title, summary, findings, rating). ``None`` (the
                default; ``Settings.llm`` is not used) writes *extractive* reports without
                an LLM: the most connected entities and relations of each community.
            reporter: a configured :class:`~llama_index_graphrag_milvus.communities.report_writer.
                CommunityReporter` instead of ``llm`` (prompt, retries, budget).
            max_cluster_size: communities larger than this are split at the next level
                (Microsoft GraphRAG's default, 10).
            seed: the Leiden seed: the same graph and seed give the same communities.
            resolution: Leiden resolution; higher gives more, smaller communities.
            max_input_tokens: token budget of one report's context (with ``llm``).
            report_workers: LLM calls in flight at most (with ``llm``).

        Needs ``pip install "llama-index-graphrag-milvus[communities]"``.

        Example::

            stats = index.build_communities(llm=OpenAI(model="gpt-4o-mini"))
            print(stats.per_level, stats.modularity, stats.reports_written)
        """
        chosen = choose_reporter(llm, reporter, max_input_tokens, report_workers)
        config = LeidenConfig(max_cluster_size, seed, resolution)
        self.cache.drop(COMMUNITIES, COMMUNITY_INFO)
        graph = self.graph
        return build_communities(self.store, graph, self.embed_model, chosen, config,
                                 self.show_progress, self.cache.graph_written)

    def drop_communities(self) -> None:
        """Delete the communities, their reports and the merged descriptions (the
        ``{prefix}_communities`` and ``{prefix}_descriptions`` collections); the graph is
        untouched. The next :meth:`build_communities` starts from scratch (no cached
        report or summary)."""
        self.cache.drop(COMMUNITIES, COMMUNITY_INFO)
        self.store.communities.drop()
        self.store.descriptions.drop()

    @property
    def communities(self) -> CommunitySet:
        """The communities and reports, read from Milvus on first use; raises
        :class:`~llama_index_graphrag_milvus.errors.CommunitiesNotBuiltError` when
        :meth:`build_communities` has not run (or did not finish)."""
        return self.cache.communities()

    async def aget_communities(self) -> CommunitySet:
        """:attr:`communities` without blocking the event loop when they are read."""
        return await self.cache.aget_communities()

    def community_reports(self, level: int | None = None) -> list[CommunityReport]:
        """The reports covering the graph at ``level`` (0: the most general communities;
        ``None``: the most specific): that level's communities and those of lower levels
        that are not split further."""
        return self.communities.at_level(level)

    # ------------------------------------------------------------------ query side

    def as_retriever(self, method: RetrievalMethod | str | None = None, **kwargs: Any
                     ) -> GraphRAGRetriever:
        """A :class:`GraphRAGRetriever` over this index running ``method`` (an object that
        owns its settings, or a built-in's name; default the bridge method); kwargs are the
        retriever's other arguments.

        Example::

            retriever = index.as_retriever(method=PageRankRetrieval(hops=2),
                                           similarity_top_k=10)
        """
        return GraphRAGRetriever(self, method=method, **kwargs)

    def as_local_retriever(self, **kwargs: Any) -> LocalSearchRetriever:
        """Microsoft GraphRAG's local search: a :class:`LocalSearchRetriever` (passages,
        community reports, entity and relation tables within a token budget); needs
        :meth:`build_communities`."""
        return LocalSearchRetriever(self, **kwargs)

    def as_report_retriever(self, level: int | None = None, similarity_top_k: int = 5,
                            **kwargs: Any) -> CommunityReportRetriever:
        """The community reports of ``level`` most similar to the question, as nodes
        (for routers and fusion); needs :meth:`build_communities`."""
        refuse_filters("the report retriever", kwargs)
        return CommunityReportRetriever(self, level=level, similarity_top_k=similarity_top_k,
                                        **kwargs)

    def as_global_query_engine(self, llm: LLM | None = None, level: int | None = 0,
                               **kwargs: Any) -> GlobalSearchQueryEngine:
        """Microsoft GraphRAG's global search for questions about the whole corpus: the
        reports of ``level`` (default 0, the most general) are answered in batches (map,
        concurrent), and the best points combined into one answer (reduce). ``llm``
        defaults to ``Settings.llm``; kwargs are those of
        :class:`~llama_index_graphrag_milvus.communities.global_search.GlobalSearchQueryEngine`.

        Example::

            engine = index.as_global_query_engine(llm=llm, level=0)
            print(engine.query("What are the main themes of these documents?"))
        """
        refuse_filters("global search", kwargs)
        if level is not None:
            self.communities.check_level(level)  # a wrong level fails here, not at query time
        return GlobalSearchQueryEngine(lambda: self.community_reports(level),
                                       llm=llm or Settings.llm, **kwargs)

    def as_naive_retriever(self, similarity_top_k: int = 2,
                           filters: MetadataFilters | None = None,
                           search: NaiveSearch | str = NaiveSearch.DENSE, **kwargs: Any
                           ) -> NaiveRetriever:
        """Naive RAG over the passage collection, for comparison: ``search="dense"``
        (vector search, the default), ``"bm25"`` (Milvus's full-text search) or
        ``"hybrid"`` (both, fused by reciprocal rank); the last two need an index with
        full-text search (the default of a new index where Milvus has BM25). ``filters``
        on passage metadata as for :class:`GraphRAGRetriever`: the same Milvus expression,
        so both retrievers keep the same passages.

        Example::

            index = GraphRAGIndex(uri="./graphrag.db")  # Milvus Lite: BM25 included
            hybrid = index.as_naive_retriever(similarity_top_k=5, search="hybrid")
        """
        vector_index = VectorStoreIndex.from_vector_store(self.store.passages,
                                                          embed_model=self.embed_model)
        return NaiveRetriever(self.store, vector_index, similarity_top_k=similarity_top_k,
                              filters=filters, search=search, **kwargs)

    def as_query_engine(self, llm: LLM | None = None, top_n: int = 2,
                        **kwargs: Any) -> RetrieverQueryEngine:
        """Graph retriever + :class:`~llama_index_graphrag_milvus.rerank.GraphRelationRerank`
        + response synthesis in one engine, as LlamaIndex's indexes build theirs.

        ``llm`` (default ``Settings.llm``) does NER, rerank and the answer. ``kwargs`` go
        where they belong: the arguments of :class:`GraphRAGRetriever` to the retriever
        (``passage_scoring``, ``similarity_top_k``, ``filters``...), the others to
        ``RetrieverQueryEngine.from_args`` (``streaming``, ``response_mode``,
        ``node_postprocessors``, ``text_qa_template``, ``use_async``...).
        ``node_postprocessors`` replace the default reranker (``top_n`` passages); include a
        ``GraphRelationRerank`` in them to keep it.

        Raises:
            InvalidInputError: an argument neither of them takes.

        Example::

            engine = index.as_query_engine(llm=llm, streaming=True, similarity_top_k=10)
            engine.query("Who taught Euler?").print_response_stream()
        """
        return query_engine(self, llm or Settings.llm, top_n, kwargs)

    def as_chat_engine(self, chat_mode: ChatMode | str = ChatMode.CONDENSE_PLUS_CONTEXT,
                       llm: LLM | None = None, top_n: int = 2, **kwargs: Any
                       ) -> BaseChatEngine:
        """A chat engine on the graph, as LlamaIndex's indexes build theirs: the graph
        retriever, :class:`~llama_index_graphrag_milvus.rerank.GraphRelationRerank` (``top_n``
        passages) and one of core's chat engines, ``chat_mode``:

        - ``"condense_plus_context"`` (the default): each message, rewritten with the chat
          history into a question that stands alone ("And his son?" becomes "Who was the
          son of Euler's teacher?"), is retrieved on the graph; the passages and the
          history go to the LLM (``CondensePlusContextChatEngine``);
        - ``"context"``: each message retrieved as it is (``ContextChatEngine``);
        - ``"condense_question"``: the rewritten question asked of :meth:`as_query_engine`
          (``CondenseQuestionChatEngine``).

        ``llm`` (default ``Settings.llm``) does NER, rerank, the rewriting and the answer.
        ``kwargs`` go where they belong: the arguments of :class:`GraphRAGRetriever` to the
        retriever, the others to the engine's ``from_defaults`` (``memory``,
        ``system_prompt``, ``node_postprocessors``...; with ``"condense_question"``, those
        of :meth:`as_query_engine` too). ``node_postprocessors`` replace the default
        reranker. For an agent (core's ``react``, ``openai``, ``best`` modes), give it
        ``index.as_query_engine()`` as a ``QueryEngineTool``.

        Raises:
            InvalidInputError: a ``chat_mode`` other than the three above, or an argument
                nothing takes.

        Example::

            chat = index.as_chat_engine(llm=llm, similarity_top_k=10)
            print(chat.chat("Who taught Euler?"))
            print(chat.chat("And what did his son work on?"))
        """
        return chat_engine(self, chat_mode, llm or Settings.llm, top_n, kwargs)

    # ---- lifecycle

    @property
    def closed(self) -> bool:
        """True after :meth:`close` or :meth:`aclose`."""
        return self.store.closed

    def close(self) -> None:
        """Close the Milvus clients, stop the store's threads and drop the in-memory graph.

        Idempotent. Afterwards the index and its retrievers raise
        :class:`~llama_index_graphrag_milvus.errors.MilvusStoreError` ("... is closed") when
        used. With Milvus Lite, the file is released as soon as no other open index of this
        process uses it: another process can then open it (Milvus Lite allows one process
        per file at a time). Or use the index as a context manager:

        Example::

            with GraphRAGIndex(uri="./graphrag.db", embed_model=embed_model) as index:
                nodes = index.as_retriever().retrieve("Who taught Euler?")
            # here the file is free for another process
        """
        self.store.close()
        self.cache.drop()

    async def aclose(self) -> None:
        """Async twin of :meth:`close`.

        Example::

            async with GraphRAGIndex(uri="./graphrag.db", embed_model=embed_model) as index:
                nodes = await index.as_retriever().aretrieve("Who taught Euler?")
        """
        await self.store.aclose()
        self.cache.drop()

    def __enter__(self) -> GraphRAGIndex:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> GraphRAGIndex:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
