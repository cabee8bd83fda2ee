"""The English name signals, run on the spans of an English text after the recognizers (step.PiiStep._plan):
the sentence openers that are words dropped (en_sentence_start), the words greeted or told and the rare words in
the possessive added (en_addressed, en_possessive) outside the other spans and code, then every PERSON span
grown by its English neighbours (en_neighbours)."""
from __future__ import annotations

from pipeline.data.pii.en_addressed import addressed_names
from pipeline.data.pii.en_neighbours import grow_english
from pipeline.data.pii.en_possessive import possessive_names
from pipeline.data.pii.en_sentence_start import drop_word_openers
from pipeline.data.pii.name_signals import code_spans
from pipeline.data.pii.text import Hit


def english_names(text: str, hits: list[Hit]) -> list[Hit]:
    """`hits` (non-overlapping) of an English text with the English signals applied, sorted."""
    hits = sorted(drop_word_openers(text, hits), key=lambda h: h.start)
    new = addressed_names(text) + possessive_names(text)
    if new:
        taken = [(h.start, h.end) for h in hits] + code_spans(text)
        for h in new:
            if not any(a < h.end and h.start < b for a, b in taken):
                hits.append(h)
                taken.append((h.start, h.end))
        hits.sort(key=lambda h: h.start)
    return grow_english(text, hits)
