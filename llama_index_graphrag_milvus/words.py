"""How names are found in questions, in any script.

Scripts that separate words with spaces (Latin, Greek, Cyrillic...) are matched by words:
case-folded, accents removed, function words ignored ("Euler" names "Leonhard Euler"): the
English ones always, those of another language when the text is written in it (the "von"
and "der" of a German question do not name "Walther von der Vogelweide", while the "il" of
"Kim Jong-il" in an English question still tells him from "Kim Jong-chul").
Scripts that do not (Chinese, Japanese, Thai, Lao, Khmer, Myanmar), and Korean, whose words
carry their particles ("오일러의" is "Euler's"), are matched as text: a name's run of such
characters is in the question when the question contains it ("オイラー" in
"オイラーの先生の息子は…"). A name such as "レオンハルト・オイラー" has two runs, so the
question names it by half, as "Euler" names "Leonhard Euler".

>>> question = content_words("オイラーの先生の息子は何に貢献しましたか？")
>>> is_named("レオンハルト・オイラー", question), is_named("ヨハン・ベルヌーイ", question)
(True, False)
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from llama_index_graphrag_milvus.ids import clip_utf8, normalize_name
from llama_index_graphrag_milvus.limits import ENTITY_NAME_MAX_BYTES


def _mark_ranges() -> str:
    r"""A regular-expression class body of Unicode's combining marks (categories Mn, Mc,
    Me), which ``\w`` does not match: the vowel signs of Devanagari and Thai, a decomposed
    accent."""
    marks = [c for c in (*range(0x20000), *range(0xE0100, 0xE01F0))
             if unicodedata.category(chr(c))[0] == "M"]
    ranges: list[list[int]] = []
    for c in marks:
        if ranges and c == ranges[-1][1] + 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    return "".join(re.escape(chr(a)) + (f"-{re.escape(chr(b))}" if b > a else "")
                   for a, b in ranges)


_MARKS = _mark_ranges()
_ASCII_WORD = re.compile(r"\w+")
WORD = re.compile(rf"[\w{_MARKS}]+")
r"""A word: a run of ``\w`` characters and combining marks ("राहुल", "ทักษิณ", a decomposed
"Jürgen" are one word each; ``\w+`` alone cuts them at every vowel sign or accent)."""
LETTER = re.compile(rf"[{_MARKS}]*\w[{_MARKS}]*")
r"""A ``\w`` character with the combining marks around it: the unit of scripts compared by
characters (a Thai consonant with its vowel and tone marks)."""

_CLUSTER = re.compile(rf"[{_MARKS}]*[^{_MARKS}][{_MARKS}]*")
"""A character with the combining marks around it (a middle dot, a Thai letter with its
vowel and tone marks)."""


def word_pattern(text: str) -> re.Pattern[str]:
    r""":data:`WORD`, or for an ASCII text the faster ``\w+`` (the same words there)."""
    return _ASCII_WORD if text.isascii() else WORD


def words_of(text: str) -> list[str]:
    """The words of ``text`` (:data:`WORD`).

    >>> words_of("राहुल शर्मा के शिक्षक"), words_of("Euler's teacher")
    (['राहुल', 'शर्मा', 'के', 'शिक्षक'], ['Euler', 's', 'teacher'])
    """
    return word_pattern(text).findall(text)

STOP_WORDS = frozenset(
    "a an the of in on at to for and or by with from as is was were be been s what which "
    "who whom whose when where why how did does do".split())
"""English words a name's words are not matched by (they name nothing)."""
ARTICLES = frozenset({"the", "a", "an"})
"""The English stop words a name may start with written in lower case ("the Beatles")."""
FUNCTION_WORDS: dict[str, frozenset[str]] = {lang: frozenset(words.split()) for lang, words in {
    # the languages the Milvus tutorial is read in beside English, and their neighbours;
    # folded (accents removed), elisions split ("dell'" gives "dell")
    "it": "il lo la i gli le l un uno una di del dello della dei degli delle dell da dal "
          "dallo dalla dai dagli dalle dall in nel nello nella nei negli nelle nell con per "
          "tra fra su sul sullo sulla sui sugli sulle sull e ed o che chi cosa quale quali "
          "come dove quando perche",
    "fr": "le la les l un une des du de d au aux et ou en dans par pour sur avec est qui "
          "que qu quel quelle quels quelles quoi comment quand pourquoi",
    "es": "el la los las un una unos unas de del al y o e u en con por para que quien "
          "quienes cual cuales como donde cuando es fue son",
    "pt": "o os a as um uma de do da dos das em no na nos nas e ou com por para que quem "
          "qual quais como onde quando foi",
    "de": "der die das den dem des ein eine einer eines einem einen und oder im zu zum "
          "zur vom von beim ist sind war hat wer was wie wo wann warum welche welcher welches",
    "nl": "de het een van en op voor met wie wat waar wanneer hoe welke",
    "id": "yang dan di ke dari untuk dengan pada adalah ini itu apa siapa mana kapan "
          "mengapa bagaimana oleh sebagai dalam atau",
}.items()}
"""Function words of other languages written with spaces, by language: ignored (besides
:data:`STOP_WORDS`) in a text written in that language (see :func:`function_words`)."""
LANGUAGE_MIN_WORDS = 2
"""A text is taken as written in a language when it holds at least this many of its
function words, and more than of English's."""


