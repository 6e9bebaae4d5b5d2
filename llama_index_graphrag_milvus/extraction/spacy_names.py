"""Where a name ends, for the LLM-free extractor: what the recognizer or a noun chunk gives
is continued by what the text writes as part of the name ("of" phrases, numbers, a noble's
title after a comma) within a number of words.

Pure functions over a spaCy ``Doc``; :mod:`~llama_index_graphrag_milvus.extraction.
spacy_mentions` builds the mentions with them.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spacy.tokens import Doc, Span, Token

SUBJECT_DEPS = frozenset({"nsubj", "nsubjpass"})
ARTICLES = frozenset({"the", "a", "an"})
DATE_LABELS = frozenset({"DATE", "TIME"})
PLACE_LABELS = frozenset({"GPE", "LOC", "FAC"})
_REGNAL = re.compile(r"[IVX]{1,4}")
"""A regnal number ("Henry VIII", "Isabella I")."""
_TITLES = frozenset({
    "King", "Queen", "Prince", "Princess", "Emperor", "Empress", "Tsar", "Tsarina", "Czar",
    "Duke", "Duchess", "Archduke", "Archduchess", "Grand", "Count", "Countess", "Earl",
    "Margrave", "Margravine", "Landgrave", "Landgravine", "Burgrave", "Elector", "Electress",
    "Viscount", "Viscountess", "Baron", "Baroness", "Marquess", "Marquis", "Marchioness",
    "Infante", "Infanta", "Lord", "Lady", "Sir", "Dame", "Saint", "St.", "Pope", "Bishop",
    "Archbishop", "Abbot", "Abbess", "Sultan", "Emir", "Shah", "Caliph", "Khan", "Regent"})
"""Titles before a person's name ("Duke Ulrich", "Queen Isabella"): not part of the name
when counting its words."""
_BARONETS = frozenset({"Baronet", "Baronetess"})
"""A title that ends a name after its ordinal, with no place ("Sir John Tallis, 1st
Baronet")."""
_ORDINAL = re.compile(r"\d+(?:st|nd|rd|th)")


def is_proper(token: Token) -> bool:
    return token.pos_ == "PROPN"


def written_words(doc: Doc, start: int, end: int) -> int:
    """How many words tokens ``[start, end)`` write: "Macerata-Tolentino-Recanati" and
    "Wayne's" are one word each."""
    return sum(1 for i in range(start, end) if i == start or doc[i - 1].whitespace_)


def _proper_run_end(doc: Doc, position: int) -> int:
    """The end of the proper nouns from ``position`` on, hyphenated ones included
    ("Nassau-Siegen", "Mecklenburg-Güstrow")."""
    while position < len(doc):
        if is_proper(doc[position]):
            position += 1
        elif (doc[position].tag_ == "HYPH" and position + 1 < len(doc)
              and not doc[position - 1].whitespace_ and not doc[position].whitespace_
              and is_proper(doc[position + 1])):
            position += 2
        else:
            break
    return position


def _with_of_phrase(doc: Doc, start: int, end: int, max_words: int) -> int:
    """The end of a proper name ``[start, end)`` continued by "of (the) <proper name>", as
    many times as the text chains them within ``max_words`` words (University of
    Copenhagen, West of the River, Officer of the Order of Canada, Henry I of
    Nassau-Siegen), else ``end``; a leading article is not a word."""
    start += doc[start].lower_ in ARTICLES
    while (end + 1 < len(doc) and doc[end].lower_ == "of"
           and (is_proper(doc[end - 1]) or _REGNAL.fullmatch(doc[end - 1].text))):
        position = end + 1
        if doc[position].lower_ == "the" and position + 1 < len(doc):
            position += 1
        if not is_proper(doc[position]):
            break
        position = _proper_run_end(doc, position)
        if written_words(doc, start, position) > max_words:
            break  # the chain's last link would make it too long: keep it shorter
        end = position
    return end


def _with_dashed(doc: Doc, end: int) -> int:
    """The end of a name joined to the next by a dash without spaces ("Laxmikant–Pyarelal",
    "Dallas–Fort Worth", "University of Wisconsin–Madison"), else ``end``."""
    while (0 < end < len(doc) - 1 and doc[end].text in ("–", "-")
           and not doc[end - 1].whitespace_ and not doc[end].whitespace_
           and is_proper(doc[end - 1]) and is_proper(doc[end + 1])):
        end += 2
        while end < len(doc) and is_proper(doc[end]) and doc[end - 1].whitespace_:
            end += 1
    return end


def _with_regnal_number(doc: Doc, end: int) -> int:
    """The end of a name continued by a regnal number the parse attaches to it ("Isabella
    I", "Beatrice I"), else ``end``; not "I" as a subject ("when Isabella I met ...")."""
    if end >= len(doc) or not is_proper(doc[end - 1]):
        return end
    number = doc[end]
    attached = number.head.i == end - 1 or doc[end - 1].head.i == end
    if (not _REGNAL.fullmatch(number.text) or not attached
            or (number.text == "I" and number.dep_ in SUBJECT_DEPS)):
        return end
    return end + 1


def _one_name(doc: Doc, start: int, end: int) -> bool:
    """Whether a person's name ``[start, end)`` is at most one word, titles and regnal
    numbers aside ("Duke Ulrich", "Isabella I", "Duke"), and is followed by "of" and a name
    without an article: such a person is named by the place ("Anne of Cleves"); "Paul
    McCartney of Wings" is two names, and so is a person before "of the" ("Lady Kennedy of
    The Shaws")."""
    words = [t for t in doc[start:end]
             if is_proper(t) and t.text not in _TITLES and not _REGNAL.fullmatch(t.text)]
    return (len(words) <= 1 and end + 1 < len(doc) and doc[end].lower_ == "of"
            and doc[end + 1].lower_ != "the")


def with_comma_title(doc: Doc, start: int, end: int, max_words: int) -> int:
    """The end of a name continued by ", <title> of <place>" or ", <ordinal> <title>
    <place>", the way encyclopedias name nobles ("Albert VII, Duke of Mecklenburg", "Charles
    Howard, 11th Duke of Norfolk", "Henry Nevill, 6th Baron Bergavenny", "Sir John Tallis,
    1st Baronet"), within
    ``max_words`` words, else ``end``. Only titles stand between the comma and the place:
    "Michael Kirby, Lady Kennedy of The Shaws" is a list of two names."""
    if end + 3 >= len(doc) or doc[end].text != ",":
        return end
    ordinal = _ORDINAL.fullmatch(doc[end + 1].text) is not None
    position = end + 2 if ordinal else end + 1
    if ordinal and doc[position].text in _BARONETS:  # "Sir John Tallis, 1st Baronet"
        return position + 1 if written_words(doc, start, position + 1) <= max_words else end
    title_end = position
    while title_end < len(doc) and doc[title_end].text in _TITLES:
        title_end += 1
    if title_end == position:
        return end
    if doc[title_end].lower_ == "of":
        named_end = _with_of_phrase(doc, start, title_end, max_words)
    else:
        named_end = _proper_run_end(doc, title_end) if ordinal else title_end
    return (named_end if title_end < named_end and written_words(doc, start, named_end) <= max_words
            else end)


_NUMBER = re.compile(r"\d+(?:\.\d+)?|[A-Z][a-z]+")
"""A number that may end a name: digits ("Route 52", "Wave 104.1") or a capitalized number
word ("Formula One"), not "275,000" (a table's figure)."""
_YEAR = re.compile(r"1\d{3}|20\d{2}")
_AFTER_NUMBER_STOP = frozenset({"-", "--", "–", "—", "]", "°", "%"})
"""What follows a number that is a score ("England 6 -- 1 Panama"), a footnote, a coordinate
or a share rather than the end of a name."""


def _with_number(doc: Doc, end: int, label: str) -> int:
    """The end of a name continued by its number ("U.S. Route 52", "BWV 564", "Big Hero 6",
    "Formula One"), else ``end``: the number modifies the name's last word, which is
    capitalized, and it is not a year, a score, a footnote, a day of a date or the figure
    after a place ("California 90210", "France 4 -- 3")."""
    if end >= len(doc) or label in ("GPE", "NORP") or not doc[end - 1].text[:1].isupper():
        return end
    number = doc[end]
    if (number.pos_ != "NUM" or number.dep_ != "nummod" or number.head.i != end - 1
            or not _NUMBER.fullmatch(number.text) or _YEAR.fullmatch(number.text)):
        return end
    if end + 1 < len(doc):
        after = doc[end + 1]
        if (after.text in _AFTER_NUMBER_STOP or after.like_num
                or after.ent_type_ in DATE_LABELS):
            return end
    return end + 1


def name_end(doc: Doc, span: Span, label: str, max_words: int) -> tuple[int, int]:
    """Where a proper name ends with its regnal number and its "of" phrases, and with its
    number after them; a noble's with the title after a comma (see
    :func:`with_comma_title`). A person's name takes an "of" phrase only when it is one
    word (see :func:`_one_name`)."""
    end = _with_regnal_number(doc, _with_dashed(doc, span.end))
    titled = (end if label in PLACE_LABELS
              else with_comma_title(doc, span.start, end, max_words))
    if titled > end:
        return titled, titled
    if label == "PERSON" and not _one_name(doc, span.start, end):
        return end, end
    of_end = _with_dashed(doc, _with_of_phrase(doc, span.start, end, max_words))
    return of_end, _with_number(doc, of_end, label)


_TITLE_SMALL_WORDS = frozenset({"a", "an", "the", "and", "or", "of", "on", "in", "at", "to",
                                "for", "with", "from", "by", "as", "into", "upon"})
"""Words a title writes in lowercase between capitalized ones ("Walking on Glass")."""


def title_cased(words: list[Token], opening: bool) -> bool:
    """Whether words are capitalized as a title is: every one, or, in the sentence that
    opens the text, every one but short function words between the first and the last
    ("Walking on Glass is the second novel by ...")."""
    if not opening:
        return all(t.text[:1].isupper() for t in words)
    return (words[0].text[:1].isupper() and words[-1].text[:1].isupper()
            and all(t.text[:1].isupper() or t.lower_ in _TITLE_SMALL_WORDS for t in words))
