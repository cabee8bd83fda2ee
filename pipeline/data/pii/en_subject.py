"""English: the subject of a calling or writing verb is a person when one of its words says so ("Vikas Sen called
yesterday", "Yesterday Dev Kumawat emailed", "this morning frank hall asked", "THIS MORNING MUSLIM ABDO ASKED").

The shared recognizers weigh a word against Turkish and English together, so an English text loses names whose
word is common in Turkish ("Sen", "Dev"), and their stop lists hold surnames that are everyday words ("Hall",
"Church"). Here only English counts. One or two words of one casing (capitalized, lower case or capitals) right
before a verb of context.json's list, opening a clause (a sentence start, a comma, or a time word or conjunction
before them: "yesterday", "this morning", "and"), are a name when:

* one of them is an anchor: a listed first name (Faker's or the names-dataset extension's) that is no calendar or
  address word, or a word rare in English (wordfreq Zipf < 3.0) that is no place, firm or stop word;
* and the other, if any, is no function word, role or thing word; a listed surname may be an everyday word, and
  after a listed first name any word but a function, role or calendar word is its surname; beside a rare word, a
  town is a name word too (people are named after towns: "Faiz Salem wants", "Lincoln Joynson emailed").

"The customer called", "Support Team says", "my wife called" and "the new bill says" stay: no anchor, or no
clause start before the words.
"""
from __future__ import annotations

import re

from pipeline.data.pii.en_words import ADDRESS_TERMS, CALENDAR, FIRST_NAMES, NOT_NAME, en_zipf
from pipeline.data.pii.lower_pairs import LATIN_FIRST_ANY
from pipeline.data.pii.name_context import AFTER_LEADS, CONTEXT_WORDS, ROLES, norm_phrase, sentence_initial
from pipeline.data.pii.names import LATIN_LAST
from pipeline.data.pii.not_person import PLACES
from pipeline.data.pii.text import Hit, fold, word_shape

_RARE_ZIPF = 3.0


def _english_verbs() -> list[str]:
    """The calling verbs of context.json that are English ("aradı", "istedi" are not)."""
    return [p for p in CONTEXT_WORDS["name_verbs_after"]
            if en_zipf(p.split()[0].rstrip("*").replace("-", "")) >= _RARE_ZIPF]


def _verbs_after() -> re.Pattern:
    """One space and an English calling verb of context.json (its Turkish ones left out), the alternatives grouped
    by their first letter: five times faster than name_context.VERBS_AFTER on a whole text."""
    groups: dict[str, list[str]] = {}
    for phrase in sorted(_english_verbs(), key=len, reverse=True):
        rest = re.escape(phrase.rstrip("*")[1:]) + (r"\w*" if phrase.endswith("*") else "")
        groups.setdefault(phrase[0], []).append(rest)
    alternatives = "|".join(re.escape(k) + "(?:" + "|".join(v) + ")" for k, v in groups.items())
    return re.compile(r"[ \u00a0](?:" + alternatives + r")(?![\w-])")


VERBS_AFTER = _verbs_after()
# every phrase VERBS_AFTER holds is one of name_context.AFTER_LEADS as written (norm_phrase keeps it): a text
# TextContext.may_hold_phrase(AFTER_LEADS) says holds none has no subject here (may_hold_subject)
_LEADS_HOLD_VERBS = all(norm_phrase(p.rstrip("*")) == p.rstrip("*") for p in _english_verbs())
# the last one or two words before a verb (the verb's match starts with the space after them)
_WORDS_BEFORE = re.compile(r"(?<![\w'’@./\\-])(?:([^\W\d_]{2,})[ \u00a0])?([^\W\d_]{2,})$")
_WORD_BEFORE = re.compile(r"([^\W\d_]+)[ \u00a0]+$")
# a time word or conjunction right before the subject: the clause starts after it
_OPENERS = frozenset(
    "yesterday today tonight morning afternoon evening earlier later then and but so also now just recently "
    "finally apparently again meanwhile".split())
# closed-class words: never a word of a name
FUNCTION_WORDS = frozenset(
    "the a an this that these those my your his her its our their i you he she it we they me him us them who whom "
    "which what whoever someone somebody anyone anybody everyone everybody nobody noone none all both each every "
    "some any no not and or but nor so then also just only still even already yet again now here there when while "
    "if as at by for from in into of on onto to with without about after before over under up down out off "
    "is was are were be been am has have had do does did will would can could shall should may might must "
    "mr mrs ms miss dr sir madam dear hi hello hey thanks".split())
