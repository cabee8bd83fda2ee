"""The English name signals, run on the spans of an English text after the recognizers (step.PiiStep._plan):
the sentence openers that are words dropped (en_sentence_start); the words greeted or told, the rare words in the
possessive, the values of labels, the subjects of calling verbs, the words after Mr. or Dr. and a listed first name
with the capitalized word after it, and a writer's name after "this is" in lower case added (en_addressed,
en_possessive, en_labels, en_subject, en_titled, en_first_and_surname, en_this_is); then every PERSON
span grown by its English neighbours (en_neighbours)."""
from __future__ import annotations

from pipeline.data.pii.en_addressed import addressed_names
from pipeline.data.pii.en_first_and_surname import first_and_surnames
from pipeline.data.pii.en_labels import label_names
from pipeline.data.pii.en_neighbours import grow_english
from pipeline.data.pii.en_possessive import possessive_names
from pipeline.data.pii.en_sentence_start import drop_word_openers
from pipeline.data.pii.en_subject import subject_names
from pipeline.data.pii.en_this_is import this_is_names
from pipeline.data.pii.en_titled import titled_names
from pipeline.data.pii.name_signals import code_spans
from pipeline.data.pii.text import Hit


def english_names(text: str, hits: list[Hit], subjects: bool = True) -> list[Hit]:
    """`hits` (non-overlapping) of an English text with the English signals applied, sorted. `subjects`: False
    where the text is known to hold no subject (en_subject.may_hold_subject)."""
    hits = drop_word_openers(text, hits)
    hits = add_spans(text, hits, addressed_names(text) + possessive_names(text) + label_names(text)
                     + (subject_names(text) if subjects else []) + titled_names(text) + first_and_surnames(text)
                     + this_is_names(text))
    return grow_english(text, hits)


def add_spans(text: str, hits: list[Hit], new: list[Hit]) -> list[Hit]:
    """`hits` with the PERSON spans `new` added, sorted: none inside code or a span of another type; one that
    overlaps PERSON spans merged with them."""
    if new:
        code = code_spans(text)
        for h in new:
            if any(a < h.end and h.start < b for a, b in code) \
                    or any(x.entity != "PERSON" and x.start < h.end and h.start < x.end for x in hits):
                continue
            inside = [x for x in hits if x.start < h.end and h.start < x.end]
            if inside:
                hits = [x for x in hits if x not in inside]
                h = h._replace(start=min([h.start] + [x.start for x in inside]),
                               end=max([h.end] + [x.end for x in inside]), score=max(x.score for x in inside))
            hits = hits + [h]
    return sorted(hits, key=lambda h: h.start)
