"""Pages two-hop questions chain through, read by the LLM-free extractor: who "he" and "his"
are when the recognizer does not label the person, spouses and in-laws, names after a
possessed noun, what a person is known for, games named by their year, a film's cast, verbs
the parse reads as modifiers, second spouses and attributes, baronets.

What an LLM extractor gets from each passage, checked sentence by sentence (spaCy's
en_core_web_sm), as in ``test_spacy_rules.py``.
"""

from __future__ import annotations

import pytest

from llama_index_graphrag_milvus import SpacyTripletExtractor
from tests.support.passages import extract

CO = "co-occurs with"


def test_a_topic_called_he_is_a_person_the_recognizer_did_not_label(
        extractor: SpacyTripletExtractor) -> None:
    """The recognizer labels neither Paulo Reis nor Frederick Hale a person; their pages call
    them "he" and "his" before naming anyone else, so a later "he" or "his" is theirs, not
    the last person named ("with whom he has two children": not Carla Dias's children;
    "His stepmother": not John Marsh's)."""
    triplets, _ = extract(
        extractor, "Paulo Reis is a Brazilian actor. He is married to actress Carla Dias, "
        "with whom he has two children.", title="Paulo Reis")
    assert ("Paulo Reis", "is married to", "Carla Dias") in triplets
    assert ("Paulo Reis", "have", "two children") in triplets
    assert not any(s == "Carla Dias" and p != CO for s, p, _ in triplets)
    triplets, _ = extract(
        extractor, "Frederick Hale was an English cricketer. His father-in-law was the "
        "politician John Marsh. His stepmother, Lady Anne Hale, was a noted hostess.",
        title="Frederick Hale")
    assert ("Frederick Hale", "stepmother", "Lady Anne Hale") in triplets
    assert not any(s == "John Marsh" and p != CO for s, p, _ in triplets)


@pytest.mark.parametrize(("title", "text"), [
    # "his" is Ace Young's, named before it
    ("Addicted (song)", "\"Addicted\" is Ace Young's second single, after his 2006 song "
     "\"Scattered\". It was produced by Desmond Child."),
    # "His" is in the title
    ("The Pale Horse and His Rider", "\"The Pale Horse and His Rider\" is a hymn written by "
     "Ervin Staggs. He wrote it in 1939 in Charleston."),
])
def test_a_work_is_not_made_a_person_by_someone_elses_pronoun(
        extractor: SpacyTripletExtractor, title: str, text: str) -> None:
    triplets, _ = extract(extractor, text, title=title)
    topic = "Addicted" if title.startswith("Addicted") else title.removeprefix("The ")
    assert not any(s == topic and "write" in p for s, p, _ in triplets)
    assert any(s == topic and p in ("was produced by", "written by") for s, p, _ in triplets)


@pytest.mark.parametrize(("sentence", "expected"), [
    ("He is married to actress Carla Dias.", ("Paulo Reis", "is married to", "Carla Dias")),
    ("He was engaged to model Lisa Grant.", ("Paulo Reis", "was engaged to", "Lisa Grant")),
    ("He and his wife, Carla Dias, live in Rio.", ("Paulo Reis", "wife", "Carla Dias")),
    ("His father-in-law was the politician John Marsh.",
     ("Paulo Reis", "father-in-law was the politician", "John Marsh")),
    ("He was editor-in-chief of The Times.", ("Paulo Reis", "was editor-in-chief of", "Times")),
])
def test_spouses_and_words_written_with_hyphens(
        extractor: SpacyTripletExtractor, sentence: str, expected: tuple[str, str, str]
        ) -> None:
    """"married to actress Carla Dias" is parsed as an infinitive ("to actress") with the
    name its object; "father-in-law" and "editor-in-chief" are one word, not "father ... in
    law"."""
    triplets, _ = extract(extractor, f"Paulo Reis is a Brazilian actor. {sentence}",
                       title="Paulo Reis")
    assert expected in triplets
    assert not any(o in ("law", "chief") for _, _, o in triplets)


