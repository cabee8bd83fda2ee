"""Person names.

* Russian: natasha's NER (its wheel ships the model; nothing is downloaded) as a Presidio recognizer, plus
  a gazetteer of Russian first names, patronymics and surnames (Faker ru_RU lists, case endings stripped)
  and pymorphy3's dictionary beyond the lists (ru_morph.py: names in any case form, in capitals, in lower
  case after a cue or before a surname; verbs, cities after a place preposition and car models are none).
* Turkish and English: no NER model can be installed offline, so a gazetteer (Faker tr_TR/en_US/de_DE/fr_FR/
  it_IT/es_ES first and last names, pipeline/resources/pii/names.json) with context rules: a known first name
  followed by capitalized words, a title before (Sayın, Mr., Dr., г-н) or after (Bey, Hanım), an introduction
  (my name is, adım, меня зовут, I spoke with) or a phrase after (adına, ile görüştüm) that also makes words
  outside the list a name, as do a job word in lower case (kurye, agent), a signature line under a closing
  formula ("Saygılarımla,"), a "From:" header line and a surname ending on the last of two or three
  capitalized words (Məmmədov, Hacıoğlu); a known first name in lower case right after an introduction ("ben
  murat"). Names outside the list without such a phrase, written in lower case without an introduction, or
  alone without context are missed: the KVKK summary states this residual risk.
"""
from __future__ import annotations

import re
import threading
from collections import OrderedDict
from functools import lru_cache

from presidio_analyzer import LocalRecognizer

from pipeline.data.pii import ru_morph
from pipeline.data.pii.caps import cued_caps_name
from pipeline.data.pii.later import drop_sentence_opener
from pipeline.data.pii.lone_name import lone_names
from pipeline.data.pii.lower_cue import ends_value, labelled_second_word, pair_before_verb
from pipeline.data.pii.name_context import (
    CONTEXT_WORDS,
    CUES_AFTER,
    PHRASES_STRONG,
    ROLES,
    THING_BEFORE,
    TITLES,
    TITLES_AFTER,
    VERBS_AFTER,
    Token,
    adjacent_words,
    after_title,
    context_before,
    cue_after,
    norm_phrase,
    phrase_before,
    role_before,
    sentence_initial,
    signoff_above,
    strong_before,
    title_after,
    verb_after,
    word_before_in,
)
from pipeline.data.pii.name_signals import Rarity
from pipeline.data.pii.ner import entity_spans
from pipeline.data.pii.text import NON_WORD, ContextWords, Hit, TextContext, fold, load_data, to_results
from pipeline.data.pii.tr_suffix import suffixed_names

# A name found by rarity alone (no list, no context): under the 0.7 a title-cased file name needs
# (readers.names), where every word is capitalized and capitalization says nothing ("Img Src")
RARE_ONLY_SCORE = 0.65
_NAMES = load_data("names.json")
# names-dataset first names and surnames (the allowed half, bench/pii/build_name_extension.py), folded: a name
# word only beside another name-like word, never alone
_NAMES_EXT = load_data("names_ext.json")

LATIN_FIRST = frozenset(fold(n) for n in _NAMES["latin_first"])
LATIN_LAST = frozenset(fold(n) for n in _NAMES["latin_last"])
LATIN_AMBIGUOUS = frozenset(fold(n) for n in _NAMES["latin_ambiguous"])
TURKISH_WORDS = frozenset(fold(n) for n in _NAMES["latin_ambiguous_tr"])  # ambiguous in Turkish text only
LISTED_EXT = frozenset(_NAMES_EXT["latin_first"] + _NAMES_EXT["latin_last"]) - LATIN_FIRST - LATIN_LAST \
    - LATIN_AMBIGUOUS - TURKISH_WORDS
PLACE_BEFORE = frozenset(fold(w) for w in CONTEXT_WORDS["name_place_before"])
NEVER = frozenset(fold(w) for w in CONTEXT_WORDS["name_never"])  # never in a name, but may follow one
# a place word that is also a surname ("West") is no stop word: "Steve West" is a name, "West Virginia" a place
STOP = frozenset(fold(w) for w in CONTEXT_WORDS["name_stop"] + CONTEXT_WORDS["name_titles_before"] + CONTEXT_WORDS["name_titles_after"]) \
    | (PLACE_BEFORE - LATIN_LAST - LATIN_FIRST) | NEVER
OFFICES = frozenset(fold(w) for w in CONTEXT_WORDS["name_offices"])
STOP_SURNAMES = (STOP - NEVER - TITLES_AFTER) & LATIN_LAST  # Park, Day, Church: end a name unless context says
OFFICE_NOT_NAME = OFFICES - LATIN_FIRST - LATIN_LAST  # "President", not "Pope" or "King" (surnames too)

# a trophy, institution or team named after a person or place: the words before it are no person
PROPER_NOUN_AFTER = frozenset(fold(w) for w in CONTEXT_WORDS["name_proper_noun_after"])
STOP = STOP | PROPER_NOUN_AFTER
# an article right before two or more capitalized words makes them a title or an organisation ("The Selfish
# Gene", "the Rolling Stones"); one word after it may still be a family ("the Smiths")
_ARTICLES = frozenset(("the", "a", "an"))
_INDEFINITE = frozenset(("a", "an"))






SURNAME_ENDINGS = tuple(fold(w) for w in CONTEXT_WORDS["name_surname_endings"])

# firms and brands named after a person, by their first word's key
_BRANDS: dict[str, list[tuple[str, ...]]] = {}
for _b in CONTEXT_WORDS["name_brands"]:
    _k = tuple(fold(w) for w in _b.split())
    _BRANDS.setdefault(_k[0], []).append(_k)

LATIN_UPPER = "A-ZÇĞİÖŞÜÂÊÎÔÛÉÈÁÍÓÚÑƏÄËÏÀÌÒÙÃÕÅØÆŒ"
LATIN_LOWER = "a-zçğıöşüâêîôûéèáíóúñäëəïàìòùãõåøæœß"
# A capitalized word not inside another word ("McDonald" is one token, "aBc" none) and its apostrophe
# suffix ("Ahmet'in", "O'Brien'in"). The pattern starts with a plain character class so that the regex
# engine skips to capitals; the word-start look-behind runs after that first character, only there.
_LATIN_TOKEN = re.compile(
    rf"([{LATIN_UPPER}](?<![\w'’].)(?:(?<=O)['’][{LATIN_UPPER}][{LATIN_LOWER}]+(?:[{LATIN_UPPER}][{LATIN_LOWER}]+)?"
    rf"(?:-[{LATIN_UPPER}][{LATIN_LOWER}]+)?|[{LATIN_LOWER}]+(?:[{LATIN_UPPER}][{LATIN_LOWER}]+)?(?:-[{LATIN_UPPER}][{LATIN_LOWER}]+)?"
    rf"|[{LATIN_UPPER}]+))(?!\w)((?:['’][{LATIN_LOWER}]+)?)")
# an apostrophe inside: Ukrainian names in Russian text ("Демʼянюк", "Мар'яна"; U+02BC is a word character)
_CYR_TOKEN = re.compile(r"([А-ЯЁ](?<![\w'’].)(?:[а-яё]+(?:[ʼ'’][а-яё]+)?(?:-[А-ЯЁ][а-яё]+)?|[А-ЯЁ]+))(?!\w)()")
_LATIN_CAPITAL = re.compile(rf"[{LATIN_UPPER}]")
















_new_tok = tuple.__new__  # a Token without NamedTuple's Python-level __new__ (tens of thousands per batch)


def _tokens(ctx: TextContext, regex, cache_key: str) -> list[Token]:
    """The tokens of `regex` in the text, computed once per text. A token's key is its slice of the folded
    text: fold keeps the length and maps each letter on its own, so the slice is fold(word)."""
    try:
        return ctx.extra[cache_key]
    except KeyError:
        pass
    text, norm = ctx.text, ctx.norm
    toks = ctx.extra[cache_key] = []
    for m in regex.finditer(text):
        s, e = m.span(1)
        toks.append(_new_tok(Token, (s, e, m.end(), text[s:e], norm[s:e])))
    return toks






def _acronym(tok: Token) -> bool:
    """US, UK, ANN, CEO: short all-capital words are abbreviations, not names."""
    return len(tok.word) <= 3 and tok.word.isupper()


def _after_article(text: str, start: int, articles: frozenset = _ARTICLES) -> bool:
    """An article (the, The, a, an; or one of `articles`) and one space right before `start`."""
    if start < 2 or text[start - 1] != " ":
        return False
    k = start - 1
    j = k
    while j > 0 and text[j - 1].isalpha():
        j -= 1
    return text[j:k].lower() in articles and (j == 0 or not text[j - 1].isalnum())


def _after_place_word(text: str, toks: list, i: int) -> bool:
    """toks[i] follows San, St., Fort ...: "San Francisco", "St. Peter's" are places."""
    if i == 0 or toks[i - 1].key not in PLACE_BEFORE:
        return False
    return text[toks[i - 1].full_end:toks[i].start] in (" ", ". ", "\u00a0")








