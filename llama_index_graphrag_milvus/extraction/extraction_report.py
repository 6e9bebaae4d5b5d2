"""What one extraction call did: counts, failures, and the nodes to extract again."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from llama_index.core.schema import BaseNode
from tqdm import tqdm

from llama_index_graphrag_milvus.extraction.described import DescribedExtraction
from llama_index_graphrag_milvus.records import Triplet

EXTRACTION_ERROR_KEY = "graphrag_extraction_error"
"""Node metadata key set when the extraction of a passage failed: ``"<ExceptionType>: <message>"``.

Excluded from what LLMs and embedding models see; removed again when a later run succeeds.
"""


@dataclass(frozen=True)
class ExtractionFailure:
    """A passage whose extraction failed: the LLM call failed after every retry, or its
    answer was blank, cut off before its first item, or JSON without the list asked for."""

    node_id: str
    error: str
    attempts: int


@dataclass(frozen=True)
class ExtractionReport:
    """What one extraction call did.

    ``passages`` counts the nodes, ``cached`` those answered by the cache, ``llm_calls`` the
    LLM requests (retries included), ``triplets`` those written to the nodes.
    """

    passages: int
    cached: int
    llm_calls: int
    triplets: int
    failures: tuple[ExtractionFailure, ...]
    seconds: float

    @property
    def failed_node_ids(self) -> list[str]:
        """The ids of the nodes left without triplets by an LLM failure."""
        return [f.node_id for f in self.failures]

    def summary(self) -> str:
        """One line for the log.

        >>> ExtractionReport(3, 1, 3, 5, (ExtractionFailure("n2", "TimeoutError: ", 2),),
        ...                  1.5).summary()
        'triplet extraction: 3 passages (1 from the cache), 3 LLM calls, 5 triplets, 1 failed \
in 1.5 s; failed: n2 (TimeoutError: )'
        """
        line = (f"triplet extraction: {self.passages} passages ({self.cached} from the cache), "
                f"{self.llm_calls} LLM calls, {self.triplets} triplets, {len(self.failures)} "
                f"failed in {self.seconds:.1f} s")
        if self.failures:
            shown = ", ".join(f"{f.node_id} ({f.error})" for f in self.failures[:10])
            more = f" and {len(self.failures) - 10} more" if len(self.failures) > 10 else ""
            line += f"; failed: {shown}{more}"
        return line


def extraction_failures(nodes: Iterable[BaseNode]) -> dict[str, str]:
    """Node id -> error of the nodes whose last extraction failed (see
    :data:`EXTRACTION_ERROR_KEY`): the nodes to run the extractor on again.

    >>> from llama_index.core.schema import TextNode
    >>> extraction_failures([TextNode(id_="a", text="x"),
    ...     TextNode(id_="b", text="y", metadata={EXTRACTION_ERROR_KEY: "TimeoutError: "})])
    {'b': 'TimeoutError: '}
    """
    return {n.node_id: str(n.metadata[EXTRACTION_ERROR_KEY]) for n in nodes
            if EXTRACTION_ERROR_KEY in n.metadata}


@dataclass(frozen=True)
class Outcome:
    """The result for one distinct passage text (one cache key)."""

    extraction: DescribedExtraction
    error: str | None = None
    llm_calls: int = 0
    cached: bool = False

    @property
    def triplets(self) -> list[Triplet]:
        return self.extraction.triplets


@dataclass
class Tally:
    """Running counts behind the progress bar and the report."""

    bar: tqdm
    cached: int = 0
    llm_calls: int = 0
    triplets: int = 0
    failures: list[ExtractionFailure] = field(default_factory=list)

    def add(self, outcome: Outcome, nodes: Sequence[BaseNode]) -> None:
        self.llm_calls += outcome.llm_calls
        self.cached += len(nodes) if outcome.cached else 0
        self.triplets += len(outcome.triplets) * len(nodes)
        if outcome.error is not None:
            self.failures.extend(ExtractionFailure(n.node_id, outcome.error, outcome.llm_calls)
                                 for n in nodes)
        self.bar.set_postfix(triplets=self.triplets, failures=len(self.failures),
                             cached=self.cached, refresh=False)
        self.bar.update(len(nodes))

    def report(self, passages: int, seconds: float) -> ExtractionReport:
        return ExtractionReport(passages, self.cached, self.llm_calls, self.triplets,
                                tuple(self.failures), seconds)