def test_a_name_after_a_possessed_noun_and_a_comma_is_its_name(
        extractor: SpacyTripletExtractor) -> None:
    """"for her second studio album, Night Moves" names the album; a list of places after a
    comma does not name the first ("in Ratnagiri district, Konkan, ...")."""
    triplets, _ = extract(
        extractor, "\"Silver Rain\" is a song by Lisa Grant. It was recorded for her second "
        "studio album, Night Moves (1998).", title="Silver Rain (song)")
    assert ("Silver Rain", "was recorded for", "Night Moves") in triplets
    triplets, _ = extract(extractor, "Ratna is a village in Ratnagiri district, Konkan, "
                       "Maharashtra state, India.", title="Ratna")
    assert ("Ratna", "is a village in", "Ratnagiri district") in triplets
    assert not any(o == "Konkan" and "district" in p for _, p, o in triplets)


def test_a_wife_or_a_daughter_is_a_person_and_each_kin_noun_keeps_its_of(
        extractor: SpacyTripletExtractor) -> None:
    """"Mary Vane was the second wife of Thomas Vane. She ...": only a person is a wife, so
    "she" is Mary Vane, not the husband named before. "the father of the painter Lisa Rieger
    and the grandfather of the composer Paul Rieger": the parse hangs "grandfather" on Lisa
    Rieger's name; it is a second attribute, with its own "of"."""
    triplets, _ = extract(
        extractor, "Mary Vane was the second wife of Thomas Vane. She is the mother of the "
        "actor Henry Vane.", title="Mary Vane")
    assert ("Mary Vane", "is the mother of", "Henry Vane") in triplets
    assert not any(s == "Thomas Vane" for s, p, _ in triplets if p != CO)
    triplets, _ = extract(
        extractor, "Anton Rieger was an Austrian architect. He was the father of the painter "
        "Lisa Rieger and the grandfather of the composer Paul Rieger.", title="Anton Rieger")
    assert ("Anton Rieger", "was the father of", "Lisa Rieger") in triplets
    assert ("Anton Rieger", "was the grandfather of", "Paul Rieger") in triplets
    assert not any("father of the grandfather" in p for _, p, _ in triplets)


def test_what_a_person_is_known_for_and_the_games_by_their_year(
        extractor: SpacyTripletExtractor) -> None:
    """"known for playing X": the gerund's subject is the sentence's; "at the 1928 Summer
    Olympics" names those games (the recognizer takes "Summer Olympics" alone, which would
    link every games); an address's number is not a year."""
    triplets, _ = extract(
        extractor, "Ilse Steppat (30 November 1917 – 21 December 1969) was a German actress. "
        "She was known for playing Irma Bunt in a James Bond film. She competed at the 1928 "
        "Summer Olympics.", title="Ilse Steppat")
    assert ("Ilse Steppat", "play", "Irma Bunt") in triplets
    assert ("Ilse Steppat", "compete at", "1928 Summer Olympics") in triplets
    assert not any(o == "Summer Olympics" for _, _, o in triplets)
    triplets, _ = extract(extractor, "Wrigley Field is a stadium. It is located at 1060 West "
                       "Addison Street in Chicago.", title="Wrigley Field")
    assert not any(o.startswith("1060 West") for _, _, o in triplets)


def test_a_cast_the_parse_reads_as_an_apposition_is_a_list(
        extractor: SpacyTripletExtractor) -> None:
    """"The film stars A, B and C" is parsed as A with "B and C" an apposition: all three
    star; "born in Penshurst, Kent, eldest son of A and B" is not a list of places."""
    triplets, _ = extract(
        extractor, "Summer Love is a 1958 American comedy film directed by Charles Haas. The "
        "film stars John Saxon, Molly Bee and Rod McKuen.", title="Summer Love (1958 film)")
    assert {"John Saxon", "Molly Bee", "Rod McKuen"} <= {
        o for s, p, o in triplets if s == "Summer Love" and p == "star"}
    triplets, _ = extract(
        extractor, "Henry Stafford (18 September 1501 – 30 April 1563) was born in Penshurst, "
        "Kent, eldest son of Edward Stafford and Eleanor Percy.", title="Henry Stafford")
    assert not any(p.startswith("was born in") and o in ("Edward Stafford", "Eleanor Percy")
                   for _, p, o in triplets)