def _brand_end(text: str, toks: list, i: int) -> int:
    """The index of the last token of a brand or firm named after a person that starts at toks[i] ("Tommy
    Hilfiger", "Procter & Gamble"), or i - 1 when none starts there."""
    for brand in _BRANDS.get(toks[i].key, ()):
        j = i
        for key in brand[1:]:
            if j + 1 >= len(toks) or toks[j + 1].key != key or toks[j + 1].start - toks[j].full_end > 3:
                break
            j += 1
        else:
            return j
    return i - 1


def _surname_shaped_run(text: str, toks: list, i: int) -> bool:
    """toks[i] starts two or three adjacent capitalized words whose last has a surname ending of six letters
    or more ("Anar Məmmədov", "Elif Hacıoğlu"): a name even outside the lists."""
    nxt = toks[i + 1] if i + 1 < len(toks) else None
    if nxt is None or not (nxt.key.endswith(SURNAME_ENDINGS)
                           or i + 2 < len(toks) and toks[i + 2].key.endswith(SURNAME_ENDINGS)):
        return False  # the cheap test first: most capitalized words are followed by no such word
    j = _run_end(text, toks, i)
    last = toks[j].key
    if j - i == 2 and sentence_initial(text, toks[i].start):
        return False  # "Dün Tural Əliyev ...": a name takes the two words, from the next token on
    return 1 <= j - i <= 2 and len(last) >= 6 and last.endswith(SURNAME_ENDINGS)


def _run_end(text: str, toks: list, i: int) -> int:
    """The last of up to four adjacent capitalized words from toks[i] on, stopping before a name_stop word,
    an office word that is no name ("German President Richard": a name starts after the office; "John Pope"
    and "Martin Luther King" keep theirs) or an acronym."""
    j = i
    while j + 1 < len(toks) and j - i < 3 and adjacent_words(text, toks[j], toks[j + 1]) and toks[j + 1].key not in STOP \
            and toks[j + 1].key not in OFFICE_NOT_NAME and not _acronym(toks[j + 1]):
        j += 1
    return j


class PersonRecognizer(LocalRecognizer):
    """Base of the PERSON recognizers: subclasses implement find(ctx) -> list[Hit] (the fast path calls it
    with a shared TextContext); Presidio's analyze builds a context of its own."""

    ENTITY = "PERSON"
    DEFAULT_LANGUAGE = "en"

    def __init__(self, language: str | None = None):
        super().__init__(supported_entities=["PERSON"], name=type(self).__name__,
                         supported_language=language or self.DEFAULT_LANGUAGE)

    def load(self):
        pass  # the gazetteers are module data; natasha's model loads on first use (ner.entity_spans)

    def find(self, ctx: TextContext) -> list[Hit]:
        raise NotImplementedError

    def analyze(self, text, entities, nlp_artifacts=None):
        if not text.strip():
            return []
        return to_results(self, self.find(TextContext(text, self.supported_language)))


