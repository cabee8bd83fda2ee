"""The Russian name signals, run on the spans of a Russian text after the recognizers (step.PiiStep._plan): the
subjects of a person's verb (ru_subject), the persons a verb is addressed to, also in lower case (ru_object), the
word a greeting addresses (ru_vocative), the writer who says "Это X" (ru_this_is) and lower-case names after an
introduction (ru_lower_intro) added outside code and the spans of other types, merged with the PERSON spans they
overlap; then the PERSON spans in capitals grown by their name words (ru_caps), a first name by a word
that ends its clause (ru_last_word), and a surname and a patronymic
joined over the first name between them (ru_fio). First, the spans that are a car or open with a preposition are
dropped or trimmed (ru_not_person)."""
from __future__ import annotations

from pipeline.data.pii.en_names import add_spans
from pipeline.data.pii.ru_caps import grow_caps
from pipeline.data.pii.ru_fio import join_first_names
from pipeline.data.pii.ru_last_word import grow_by_last_word
from pipeline.data.pii.ru_lower_intro import lower_intro_names
from pipeline.data.pii.ru_not_person import drop_russian_things
from pipeline.data.pii.ru_object import addressed_names, lower_addressed_names
from pipeline.data.pii.ru_subject import subject_names
from pipeline.data.pii.ru_this_is import this_is_names
from pipeline.data.pii.ru_vocative import greeted_names
from pipeline.data.pii.text import Hit


def russian_names(text: str, hits: list[Hit], subjects: bool = True) -> list[Hit]:
    """`hits` (non-overlapping) of a Russian text with the Russian signals applied, sorted. `subjects`: False
    where the text is known to hold no subject (ru_subject.may_hold_subject)."""
    found = (subject_names(text) if subjects else []) + addressed_names(text) + greeted_names(text) \
        + this_is_names(text) + lower_intro_names(text) + lower_addressed_names(text)
    hits = grow_caps(text, add_spans(text, drop_russian_things(text, hits), found))
    return join_first_names(text, grow_by_last_word(text, hits))