def test_names_joined_by_a_dash_and_the_film_of_a_film_noir(
        extractor: SpacyTripletExtractor) -> None:
    """"Laxmikant–Pyarelal" (a duo), "University of Wisconsin–Madison" are one name each; a
    "film noir" is called "the film"."""
    triplets, _ = extract(
        extractor, "The Quiet Road is a 1938 American film noir directed by Paul Sloane. The "
        "music was composed by Laxmikant–Pyarelal. The film was written by Ann Gray, who "
        "studied at the University of Wisconsin–Madison.", title="The Quiet Road")
    assert ("Quiet Road", "music was composed by", "Laxmikant–Pyarelal") in triplets
    assert ("Quiet Road", "was written by", "Ann Gray") in triplets
    assert ("Ann Gray", "study at", "University of Wisconsin–Madison") in triplets


def test_a_stage_name_is_the_persons_and_so_is_the_child_after_the_birthplace(
        extractor: SpacyTripletExtractor) -> None:
    """"Yusuf Khan, better known by his stage name Dilip Kumar, was ...": "Kumar was born in
    Peshawar" is Yusuf Khan's. "born in Linz, the son of a railway worker": the son is the
    person, not Linz."""
    triplets, _ = extract(
        extractor, "Yusuf Khan, better known by his stage name Dilip Kumar, was an Indian "
        "actor. Kumar was born in Peshawar, British India.", title="Yusuf Khan (actor)")
    assert ("Yusuf Khan", "also known as", "Dilip Kumar") in triplets
    assert ("Yusuf Khan", "was born in", "Peshawar") in triplets
    triplets, _ = extract(
        extractor, "Karl Weber (1890 – 1955) was an Austrian conductor. Weber was born in "
        "Linz, the son of the painter Franz Weber.", title="Karl Weber (conductor)")
    assert any(s == "Karl Weber" and p.endswith("son of") and o == "Franz Weber"
               for s, p, o in triplets)
    assert not any(s == "Linz" for s, p, _ in triplets if p != CO)


def test_the_object_of_a_relative_clause_is_the_noun_it_describes(
        extractor: SpacyTripletExtractor) -> None:
    """"the architect Max Berg, whom she married in 1925": she married Max Berg; "the film
    Red Sky, which he also wrote": he wrote Red Sky."""
    triplets, _ = extract(
        extractor, "Rosa Berg (1899–1980) was a German painter. Her husband was the architect "
        "Max Berg, whom she married in 1925. She designed the house Villa Rot, which she "
        "also built.", title="Rosa Berg")
    assert ("Rosa Berg", "marry", "Max Berg") in triplets
    assert ("Rosa Berg", "build", "Villa Rot") in triplets


def test_a_longer_name_the_page_opens_with_and_where_a_person_is_buried(
        extractor: SpacyTripletExtractor) -> None:
    """The page "Abd al-Aziz" opens with "Abd al-Aziz ibn Musa was ...": the longer name is
    the topic, so its facts are the page's. "died in Brighton, where she is buried": buried
    in Brighton; "a team where" is not a place."""
    triplets, _ = extract(
        extractor, "Abd al-Aziz ibn Musa was the first governor of al-Andalus. He was the son "
        "of Musa ibn Nusayr.", title="Abd al-Aziz")
    assert ("Abd al-Aziz", "was the first governor of", "al-Andalus") in triplets
    triplets, _ = extract(
        extractor, "Sophie Ellis was an English singer. She died in 1950 in Brighton, where "
        "she is buried. She sang in a choir, where she met her husband.", title="Sophie Ellis")
    assert ("Sophie Ellis", "is buried in", "Brighton") in triplets
    assert not any(p == "meet in" for _, p, _ in triplets)