class LatinNameRecognizer(PersonRecognizer):
    """PERSON in Turkish and English text from the Latin gazetteer and context rules."""

    def __init__(self, language: str | None = None):
        super().__init__(language)
        # first names that are everyday words of this language ("Evde", "Özel" in Turkish)
        self.common_words = TURKISH_WORDS if self.supported_language == "tr" else frozenset()
        self.ambiguous = LATIN_AMBIGUOUS | self.common_words
        self.rarity = Rarity(self.supported_language if self.supported_language in ("tr", "en") else "en")

    def triggered(self, ctx: TextContext) -> bool:
        return _LATIN_CAPITAL.search(ctx.text) is not None or not ctx.words.isdisjoint(_LOWER_FIRST) \
            or not ctx.words.isdisjoint(_LOWER_INTRO_WORDS)

    def find(self, ctx: TextContext) -> list[Hit]:
        """Each capitalized token in turn: no name starts there (_starts_no_name), or the name that starts
        there is skipped as part of a place or proper noun or becomes a hit (_name_from); the scan goes on
        after what was decided."""
        toks = _tokens(ctx, _LATIN_TOKEN, "latin_tokens")
        out: list[Hit] = []
        surnames = any(tk.key.endswith(SURNAME_ENDINGS) for tk in toks)  # a word with a surname ending at all?
        i = 0
        while i < len(toks):
            titled = after_title(ctx.text, toks, i)
            if len(toks[i].word) >= 3 and toks[i].word.isupper():
                at = i
                i, hit = self._caps_name_from(ctx, toks, at, titled)
                if hit is None:
                    nxt, hit = cued_caps_name(ctx, toks, at, self.rarity, self._caps_cued_word)
                    i = max(i, nxt)
            elif self._starts_no_name(ctx, toks, i, titled, surnames):
                i += 1
                continue
            else:
                i, hit = self._name_from(ctx, toks, i, titled, out)
            if hit is not None:
                out.append(hit)
        if "'" in ctx.text or "’" in ctx.text:
            out += suffixed_names(ctx, toks, self.rarity, out, self._never_a_name)
        out += lone_names(ctx, toks, out, self._never_a_name, self.supported_language == "tr")
        turkish = self.supported_language == "tr"
        out = [drop_sentence_opener(ctx.text, h, self._listed_word, self.rarity.everyday, turkish,
                                    lambda start: signoff_above(ctx.norm, start)) for h in out]
        if not ctx.words.isdisjoint(_LOWER_FIRST) or not ctx.words.isdisjoint(_LOWER_INTRO_WORDS):
            lower = _lower_case_names(ctx, self.rarity, self.ambiguous)
            out += [h for h in lower if not any(o.start < h.end and h.start < o.end for o in out)]
        return out

    def _never_a_name(self, key: str) -> bool:
        """A stop word, title, office, firm, cue word or a first name that is also a word."""
        return key in STOP or key in NEVER or key in TITLES or key in OFFICES or key in PLACE_BEFORE \
            or key in _BRANDS or key in _CUE_WORDS or key in self.ambiguous

    def _listed_word(self, key: str) -> bool:
        """A name of the gazetteer, or of its names-dataset extension that is rare as a word ("Günaydın" is a
        greeting first)."""
        return key in LATIN_FIRST or key in LATIN_LAST or (key in LISTED_EXT and self.rarity.rare(key))

    def _caps_cued_word(self, key: str) -> bool:
        """In capitals next to a cue: a listed name, an ambiguous one too ("DENİZ ÇELİK"), or no everyday word;
        no stop, cue, title or office word."""
        if key in STOP or key in NEVER or key in _CUE_WORDS or key in TITLES or key in OFFICES or key in _BRANDS:
            return False
        return key in LATIN_FIRST or key in LATIN_LAST or key in LISTED_EXT or not self.rarity.everyday(key)

    def _namelike(self, tok: Token) -> bool:
        """A listed name (the gazetteer or its names-dataset extension), or a word rare as an ordinary word and
        written as a name is ("Nizam", "NIZAM"; not "LanguageMost", two words glued)."""
        key = tok.key
        if key in LATIN_FIRST:
            return True
        # a surname that is also an everyday word says nothing ("English", "House")
        return (self.rarity.rare(key) and (tok.word[1:].islower() or tok.word.isupper())) \
            or ((key in LATIN_LAST or key in LISTED_EXT) and not self.rarity.everyday(key))

    def _run_of(self, ctx: TextContext, toks: list, i: int, caps: bool) -> int:
        """The end (exclusive) of the run of up to three adjacent name-like words from toks[i] on (in capitals
        when `caps`), no stop word or acronym among them. In capitals, a word that is no everyday word may join
        ("MÜJDAT": a name the corpus holds often)."""
        text = ctx.text
        j = i
        while j < len(toks) and j - i < 3 and (j == i or adjacent_words(text, toks[j - 1], toks[j])):
            tk = toks[j]
            if tk.key in STOP or len(tk.key) < 2 or tk.word.isupper() != caps or (not caps and _acronym(tk)) \
                    or tk.key in _CUE_WORDS:
                break
            if not (self._caps_name_word(tk.key) or (j > i and self._caps_first_name(toks[i].key)
                                                     and not self._everyday_unlisted(tk.key))
                    if caps else self._namelike(tk)):
                break
            j += 1
        return j

    def _caps_name_word(self, key: str) -> bool:
        """In capitals: a listed name that is no word of the lists of ambiguous ones ("SMITH", "JOHN"), or a word
        that is no everyday word ("MÜJDAT": a name the corpus holds often)."""
        if key in self.ambiguous:
            return False
        return key in LATIN_FIRST or key in LATIN_LAST or key in LISTED_EXT or not self.rarity.everyday(key)

    def _everyday_unlisted(self, key: str) -> bool:
        """An everyday word that is no listed name: it does not follow a first name in capitals ("MEHMET ÇELİK
        OLARAK KAYITLI": "ÇELİK" is a listed surname, "OLARAK" none)."""
        return self.rarity.everyday(key) and key not in LATIN_LAST and key not in LATIN_FIRST \
            and key not in LISTED_EXT

    def _caps_first_name(self, key: str) -> bool:
        """A listed first name that is no word: any capitalized word after it in the run is its surname
        ("MEHMET ÇELİK")."""
        return key in LATIN_FIRST and key not in self.ambiguous

    def _caps_name_from(self, ctx: TextContext, toks: list, i: int, titled: bool) -> tuple[int, Hit | None]:
        """A name in capitals ("ADA LOVELACE REQUESTED A REFUND"): the whole run of adjacent capitalized words
        from toks[i] on that may be a name's, not the surname alone. Two or more words: with a listed name
        among them, or in a line written all in capitals (a shouted line, not an acronym in prose: "ASCII
        HTML"). One word alone: after a title or an introduction, or a listed first name that is no word."""
        text = ctx.text
        j = self._run_of(ctx, toks, i, True)
        if j == i and toks[i].key in LATIN_FIRST and toks[i].key not in _CUE_WORDS and i + 1 < len(toks) \
                and adjacent_words(text, toks[i], toks[i + 1]) and toks[i + 1].word.isupper():
            j = self._run_of(ctx, toks, i + 1, True)  # "ADA LOVELACE": a first name that is also a word, a surname
            j = i if j == i + 1 else j
        if j == i:
            return i + 1, None
        first = toks[i]
        brand = _brand_end(text, toks, i)
        if brand > i:
            return brand + 1, None
        listed = any((tk.key in LATIN_FIRST or tk.key in LATIN_LAST or tk.key in LISTED_EXT)
                     and tk.key not in self.ambiguous for tk in toks[i:j])
        context = titled or context_before(ctx, first.start) or verb_after(ctx, toks[j - 1])
        if j - i >= 2:
            if (listed or any(self._namelike(tk) for tk in toks[i:j])) \
                    and (listed or context or _shouted(text, first.start, toks[j - 1].end)):
                score = 0.85 if listed or context else RARE_ONLY_SCORE
                return j, Hit(first.start, toks[j - 1].end, "PERSON", score, "gazetteer")
            return j, None  # not a surname alone either
        if titled or strong_before(ctx, first.start) or title_after(text, toks, i) \
                or (first.key in LATIN_FIRST and first.key not in self.ambiguous and self.rarity.rare(first.key)):
            return i + 1, Hit(first.start, first.end, "PERSON", 0.6, "gazetteer")
        return i + 1, None

    def _rare_run(self, ctx: TextContext, toks: list, i: int) -> bool:
        """toks[i] starts two or three adjacent name-like words (_namelike) with no other capitalized word glued
        before or after (a longer proper noun): "Aodhan Nizam wrote in", "Hulusi Işıldar kullanıyor". Without
        a listed word among them, not after a place preposition or an article ("in Kuala Lumpur", "the
        Hittite Apaliunas"); one word alone only before a calling verb ("Siddik called yesterday")."""
        text = ctx.text
        t = toks[i]
        if len(t.key) < 3 or t.word.isupper():
            return False
        initial = sentence_initial(text, t.start)
        if i > 0 and adjacent_words(text, toks[i - 1], t) and not sentence_initial(text, toks[i - 1].start) \
                and toks[i - 1].key not in TITLES:
            return False
        if self._namelike(t):
            j = self._run_of(ctx, toks, i, False) - 1
        elif not initial and not self.rarity.everyday(t.key) and t.word[1:].islower():
            # capitalized mid-sentence, a name the corpus holds often ("Hulusi"), before a name-like word
            j = self._run_of(ctx, toks, i + 1, False) - 1 if i + 1 < len(toks) and adjacent_words(text, t, toks[i + 1]) \
                else i
        else:
            return False
        if j + 1 < len(toks) and adjacent_words(text, toks[j], toks[j + 1]) and toks[j + 1].key not in TITLES_AFTER \
                and toks[j + 1].key not in NEVER:
            return False  # "Kuala Lumpur Airport": part of a longer proper noun
        verb = verb_after(ctx, toks[j])
        if j == i:
            return verb and self._namelike(t)
        if initial and not (t.key in LATIN_FIRST or t.key in LATIN_LAST or t.key in LISTED_EXT) \
                and self._inflected(t.key):
            return verb  # "Siparişinizi Trendyol üzerinden": an inflected everyday word starts the sentence
        listed = any((tk.key in LATIN_FIRST or tk.key in LATIN_LAST or tk.key in LISTED_EXT)
                     and self.rarity.rare(tk.key)
                     for tk in toks[i:j + 1])
        return listed or verb or not word_before_in(text, t.start, THING_BEFORE)

    def _inflected(self, key: str) -> bool:
        """A word rare as such whose stem (less up to five letters of suffixes) is a common word: a Turkish
        inflected form ("siparişinizi"), an English derived one ("prescribing")."""
        common = self.rarity.common
        return any(key[:k] in common or key[:k] + "e" in common for k in range(max(4, len(key) - 5), len(key)))


    def _starts_no_name(self, ctx: TextContext, toks: list, i: int, titled: bool, surnames: bool) -> bool:
        """toks[i] is a stop word, an acronym, a word before a full name, or a word outside the list with no
        title, introduction, surname shape or cue after it that makes it a name."""
        text = ctx.text
        t = toks[i]
        key = t.key
        if key in STOP or len(key) < 2 or _acronym(t):
            return True
        n = len(toks)
        if key in self.common_words and i + 2 < n and toks[i + 1].key in LATIN_FIRST \
                and toks[i + 1].key not in self.ambiguous and adjacent_words(text, toks[i + 1], toks[i + 2]) \
                and (toks[i + 2].key in LATIN_FIRST or toks[i + 2].key in LATIN_LAST) \
                and sentence_initial(text, t.start):
            return True  # "Eşim Elif Yıldız ...": a word at the start of the sentence, then a full name
        if key in LATIN_FIRST or titled or (surnames and _surname_shaped_run(text, toks, i)) \
                or phrase_before(ctx, t.start, PHRASES_STRONG) or role_before(ctx, t.start):
            return False  # (strong_before, inlined: once per capitalized word)
        if title_after(text, toks, i) and (key in self.ambiguous or self._namelike(t)):
            return False  # "Işık Hanım tekrar aradı": a name word before Bey / Hanım, also at a sentence start
        return not _unlisted_name_cued(ctx, toks, i) and not self._rare_run(ctx, toks, i)

    def _name_from(self, ctx: TextContext, toks: list, i: int, titled: bool, out: list) -> tuple[int, Hit | None]:
        """The token to go on from, and the name starting at (or one word before) toks[i], unless its words
        are part of another proper noun: "Deniz Bank", "San Francisco", "Vince Lombardi Trophy", "The Selfish
        Gene"."""
        text = ctx.text
        t = toks[i]
        n = len(toks)
        brand = _brand_end(text, toks, i)
        if brand > i or (brand == i and t.key in _BRANDS and (i + 1 == n or not adjacent_words(text, t, toks[i + 1]))):
            return brand + 1, None  # "Tommy Hilfiger", "Morgan Stanley": a firm named after a person
        # a surname that is also a place or company word ("Park", "Day", "Church") after a title or an
        # introduction: "Dear Patricia Park", "this is Katherine Day"
        stop_surname = i + 1 < n and toks[i + 1].key in STOP_SURNAMES and adjacent_words(text, t, toks[i + 1]) \
            and (titled or context_before(ctx, t.start))
        if i + 1 < n and toks[i + 1].key in STOP and toks[i + 1].key not in TITLES_AFTER \
                and toks[i + 1].key not in NEVER and adjacent_words(text, t, toks[i + 1]) and not stop_surname:
            return i + 2, None  # "Ramazan Bayramı", "Deniz Bank": a name word inside another proper noun
        j = i + 1 if stop_surname else _run_end(text, toks, i)
        if _after_place_word(text, toks, i):
            return j + 1, None
        if not titled and j + 1 < n and toks[j + 1].key in PROPER_NOUN_AFTER and adjacent_words(text, toks[j], toks[j + 1]):
            return j + 2, None  # "Vince Lombardi Trophy", "Orlando Magic": named after a person or place
        s = _name_start(text, toks, i, out)
        if (j > i or s < t.start) and not titled and _after_article(text, s):
            return j + 1, None  # "The Selfish Gene", "the Tampa Bay Lightning": a title or an organisation
        if j == i and s == t.start and not titled and _after_article(text, s, _INDEFINITE):
            return j + 1, None  # "an Oscar statuette", "a Ford": one person is not "a John"
        return j + 1, Hit(s, toks[j].end, "PERSON", self._score(ctx, toks, i, j, s, titled), "gazetteer")

    def _score(self, ctx: TextContext, toks: list, i: int, j: int, s: int, titled: bool) -> float:
        """A name of toks[i..j] (from s): surer with context around it, with more words, with a listed first
        name; a lone ambiguous word ("Rose") or a capital at a sentence start says little."""
        text = ctx.text
        key = toks[i].key
        is_first = key in LATIN_FIRST
        context = titled or context_before(ctx, s) or title_after(text, toks, j) or cue_after(ctx, toks[j]) \
            or verb_after(ctx, toks[j])
        if j > i or s < toks[i].start:
            known = any(tk.key in LATIN_FIRST or tk.key in LATIN_LAST for tk in toks[i + 1:j + 1]) or s < toks[i].start
            if context:
                return 0.9
            if is_first and known:
                return 0.85
            if is_first and key in self.ambiguous:
                return 0.45
            if is_first:
                return 0.75
            return RARE_ONLY_SCORE  # unknown words, name-like by rarity alone
        if context and is_first:
            return 0.8
        if context:
            return 0.6
        if key in self.ambiguous:
            return 0.3
        if sentence_initial(text, s):
            return 0.5
        return 0.6


