"""Person names in Russian text from natasha's NER (its wheel ships the model; nothing is downloaded), run on
the windows ru_names.RussianNameGazetteer picks, each distinct window tagged once (an LRU of recent windows).
"""
from __future__ import annotations

import re
import threading
from collections import OrderedDict

from pipeline.data.pii import ru_morph
from pipeline.data.pii.name_context import sentence_initial
from pipeline.data.pii.names import PersonRecognizer
from pipeline.data.pii.ner import entity_spans
from pipeline.data.pii.ru_names import RU_AMBIGUOUS, RU_NAME_CONTEXT, RU_STOP, common_noun_use, ru_name_kind
from pipeline.data.pii.text import Hit, TextContext, fold

_VERB_END = re.compile(r"(?:ал|ял|ил|ел|ыл|ла|ли|ло|ть|ет|ит)$")

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
                if len(single) == 1 and not RU_NAME_CONTEXT.near(fold(text), start, stop, 32):
                    if ru_name_kind(word) is None or sentence_initial(text, start) and (
                            word.lower().replace("ё", "е") in RU_AMBIGUOUS or ru_morph.reading(word).place > 0):
                        score = 0.45  # a lone unknown, ambiguous or city word ("Владимир — ..."): a residual only
                if score > 0.45 and (common_noun_use(text, start, stop)
                                     or common_noun_use(text, _word_start_before(text, start), stop)):
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
    return word.lower() in RU_STOP or ru_morph.not_a_name(word)


def _plausible(span: str) -> bool:
    """natasha now and then tags a lone capitalized verb or a label ("Заказывал", "Трек-номер") as PER."""
    if " " in span.strip():
        return True
    word = span.strip()
    if _no_name_word(word) or ("-" in word and word.split("-", 1)[1][:1].islower()):
        return False
    return not (_VERB_END.search(word.lower()) and ru_name_kind(word) is None)