@pytest.mark.parametrize(("title", "text", "expected", "wrong_subject"), [
    # parsed as one noun phrase: "married" modifying "actress", "Khan" modifying "Noor"
    ("Rashid Khan (actor)", "Rashid Khan (1922–1998) was an Indian film actor. Khan married "
     "actress Begum Noor in 1958. He died in Mumbai.",
     [("Rashid Khan", "marry", "Begum Noor")], "Khan"),
    # "stars" read as a modifier of "Carla Neri", coordinated with "directed"
    ("Red Orchard", "Red Orchard is a 1961 Italian drama film. It was directed by Paolo "
     "Venti and stars Carla Neri and Bruno Sala.",
     [("Red Orchard", "star", "Carla Neri"), ("Red Orchard", "star", "Bruno Sala")],
     "Paolo Venti"),
    # "the Hindi films Amar Deep and Rakhi": a plural tagged a verb in the present
    ("Puthiya Paravai", "Puthiya Paravai is the third production of Sivaji Films after the "
     "Hindi films Amar Deep (1958) and Rakhi (1962).", [], "Hindi"),
    # the second "to" is coordinated with the first
    ("Hugo Stern", "Hugo Stern (1850–1919) was a German banker. He married twice, first to "
     "Clara Weiss and then to Ida Roth.",
     [("Hugo Stern", "marry to", "Clara Weiss"), ("Hugo Stern", "marry to", "Ida Roth")],
     "Clara Weiss"),
    # "the wife" is coordinated with the copula, not with "the daughter"
    ("Marguerite of Vaudémont", "Marguerite of Vaudémont (1463–1521) was a French "
     "noblewoman. She was the daughter of Frederick II of Vaudémont and Yolande of Anjou, and "
     "the wife of René II, Duke of Lorraine.",
     [("Marguerite of Vaudémont", "was the daughter of", "Yolande of Anjou"),
      ("Marguerite of Vaudémont", "was the wife of", "René II, Duke of Lorraine")],
     "Yolande of Anjou"),
    # "with whom": the soprano's name, not "soprano"
    ("Otto Brenner", "Otto Brenner (1880–1944) was an Austrian conductor. In 1910 he married "
     "the soprano Maria Held, with whom he had two sons.",
     [("Otto Brenner", "marry the soprano", "Maria Held"),
      ("Otto Brenner", "have with", "Maria Held")], "soprano"),
    # a baronet's name ends with the ordinal and "Baronet", no place after it
    ("Edward Tallis", "Sir Edward Tallis, 2nd Baronet (1650–1712) was an English politician. "
     "He was the eldest son of Sir John Tallis, 1st Baronet, and succeeded his father in 1680.",
     [("Sir Edward Tallis, 2nd Baronet", "was the eldest son of",
       "Sir John Tallis, 1st Baronet")], "1st Baronet"),
    # "produced" and "written" are hung on Harold Byrne by the parse
    ("The Tin Crown", "The Tin Crown is a 1926 American silent comedy film directed by Harold "
     "Byrne, produced by Sam Wirth and written by Ellen Cray.",
     [("Tin Crown", "produced by", "Sam Wirth"), ("Tin Crown", "written by", "Ellen Cray")],
     "Harold Byrne"),
    # "single" is tagged an adjective
    ("Borrowed Time (song)", "\"Borrowed Time\" is the debut single by American rapper Kid "
     "Orion, featuring vocals from Dana Rue.",
     [("Borrowed Time", "is the debut single by", "Kid Orion")], "Kid Orion"),
    # "an English stage actor": his page, so the "he" after his parents' names is his, and
    # "Grieve's father" (a name the recognizer did not label, before "'s") is his father
    ("Walter Grieve", "Walter Grieve was an English stage actor. Born to Thomas Grieve and "
     "Mary Ashdown, he grew up in Leeds. Grieve's father was the painter Thomas Grieve.",
     [("Walter Grieve", "grow up in", "Leeds"),
      ("Walter Grieve", "father was the painter", "Thomas Grieve")], "Mary Ashdown"),
    # "They" who have children on a person's page are the person (as "Their son")
    ("Elsa Brandt", "Elsa Brandt was a German painter. In 1921 she married Franz Kolb, a "
     "lawyer. They had three children, including the sculptor Lena Kolb.",
     [("Elsa Brandt", "have child including", "Lena Kolb")], "Franz Kolb"),
    # the parse hangs "mother" on Arthur Keller; she is the mother
    ("Ruth Keller", "Ruth Keller (1890–1970) was an American novelist, the wife of the "
     "painter Arthur Keller and mother of the actress June Keller.",
     [("Ruth Keller", "the wife of", "Arthur Keller"),
      ("Ruth Keller", "mother of", "June Keller")], "Arthur Keller"),
    # a relative of the page's person named by apposition in an object
    ("Carla Monti", "Carla Monti was an Italian actress, best known for her roles in films "
     "directed by her husband, Aldo Fermi.",
     [("Carla Monti", "husband", "Aldo Fermi")], "Aldo Fermi"),
], ids=["married-read-as-a-modifier", "stars-read-as-a-modifier", "plural-tagged-a-verb",
        "second-to", "second-attribute", "with-whom", "baronet", "credits-hung-on-a-name",
        "noun-tagged-an-adjective", "trade-of-a-person", "they-with-children",
        "second-description", "relative-in-an-object"])