# one-word cues and verbs: never a word of a name ("SİPARİŞ JOHN SMITH ADINA")
_CUE_WORDS = frozenset(norm_phrase(w.rstrip("*")) for w in CONTEXT_WORDS["name_cues_after"] + CONTEXT_WORDS["name_verbs_after"]
                       if " " not in w.strip())





def _shouted(text: str, start: int, end: int) -> bool:
    """The words right around start..end (three each way, the same line) are written in capitals too, one of
    them at least an ordinary word's length: a shouted sentence ("YESTERDAY X Y EMAILED TWICE"), not an acronym
    in prose ("the ASCII HTML table")."""
    lo = text.rfind("\n", max(0, start - 40), start) + 1 or max(0, start - 40)
    hi = text.find("\n", end, end + 40)
    hi = hi if hi >= 0 else min(len(text), end + 40)
    near = text[lo:start].split()[-3:] + text[end:hi].split()[:3]
    words = [w.strip(".,:;!?()\"'") for w in near]
    words = [w for w in words if w.isalpha()]
    return bool(words) and all(w.isupper() for w in words) and any(len(w) >= 4 for w in words)


def _unlisted_name_cued(ctx: TextContext, toks: list, i: int) -> bool:
    """Words outside the list from toks[i] on are a name when a title (Bey, Hanım) or a cue (adına) follows
    them; two words before the cue at a sentence start are the name, not three ("Fatura Anar Baharlı adına")."""
    text = ctx.text
    # does the text hold a title after a word (Bey) or a cue (adına) at all? (once per text)
    followed = ctx.extra.get("latin_followed")
    if followed is None:
        followed = ctx.extra["latin_followed"] = any(tk.key in TITLES_AFTER for tk in toks) \
            or CUES_AFTER.search(ctx.norm) is not None
    if not followed:
        return False
    j = _run_end(text, toks, i)
    initial = sentence_initial(text, toks[i].start)
    if not (title_after(text, toks, j) and (j > i or not initial)) and not cue_after(ctx, toks[j]):
        return False
    return not (j - i == 2 and initial)


def _name_start(text: str, toks: list, i: int, out: list) -> int:
    """Where the name of toks[i] starts: a word right before a first name that is capitalized mid-sentence
    (or a listed surname) belongs to it, the surname first ("Öztürk Ahmet") or a first name the list lacks
    ("Wietske Leon"), unless a hit already holds it."""
    t = toks[i]
    if t.key in LATIN_FIRST and i > 0 and adjacent_words(text, toks[i - 1], t) and toks[i - 1].key not in STOP \
            and toks[i - 1].key not in OFFICES and not _acronym(toks[i - 1]) \
            and (not out or out[-1].end < toks[i - 1].start) \
            and (toks[i - 1].key in LATIN_LAST or not sentence_initial(text, toks[i - 1].start)):
        return toks[i - 1].start
    return t.start


# first names as people type them in lower case ("merhaba ben murat", "my name is james"); not the ones that
# are also words, not the very short ones
_LOWER_FIRST = frozenset(form for n in _NAMES["latin_first"] if len(n) > 2 and fold(n) not in LATIN_AMBIGUOUS
                         and fold(n) not in TURKISH_WORDS and fold(n) not in STOP for form in (n.lower(), fold(n)))
_LOWER_WORD = re.compile(rf"[{LATIN_LOWER}]+")
_BOUNDED_WORD = re.compile(r"(?<![\w'’])[^\W\d_]+(?!\w)")


# after these (every strong introduction and cue, and a few self-introductions) a name may be typed in lower
# case ("müşteri adı: ayşe yılmaz", "my name is john smith"); a verb after two lower-case words that are names
# or rare as words makes them a name too ("ayşe yılmaz dün aradı")
_LOWER_INTROS = ("my name is", "my full name is", "name is", "i am", "i'm", "benim adım", "adım", "ismim",
                 "adım soyadım", "merhaba ben", "selam ben", "ben", "this is", "isim soyisim", "ad soyad")
# a job or role word alone ("customer; escalate to ...") says too little before a lower-case word
_LOWER_CUES = sorted({p for p in PHRASES_STRONG | {fold(p) for p in _LOWER_INTROS}
                      if not re.search("[а-яё]", p) and p not in ROLES
                      and p not in ("customer", "client", "müşteri", "musteri", "müşterimiz")},
                     key=len, reverse=True)
_LOWER_CUE_WORDS = frozenset(w for p in _LOWER_CUES for w in p.split() if len(w) >= 3) | {"ben"}
_LOWER_CUE_WORDS = _LOWER_CUE_WORDS | frozenset(fold(w) for w in _LOWER_CUE_WORDS)
_LOWER_VERB_WORDS = frozenset(f for v in CONTEXT_WORDS["name_verbs_after"] + CONTEXT_WORDS["name_cues_after"]
                              for w in v.split()[:1] if len(w) >= 3 for f in (w.rstrip("*"), fold(w.rstrip("*"))))
_LOWER_INTRO_WORDS = _LOWER_CUE_WORDS | _LOWER_VERB_WORDS


def _i_dotted(phrase: str) -> str:
    """A regex for a folded phrase that also matches it lower-cased from Turkish capitals ("İsim".lower() is
    "i" and a combining dot) and with punctuation between its words."""
    words = [re.escape(w).replace("i", "i\u0307?") for w in phrase.split()]
    return "[ \u00a0,:;-]+".join(words)


def _by_first_letter(phrases: list[str]) -> str:
    """An alternation of the phrases grouped by their first letter: the regex engine then tries one group per
    position instead of every phrase (a hundred and more)."""
    groups: dict[str, list[str]] = {}
    for p in phrases:
        groups.setdefault(p[0], []).append(_i_dotted(p)[len(re.escape(p[0])):] if p[0] != "i" else _i_dotted(p))
    parts = []
    for first, rests in groups.items():
        if first == "i":
            parts.append("(?:" + "|".join(rests) + ")")
        else:
            parts.append(re.escape(first) + "(?:" + "|".join(rests) + ")")
    return "|".join(parts)


# the words after the cue in a look-ahead: the next search starts right after the cue ("hi my name is ...")
_LOWER_INTRO = re.compile(r"(?<!\w)(?:" + _by_first_letter(_LOWER_CUES)
                          + rf")(?=[ \u00a0,:;-]+([{LATIN_LOWER}]+)(?:[ \u00a0]([{LATIN_LOWER}]+))?(?![\w'’]))")
_LOWER_WORD_BEFORE = re.compile(rf"([{LATIN_LOWER}]+)[ \u00a0]([{LATIN_LOWER}]+)$")


def _lower_name_word(key: str, rarity: Rarity, ambiguous: frozenset, cued: bool = False) -> bool:
    """A lower-case word that may be a name's: a listed name (one that is also a word only right after a cue),
    or a word rare as a word; no everyday word unless listed, no stop word."""
    if len(key) < 3 or key in STOP or key in _NOT_LOWER_NAME or (key in ambiguous and not cued):
        return False
    if key in LATIN_FIRST or key in LATIN_LAST:
        return True  # "ahmet", "davis": frequent in the corpus as names
    return not rarity.everyday(key) and (key in LISTED_EXT or rarity.rare(key))


_NOT_LOWER_NAME = frozenset("the and bir ile için gibi".split())


def _listed_name(key: str) -> bool:
    return key in LATIN_FIRST or key in LATIN_LAST or key in LISTED_EXT