def function_words(text: str) -> frozenset[str]:
    """The function words ignored in ``text``: :data:`STOP_WORDS`, and those of each
    language of :data:`FUNCTION_WORDS` the text holds at least :data:`LANGUAGE_MIN_WORDS`
    of, and more than of English's. A foreign name in an English text keeps its words
    ("Leonardo da Vinci", "Kim Jong-il").

    >>> "von" in function_words("Was hat der Sohn des Lehrers von Euler beigetragen?")
    True
    >>> "il" in function_words("Who is the wife of Kim Jong-il?")
    False
    """
    words = set(words_of(fold(text)))
    english = len(words & STOP_WORDS)
    found = [lang for lang in FUNCTION_WORDS.values()  # English's own ("as") are no sign
             if len(words & (lang - STOP_WORDS)) >= max(LANGUAGE_MIN_WORDS, english + 1)]
    return STOP_WORDS.union(*found) if found else STOP_WORDS

_HAN_KANA_RANGES = ("\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f"  # Hiragana, Katakana (and half-width)
                    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f")  # Han
_UNSPACED = re.compile(
    "[\u0e00-\u0eff"   # Thai, Lao
    "\u1000-\u109f"    # Myanmar
    "\u1780-\u17ff"    # Khmer
    "\u1100-\u11ff\u3130-\u318f\uac00-\ud7af"  # Hangul (words carry their particles)
    f"{_HAN_KANA_RANGES}]")
"""Characters of the scripts matched as text rather than by words."""
_UNSPACED_RUN = re.compile(f"{_UNSPACED.pattern}+(?:[\u00b7\u2027\uff65]{_UNSPACED.pattern}+)*")
"""A run of unspaced characters, middle dots between them kept ("约翰·伯努利" is one name)."""


def _accented(base: str) -> bool:
    """Whether the marks on ``base`` are accents :func:`fold` removes: on Latin, Greek and
    Cyrillic letters (and their extended blocks, Vietnamese included), not on the scripts
    whose marks are vowels (Devanagari, Thai, Hebrew points, Arabic harakat...)."""
    return base < "\u0530" or "\u1e00" <= base <= "\u1fff"


def fold(text: str) -> str:
    """``text`` case-folded and without accents, so that "Aschenbrodel" names
    "Aschenbrödel"; the marks of scripts whose marks are vowels are kept ("राहुल" stays
    itself, not "रहल").

    >>> fold("Aschenbrödel Café"), fold("राहुल") == "राहुल", fold("Yılmaz") == fold("YILMAZ")
    ('aschenbrodel cafe', True, True)
    """
    if text.isascii():
        return text.lower()
    kept: list[str] = []
    drop_marks = False  # Turkish "ı" as "i": "YILMAZ" names "Yılmaz"
    for c in unicodedata.normalize("NFKD", text.casefold().replace("ı", "i")):
        if not unicodedata.combining(c):
            drop_marks = _accented(c)
            kept.append(c)
        elif not drop_marks:
            kept.append(c)
    return "".join(kept)


def name_key(name: str) -> str:
    """The key an entity name is matched by whatever its accents, case and width (its
    :func:`~llama_index_graphrag_milvus.ids.normalize_name` folded, composed again, at most
    :data:`~llama_index_graphrag_milvus.limits.ENTITY_NAME_MAX_BYTES`): what the entity rows
    record (``name_key``) and what the entity seeds by name and the explorer's search compare,
    so that "Aschenbrodel" and "ZURICH" name "Aschenbrödel" and "Zürich".

    >>> name_key("Aschenbrödel") == name_key("ASCHENBRODEL") == "aschenbrodel"
    True
    >>> name_key("ベルヌーイ") == "ベルヌーイ", name_key("  Zürich  ") == name_key("zurich")
    (True, True)
    >>> name_key("Euler" + chr(0xD800))  # a lone surrogate
    'euler'
    """
    if name.isascii() and name.isprintable() and len(name) <= ENTITY_NAME_MAX_BYTES:
        return " ".join(name.split()).lower()  # what the general path gives, 10x sooner
    folded = unicodedata.normalize("NFC", fold(normalize_name(name)))
    text = folded.encode("utf-8", "ignore").decode("utf-8")  # a lone surrogate: no text
    return clip_utf8(text, ENTITY_NAME_MAX_BYTES)


def fold_unspaced(text: str) -> str:
    """``text`` in the form runs of unspaced scripts are compared in: compatibility-composed
    (half-width katakana as full-width) and case-folded, marks kept (a voiced kana is another
    sound, "ベ" is not "ヘ").

    >>> fold_unspaced("ﾍﾞﾙﾇｰｲ") == "ベルヌーイ"
    True
    """
    return unicodedata.normalize("NFKC", text).casefold()


def is_unspaced(text: str) -> bool:
    """Whether ``text`` holds a character of a script matched as text.

    >>> is_unspaced("欧拉"), is_unspaced("Euler")
    (True, False)
    """
    return _UNSPACED.search(text) is not None


@dataclass(frozen=True)
class Words:
    """A text as names are looked for in it: its content words (runs of spaced scripts,
    folded, stop words removed) and its text in :func:`fold_unspaced` form (where runs of
    unspaced scripts are looked for). Iterating gives the content words."""

    words: frozenset[str]
    text: str
    stop: frozenset[str] = STOP_WORDS
    """The function words of the text's language(s) (:func:`function_words`): a name's
    words among them do not count."""

    def __iter__(self) -> Iterator[str]:
        return iter(self.words)

    def __contains__(self, unit: object) -> bool:
        """Whether a unit of a name (see :func:`name_units`) is in the text."""
        if not isinstance(unit, str):
            return False
        return unit in self.text if is_unspaced(unit) else unit in self.words


def content_words(text: str) -> Words:
    """The words of ``text`` as names are looked for in it (see :class:`Words`).

    >>> sorted(content_words("What did the son of Euler's teacher make?"))
    ['euler', 'make', 'son', 'teacher']
    """
    stop = function_words(text)
    return Words(frozenset(w for w in words_of(fold(text)) if w not in stop),
                 fold_unspaced(text), stop)


def name_units(name: str, stop: frozenset[str] = STOP_WORDS) -> list[str]:
    """What must be in a question for it to name ``name``, each counted once: its content
    words (spaced scripts, folded), then its runs of unspaced scripts (in
    :func:`fold_unspaced` form).

    >>> name_units("the Journal of Psychotherapy Integration")
    ['journal', 'psychotherapy', 'integration']
    >>> name_units("レオンハルト・オイラー"), name_units("莱昂哈德·欧拉")
    (['レオンハルト', 'オイラー'], ['莱昂哈德', '欧拉'])
    """
    spaced = [w for w in words_of(fold(name)) if w not in stop and not is_unspaced(w)]
    unspaced = [run for run in words_of(fold_unspaced(name)) if is_unspaced(run)]
    return list(dict.fromkeys([*spaced, *unspaced]))


def named_share(name: str, question: Words) -> float:
    """The share of the name's units (:func:`name_units`) that the question holds (1.0 for a
    name with none: it cannot be a useful second query).

    >>> words = content_words("Who is the wife of Kim Jong-chul?")
    >>> named_share("Kim Jong-chul", words), round(named_share("Kim Jong-il", words), 2)
    (1.0, 0.67)
    >>> words = content_words("Was hat der Sohn des Lehrers von Euler beigetragen?")
    >>> named_share("Walther von der Vogelweide", words), named_share("Leonhard Euler", words)
    (0.0, 0.5)
    """
    units = name_units(name, question.stop)
    return sum(unit in question for unit in units) / len(units) if units else 1.0


def is_named(name: str, question: Words) -> bool:
    """Whether the question names the entity: it holds at least half of the name's units
    ("Euler" names "Leonhard Euler"). A name with no unit counts as named (it cannot be a
    useful second query).

    >>> words = content_words("What did the son of Euler's teacher make?")
    >>> is_named("Leonhard Euler", words), is_named("Johann Bernoulli", words)
    (True, False)
    """
    return 2 * named_share(name, question) >= 1


NAME_SPAN_WORDS = 6
"""The most words :func:`name_spans` takes as one name."""
NAME_SPAN_CHARACTERS = 12
"""The most characters of an unspaced script :func:`name_spans` takes as one name."""
MAX_NAME_SPANS = 1024
"""The most spans :func:`name_spans` returns: the word runs, then the runs of unspaced
scripts, shortest first, while they fit (a question with more than about 90 characters of an
unspaced script has more)."""


def name_spans(text: str) -> list[str]:
    """The parts of ``text`` that may be an entity's whole name, as written, longest first,
    each once: runs of up to :data:`NAME_SPAN_WORDS` words of spaced scripts that neither
    start nor end with an English stop word (:data:`STOP_WORDS`: another language's
    articles start names, "Die Zeit", "La Scala") unless the stop word is part of a name
    written in capitals ("the Beatles", "The Wall Street Journal", "In God We Trust",
    "Nguyễn Văn An"), and the runs of 2 to
    :data:`NAME_SPAN_CHARACTERS` characters inside each run of an unspaced script (which
    marks no word boundaries), and across one space between two such runs; at most
    :data:`MAX_NAME_SPANS` of them.

    >>> name_spans("Who taught Kim Jong-il?")[:4]
    ['taught Kim Jong-il', 'taught Kim Jong', 'Kim Jong-il', 'taught Kim']
    >>> "Die Zeit" in name_spans("Wer gründete Die Zeit?")
    True
    >>> "Journal of Psychotherapy" in name_spans("the Journal of Psychotherapy's founder")
    True
    >>> spans = name_spans("Who managed the Beatles, The Who and Nguyễn Văn An?")
    >>> all(n in spans for n in ("the Beatles", "The Who", "Nguyễn Văn An"))
    True
    >>> "managed the" in spans or "the song" in name_spans("who wrote the song?")
    False
    >>> name_spans("欧拉的老师")[:6]
    ['欧拉的老师', '欧拉的老', '拉的老师', '欧拉的', '拉的老', '的老师']
    >>> "ทักษิณ ชินวัตร" in name_spans("ทักษิณ ชินวัตรเกิดที่ไหน")  # two runs, one space
    True
    >>> long = "".join(chr(0x4E00 + i) for i in range(200)) + "欧拉"
    >>> len(name_spans(long)) == MAX_NAME_SPANS and "欧拉" in name_spans(long)
    True
    """
    spans: dict[str, None] = {}
    for span in _spans(text):  # found lazily: a long text stops at the cap
        spans.setdefault(span)
        if len(spans) == MAX_NAME_SPANS:
            break
    return sorted(spans, key=len, reverse=True)


def _spans(text: str) -> Iterator[str]:
    """The spans of :func:`name_spans` as they are found (repeats included): the word
    runs, then the runs of unspaced characters, shortest first."""
    spaced = [m for m in word_pattern(text).finditer(text) if not is_unspaced(m.group())]
    for at, first in enumerate(spaced):
        if _may_start(spaced, at):
            yield from (text[first.start():last.end()]
                        for end, last in enumerate(spaced[at:at + NAME_SPAN_WORDS], at)
                        if _may_end(spaced, at, end))
    # by letters with their marks: a Thai span neither starts with a vowel sign nor counts
    # its marks as characters
    found = list(_UNSPACED_RUN.finditer(text))
    runs = [_CLUSTER.findall(run.group()) for run in found]
    for size in range(2, NAME_SPAN_CHARACTERS + 1):
        for run in runs:
            yield from ("".join(run[start:start + size])
                        for start in range(len(run) - size + 1))
    # a name written with a space between two runs ("ทักษิณ ชินวัตร"): the end of one run and
    # the start of the next, when only a space parts them
    for at in range(len(found) - 1):
        if text[found[at].end():found[at + 1].start()] == " ":
            left, right = runs[at], runs[at + 1]
            for size in range(1, min(len(left), NAME_SPAN_CHARACTERS) + 1):
                end = "".join(left[-size:])
                yield from (f"{end} {''.join(right[:length])}"
                            for length in range(1, min(len(right), NAME_SPAN_CHARACTERS) + 1))


def _capitalized(word: str) -> bool:
    return word[:1].isupper()


def _may_start(words: Sequence[re.Match[str]], at: int) -> bool:
    """Whether a name may start at word ``at``: not an English stop word, unless it is an
    article or capitalized, and a capitalized word follows ("the Beatles", "The Wall Street
    Journal", "In God We Trust", "The Who"). A lower-case article before a lower-case word
    starts none ("the song" names no entity in "who wrote the song?")."""
    word = words[at].group()
    return fold(word) not in STOP_WORDS or (
        (_capitalized(word) or fold(word) in ARTICLES) and at + 1 < len(words)
        and _capitalized(words[at + 1].group()))


def _may_end(words: Sequence[re.Match[str]], start: int, end: int) -> bool:
    """Whether a name that starts at word ``start`` may end at word ``end``: not an English
    stop word, unless it is capitalized after a word of the name ("Nguyễn Văn An", "Let
    It Be")."""
    word = words[end].group()
    return fold(word) not in STOP_WORDS or (end > start and _capitalized(word))


def without_name(text: str, name: str) -> str:
    """``text`` without the units of ``name`` (its words, its runs of unspaced scripts),
    spaces collapsed.

    >>> without_name("What did the son of Euler's teacher make?", "Leonhard Euler")
    "What did the son of 's teacher make?"
    >>> without_name("欧拉的老师的儿子有什么贡献？", "莱昂哈德·欧拉")
    '的老师的儿子有什么贡献?'
    >>> without_name("Wer war der Lehrer von Walther von der Vogelweide?",
    ...              "Walther von der Vogelweide")
    'Wer war der Lehrer von von der ?'
    """
    units = name_units(name, function_words(text))
    runs = [unit for unit in units if is_unspaced(unit)]
    if runs:  # looked for in the form they were found in (case aside: a run may hold Latin)
        text = re.sub("|".join(re.escape(run) for run in sorted(runs, key=len, reverse=True)),
                      "", unicodedata.normalize("NFKC", text), flags=re.IGNORECASE)
    words = set(units)
    text = word_pattern(text).sub(lambda m: "" if fold(m.group()) in words else m.group(), text)
    return " ".join(text.split())


ENGLISH_MIN_SHARE = 0.12
"""The share of its words an English text holds of :data:`STOP_WORDS` at least (measured:
0.20 or more for 95% of the MuSiQue and HotpotQA passages of 20 words or more, 0.00 to 0.09
for the same paragraph in French, German, Indonesian, Italian and Polish; a text of an
unspaced script holds none)."""
ENGLISH_MIN_WORDS = 20
"""Texts with fewer words are not judged by :func:`reads_as_english`."""


def reads_as_english(text: str) -> bool | None:
    """Whether ``text`` reads as English prose, by the share of its words that are English
    function words (:data:`ENGLISH_MIN_SHARE`); ``None`` for a text of fewer than
    :data:`ENGLISH_MIN_WORDS` words (a title, a list), which cannot tell.

    >>> reads_as_english("Daniel Bernoulli was the son of Johann Bernoulli and made major "
    ...                  "contributions to fluid dynamics, in which the principle that bears "
    ...                  "his name is one of the most used in engineering.")
    True
    >>> reads_as_english("Daniel Bernoulli, figlio di Johann Bernoulli, diede importanti "
    ...                  "contributi alla fluidodinamica. La sua opera più nota è "
    ...                  "Hydrodynamica, pubblicata nel 1738, in cui descrive il principio.")
    False
    >>> reads_as_english("ダニエル・ベルヌーイはヨハン・ベルヌーイの息子で、流体力学に貢献した。")
    False
    >>> reads_as_english("Basel, Switzerland") is None
    True
    """
    words = words_of(fold(text))
    if len(words) < ENGLISH_MIN_WORDS and not is_unspaced(text):
        return None
    return sum(w in STOP_WORDS for w in words) >= ENGLISH_MIN_SHARE * max(len(words), 1)


_HAN_KANA = re.compile(f"[{_HAN_KANA_RANGES}]")
"""Han characters and kana: Chinese and Japanese, which Milvus's standard analyzer leaves
unsplit (a run between punctuation marks is one token)."""


def mostly_han_or_kana(text: str) -> bool:
    """Whether most letters of ``text`` are Han characters or kana (Chinese, Japanese).

    >>> mostly_han_or_kana("丹尼尔·伯努利研究流体力学。"), mostly_han_or_kana("Basel (バーゼル)")
    (True, False)
    """
    letters = sum(c.isalpha() for c in text)
    return letters > 0 and 2 * len(_HAN_KANA.findall(text)) > letters
