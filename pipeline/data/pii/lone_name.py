"""A lone capitalized word that no list holds, in the two places where chat puts a first name or surname alone:

* addressed: the second word of a sentence, a comma or "!" right after it ("Tamam Eflinaz, bakıyorum",
  "Thanks Evander!", "Evet Kayratbek, ...");
* as the subject, in Turkish text: the first word of a sentence (after a full stop, a line break or a "Not:"
  label), a lower-case word right after it ("Kayratbek faturayı istedi"). Not in English: there a rare
  capitalized first word is as often an imperative or a term ("Summarize ...", "Preheat ...", "Anarchists
  ...": real English text, bench/pii/real_text.py, got 1,305 more PERSON spans with it, half of them words).

The word must be rare as an ordinary word in Turkish and English (wordfreq) and the sentence's first word no
inflected Turkish word ("Dosyayı", "Kargoyu": a common stem and suffixes), and no stop, cue, title or firm word.
A capital at a sentence start says little, so the score is the lowest that is kept (0.55 at the default
threshold 0.5); a cue, a list or the record (mentions.NameBook) makes a name surer elsewhere.
"""
from __future__ import annotations

from pipeline.data.pii.later import inflected_common, rare_word
from pipeline.data.pii.name_context import adjacent_words, sentence_initial
from pipeline.data.pii.text import Hit

LONE_SCORE = 0.55
# a sentence's first word that makes the next one a place or a thing, not a person addressed ("In Corinth, ...")
_PLACE_OPENERS = frozenset("in at on of from to by with for near into across via the a an after before during "
                           "under over like around outside inside throughout".split())


def lone_names(ctx, toks: list, taken: list[Hit], not_a_name, subject: bool) -> list[Hit]:
    """PERSON hits for lone capitalized tokens (`toks`: names.py's Latin tokens) outside `taken`, in the places
    of the module doc (`subject`: at a sentence start too). `not_a_name(key)`: a stop, cue, title, firm or
    ambiguous word."""
    text = ctx.text
    out: list[Hit] = []
    n = len(toks)
    for i, t in enumerate(toks):
        key = t.key
        if len(key) < 4 or t.full_end != t.end or not t.word[1:].islower() or not rare_word(key):
            continue  # most capitalized words are common words: the cheap tests first
        if (i > 0 and adjacent_words(text, toks[i - 1], t) and not sentence_initial(text, toks[i - 1].start)) \
                or (i + 1 < n and adjacent_words(text, t, toks[i + 1])):
            continue  # part of a run of capitalized words: the recognizer decides on the run
        after = text[t.end:t.end + 2]
        if sentence_initial(text, t.start):
            if not (subject and len(after) == 2 and after[0] == " " and after[1].islower()):
                continue
        elif not (after[:1] in (",", "!") and _second_word(text, t.start)):
            continue
        if inflected_common(key) or not_a_name(key):
            continue
        if any(h.start < t.end and t.start < h.end for h in taken):
            continue
        out.append(Hit(t.start, t.end, "PERSON", LONE_SCORE, "lone"))
    return out


def _second_word(text: str, start: int) -> bool:
    """One word and a space (a comma too: "Tamam, Eflinaz!") lie between the sentence start and `start`, and
    that word is no preposition or article ("In Corinth, ...")."""
    k = start - 1
    while k >= 0 and text[k] in " ,":
        k -= 1
    j = k
    while j >= 0 and text[j].isalpha():
        j -= 1
    if j == k or text[j + 1:k + 1].lower() in _PLACE_OPENERS:
        return False
    while j >= 0 and text[j] in " \t":
        j -= 1
    return j < 0 or text[j] in ".!?:\n"