def _introduced_lower_case(ctx: TextContext, rarity: Rarity, ambiguous: frozenset) -> list[Hit]:
    norm, text = ctx.norm, ctx.text
    out = []
    for m in _LOWER_INTRO.finditer(norm):
        if not text[m.start(1)].islower() or not _lower_name_word(m.group(1), rarity, ambiguous, True):
            continue
        e = m.end(1)
        if m.group(2) and (_lower_name_word(m.group(2), rarity, ambiguous, True)
                           or (ends_value(norm, m.end(2)) and labelled_second_word(m.group(2), rarity, STOP))):
            e = m.end(2)
        elif m.group(1) in ambiguous:
            continue  # "ben evde değilim": a word that is also a name, alone after a cue, is the word
        out.append(Hit(m.start(1), e, "PERSON", 0.7, "gazetteer"))
    for rx in (VERBS_AFTER, CUES_AFTER):
        for m in rx.finditer(norm):
            w = _LOWER_WORD_BEFORE.search(norm, max(0, m.start() - 60), m.start())
            if w is None or not text[w.start(1)].islower() or (w.start(1) > 0 and norm[w.start(1) - 1].isalnum()):
                continue
            if (_lower_name_word(w.group(1), rarity, ambiguous) and _lower_name_word(w.group(2), rarity, ambiguous)) \
                    or pair_before_verb(w.group(1), w.group(2), rarity, STOP | _NOT_LOWER_NAME, _listed_name,
                                        ambiguous):
                out.append(Hit(w.start(1), w.end(2), "PERSON", 0.7, "gazetteer"))
    if len(out) < 2:
        return out
    merged: list[Hit] = []
    for h in sorted(out):
        if merged and h.start < merged[-1].end:
            merged[-1] = merged[-1]._replace(end=max(h.end, merged[-1].end))
        else:
            merged.append(h)
    return merged


def may_hold_lower_case_name(text: str) -> bool:
    """For texts without a capital letter or digit (which the engine's prefilter would skip): a known first
    name among the words of their first and last 200 characters, where people introduce themselves and sign.
    str.split with the commonest punctuation blanked: a regex split of a whole 1 KB text costs 40 us, this 6."""
    part = text if len(text) <= 400 else text[:200] + " " + text[-200:]
    part = part.lower().replace(",", " ").replace(".", " ").replace("!", " ").replace("?", " ").split()
    # a cue before a word, or a verb after two ("tamam, teşekkürler" holds no name)
    return not _LOWER_FIRST.isdisjoint(part) or not _LOWER_CUE_WORDS.isdisjoint(part[:-1]) \
        or not _LOWER_VERB_WORDS.isdisjoint(part[2:])


def _lower_case_names(ctx: TextContext, rarity: Rarity, ambiguous: frozenset) -> list[Hit]:
    """A known first name written in lower case counts only right after an introduction or greeting ("ben",
    "my name is", "thanks"); a known surname in lower case right after it joins it. Right after any strong
    introduction or cue ("müşteri adı:", "my name is"), one or two lower-case words that are listed names or
    rare as words are a name too ("my name is aodhan nizam"), and so are two such words before a calling verb
    or a cue after a name ("ayşe yılmaz dün aradı", "... ile konuştum")."""
    text = ctx.text
    out = _introduced_lower_case(ctx, rarity, ambiguous)
    if not any(word in text for word in ctx.words & _LOWER_FIRST):
        return out  # the words are lower-cased: most are names written with a capital
    # one pass over the words (a long document holds many first names; a search per name would be quadratic)
    for m in _BOUNDED_WORD.finditer(text):
        if m.group() in _LOWER_FIRST:
            s, e = m.span()
            if not strong_before(ctx, s) or any(h.start <= s < h.end for h in out):
                continue
            nxt = _LOWER_WORD.match(text, e + 1) if text[e:e + 1] == " " else None
            if nxt is not None and (k := fold(nxt.group())) in LATIN_LAST \
                    and k not in STOP and (nxt.end() == len(text) or not text[nxt.end()].isalnum()):
                e = nxt.end()
            out.append(Hit(s, e, "PERSON", 0.7, "gazetteer"))
    return out


# ---------------------------------------------------------------- Russian

RU_FIRST = frozenset(n.lower() for n in _NAMES["ru_first"])
RU_MIDDLE = frozenset(n.lower() for n in _NAMES["ru_middle"])
RU_LAST = frozenset(n.lower() for n in _NAMES["ru_last"])
RU_AMBIGUOUS = frozenset("роман вера надежда любовь лев слава роза лилия мир ян май август марс зоя влас".split())
_RU_AMBIGUOUS_MALE = frozenset("роман лев ян мир май август марс влас".split())
# the words these names also are, in their set phrases: "Надежда на быструю доставку", "Вера в людей"
_RU_IDIOMS = {"надежда": ("на",), "вера": ("в", "во"), "любовь": ("к", "ко"), "слава": ("богу",),
              "роман": ("о", "об")}


def _common_noun_use(text: str, start: int, stop: int) -> bool:
    """An ambiguous first name used as the noun it also is: alone before its set preposition ("Надежда на"),
    or in the nominative before a surname in the genitive ("Роман Толстого": a novel by Tolstoy; a person
    would be "Роман Толстой")."""
    words = text[start:stop].split()
    first = words[0].lower().replace("ё", "е") if words else ""
    if first not in RU_AMBIGUOUS:
        return False
    if len(words) == 1:
        nxt = text[stop:stop + 8].split()[:1]
        return bool(nxt) and nxt[0].lower() in _RU_IDIOMS.get(first, ())
    if len(words) == 2:
        second = words[1].lower()
        return second.endswith(("ого", "его")) or (
            first in _RU_AMBIGUOUS_MALE and second.endswith(("ова", "ева", "ёва", "ина", "ына")))
    return False


_RU_ENDINGS = ("ого", "ому", "ыми", "ами", "ым", "им", "ой", "ою", "ую", "ом", "ем", "ей", "ею", "ью", "ам",
               "ах", "а", "у", "е", "ы", "и", "ю", "я")
_RU_NOMINATIVE = ("", "а", "я", "й", "ь", "ий", "ая", "ой", "ый", "ия", "ея")
_RU_SURNAME = re.compile(r"(?:ов|ев|ёв|ин|ын|ск|цк)(?:а|ой|у|ым|ом|е|ого|ому|им|ий|ая|ую|ой)?$|(?:енко|юк|чук|дзе|швили|ян|ич)$")
_RU_PATRONYMIC = re.compile(r"(?:ович|евич|ьич|ич|овна|евна|ична|инична)(?:а|у|ем|е|ы|ой|ой|ну|ною)?$")


@lru_cache(maxsize=65536)
def ru_name_kind(word: str) -> str | None:
    """'first', 'middle', 'last' for a (possibly inflected) Russian name, 'surname_like' by its ending, or None."""
    w = word.lower().replace("ё", "е")
    for kind, names in (("middle", RU_MIDDLE), ("first", RU_FIRST), ("last", RU_LAST)):
        if w in names:
            return kind
    for end in _RU_ENDINGS:
        if w.endswith(end) and len(w) - len(end) >= 2:
            stem = w[: len(w) - len(end)]
            for nom in _RU_NOMINATIVE:
                cand = stem + nom
                for kind, names in (("middle", RU_MIDDLE), ("first", RU_FIRST), ("last", RU_LAST)):
                    if cand in names:
                        return kind
    kind = ru_morph.name_kind(w)  # the dictionary: names the lists lack, in any case form
    if kind is not None:
        return kind
    if _RU_PATRONYMIC.search(w):
        return "middle"
    if len(w) >= 5 and _RU_SURNAME.search(w):
        return "surname_like"
    return None


_RU_NAME_CONTEXT = ContextWords(["зовут", "г-н", "г-жа", "господин", "госпожа", "уважаем", "клиент", "менеджер",
                                 "сотрудник", "фио", "с уважением", "тов", "директор", "курьер", "оператор",
                                 "специалист", "пациент", "заявитель", "врач", "получател", "отправител",
                                 "ответственн", "подписал", "оформил", "передайте", "спросите"])
_RU_STOP = frozenset(w.lower() for w in (
    "Трек-номер Номер Заказ Счёт Счет Сумма Артикул Версия Код ИНН КПП ОГРН ОГРНИП СНИЛС Паспорт Адрес Телефон "
    "Тел Почта Курьер Клиент Менеджер Получатель Отправитель Ответственный Договор Доставка Оплата Москва Россия "
    "Спасибо Здравствуйте Добрый Уважаемый Уважаемая ООО ИП АО ПАО "
    # words that start a sentence and are never a name: natasha runs a name on into them when the sentence
    # before lacks its full stop ("Ответственный: Богданна Якимчук Мы получили ...")
    "Мы Вы Он Она Они Мой Моя Мое Мои Наш Наша Ваш Ваша Это Этот Эта Можно Нужно Кажется Пожалуйста Сегодня "
    "Завтра Вчера Привет Также Уже Когда Где Как Что Почему Если Коробка Посылка Товар Офис").split())
_VERB_END = re.compile(r"(?:ал|ял|ил|ел|ыл|ла|ли|ло|ть|ет|ит)$")


_CYR_CAPITAL = re.compile(r"[А-ЯЁ][а-яё]")


