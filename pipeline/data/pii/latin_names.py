"""Person names in Turkish and English text (and the Latin-script names of any other).

No NER model can be installed offline, so a gazetteer (Faker tr_TR/en_US/de_DE/fr_FR/it_IT/es_ES first and
last names, names.py's lists) with context rules: a known first name followed by capitalized words, a title
before (Sayın, Mr., Dr., г-н) or after (Bey, Hanım), an introduction (my name is, adım, меня зовут, I spoke
with) or a phrase after (adına, ile görüştüm) that also makes words outside the list a name, as do a job word
in lower case (kurye, agent), a signature line under a closing formula ("Saygılarımla,"), a "From:" header line
and a surname ending on the last of two or three capitalized words (Məmmədov, Hacıoğlu); a known first name in
lower case right after an introduction ("ben murat"). Names outside the list without such a phrase, written in
lower case without an introduction, or alone without context are missed: the KVKK summary states this
residual risk.
"""
from __future__ import annotations

import re

from pipeline.data.pii.caps import cued_caps_name
from pipeline.data.pii.later import drop_sentence_opener
from pipeline.data.pii.lone_name import lone_names
from pipeline.data.pii.lower_cue import ends_value, labelled_second_word, pair_before_verb
from pipeline.data.pii.name_context import (
    AFTER_LEADS,
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
from pipeline.data.pii.names import (
    LATIN_AMBIGUOUS,
    LATIN_FIRST,
    LATIN_LAST,
    LATIN_LOWER,
    LATIN_TOKEN,
    LATIN_UPPER,
    LISTED_EXT,
    NAMES,
    NEVER,
    OFFICE_NOT_NAME,
    OFFICES,
    PLACE_BEFORE,
    PROPER_NOUN_AFTER,
    STOP,
    STOP_SURNAMES,
    SURNAME_ENDINGS,
    TURKISH_WORDS,
    PersonRecognizer,
    tokens,
)
from pipeline.data.pii.neighbours import mid_frequency_name_word
from pipeline.data.pii.text import Hit, TextContext, WordStart, fold
from pipeline.data.pii.tr_label import labelled_names
from pipeline.data.pii.tr_later import may_close_a_clause
from pipeline.data.pii.tr_listed_first import listed_first_name_pairs
from pipeline.data.pii.tr_lower_subject import cued_pairs, object_first_pairs, shouted_name_word, subject_pairs
from pipeline.data.pii.tr_signature import signature_names
from pipeline.data.pii.tr_suffix import suffixed_names
from pipeline.data.pii.tr_things import thing_labelled, thing_subject
from pipeline.data.pii.tr_title_subject import caps_subject_pairs, title_subject_pairs
from pipeline.data.pii.tr_titles import titled_names
from pipeline.data.pii.tr_vocative import vocative_names

# A name found by rarity alone (no list, no context): under the 0.7 a title-cased file name needs
# (readers.names), where every word is capitalized and capitalization says nothing ("Img Src")
RARE_ONLY_SCORE = 0.65
# an article right before two or more capitalized words makes them a title or an organisation ("The Selfish
# Gene", "the Rolling Stones"); one word after it may still be a family ("the Smiths")
_ARTICLES = frozenset(("the", "a", "an"))
_INDEFINITE = frozenset(("a", "an"))

# firms and brands named after a person, by their first word's key
_BRANDS: dict[str, list[tuple[str, ...]]] = {}
for _b in CONTEXT_WORDS["name_brands"]:
    _k = tuple(fold(w) for w in _b.split())
    _BRANDS.setdefault(_k[0], []).append(_k)

_LATIN_CAPITAL = re.compile(rf"[{LATIN_UPPER}]")


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
        toks = tokens(ctx, LATIN_TOKEN, "latin_tokens")
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
            out += suffixed_names(ctx, toks, self.rarity, out, self._no_name_word, self.ambiguous)
        # no capital after the text's first character (a C-speed test): a word before Bey / Hanım, one after a
        # reply word, a pair in title case or capitals and a signature line (two capitalized words) need one
        capitals = not ctx.text[1:].islower()
        out += lone_names(ctx, toks, out, self._never_a_name, self.supported_language == "tr")
        if capitals:
            out += titled_names(ctx.text, toks, out, self._no_name_word)
        out += labelled_names(ctx)
        if capitals:
            out += vocative_names(ctx, self._no_name_word)
        if self.supported_language == "tr":
            # the subject signals need a clause ending in a finite verb (tr_later.clause_of_subject)
            clauses = may_close_a_clause(ctx.text)
            if clauses:
                out += subject_pairs(ctx)  # overlapping hits merge into one span (engine.resolve)
            out += cued_pairs(ctx)
            if clauses:
                out += object_first_pairs(ctx)
                if capitals:
                    out += title_subject_pairs(ctx)
            if capitals:
                out += caps_subject_pairs(ctx)  # (its clause may end where its capitals do)
            if clauses:
                out += listed_first_name_pairs(ctx)
            if capitals:
                out += signature_names(ctx, self._no_name_word)
        turkish = self.supported_language == "tr"
        if turkish and out:  # "Ürün adı: Kırmızı Kalem", "Xiaomi Redmi şarj olmuyor": things
            out = [h for h in out if not _a_thing(ctx, h)]
        # a subject pair was read with its first word's spelling (tr_spelling): "Raziye" is no inflected "razı"
        out = [h if h.method == "lower_subject" else drop_sentence_opener(
            ctx.text, h, self._listed_word, self.rarity.everyday, turkish, lambda start: signoff_above(ctx.norm, start))
            for h in out]
        if not ctx.words.isdisjoint(_LOWER_FIRST) or not ctx.words.isdisjoint(_LOWER_INTRO_WORDS):
            lower = _lower_case_names(ctx, self.rarity, self.ambiguous)
            out += [h for h in lower if not any(o.start < h.end and h.start < o.end for o in out)]
        return out

    def _never_a_name(self, key: str) -> bool:
        """A stop word, title, office, firm, cue word or a first name that is also a word."""
        return key in STOP or key in NEVER or key in TITLES or key in OFFICES or key in PLACE_BEFORE \
            or key in _BRANDS or key in _CUE_WORDS or key in self.ambiguous

    def _no_name_word(self, key: str) -> bool:
        """A stop word, title, office, firm or cue word: a name never is one, even before Bey / Hanım."""
        return key in STOP or key in NEVER or key in TITLES or key in OFFICES or key in PLACE_BEFORE \
            or key in _BRANDS or key in _CUE_WORDS

    def _listed_word(self, key: str) -> bool:
        """A name of the gazetteer, or of its names-dataset extension that is rare as a word ("Günaydın" is a
        greeting first)."""
        return key in LATIN_FIRST or key in LATIN_LAST or (key in LISTED_EXT and self.rarity.rare(key))

    def _caps_cued_word(self, key: str) -> bool:
        """In capitals next to a cue: a listed name, an ambiguous one too ("DENİZ ÇELİK"), or no everyday word;
        no stop, cue, title or office word."""
        if key in STOP or key in NEVER or key in _CUE_WORDS or key in TITLES or key in OFFICES or key in _BRANDS \
                or (key in _TR_PRONOUNS and self.supported_language == "tr"):
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
                    if caps else self._namelike(tk) or (j > i and self._namelike(toks[i]) and tk.word[1:].islower()
                                                        and mid_frequency_name_word(tk.key, self.rarity.everyday))):
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
        if toks[i].key in _TR_PRONOUNS and self.supported_language == "tr":
            return i + 1, None  # "MERHABA, BEN HAKKI ÇAKICI": "ben" is "I" in Turkish, not Ben
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
                    and (listed or context or (_shouted(text, first.start, toks[j - 1].end)
                                               and (self.supported_language != "tr"
                                                    or all(shouted_name_word(tk.word) for tk in toks[i:j])))):
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
        if title_after(text, toks, i) and (key in self.ambiguous or self._namelike(t)
                                           or mid_frequency_name_word(key, self.rarity.everyday)):
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


