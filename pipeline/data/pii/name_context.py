"""The context around a name word: the cue word lists (context.json), tokens, and the tests that the name
recognizers (latin_names, ru_names) and the signal modules (caps, lone_name, tr_suffix, ...) share: an
introduction or title before a word, a title, cue or verb after it, a sentence start."""
from __future__ import annotations

import re
from typing import NamedTuple

from pipeline.data.pii.text import PhraseLeads, TextContext, first_char_alternation, fold, load_data

CONTEXT_WORDS = load_data("context.json")
TITLES_AFTER = frozenset(fold(w) for w in CONTEXT_WORDS["name_titles_after"])
TITLES = frozenset(fold(w) for w in CONTEXT_WORDS["name_titles_before"])
# titles that are also words, inside a proper noun after a capitalized word: "Tampa Bay Lightning", "Little Miss"
WORD_TITLES = frozenset(("bay", "bayan", "miss"))
GAP = " \t\u00a0:,-—–"
SPACES = " \t\u00a0"


def norm_phrase(w: str) -> str:
    return " ".join(fold(w).replace(",", " ").replace(":", " ").split())


ABBREVIATED = frozenset(fold(w) for w in CONTEXT_WORDS["abbreviated_titles"])
PHRASES_ALL = frozenset(norm_phrase(w) for w in CONTEXT_WORDS["name_intros"] + CONTEXT_WORDS["name_intros_strong"]
                         + CONTEXT_WORDS["name_titles_before"])
PHRASES_STRONG = frozenset(norm_phrase(w) for w in CONTEXT_WORDS["name_intros_strong"] + CONTEXT_WORDS["name_titles_before"])
PHRASE_LAST_WORDS = frozenset(p.split()[-1] for p in PHRASES_ALL)
SIGNOFFS = frozenset(norm_phrase(w) for w in CONTEXT_WORDS["name_signoffs"])
ROLES = frozenset(fold(w) for w in CONTEXT_WORDS["name_roles"])
# as TextContext.words may hold them (text.lower(): "DANIŞMAN" -> "danişman")
ROLE_WORDS = frozenset(f for w in CONTEXT_WORDS["name_roles"] for f in (w.lower(), fold(w)))
# "From: Wietske Hooijman <...>": a header word and a colon, the whole line before the name
HEADER = re.compile(r"[ \t]*(?:" + "|".join(re.escape(fold(w)) for w in CONTEXT_WORDS["name_headers"]) + r")[ \t]*:[ \t]*")


def _words_after(words: list[str]) -> re.Pattern:
    """Spaces, then one of `words` ("stem*": any word that starts so), the longest first, as a whole word."""
    phrases = [(norm_phrase(w.rstrip("*")), w.endswith("*")) for w in sorted(words, key=len, reverse=True)]
    return re.compile("[ \u00a0]+(?:" + first_char_alternation(
        [(re.escape(p) + (r"\w*" if star else ""), p[0]) for p, star in phrases]) + r")(?!\w)")


# "Anar Baharlı adına", "Xəlil Vilayətoğlu ile görüştüm": matched in folded text right after a name's last word
CUES_AFTER = _words_after(CONTEXT_WORDS["name_cues_after"])
# "Aodhan Nizam called yesterday", "Bu hattı X kullanıyor": a verb right after words that are listed names or rare
VERBS_AFTER = _words_after(CONTEXT_WORDS["name_verbs_after"])
# what a text holds where either of them can match (TextContext.may_hold_phrase): most texts hold neither
AFTER_LEADS = PhraseLeads(norm_phrase(w.rstrip("*")) + "*" * w.endswith("*")
                          for w in CONTEXT_WORDS["name_cues_after"] + CONTEXT_WORDS["name_verbs_after"])
SENTENCE_END = set(".!?:;\n\"«“(—–-•*>")


def sentence_initial(text: str, start: int) -> bool:
    k = start - 1
    while k >= 0 and text[k] in " \t\u00a0":
        k -= 1
    return k < 0 or text[k] in SENTENCE_END


def phrase_before(ctx: TextContext, start: int, phrases: frozenset) -> bool:
    """One of `phrases` (an introduction, title or greeting) ends right before `start`, separated only by
    spaces, ':', ',' or a dash; a '.' only after an abbreviated title ("Mr. Smith", not "Thanks. Ends").
    Whatever `phrases` are: a header ("From:") that is all of the line before `start`, or, at the start of a
    line, a closing formula that is all of the line above ("Best regards,")."""
    if start < 2:
        return False
    norm = ctx.norm
    c = norm[start - 1]
    if c not in SPACES:
        return c == "\n" and signoff_above(norm, start)
    if norm.find(":", start - 16 if start > 16 else 0, start) >= 0:
        line = norm.rfind("\n", 0, start) + 1
        if start - line <= 16 and HEADER.fullmatch(norm, line, start):
            return True
    p = norm[start - 40 if start > 40 else 0:start].rstrip(GAP)
    # quick test: the word before must end some phrase
    k = max(p.rfind(" "), p.rfind("\t"), p.rfind("\u00a0"), p.rfind("\n"))
    if p[k + 1:].strip(",:;.\"'«»()") not in PHRASE_LAST_WORDS:
        return False
    abbrev = p.endswith(".")
    if abbrev:
        p = p[:-1]
    words = p.split()[-3:]
    if not words:
        return False
    words = [w.strip(",:;\"'«»()") for w in words]
    if words[-1] not in PHRASE_LAST_WORDS:
        return False
    for k in (1, 2, 3):
        if len(words) >= k:
            ph = " ".join(words[-k:])
            if ph in phrases and (not abbrev or ph in ABBREVIATED):
                return True
    return False


