"""numpy's OpenBLAS threads in a process that answers queries (the retriever's
``blas_threads``).

A query of a graph held in memory computes its searches as numpy matrix products (at most
``memory_search_max_floats`` floats each: a few milliseconds on one core). OpenBLAS runs them
on every core, and its threads then spin, waiting for the next product: on a machine with few
cores they take the cores from the embedding model (PyTorch) that embeds the next question or
the second queries. Measured on 2 cores (all-MiniLM-L6-v2, MuSiQue, Milvus Lite): the default
method's p50 224 ms (its batch of second queries embedded in 111 ms) against 102 ms (45 ms)
with OpenBLAS on one thread. Setting the threads back after each query was not enough
(139 ms: raising the count seems to wake the threads, which spin again).

So the first query sets OpenBLAS to ``blas_threads`` threads **for the process**, as
``OPENBLAS_NUM_THREADS`` would have at start, and leaves it so. Nothing is changed when the
environment sets ``OPENBLAS_NUM_THREADS`` (the user chose), or with ``blas_threads=None``.
Only OpenBLAS libraries on their own threads are limited (through ``threadpoolctl``; a
process often holds several: numpy's, SciPy's), not one built on OpenMP (whose setting
would be PyTorch's too), nor MKL or another BLAS. Libraries loaded later are limited as the
next query finds them (looked for again when modules were imported since).

>>> threads = BlasThreads(environ={})
>>> threads.limit(1)
>>> threads.threads
1
>>> BlasThreads(environ={"OPENBLAS_NUM_THREADS": "4"}).limit(1)  # the user's choice stays
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping

from threadpoolctl import ThreadpoolController

DEFAULT_BLAS_THREADS = 1
"""OpenBLAS threads of a process that answers queries (the retriever's ``blas_threads``)."""

MAX_BLAS_THREADS = 1024
"""The largest ``blas_threads`` accepted (OpenBLAS caps its threads at the count it was
built for, often 64)."""

ENVIRONMENT_SETTING = "OPENBLAS_NUM_THREADS"
"""The environment variable that, when set, leaves OpenBLAS's threads as the user chose."""


class BlasThreads:
    """Sets the process's OpenBLAS threads once (and for libraries loaded since)."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ = os.environ if environ is None else environ
        self._lock = threading.Lock()
        self._modules = -1  # len(sys.modules) when the libraries were looked for
        self._libraries: ThreadpoolController | None = None
        self.threads: int | None = None
        """The threads set (``None``: not set)."""

    def limit(self, threads: int | None) -> None:
        """OpenBLAS on ``threads`` threads from now on (``None``, or ``OPENBLAS_NUM_THREADS``
        in the environment: unchanged). Cheap when nothing was imported since the last
        call."""
        if threads is None or ENVIRONMENT_SETTING in self._environ:
            return
        if len(sys.modules) == self._modules and self.threads == threads:
            return
        with self._lock:
            if self._libraries is None or len(sys.modules) != self._modules:
                self._modules = len(sys.modules)
                self._libraries = ThreadpoolController().select(internal_api="openblas",
                                                                threading_layer="pthreads")
            self._libraries.limit(limits=threads)  # kept: not restored
            self.threads = threads


PROCESS_BLAS = BlasThreads()
"""The process's setter (OpenBLAS's thread count is a setting of the process)."""