# Turkish pronouns that are listed (English) first names: in capitals they open an introduction
_TR_PRONOUNS = frozenset(("ben", "sen"))
# one-word cues and verbs: never a word of a name ("SİPARİŞ JOHN SMITH ADINA")
_CUE_WORDS = frozenset(norm_phrase(w.rstrip("*")) for w in CONTEXT_WORDS["name_cues_after"] + CONTEXT_WORDS["name_verbs_after"]
                       if " " not in w.strip())


def _a_thing(ctx: TextContext, hit: Hit) -> bool:
    """A hit the Turkish context makes a thing (tr_things): after a thing's name label, or found by rarity alone
    before a clause that says what a device does."""
    if "adi" in ctx.norm and thing_labelled(ctx.norm, hit.start):
        return True
    return hit.score <= RARE_ONLY_SCORE and thing_subject(ctx.text, hit.end)


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
            or (ctx.may_hold_phrase(AFTER_LEADS) and CUES_AFTER.search(ctx.norm) is not None)
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
_LOWER_FIRST = frozenset(form for n in NAMES["latin_first"] if len(n) > 2 and fold(n) not in LATIN_AMBIGUOUS
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
# (a word start searched the cheap way: a cue is followed by a separator, where no cue starts)
_LOWER_INTRO = WordStart("(?:" + _by_first_letter(_LOWER_CUES)
                         + rf")(?=[ \u00a0,:;-]+([{LATIN_LOWER}]+)(?:[ \u00a0]([{LATIN_LOWER}]+))?(?![\w'’]))")
# a cue's first word (a word of the text where the cue stands) -> the word after it ("" for a one-word cue)
_LOWER_INTRO_LEADS: dict[str, set[str]] = {}
for _c in _LOWER_CUES:
    _lead = re.match(r"\w*", _c).group()
    _LOWER_INTRO_LEADS.setdefault(_lead, set()).add(re.match(r"\W*(\w*)", _c[len(_lead):]).group(1))


_LOWER_INTRO_LEAD_WORDS = frozenset(_LOWER_INTRO_LEADS)  # (a set: intersecting a dict walks all its keys)


def _may_hold_lower_intro(ctx: TextContext) -> bool:
    """A necessary condition for _LOWER_INTRO to match: a cue's first word among the text's words and the word
    after it in the text (set and substring tests, where the scan tests every character). A combining dot
    ("i" + U+0307, which _i_dotted admits) splits a word: such a text is scanned."""
    norm = ctx.norm
    return "\u0307" in norm or any(nxt in norm for w in ctx.folded_words & _LOWER_INTRO_LEAD_WORDS
                                    for nxt in _LOWER_INTRO_LEADS[w])


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
    for m in _LOWER_INTRO.finditer(norm) if _may_hold_lower_intro(ctx) else ():
        if not text[m.start(1)].islower() or not _lower_name_word(m.group(1), rarity, ambiguous, True):
            continue
        e = m.end(1)
        if m.group(2) and (_lower_name_word(m.group(2), rarity, ambiguous, True)
                           or (ends_value(norm, m.end(2)) and labelled_second_word(m.group(2), rarity, STOP))):
            e = m.end(2)
        elif m.group(1) in ambiguous:
            continue  # "ben evde değilim": a word that is also a name, alone after a cue, is the word
        out.append(Hit(m.start(1), e, "PERSON", 0.7, "gazetteer"))
    for rx in (VERBS_AFTER, CUES_AFTER) if ctx.may_hold_phrase(AFTER_LEADS) else ():
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

