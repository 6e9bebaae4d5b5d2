"""What the package's commands share: ``MODULE:CALLABLE`` arguments, Milvus Lite paths
checked before anything opens them, and one-line errors with exit code 2.

A command refuses a bad argument *before* it touches the path: a Milvus Lite path it refuses
is left as it was found (opening a folder makes Milvus Lite write its ``LOCK``,
``collections/`` and ``databases/`` into it).

>>> USAGE_ERROR
2
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
import unicodedata
from pathlib import Path
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding

from llama_index_graphrag_milvus.errors import GraphRAGError, InvalidInputError

USAGE_ERROR = 2
"""Exit code of a command line to change (argparse's own)."""
INTERRUPTED = 130
"""Exit code after Ctrl-C (128 + SIGINT), as shells report it."""
LITE_MARKER = "collections"
"""The folder Milvus Lite keeps in every index folder it wrote (beside ``LOCK`` and
``databases/``): a ``.db`` folder without it holds no index."""
MAX_SHOWN = 200
"""Characters of a failure's message an error line repeats at most."""
MAX_LISTED = 10
"""Files a line names at most (then "...")."""
SERVER_EXAMPLE = "a server URL such as http://localhost:19530"


_JAMO_TAIL = "\u1160"
"""The first hangul vowel jamo: from it to U+11FF (and U+D7B0 to U+D7FF), the parts of a
decomposed syllable after its first consonant, drawn inside the syllable's two columns."""


def columns(text: str) -> int:
    """The terminal columns ``text`` takes: East Asian wide and full-width characters (kanji,
    kana, hangul) take two, combining marks (a Thai tone mark, an Arabic vowel, a decomposed
    accent) and zero-width characters none.

    >>> columns("Euler"), columns("オイラー"), columns("مُحَمَّد"), columns("Ju\u0308rgen")
    (5, 8, 4, 6)
    >>> import unicodedata; columns(unicodedata.normalize("NFD", "한국어")) == columns("한국어")
    True
    """
    return sum(0 if unicodedata.category(c) in ("Mn", "Me", "Cf") or _JAMO_TAIL <= c <= "\u11ff"
               or "\ud7b0" <= c <= "\ud7ff"  # the vowels and finals of decomposed hangul
               else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def one_line(text: object) -> str:
    """``text`` on one line (runs of whitespace as one space), its control characters (a
    terminal's escape sequences, a stray byte of a file) shown as ``�``.

    >>> one_line("a\\nb  c \\x1b[2J")
    'a b c �[2J'
    """
    flat = " ".join(str(text).split())
    if flat.isprintable():
        return flat
    return "".join("\ufffd" if unicodedata.category(c) == "Cc" else c for c in flat)


def pad(text: str, width: int) -> str:
    """``text`` followed by spaces up to ``width`` columns (see :func:`columns`)."""
    return text + " " * max(0, width - columns(text))


def shorten(text: str, limit: int = MAX_SHOWN) -> str:
    """``text`` on one line (see :func:`one_line`), cut to ``limit`` terminal columns (see
    :func:`columns`).

    >>> shorten("a\\nb  c"), shorten("x" * 10, 5), shorten("red \\x1b[31mtext")
    ('a b c', 'xxxx…', 'red �[31mtext')
    >>> shorten("レオンハルト・オイラー", 9)
    'レオンハ…'
    """
    flat = one_line(text)
    if columns(flat) <= limit:
        return flat
    kept, used = [], 0
    for char in flat:
        used += columns(char)
        if used > limit - 1:
            break
        kept.append(char)
    return "".join(kept) + "…"


def quiet_jieba() -> None:
    """Keep jieba's dictionary loading off the terminal: on import it logs it at DEBUG to
    stderr through a handler of its own, whatever the process's logging says, in the middle
    of a progress bar. For the commands only (their process is theirs): a library leaves
    another library's logging alone. Nothing when jieba is not installed."""
    if importlib.util.find_spec("jieba") is None:
        return
    import logging

    try:
        import jieba
    except Exception:  # a broken install: the index says so when it needs jieba
        return
    jieba.setLogLevel(logging.WARNING)


def fail(error: BaseException | str) -> int:
    """Print ``error: ...`` as one line on stderr and return :data:`USAGE_ERROR`."""
    print(f"error: {one_line(error)}", file=sys.stderr, flush=True)
    return USAGE_ERROR


def load_callable(spec: str, flag: str, kind: type, kind_name: str) -> Any:
    """The object ``MODULE:CALLABLE`` names: an instance of ``kind`` as it is, else the
    result of calling it with no argument, which must be a ``kind``.

    The module is looked for on the Python path and then in the current folder, as
    ``python -m`` finds it (a console script's path holds its own folder instead): ``--llm
    mymodels:llm`` loads ``./mymodels.py`` from either.

    Every failure is an :class:`InvalidInputError` naming ``flag``: a spec without a colon,
    a module or attribute that does not import, an attribute that is neither a ``kind`` nor
    callable, a callable that needs arguments, a call that raises (a model path that does not
    exist...), a result of another type.

    >>> load_callable("collections:OrderedDict", "--x", dict, "a dict")
    OrderedDict()
    >>> load_callable("os:sep", "--x", dict, "a dict")
    Traceback (most recent call last):
    ...
    llama_index_graphrag_milvus.errors.InvalidInputError: --x os:sep names a str, neither a \
dict nor a function that returns one
    """
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise InvalidInputError(f"{flag} takes MODULE:CALLABLE, got {shorten(repr(spec))}")
    here = str(Path.cwd())
    if here not in sys.path and "" not in sys.path:
        sys.path.append(here)  # after the installed packages: nothing of theirs shadowed
    try:
        target: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise InvalidInputError(f"{flag} {spec}: cannot load it ({shorten(str(exc))}); name "
                                "a module on the Python path and a function in it") from exc
    if isinstance(target, kind):
        return target
    if not callable(target):
        raise InvalidInputError(f"{flag} {spec} names a {type(target).__name__}, neither "
                                f"{kind_name} nor a function that returns one")
    try:
        needed = [p.name for p in inspect.signature(target).parameters.values()
                  if p.default is p.empty
                  and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    except (TypeError, ValueError):  # a builtin without a signature: try the call
        needed = []
    if needed:
        raise InvalidInputError(f"{flag} {spec} needs arguments ({', '.join(needed)}); name "
                                f"a function that takes none and returns {kind_name}")
    try:
        made = target()
    except GraphRAGError:  # says what to do already (a missing extra...)
        raise
    except Exception as exc:
        raise InvalidInputError(f"{flag} {spec} failed: {type(exc).__name__}: "
                                f"{shorten(str(exc))}") from exc
    if not isinstance(made, kind):
        raise InvalidInputError(f"{flag} {spec} gave a {type(made).__name__}, not "
                                f"{kind_name}")
    return made


def load_embed_model(spec: str, flag: str = "--embed-model") -> BaseEmbedding:
    """The embedding model of ``MODULE:CALLABLE`` (see :func:`load_callable`), e.g.
    ``mymodels:embed_model`` for ``def embed_model(): return HuggingFaceEmbedding(...)``."""
    model: BaseEmbedding = load_callable(spec, flag, BaseEmbedding,
                                         "a LlamaIndex embedding model (BaseEmbedding)")
    return model


def is_server(uri: str) -> bool:
    """Whether ``uri`` is a server URL rather than a Milvus Lite path.

    >>> is_server("http://localhost:19530"), is_server("./graphrag.db")
    (True, False)
    """
    return "://" in uri


def check_lite_index(uri: str, flag: str = "--uri") -> None:
    """For a command that only reads: ``uri`` is a server URL or a Milvus Lite index folder
    (it exists, its name ends in ``.db``, Lite wrote its :data:`LITE_MARKER` in it).
    Nothing is opened or written."""
    if is_server(uri):
        return
    path = Path(uri)
    if not path.exists():
        raise InvalidInputError(f"{flag} {uri}: no Milvus Lite index there (the path does "
                                f"not exist); give the path an index was built at, or "
                                f"{SERVER_EXAMPLE}")
    _check_lite_shape(path, uri, flag)
    if not (path / LITE_MARKER).is_dir():
        raise InvalidInputError(f"{flag} {uri} holds no Milvus Lite index (no {LITE_MARKER}/ "
                                f"in it); give the path an index was built at, or "
                                f"{SERVER_EXAMPLE}")


def check_lite_target(uri: str, flag: str = "--uri") -> None:
    """For a command that writes: ``uri`` is a server URL, a new path ending in ``.db``, an
    empty ``.db`` folder, or a Milvus Lite index folder. Nothing is left created (a new
    path is made and removed again, to know it can be)."""
    if is_server(uri):
        return
    path = Path(uri)
    if not path.exists():
        if not path.name.endswith(".db"):
            raise InvalidInputError(f"{flag} {uri}: Milvus Lite paths end in .db (for example "
                                    f"{path.name}.db), or give {SERVER_EXAMPLE}")
        try:  # can it be made? (before hours of reading and embedding)
            path.mkdir()
            path.rmdir()
        except OSError as exc:
            raise InvalidInputError(f"{flag} {uri}: cannot create it ({exc.strerror or exc}); "
                                    f"give a path in a folder you can write to, or "
                                    f"{SERVER_EXAMPLE}") from exc
        return
    _check_lite_shape(path, uri, flag)
    if any(path.iterdir()) and not (path / LITE_MARKER).is_dir():
        raise InvalidInputError(f"{flag} {uri} is a folder of other files, not a Milvus Lite "
                                "index; give a new path ending in .db")


def _check_lite_shape(path: Path, uri: str, flag: str) -> None:
    if not path.is_dir():
        raise InvalidInputError(f"{flag} {uri} is a file, not a Milvus Lite index: Milvus Lite "
                                f"keeps an index in a folder whose name ends in .db; give "
                                f"such a folder, or {SERVER_EXAMPLE}")
    if not path.name.endswith(".db"):
        raise InvalidInputError(f"{flag} {uri}: Milvus Lite opens only folders whose name ends "
                                f"in .db; give such a folder, or {SERVER_EXAMPLE}")