def signoff_above(norm: str, start: int) -> bool:
    """The line above the one `start` begins (one blank line between allowed) holds only a closing formula
    and its punctuation: "Best regards,", "Saygılarımla", "Thanks!". A formula inside a sentence does not
    count ("I wanted to say thanks,")."""
    lo = max(0, start - 48)
    above = norm[lo:start].rstrip(" \t\u00a0\r\n")
    if norm.count("\n", lo + len(above), start) > 2:
        return False
    k = above.rfind("\n")
    if k < 0 and lo > 0:
        return False  # the line above is longer than any closing formula
    return norm_phrase(above[k + 1:].strip(" \t\u00a0,.!-—–")) in SIGNOFFS


def role_before(ctx: TextContext, start: int) -> bool:
    """A job word (courier, temsilcimiz) right before `start`, only spaces between, in lower case or at the
    start of a sentence: not a speaker label ("Agent: Thank you") or a title ("Driver > Driver Details")."""
    text = ctx.text
    if text[start - 1] != " ":
        return False
    roles = ctx.extra.get("role_words")
    if roles is None:  # most texts hold no job word at all
        roles = ctx.extra["role_words"] = not ctx.words.isdisjoint(ROLE_WORDS)
    if not roles:
        return False
    k = start
    while k > 0 and text[k - 1] == " ":
        k -= 1
    if k == start or k == 0:
        return False
    j = k
    while j > 0 and text[j - 1].isalpha():
        j -= 1
    if ctx.norm[j:k] not in ROLES:
        return False
    if text[j].islower():
        return True
    before = text[:j].rstrip(" \t\u00a0")
    return not before or before[-1] in ".!?\n"


def context_before(ctx: TextContext, start: int) -> bool:
    """An introduction, title, greeting or job word ends right where the name starts."""
    return phrase_before(ctx, start, PHRASES_ALL) or role_before(ctx, start)


def strong_before(ctx: TextContext, start: int) -> bool:
    return phrase_before(ctx, start, PHRASES_STRONG) or role_before(ctx, start)


class Token(NamedTuple):
    start: int
    end: int          # end of the word
    full_end: int     # end of the word and its apostrophe suffix
    word: str
    key: str          # folded lower case


def adjacent_words(text: str, a: Token, b: Token) -> bool:
    """b follows a after one space (no suffix on a, no punctuation between)."""
    return a.full_end == a.end and b.start == a.end + 1 and text[a.end] in " \u00a0"


def after_title(text: str, toks: list, i: int) -> bool:
    """toks[i] follows a title token: "Mr. Smith", "Sayın Öztürk", "Dear Sarah", "Hi, Sarah"."""
    if i == 0:
        return False
    prev = toks[i - 1]
    if prev.key not in TITLES:
        return False
    if prev.key in WORD_TITLES and i >= 2 and adjacent_words(text, toks[i - 2], prev) and toks[i - 2].key not in TITLES:
        return False  # "Tampa Bay Lightning": the title word ends a place name
    gap = text[prev.full_end:toks[i].start]
    return gap in (" ", ", ", "\u00a0") or (prev.key in ABBREVIATED and gap in (". ", "."))


def title_after(text: str, toks: list, j: int) -> bool:
    """toks[j] is followed by Bey / Hanım."""
    return j + 1 < len(toks) and toks[j + 1].key in TITLES_AFTER and adjacent_words(text, toks[j], toks[j + 1])


def cue_after(ctx: TextContext, tok: Token) -> bool:
    """tok is followed by a phrase that names a person before it ("adına", "ile görüştüm")."""
    return tok.full_end == tok.end and CUES_AFTER.match(ctx.norm, tok.end) is not None


def verb_after(ctx: TextContext, tok: Token) -> bool:
    """tok is followed by a calling, writing or complaining verb ("called yesterday", "dün aradı")."""
    return tok.full_end == tok.end and VERBS_AFTER.match(ctx.norm, tok.end) is not None


# words before a capitalized pair that make it a place or a thing rather than a person ("in Kuala Lumpur")
THING_BEFORE = frozenset("in at near of into across via the a an".split())


def word_before_in(text: str, start: int, words: frozenset) -> bool:
    """The lower-case word right before `start` (one space between) is one of `words`."""
    if start < 2 or text[start - 1] != " ":
        return False
    j = start - 1
    while j > 0 and text[j - 1].isalpha():
        j -= 1
    return text[j:start - 1] in words