class RussianNameGazetteer(PersonRecognizer):
    """PERSON in Russian text from Faker ru_RU name lists (case endings stripped) and surname/patronymic
    endings; complements natasha and tells the fast path where natasha needs to look. Registered for every
    language (a Russian name in a Turkish chat), it only runs where a capitalized Cyrillic word is."""

    DEFAULT_LANGUAGE = "ru"

    def triggered(self, ctx):
        return ctx.lang == "ru" or _CYR_CAPITAL.search(ctx.text) is not None

    def find(self, ctx: TextContext) -> list[Hit]:
        text = ctx.text
        toks = _tokens(ctx, _CYR_TOKEN, "cyr_tokens")
        kinds = ctx.extra.setdefault("cyr_kinds", {})
        out = []
        n = len(toks)
        i = 0
        while i < n:
            t = toks[i]
            kind = kinds.get(t.start)
            if kind is None:
                kind = kinds[t.start] = ru_name_kind(t.word) or ""
            if not kind:
                # an unknown word directly before a surname or patronymic (a first name the list lacks),
                # or right after "меня зовут", "Получатель:", "Курьер"
                # in capitals, or after a greeting or verb only, a word the dictionary lacks ("ТИАНА
                # ДРУЖИНИНА", "Здравствуйте, Кенжекул"): not one it knows as an ordinary word ("Клиенту звонили")
                nxt = toks[i + 1] if i + 1 < n else None
                if t.key in _RU_STOP or ru_morph.not_a_name(t.word) and sentence_initial(text, t.start):
                    i += 1  # a verb or adverb starts the sentence ("Передайте"); mid-sentence a capital says name
                    continue
                unheard = not ru_morph.ordinary_word(t.word)
                k2 = ""
                if nxt is not None and adjacent_words(text, t, nxt) and (unheard or not t.word.isupper()):
                    k2 = kinds.get(nxt.start)
                    if k2 is None:
                        k2 = kinds[nxt.start] = ru_name_kind(nxt.word) or ""
                if t.word.isupper() and not (k2 in ("middle", "last", "surname_like") and nxt.word.isupper()):
                    i += 1
                    continue
                if k2 not in ("middle", "last", "surname_like") and not strong_before(ctx, t.start) \
                        and not (unheard and _ru_cued(ctx, t.start, t.end)):
                    i += 1
                    continue
                kind = "unknown"
            j = i
            chain_kinds = [kind]
            while j + 1 < n and j - i < 2 and adjacent_words(text, toks[j], toks[j + 1]):
                k2 = kinds.get(toks[j + 1].start)
                if k2 is None:
                    k2 = kinds[toks[j + 1].start] = ru_name_kind(toks[j + 1].word) or ""
                if not k2:
                    nt = toks[j + 1]
                    if nt.word.isupper() or nt.key in _RU_STOP or ru_morph.not_a_name(nt.word) \
                            or not strong_before(ctx, t.start):
                        break
                    # "Получатель: Юхим Таран", "Курьер Ганна Бабко": the introduction decides
                    k2 = "unknown"
                chain_kinds.append(k2)
                j += 1
            s, e = t.start, toks[j].end
            ctx_near = _RU_NAME_CONTEXT.near(ctx.norm, s, e, 32) or context_before(ctx, s) or _ru_cued(ctx, s, e)
            strong = [k for k in chain_kinds if k in ("first", "middle", "last")]
            initial = sentence_initial(text, s)
            # "Роман Толстого" at a sentence start, no name context: a book as much as a person
            ambiguous_start = chain_kinds[0] == "first" and initial and t.key.replace("ё", "е") in RU_AMBIGUOUS \
                and not ctx_near
            # an unknown capitalized word at a sentence start before one known name part
            unknown_start = chain_kinds[0] == "unknown" and initial and not ctx_near and len(strong) < 2
            if len(chain_kinds) >= 2 and strong and not ambiguous_start and not unknown_start:
                score = 0.85
            elif len(chain_kinds) >= 2:
                score = 0.7 if strong_before(ctx, s) else 0.6
            elif ctx_near and kind != "surname_like":
                score = 0.8
            elif ctx_near:
                score = 0.7
            elif kind == "first" and t.key.replace("ё", "е") in RU_AMBIGUOUS:
                score = 0.3
            elif kind in ("first", "middle", "last"):
                score = 0.5 if sentence_initial(text, s) else 0.6
            elif kind == "unknown":
                score = 0.6  # one unknown word right after "меня зовут" / "Получатель:"
            else:
                score = 0.35
            if score > 0.45 and _common_noun_use(text, s, e):
                score = 0.45  # a residual candidate only
            if j == i and _place_use(text, t):
                score = 0.3  # "во Владимире", "в Королёве": the city
            elif j == i and initial and not ctx_near and ru_morph.reading(t.word).place > 0:
                score = 0.4  # "Владимир — сортировочный центр": a city as much as a name, nothing says which
            elif j == i and kind == "first" and _after_thing(text, toks, i):
                score = 0.4  # "Лада Веста": a model after its brand
            out.append(Hit(s, e, "PERSON", score, "gazetteer"))
            i = j + 1
        if _typed_in_lower_case(ctx):
            out += _ru_lower_case_names(ctx)
        return out

    def natasha_windows(self, ctx: TextContext, covered: list[Hit], words: int = 2) -> list[tuple[int, int]]:
        """Windows of `words` words on each side around the capitalized Cyrillic words worth showing to
        natasha: not explained by a gazetteer chain, not a plain sentence-initial word, not an unknown word
        after a place preposition ("в Москве", "на Ленинском", "через Тинькофф"), not an unknown
        abbreviation ("МФЦ"), and a word the gazetteer does not know only where a cue says a name may be
        (_cued_unknown: "Яндекс Маркет", "Почта России" are no work for the model). natasha's CNN looks
        three tokens each way; two words each side found the same names as three on the benchmark set, for a
        third less work."""
        text = ctx.text
        toks = _tokens(ctx, _CYR_TOKEN, "cyr_tokens")
        kinds = ctx.extra.setdefault("cyr_kinds", {})
        strong = sorted((h.start, h.end) for h in covered if h.score >= 0.85)
        k = 0  # tokens and strong spans are both in text order: one pass (a text of thousands of names)
        windows: list[tuple[int, int]] = []
        for idx, t in enumerate(toks):
            while k < len(strong) and strong[k][1] <= t.start:
                k += 1
            if k < len(strong) and strong[k][0] <= t.start:
                continue
            kind = kinds.get(t.start)
            if kind is None:
                kind = kinds[t.start] = ru_name_kind(t.word) or ""
            if not kind:
                if t.word.isupper() or t.key in _RU_STOP:
                    continue
                prev = text[max(0, t.start - 8):t.start].split()
                if prev and prev[-1].lower() in _PLACE_PREPOSITIONS:
                    continue
                if sentence_initial(text, t.start):
                    nxt = toks[idx + 1] if idx + 1 < len(toks) else None
                    if not (nxt is not None and adjacent_words(text, t, nxt)):
                        continue
                if not _cued_unknown(ctx, toks, idx, kinds):
                    continue
            s = _word_bound_left(text, t.start, words)
            e = _word_bound_right(text, t.end, words)
            if windows and s <= windows[-1][1]:
                windows[-1] = (windows[-1][0], max(e, windows[-1][1]))
            else:
                windows.append((s, e))
        return windows


_PLACE_PREPOSITIONS = frozenset("в во на из через по под над за при до".split())


# A Russian name's context besides the intros: a greeting right before it ("Здравствуйте, Алёна!"), a verb of
# calling, writing, asking or complaining before it ("звонила Оксана", "передайте Трофимовой") or after it
# ("Жанболат звонил"). Matched in the folded text.
_RU_GREETING_BEFORE = re.compile(
    r"(?<!\w)(?:здравствуй(?:те)?|привет(?:ствую)?|добрый (?:день|вечер)|доброе утро|доброго (?:дня|времени суток)"
    r"|спасибо|благодарю|до свидания|хорошего дня|хорошо|понятно|отлично|конечно)[ \u00a0]*[,!]?[ \u00a0]*$")
# the name before the greeting: "Кенжекул, добрый вечер!"
_RU_GREETING_AFTER = re.compile(r"[ \u00a0]*,[ \u00a0]*(?:здравствуй|привет|добр(?:ый|ое|ого)|спасибо)")
_RU_VERB_STEMS = r"(?:(?:по|пере)?звони|написа|пиш|жалова|жалу|пожалова|обрати|(?:по)?проси|спрашива|уточня|сказа|ответи)"
_RU_VERB_BEFORE = re.compile(
    r"(?<!\w)(?:" + _RU_VERB_STEMS + r"[а-яё]{0,5}|передайте|передай|сообщите|свяжитесь с|связаться с|"
    r"поговорите с|поговорил[аи]? с|от имени|со слов|для)[ \u00a0]+$")
_RU_VERB_AFTER = re.compile(r"[ \u00a0]+" + _RU_VERB_STEMS + r"[а-яё]{0,5}(?!\w)")


