"""What spaCy reads of a passage: its blocks ended by periods, and its title line.

Files read from a folder carry no title metadata, and their text often starts with a title or
a Markdown heading on its own line. Read as it is, that line runs into the first sentence
("Polish Wedding Polish Wedding is a 1998 film..."), and the parser loses the subject.
"""

from __future__ import annotations

import re

from llama_index_graphrag_milvus.extraction.spacy_mentions import split_title

MAX_TITLE_WORDS = 12
"""A first line of more words is text, not a title."""

MAX_SHORT_NAME_WORDS = 4
"""A title of at most this many words names the text's subject when the text writes its last
word ("Chuck Rowland" for "Charlie Leland Rowland"); a longer one, when it writes it whole."""

_WORD = re.compile(r"\w+")

_HEADING_MARKS = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+")
"""A Markdown heading's marks ("## "), at the start of a line."""

_SENTENCE_ENDS = frozenset(".!?…:;,。！？")


def _unmarked(line: str) -> tuple[bool, str]:
    """Whether a line is a Markdown heading, and the line without the heading's marks."""
    heading = _HEADING_MARKS.match(line)
    return (True, line[heading.end():]) if heading else (False, line)


def end_blocks(text: str) -> str:
    r"""``text`` with a period at the end of each line that ends a block without one: a line
    followed by a blank line (a paragraph, a title, a list item) or a Markdown heading
    (whose marks are dropped), so that the parser reads it as its own sentence rather than
    as the start of the next one ("Polish Wedding\n\nPolish Wedding is a film..."). Only
    what spaCy reads changes: the passage is stored as it is.

    >>> end_blocks("# Polish Wedding\nPolish Wedding is a film.\n\nCast\n\nLena Olin")
    'Polish Wedding.\nPolish Wedding is a film.\n\nCast.\n\nLena Olin'
    >>> end_blocks("Euler was a student of\nJohann Bernoulli.")
    'Euler was a student of\nJohann Bernoulli.'
    """
    if "\n" not in text:
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines[:-1]):
        heading, content = _unmarked(line)
        content = content.rstrip()
        blank_next = not lines[i + 1].strip()
        if content and (heading or blank_next) and content[-1] not in _SENTENCE_ENDS:
            content += "."
        lines[i] = content
    return "\n".join(lines)


def title_line(text: str, title: str | None = None) -> tuple[str | None, str]:
    r"""The passage's title and the text to parse: ``title`` and ``text`` when a title is
    given; else, when the first line is a title that names the passage's subject (a line of
    at most :data:`MAX_TITLE_WORDS` words, a Markdown heading's marks aside, without a
    sentence's end, followed by more text that writes its name in its first 300
    characters, or its last word when it is short: :data:`MAX_SHORT_NAME_WORDS`), that line
    and the rest; else no title and the whole text. A
    heading that does not name the subject ("Films", "Chapter 3") is not a title: the
    first sentence's subject is the topic then.

    >>> title_line("Chuck Rowland\n\nCharlie Leland Rowland (1899-1992) was a coach.")
    ('Chuck Rowland', 'Charlie Leland Rowland (1899-1992) was a coach.')
    >>> title_line("# Films\n\nPolish Wedding is a 1998 film.")
    (None, '# Films\n\nPolish Wedding is a 1998 film.')
    >>> title_line("Euler was a student of Johann Bernoulli\nJohann Bernoulli taught him.")
    (None, 'Euler was a student of Johann Bernoulli\nJohann Bernoulli taught him.')
    """
    if title is not None or "\n" not in text:
        return title, text
    first, body = text.split("\n", 1)
    line = _unmarked(first)[1].strip()
    body = body.strip()
    if (not line or not body or line[-1] in _SENTENCE_ENDS
            or len(_WORD.findall(line)) > MAX_TITLE_WORDS):
        return None, text
    name = split_title(line)[0].casefold()
    head = body[:300].casefold()
    words = _WORD.findall(name)
    short = 0 < len(words) <= MAX_SHORT_NAME_WORDS and len(words[-1]) > 2
    if name and (name in head or (short and words[-1] in _WORD.findall(head))):
        return line, body
    return None, text
