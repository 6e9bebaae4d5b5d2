"""HTML files as their visible text, for the folder command (the standard library's parser).

``SimpleDirectoryReader`` reads a ``.html`` file as plain text without a reader package: its
passages would start with ``<!DOCTYPE html>`` and spaCy would find entities such as
``b>Acme``. :class:`HtmlTextReader` keeps the text a browser shows (the title first),
drops scripts, styles and comments, and ends blocks (paragraphs, headings, list items, table
rows) with line breaks.

>>> print(html_text("<html><head><title>Acme</title><script>x=1</script></head>"
...                 "<body><h1>About</h1><p>Alice <b>founded</b> Acme.</p></body></html>"))
Acme
About
Alice founded Acme.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from llama_index.core import Document
from llama_index.core.readers.base import BaseReader

HTML_SUFFIXES = (".html", ".htm", ".xhtml")
"""The file types :class:`HtmlTextReader` reads."""
_HIDDEN = frozenset({"script", "style", "noscript", "template", "title"})
_BLOCKS = frozenset({"address", "article", "aside", "blockquote", "br", "dd", "div", "dl",
                     "dt", "figcaption", "figure", "footer", "h1", "h2", "h3", "h4", "h5",
                     "h6", "header", "hr", "li", "main", "nav", "ol", "p", "pre", "section",
                     "table", "td", "th", "title", "tr", "ul"})


class _Text(HTMLParser):
    """The visible text of a page, blocks on lines of their own."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.hidden: list[str] = []
        self.title: list[str] = []

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in _HIDDEN:
            self.hidden.append(tag)
        if tag in _BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if self.hidden and self.hidden[-1] == tag:
            self.hidden.pop()
            if tag == "title":
                self.parts.append("\n")
        if tag in _BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.hidden:
            self.parts.append(data)
        elif self.hidden[-1] == "title":
            self.title.append(data)


def html_text(markup: str) -> str:
    """The text a browser shows of ``markup`` (the title first), one block per line."""
    parser = _Text()
    parser.feed(markup)
    parser.close()
    lines = ("".join(parser.title) + "\n" + "".join(parser.parts)).splitlines()
    text = (re.sub(r"[ \t\f\v\u00a0]+", " ", line).strip() for line in lines)
    return "\n".join(line for line in text if line)


class HtmlTextReader(BaseReader):
    """A ``SimpleDirectoryReader`` file reader: an HTML file (UTF-8) as one document of its
    visible text (see :func:`html_text`)."""

    def load_data(self, file: Path, extra_info: dict[str, Any] | None = None,
                  **_: Any) -> list[Document]:
        markup = Path(file).read_bytes().decode("utf-8", errors="replace")
        return [Document(text=html_text(markup), metadata=dict(extra_info or {}))]