LISTED_FIRST = (FIRST_NAMES | LATIN_FIRST_ANY) - CALENDAR - ADDRESS_TERMS
_EVERYDAY_ZIPF = 4.3
# what only a person does: a first name that is an everyday word ("Max", "Server") alone before it is a person
_PERSON_VERB = re.compile(r"[ \u00a0]+(?:call|phon|rang|e-?mail|messag|text|wr[io]t|will |dropped by|stopped by"
                          r"|came by|complain)")


def may_hold_subject(ctx) -> bool:
    """False where subject_names finds nothing in the text of `ctx` (a TextContext): a subject stands before a
    calling verb of context.json, a phrase at a word start of the folded text."""
    return not _LEADS_HOLD_VERBS or ctx.may_hold_phrase(AFTER_LEADS)


def subject_names(text: str) -> list[Hit]:
    """PERSON hits for the subjects of calling verbs that are names (see the module doc)."""
    out: list[Hit] = []
    norm = fold(text)
    for m in VERBS_AFTER.finditer(norm):
        v = m.start()
        w = _WORDS_BEFORE.search(text, max(0, v - 48), v)
        if w is None:
            continue
        hit = _subject(text, w, _PERSON_VERB.match(norm, v) is not None)
        if hit is not None and not (out and out[-1].end > hit.start):
            out.append(hit)
    return out


def _subject(text: str, w: re.Match, person_verb: bool) -> Hit | None:
    second = w.group(2)
    shape = word_shape(second)
    if shape is None:
        return None
    first = w.group(1) if w.group(1) is not None and word_shape(w.group(1)) == shape else None
    s = w.start(1) if first is not None else w.start(2)
    if not _opens_clause(text, s):
        if first is None or not _opens_clause(text, w.start(2)):
            return None
        first, s = None, w.start(2)  # "the Kumawat called": one word, after the word that is no clause start
    keys = [fold(x) for x in (first, second) if x is not None]
    if not _is_name(keys, shape, person_verb):
        return None
    return Hit(s, w.end(2), "PERSON", 0.7, "subject")


def _opens_clause(text: str, start: int) -> bool:
    if sentence_initial(text, start):
        return True
    k = start - 1
    while k >= 0 and text[k] in " \u00a0":
        k -= 1
    if k >= 0 and text[k] == ",":
        return True
    m = _WORD_BEFORE.search(text, max(0, start - 16), start)
    return m is not None and fold(m.group(1)) in _OPENERS


def name_anchor(key: str) -> bool:
    """A folded word that makes a name of the words around it: a listed first name, or rare in English and no
    place, firm or stop word."""
    if len(key) < 3 or key in FUNCTION_WORDS:
        return False
    if key in LISTED_FIRST:
        return True
    return key not in NOT_NAME and en_zipf(key) < _RARE_ZIPF


# words of a firm's name the stop lists lack ("Acme Corporation", "Zorvex Solutions")
FIRM_WORDS = frozenset(
    "corporation corporations gmbh ag sa plc holdings solutions systems technologies technology industries "
    "enterprises partners associates consulting labs logistics international global".split())


def name_partner(key: str) -> bool:
    """A folded word that may stand beside an anchor in a name: no function, role or thing word, unless a listed
    name; the stop lists' words count only when they are English words too ("Bir" is Turkish)."""
    if len(key) < 2 or key in FUNCTION_WORDS or key in ROLES or key in FIRM_WORDS:
        return False
    return key not in NOT_NAME or key in LATIN_LAST or key in FIRST_NAMES or en_zipf(key) < _RARE_ZIPF


def _is_name(keys: list[str], shape: str, person_verb: bool) -> bool:
    if len(keys) == 1:
        # one word alone: capitalized, not typed in lower case (a lower-case word before a verb is a word); an
        # everyday word only before a verb that only a person does ("Max will call back", not "Server says")
        key = keys[0]
        return shape != "lower" and name_anchor(key) and (person_verb or en_zipf(key) < _EVERYDAY_ZIPF)
    a, b = keys
    if a in LISTED_FIRST and b not in FUNCTION_WORDS and b not in ROLES and b not in CALENDAR and b not in FIRM_WORDS:
        return True  # a listed first name, then its surname: a place or any word ("ali salem dropped by")
    if (a not in NOT_NAME and en_zipf(a) < _RARE_ZIPF and b in PLACES) \
            or (b not in NOT_NAME and en_zipf(b) < _RARE_ZIPF and a in PLACES):
        return True  # a rare word and a town beside it ("Faiz Salem wants", "LINCOLN JOYNSON EMAILED")
    return (name_anchor(a) and name_partner(b)) or (name_anchor(b) and name_partner(a))