def _ru_cued(ctx: TextContext, start: int, end: int) -> bool:
    """A greeting or a verb of calling/writing/complaining right before the name, or such a verb right after."""
    norm = ctx.norm
    before = norm[max(0, start - 32):start]
    if _RU_GREETING_BEFORE.search(before) is not None or _RU_VERB_BEFORE.search(before) is not None:
        return True
    return _RU_VERB_AFTER.match(norm, end) is not None or _RU_GREETING_AFTER.match(norm, end) is not None


_NEXT_WORD = re.compile(r"[ \u00a0]+[а-яё]+(?:-[а-яё]+)?(?!\w)")


def _ru_verb_after_next(norm: str, end: int) -> bool:
    """A verb of calling/writing/asking after the word that follows: "лукерья черникова просила"."""
    m = _NEXT_WORD.match(norm, end)
    return m is not None and _RU_VERB_AFTER.match(norm, m.end()) is not None


# makes whose models carry first names ("Лада Веста", "Лада Калина", "Волга Сайбер")
_RU_MAKES = frozenset("лада ваз уаз газ газель камаз волга москвич ока нива".split())


def _after_thing(text: str, toks: list, i: int) -> bool:
    """toks[i] follows a car make, one space between: "Лада Веста" is a car."""
    return i > 0 and toks[i - 1].key in _RU_MAKES and adjacent_words(text, toks[i - 1], toks[i])


def _place_use(text: str, tok: Token) -> bool:
    """A word the dictionary also reads as a place, right after a place preposition: "во Владимире", "из
    Королёва", "в Пушкине" are the city, not the person."""
    prev = text[max(0, tok.start - 8):tok.start].split()
    return bool(prev) and prev[-1].lower() in _PLACE_PREPOSITIONS and ru_morph.place_after_preposition(tok.word)


# Names typed in lower case ("меня зовут оксана трофимова", "здравствуйте, алёна"): a name word after an
# intro, greeting or calling verb, or a listed first name followed by a surname or patronymic.
_RU_LOWER = re.compile(r"(?<![А-ЯЁа-яё])[а-яё]{3,}")
_RU_LOWER_WORD = re.compile(r"(?<![\w'’-])[а-яё]{2,}(?:-[а-яё]{2,})?(?![\w'’])")
_RU_LOWER_CUE = re.compile(
    r"зовут|фио|уважением|здравств|привет|добр|спасибо|благодар|звони|написа|пиш|жалова|обрати|проси|спрашива|"
    r"передай|сообщите|свяж|связат|поговори|получател|отправител|клиент|курьер|менеджер|оператор|жалу")
_RU_LOWER_SURNAME_AFTER = re.compile(
    r" [а-яё]{2,}(?:(?:ов|ев|ёв|ин|ын)(?:а|у|ым|ой|е|ою)?|(?:ович|евич|овна|евна|ична)[а-яё]{0,3}|енко|[юч]?ук|дзе|швили"
    r"|ск(?:ий|ая|ого|ой|ому|ую|им))(?![\w-])")
_RU_FIRST_LOWER = frozenset(n for n in RU_FIRST if n not in RU_AMBIGUOUS and len(n) > 2)


# a sentence or a field after a colon that starts in lower case: the text is typed so, and a name in it may be too
_LOWER_SENTENCE_START = re.compile(r"[.!?:;\n][ \u00a0]*[а-яё]|^[ \u00a0]*[а-яё]")


def _typed_in_lower_case(ctx: TextContext) -> bool:
    """Whether the lower-case pass is worth its cost (~40 us for a text of 700 characters): a sentence starts in
    lower case, or an introduction that a lower-case name follows as often as not ("меня зовут", "фио")."""
    norm = ctx.norm
    return "зовут" in norm or "фио" in norm or _LOWER_SENTENCE_START.search(ctx.text) is not None


def may_hold_lower_case_ru_name(text: str) -> bool:
    """For texts without a capital letter or digit (the engine's prefilter skips them otherwise): Cyrillic text
    with a cue word or a listed first name in lower case."""
    if _RU_LOWER.search(text) is None:
        return False
    low = text.lower()
    return _RU_LOWER_CUE.search(low) is not None or not _RU_FIRST_LOWER.isdisjoint(NON_WORD.split(low)) \
        or _RU_LOWER_SURNAME_AFTER.search(low) is not None


def _ru_lower_kind(word: str) -> str:
    """The kind of a lower-case word as a name part: the dictionary's (Name/Surn/Patr as its likeliest
    reading), or a surname/patronymic ending."""
    if word.replace("ё", "е") in RU_AMBIGUOUS or word in _RU_STOP:
        return ""
    kind = ru_name_kind(word) or ""
    if kind == "surname_like" and (ru_morph.ordinary_word(word) or ru_morph.not_a_name(word)):
        return ""  # "снова", "готова": the ending alone says little in lower case
    return kind


def _ru_lower_case_names(ctx: TextContext) -> list[Hit]:
    """Russian names in lower case: one to three name words right after an intro, greeting or calling verb
    (after "меня зовут" / "фио:" also words the dictionary lacks or knows otherwise, before a surname:
    "канат абдрахманов"); anywhere, a first name followed by a surname or patronymic ("оксана трофимова").
    Only the words where such a name may start are looked at (_ru_lower_starts), not every word of the text."""
    text = ctx.text
    cue = _RU_LOWER_CUE.search(ctx.norm) is not None
    out: list[Hit] = []
    pos = 0
    for s in _ru_lower_starts(ctx, cue):
        m = _RU_LOWER_WORD.match(text, s)
        if s < pos or m is None:
            continue
        e = m.end()
        w = m.group()
        intro = cue and strong_before(ctx, s)
        cued = intro or cue and (_ru_cued(ctx, s, e) or _ru_verb_after_next(ctx.norm, e))
        if not (cued or _RU_LOWER_SURNAME_AFTER.match(text, e) or w.replace("ё", "е") in _RU_FIRST_LOWER):
            continue
        kind = _ru_lower_kind(w)
        end, words = e, 1
        while words < 3:
            nxt = _RU_LOWER_WORD.match(text, end + 1) if text[end:end + 1] == " " else None
            if nxt is None or _ru_lower_kind(nxt.group()) not in ("first", "middle", "last", "surname_like") \
                    and not (kind == "first" and ru_morph.guessed_name(nxt.group())):
                break
            end, words = nxt.end(), words + 1
        # before a surname, a word with any name reading ("вики нурматова", "витом муханбетовым") or a guessed one
        some_name = words > 1 and w not in _RU_STOP and w.replace("ё", "е") not in RU_AMBIGUOUS \
            and (ru_morph.guessed_name(w) or ru_morph.reading(w).name > 0)
        if kind not in ("first", "middle", "last") and not some_name:
            # after an introduction: a word the dictionary lacks, or any word but a verb, pronoun... before a
            # surname ("меня зовут канат абдрахманов", "фио: орынкул моминова")
            if not intro or w in _RU_STOP or ru_morph.not_a_name(w) or (words == 1 and ru_morph.ordinary_word(w)):
                continue
        elif words == 1 and not cued:
            continue
        out.append(Hit(s, end, "PERSON", 0.75 if cued else 0.7, "morph"))
        pos = end
    return out


# where a cue ends and the name after it may start ("меня зовут ", "здравствуйте, ", "звонила ")
_RU_CUE_END = re.compile(
    r"(?:зовут|фио|уважением|здравствуй(?:те)?|привет|добрый (?:день|вечер)|доброе утро|спасибо|благодарю|хорошо"
    r"|получател[ьи]|отправител[ьи]|клиент(?:ка)?|курьер|менеджер|оператор|передайте|сообщите|"
    r"(?:по|пере)?звонил[аи]?|написал[аи]?|пожаловал(?:ся|ась|ись)|обратил(?:ся|ась|ись)|(?:по)?просил[аи]?"
    r"|спрашивал[аи]?|поговорил[аи]? с|свяжитесь с|связаться с)[ \u00a0:,—–-]+(?=[а-яё])")
_RU_VERB_AHEAD = re.compile(r"[ \u00a0]" + _RU_VERB_STEMS + r"[а-яё]{0,5}(?!\w)")
_RU_LOWER_BEFORE = re.compile(r"(?<![а-яё\w-])[а-яё]{2,}(?:-[а-яё]{2,})?[ \u00a0]$")


def _ru_lower_starts(ctx: TextContext, cue: bool) -> list[int]:
    """Where a lower-case name may start, in order: after a cue; one or two words before a calling verb or
    before a surname-shaped word; at a listed first name."""
    text, norm = ctx.text, ctx.norm
    starts: set[int] = set()

    def words_before(k: int, n: int) -> None:
        for _ in range(n):
            m = _RU_LOWER_BEFORE.search(text, max(0, k - 40), k)
            if m is None:
                return
            starts.add(m.start())
            k = m.start()

    if cue:
        starts.update(m.end() for m in _RU_CUE_END.finditer(norm))
        for m in _RU_VERB_AHEAD.finditer(norm):
            words_before(m.start() + 1, 2)
    for m in _RU_LOWER_SURNAME_AFTER.finditer(text):
        words_before(m.start() + 1, 1)
    for w in _RU_FIRST_LOWER.intersection(ctx.words):
        k = text.find(w)
        while k >= 0:
            starts.add(k)
            k = text.find(w, k + 1)
    return sorted(starts)


