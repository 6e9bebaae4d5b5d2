r"""The explanation as one self-contained HTML page.

Everything is inline: Cytoscape.js (vendored in ``assets/``, MIT, see
``assets/VENDORED.md``), the view's script and style, and the explanation as JSON in a
``<script type="application/json">`` block that is never executed (``<``, ``>`` and ``&``
are written as JSON escapes such as ``\u003c``, so no text of the index can close it). A
Content-Security-Policy allows only the page's own three scripts (by their SHA-256) and no
connection at all: the page works offline and fetches nothing.

>>> from llama_index_graphrag_milvus.explain.explanation import Explanation
>>> page = render_page(Explanation("Who taught <b>Euler</b>?", "bridge", {}, ()))
>>> "Who taught &lt;b&gt;Euler&lt;/b&gt;?" in page, "<b>Euler" in page
(True, False)
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from functools import cache
from importlib import resources
from typing import Any

from llama_index_graphrag_milvus.explain.explanation import Explanation, finite

ASSETS = "llama_index_graphrag_milvus.explain"
"""The package whose ``assets/`` folder holds the vendored and own assets."""
FRAME_HEIGHT = 1100
"""Height in pixels of the inline Jupyter frame."""

_START = ("GraphRAGExplain.render(document.getElementById('explanation'), "
          "JSON.parse(document.getElementById('explanation-data').textContent));")


@cache
def asset(name: str) -> str:
    """The text of one asset file (``cytoscape.min.js``, ``explain.js``, ``explain.css``)."""
    return resources.files(ASSETS).joinpath("assets").joinpath(name).read_text(encoding="utf-8")


def script_json(value: Any) -> str:
    r"""JSON that is safe inside a ``<script>`` element: no ``<``, ``>``, ``&``, nor the
    two line separators JavaScript once refused.

    >>> print(script_json({"text": "</script>"}))
    {"text": "\u003c/script\u003e"}
    """
    text = json.dumps(finite(value), ensure_ascii=False, allow_nan=False)
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(raw, escaped)
    return text


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def render_page(explanation: Explanation) -> str:
    """The page (see the module docstring)."""
    scripts = [asset("cytoscape.min.js"), asset("explain.js"), _START]
    policy = ("default-src 'none'; script-src " + " ".join(map(_sha256, scripts))
              + "; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
              "form-action 'none'")
    title = html.escape(f"Explanation: {explanation.question}")
    inline = "\n".join(f"<script>{script}</script>" for script in scripts)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{policy}\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<title>{title}</title>\n<style>{asset('explain.css')}</style>\n</head>\n<body>\n"
        f"<noscript>{html.escape(explanation.question)}: this page draws with JavaScript."
        "</noscript>\n<div id=\"explanation\" class=\"gr-explain\"></div>\n"
        "<script type=\"application/json\" id=\"explanation-data\">"
        f"{script_json(explanation.to_dict())}</script>\n{inline}\n</body>\n</html>\n")


def render_frame(explanation: Explanation) -> str:
    """The page inside a sandboxed ``<iframe srcdoc>`` (Jupyter's ``_repr_html_``): its
    scripts run in an opaque origin and cannot reach the notebook."""
    return (f"<iframe sandbox=\"allow-scripts\" title=\"{html.escape(explanation.question)}\" "
            f"style=\"width:100%;height:{FRAME_HEIGHT}px;border:0\" "
            f"srcdoc=\"{html.escape(render_page(explanation), quote=True)}\"></iframe>")
