"""Identity: how names are compared, and the deterministic ids of entities, relations and
passages (a hash of the normalized text), so that ingesting the same input again is an upsert,
never a duplicate, and an interrupted ingestion can simply be run again."""

from __future__ import annotations

import hashlib
import unicodedata

_CONTROLS = {code: None for code in (*range(0x20), *range(0x7F, 0xA0)) if not chr(code).isspace()}
"""The control characters that are not whitespace (NUL, BEL, ESC, DEL...): dropped."""


def clean_text(text: str) -> str:
    r"""Collapse runs of whitespace, strip, and drop control characters (NUL, BEL, ESC: a
    terminal would obey them, and no name means them): the form an entity name is shown in.

    >>> clean_text("  Leonhard\tEu\x00ler\x07 ")
    'Leonhard Euler'
    """
    return " ".join(text.translate(_CONTROLS).split())



def normalize_name(text: str) -> str:
    """The identity of an entity name: whitespace collapsed, case-folded, in Unicode's
    compatibility-composed form (NFKC), so that a name written decomposed (a file saved on
    macOS: "Ju\u0308rgen"), in full-width letters ("Ｅｕｌｅｒ") or half-width kana names
    the same entity as its usual form; Turkish dotted and dotless i fold to "i" ("İstanbul"
    is "istanbul", "Yılmaz" is "YILMAZ", as capitals cannot tell them apart).

    >>> normalize_name("  Leonhard   EULER "), normalize_name("Ｅｕｌｅｒ")
    ('leonhard euler', 'euler')
    >>> normalize_name("Ju\u0308rgen") == normalize_name("Jürgen") == "jürgen"
    True
    """
    text = clean_text(text)
    if text.isascii():
        return text.lower()
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return folded.replace("i\u0307", "i").replace("ı", "i")



def clip_utf8(text: str, max_bytes: int) -> str:
    """``text`` cut to at most ``max_bytes`` UTF-8 bytes (on a character boundary).

    >>> clip_utf8("café", 4)
    'caf'
    """
    data = text.encode("utf-8", "surrogatepass")
    return text if len(data) <= max_bytes else data[:max_bytes].decode("utf-8", "ignore")



def stable_id(kind: str, key: str) -> str:
    """A deterministic 32-hex-digit id for ``key`` in the namespace ``kind``."""
    return hashlib.sha256(f"{kind}\x1f{key}".encode()).hexdigest()[:32]



def entity_id(name: str) -> str:
    """Entity id of a name: names equal after :func:`normalize_name` share it."""
    return stable_id("entity", normalize_name(name))



def passage_id(text: str, document_id: str | None = None, identity: str = "") -> str:
    """Passage id: a hash of the source document id (when there is one), of the identity
    metadata (``identity``, a canonical text of the metadata that makes passages distinct,
    such as a tenant key; see :mod:`~llama_index_graphrag_milvus.ingestion.identity`) and of the
    passage text with whitespace collapsed. The same text in two documents, or in two
    tenants, gives two passages, so that deleting one never removes the other's.

    >>> passage_id("Euler was Swiss.") == passage_id("Euler  was Swiss.")
    True
    >>> passage_id("Euler was Swiss.", identity='{"tenant_id": "acme"}') == passage_id(
    ...     "Euler was Swiss.", identity='{"tenant_id": "globex"}')
    False
    """
    parts = [clean_text(text)]
    if document_id is not None:
        parts.insert(0, document_id)
    if identity:
        parts.append(identity)
    return stable_id("passage", "\x1f".join(parts))