def _cued_unknown(ctx: TextContext, toks: list[Token], idx: int, kinds: dict) -> bool:
    """The cheap pass in front of natasha for a capitalized Cyrillic word the gazetteer does not know: a name
    may be there only when the run of adjacent capitalized words around it (up to two more each side) holds
    a gazetteer word, follows a name cue (a _RU_NAME_CONTEXT word within 32 characters before the run or in
    it, or an introduction, title, job word, header line or closing formula right before one of its words up
    to this one), or is two or three capitalized words without a stop word or abbreviation: the shape of a
    name. A word alone after nothing of that ("Оплатил через Тинькофф", "Хочу узнать") is left to the
    gazetteer. `kinds` is natasha_windows' cache of ru_name_kind per token start ("" for no kind)."""
    text = ctx.text
    first, last = idx, idx
    while first > 0 and idx - first < 2 and adjacent_words(text, toks[first - 1], toks[first]):
        first -= 1
    while last + 1 < len(toks) and last - idx < 2 and adjacent_words(text, toks[last], toks[last + 1]):
        last += 1
    for k in range(first, last + 1):
        kind = kinds.get(toks[k].start)
        if kind is None:
            kind = kinds[toks[k].start] = ru_name_kind(toks[k].word) or ""
        if kind:
            return True
    s = toks[first].start
    # the cue may be a capitalized word of the run itself ("Курьер Василь Оберемко", "Клиент Демʼян ...")
    if _RU_NAME_CONTEXT.near(ctx.norm, toks[idx].start, toks[idx].end, toks[idx].start - s + 32) \
            or any(context_before(ctx, toks[k].start) for k in range(first, idx + 1)):
        return True
    if last > first and not any(toks[k].key in _RU_STOP or toks[k].word.isupper() for k in range(first, last + 1)):
        return True
    return first == last and _capitalized_neighbour(text, toks[idx])


def _capitalized_neighbour(text: str, tok: Token) -> bool:
    """A capitalized word that _CYR_TOKEN does not take ("Вʼячеслав": an apostrophe after the first letter)
    right before or after `tok`, one space between: the pair is a run all the same."""
    before = _word_before(text, tok.start - 1) if text[tok.start - 1:tok.start] == " " else ""
    after = _word_after(text, tok.end + 1) if tok.full_end == tok.end and text[tok.end:tok.end + 1] == " " else ""
    return _capitalized(before) or _capitalized(after.rstrip(".,;:!?)»\""))


_LONGEST_WORD = 40  # a neighbour is read this far at most (a long text without spaces stays linear)


def _word_before(text: str, pos: int) -> str:
    """The word that ends at `pos` (whitespace-delimited), or "" when it is longer than _LONGEST_WORD."""
    parts = text[max(0, pos - _LONGEST_WORD):pos].rsplit(None, 1)
    return parts[-1] if parts and (len(parts) == 2 or pos <= _LONGEST_WORD) else ""


def _word_after(text: str, pos: int) -> str:
    """The word that starts at `pos`, or "" when none starts there or it is longer than _LONGEST_WORD."""
    chunk = text[pos:pos + _LONGEST_WORD]
    parts = chunk.split(None, 1)
    ok = parts and not chunk[0].isspace() and (len(parts) == 2 or pos + _LONGEST_WORD >= len(text))
    return parts[0] if ok else ""


def _capitalized(word: str) -> bool:
    return word[:1].isupper() and word[-1:].isalpha() and not word.isupper() and word.lower() not in _RU_STOP


# natasha's windows stay on the line of the word they are for: a name does not run across a line break, and
# natasha shown two lines tags one across them ("Ответственный: Азар Журба\nКоробка пришла ...").
def _word_bound_left(text: str, pos: int, words: int) -> int:
    line = text.rfind("\n", 0, pos) + 1
    k = pos
    for _ in range(words):
        k = text.rfind(" ", line, max(line, k - 1))
        if k < 0:
            return line
    return k + 1


def _word_bound_right(text: str, pos: int, words: int) -> int:
    line_end = text.find("\n", pos)
    if line_end < 0:
        line_end = len(text)
    k = pos
    for _ in range(words):
        k = text.find(" ", k + 1, line_end)
        if k < 0:
            return line_end
    return k


# natasha hits per window text (tuples of Hits, immutable), most recently used last
_WINDOW_CACHE: OrderedDict[str, tuple[Hit, ...]] = OrderedDict()
_WINDOW_CACHE_SIZE = 16384
_WINDOW_LOCK = threading.Lock()


def clear_window_cache() -> None:
    with _WINDOW_LOCK:
        _WINDOW_CACHE.clear()


class NatashaPersonRecognizer(PersonRecognizer):
    """PERSON in Russian text from natasha's NER (slovnet news model, PER spans)."""

    DEFAULT_LANGUAGE = "ru"
    SCORE = 0.85

    def find_many(self, texts: list[str]) -> list[list[Hit]]:
        if not texts:
            return []
        # natasha's tags for a window depend on the window text only (not on the other texts of its batch:
        # checked batched vs one by one vs shuffled), so each distinct window is tagged once: repeated
        # windows within a batch and across batches (an LRU of recent windows) reuse the hits
        found: dict[str, tuple[Hit, ...] | None] = {}
        todo: list[str] = []
        with _WINDOW_LOCK:
            for text in texts:
                if text in found:
                    continue
                hits = _WINDOW_CACHE.get(text)
                if hits is None:
                    found[text] = None
                    todo.append(text)
                else:
                    _WINDOW_CACHE.move_to_end(text)
                    found[text] = hits
        if todo:
            for text, hits in zip(todo, self._tag(todo)):
                found[text] = hits
            with _WINDOW_LOCK:
                for text in todo:
                    _WINDOW_CACHE[text] = found[text]
                while len(_WINDOW_CACHE) > _WINDOW_CACHE_SIZE:
                    _WINDOW_CACHE.popitem(last=False)
        return [list(found[text]) for text in texts]

    def _tag(self, texts: list[str]) -> list[tuple[Hit, ...]]:
        out = []
        for text, spans in zip(texts, entity_spans(texts)):
            hits = []
            for start, stop, kind in spans:
                if kind != "PER":
                    continue
                start, stop = _without_stop_words(text, start, stop)
                word = text[start:stop]
                if not _plausible(word):
                    continue
                score = self.SCORE
                single = word.split()
                if len(single) == 1 and not _RU_NAME_CONTEXT.near(fold(text), start, stop, 32):
                    if ru_name_kind(word) is None or sentence_initial(text, start) and (
                            word.lower().replace("ё", "е") in RU_AMBIGUOUS or ru_morph.reading(word).place > 0):
                        score = 0.45  # a lone unknown, ambiguous or city word ("Владимир — ..."): a residual only
                if score > 0.45 and (_common_noun_use(text, start, stop)
                                     or _common_noun_use(text, _word_start_before(text, start), stop)):
                    score = 0.45  # "Роман Толстого" tagged from "Толстого" on: the novel
                hits.append(Hit(start, stop, "PERSON", score, "natasha"))
            out.append(tuple(hits))
        return out

    def find(self, ctx: TextContext) -> list[Hit]:
        return self.find_many([ctx.text])[0]


def _without_stop_words(text: str, start: int, stop: int) -> tuple[int, int]:
    """A name natasha tagged, less the stop words it ran on into at either end (a sentence without its full
    stop); a span of stop words alone is left to _plausible."""
    words = [(start + m.start(), start + m.end()) for m in re.finditer(r"\S+", text[start:stop])]
    while len(words) > 1 and _no_name_word(text[words[-1][0]:words[-1][1]]):
        words.pop()
    while len(words) > 1 and _no_name_word(text[words[0][0]:words[0][1]]):
        words.pop(0)
    return words[0][0], words[-1][1]


def _word_start_before(text: str, start: int) -> int:
    """Where the word one space before `start` begins (`start` itself when there is none)."""
    if start < 2 or text[start - 1] != " " or not text[start - 2].isalpha():
        return start
    k = start - 2
    while k > 0 and text[k - 1].isalpha():
        k -= 1
    return k


def _no_name_word(word: str) -> bool:
    """A stop word, or a word the dictionary knows only as a verb, adverb, pronoun... ("Передайте")."""
    word = word.strip(",.!?")
    return word.lower() in _RU_STOP or ru_morph.not_a_name(word)


def _plausible(span: str) -> bool:
    """natasha now and then tags a lone capitalized verb or a label ("Заказывал", "Трек-номер") as PER."""
    if " " in span.strip():
        return True
    word = span.strip()
    if _no_name_word(word) or ("-" in word and word.split("-", 1)[1][:1].islower()):
        return False
    return not (_VERB_END.search(word.lower()) and ru_name_kind(word) is None)