def test_what_the_parse_misreads_on_credits_spouses_and_persons_pages(
        extractor: SpacyTripletExtractor, title: str, text: str,
        expected: list[tuple[str, str, str]], wrong_subject: str) -> None:
    """Each expected fact is read, and the name the parse misleads toward is the subject of
    none (but co-occurrences)."""
    triplets, _ = extract(extractor, text, title=title)
    assert [t for t in expected if t not in triplets] == []
    assert not any(s == wrong_subject and p != CO for s, p, _ in triplets)


@pytest.mark.parametrize(("title", "text", "alias"), [
    ("Nick Hexum", 'Nicholas Lofton "Nick" Hexum (born April 12, 1970) is an American singer, '
     "songwriter and rapper. He was born in Madison.", "Nicholas Lofton Nick Hexum"),
    ("Sergio Agüero", 'Sergio Leonel "Kun" Agüero (born 2 June 1988) is an Argentine '
     "professional footballer. He was born in Madison.", "Sergio Leonel Kun Agüero"),
    ("Paul Keating", "Paul John Keating (born 18 January 1944) is an Australian former "
     "politician. He was born in Madison.", "Paul John Keating"),
])
def test_a_page_that_opens_with_the_full_name_its_title_shortens(
        extractor: SpacyTripletExtractor, title: str, text: str, alias: str) -> None:
    """The text never writes the title whole: the full name it opens with, which holds the
    title's words in order and ends with its last, is the topic, and another of its names."""
    triplets, _ = extract(extractor, text, title=title)
    assert (title, "was born in", "Madison") in triplets
    assert (title, "also known as", alias) in triplets


def test_a_generation_after_the_full_name_and_the_dates_after_it(
        extractor: SpacyTripletExtractor) -> None:
    """"George William Wilson, Sr. (February 3, 1914 – November 23, 1978)": the dates make
    him a person, so the later "He" is his, not the last team named."""
    triplets, _ = extract(
        extractor, "George William Wilson, Sr. (February 3, 1914 – November 23, 1978) was a "
        "coach for the Miami Dolphins. He went undrafted in 1937, before being signed by the "
        "Chicago Bears.", title="George Wilson (American football coach)")
    assert ("George Wilson", "go undrafted in", "1937") in triplets
    assert not any(s == "Miami Dolphins" and p != CO for s, p, _ in triplets)


def test_a_title_with_short_lowercase_words_opening_the_text_is_its_subject(
        extractor: SpacyTripletExtractor) -> None:
    """"Walking on Glass is the second novel by Iain Banks": the parse reads "Walking" as a
    clause; a title-cased run opening the text is the copula's subject."""
    triplets, _ = extract(
        extractor, "Walking on Glass is the second novel by Scottish writer Iain Banks, "
        "published in 1985.", title="Walking on Glass")
    assert ("Walking on Glass", "is the second novel by", "Iain Banks") in triplets
