"""Person names in Russian text: a gazetteer of Russian first names, patronymics and surnames (Faker ru_RU
lists in names.py, case endings stripped) and pymorphy3's dictionary beyond the lists (ru_morph.py: names in
any case form, in capitals, in lower case after a cue or before a surname; verbs, cities after a place
preposition and car models are none). It also picks the windows of text natasha's NER is shown
(ner_person.py).
"""
from __future__ import annotations

import re
from functools import lru_cache

from pipeline.data.pii import ru_morph
from pipeline.data.pii.name_context import Token, adjacent_words, context_before, sentence_initial, strong_before
from pipeline.data.pii.names import CYR_TOKEN, NAMES, PersonRecognizer, tokens
from pipeline.data.pii.ru_turkic import turkic_name
from pipeline.data.pii.text import NON_WORD, ContextWords, Hit, TextContext, WordTest

RU_FIRST = frozenset(n.lower() for n in NAMES["ru_first"])
RU_MIDDLE = frozenset(n.lower() for n in NAMES["ru_middle"])
RU_LAST = frozenset(n.lower() for n in NAMES["ru_last"])
RU_AMBIGUOUS = frozenset("роман вера надежда любовь лев слава роза лилия мир ян май август марс зоя влас".split())
_RU_AMBIGUOUS_MALE = frozenset("роман лев ян мир май август марс влас".split())
# the words these names also are, in their set phrases: "Надежда на быструю доставку", "Вера в людей"
_RU_IDIOMS = {"надежда": ("на",), "вера": ("в", "во"), "любовь": ("к", "ко"), "слава": ("богу",),
              "роман": ("о", "об")}


def common_noun_use(text: str, start: int, stop: int) -> bool:
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
    if turkic_name(w):
        return "last"  # "Кенжебай", "Сайлаубека": strong enough to take the unknown first name before it
    if _RU_PATRONYMIC.search(w):
        return "middle"
    if len(w) >= 5 and _RU_SURNAME.search(w) and not _function_word(w):  # "снова": no surname
        return "surname_like"
    return None


_FUNCTION_POS = frozenset(("ADVB", "NPRO", "PREP", "CONJ", "PRCL", "INTJ", "PRED", "COMP", "NUMR", "VERB", "INFN", "GRND"))


def _function_word(word: str) -> bool:
    """The dictionary's likeliest reading is an adverb, pronoun, verb...: a surname's ending on it means nothing
    ("снова", "готово"). Not a short adjective: "Калиев", "Вилков" read so too."""
    top = ru_morph.analyzer().parse(word)[0]
    return top.is_known and top.tag.POS in _FUNCTION_POS


RU_NAME_CONTEXT = ContextWords(["зовут", "г-н", "г-жа", "господин", "госпожа", "уважаем", "клиент", "менеджер",
                                 "сотрудник", "фио", "с уважением", "тов", "директор", "курьер", "оператор",
                                 "специалист", "пациент", "заявитель", "врач", "получател", "отправител",
                                 "ответственн", "подписал", "оформил", "передайте", "спросите"])
RU_STOP = frozenset(w.lower() for w in (
    "Трек-номер Номер Заказ Счёт Счет Сумма Артикул Версия Код ИНН КПП ОГРН ОГРНИП СНИЛС Паспорт Адрес Телефон "
    "Тел Почта Курьер Клиент Менеджер Получатель Отправитель Ответственный Договор Доставка Оплата Москва Россия "
    "Спасибо Здравствуйте Добрый Уважаемый Уважаемая ООО ИП АО ПАО "
    # words that start a sentence and are never a name: natasha runs a name on into them when the sentence
    # before lacks its full stop ("Ответственный: Богданна Якимчук Мы получили ...")
    "Мы Вы Он Она Они Мой Моя Мое Мои Наш Наша Ваш Ваша Это Этот Эта Можно Нужно Кажется Пожалуйста Сегодня "
    "Завтра Вчера Привет Также Уже Когда Где Как Что Почему Если Коробка Посылка Товар Офис").split())


_CYR_CAPITAL = re.compile(r"[А-ЯЁ][а-яё]")


class RussianNameGazetteer(PersonRecognizer):
    """PERSON in Russian text from Faker ru_RU name lists (case endings stripped) and surname/patronymic
    endings; complements natasha and tells the fast path where natasha needs to look. Registered for every
    language (a Russian name in a Turkish chat), it only runs where a capitalized Cyrillic word is."""

    DEFAULT_LANGUAGE = "ru"

    def triggered(self, ctx):
        # (an ASCII text, most English ones, holds no Cyrillic letter: no scan)
        return ctx.lang == "ru" or not ctx.text.isascii() and _CYR_CAPITAL.search(ctx.text) is not None

    def find(self, ctx: TextContext) -> list[Hit]:
        text = ctx.text
        toks = tokens(ctx, CYR_TOKEN, "cyr_tokens")
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
                if t.key in RU_STOP or ru_morph.not_a_name(t.word) and sentence_initial(text, t.start) \
                        and not _introduced_before_name(ctx, t, nxt):
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
                    if nt.word.isupper() or nt.key in RU_STOP or ru_morph.not_a_name(nt.word) \
                            or not strong_before(ctx, t.start):
                        break
                    # "Получатель: Юхим Таран", "Курьер Ганна Бабко": the introduction decides
                    k2 = "unknown"
                chain_kinds.append(k2)
                j += 1
            s, e = t.start, toks[j].end
            ctx_near = RU_NAME_CONTEXT.near(ctx.norm, s, e, _in_sentence(text, s, 32)) or context_before(ctx, s) \
                or _ru_cued(ctx, s, e)
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
            if score > 0.45 and common_noun_use(text, s, e):
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
        toks = tokens(ctx, CYR_TOKEN, "cyr_tokens")
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
                if t.word.isupper() or t.key in RU_STOP:
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


def _in_sentence(text: str, start: int, most: int) -> int:
    """How far back from `start`, `most` at the most, the sentence goes: a cue word in the sentence before
    ("Оформил повторную отправку. Роза в букете завяла") is not this word's. A full stop after a word of three
    letters or fewer is an abbreviation ("тов. Иванов", "г. Москва"), not a sentence end."""
    k = start
    lo = max(0, start - most)
    while k > lo:
        ch = text[k - 1]
        if ch in "!?\n" or ch == "." and _word_before_stop(text, k - 1) > 3:
            return start - k
        k -= 1
    return start - lo


def _word_before_stop(text: str, stop: int) -> int:
    j = stop
    while j > 0 and text[j - 1].isalpha():
        j -= 1
    return stop - j


def _introduced_before_name(ctx: TextContext, t: Token, nxt: Token | None) -> bool:
    """An introduction ("Получатель —", "ФИО:") right before `t` and a name word after it: `t` is a first name
    the dictionary reads as an adverb or verb ("Получатель — Рано Светлана"), not the word that opens a sentence."""
    return nxt is not None and adjacent_words(ctx.text, t, nxt) and strong_before(ctx, t.start) \
        and ru_name_kind(nxt.word) in ("first", "middle", "last", "surname_like")


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
RU_MAKES = frozenset("лада ваз уаз газ газель камаз волга москвич ока нива".split())


def _after_thing(text: str, toks: list, i: int) -> bool:
    """toks[i] follows a car make, one space between: "Лада Веста" is a car."""
    return i > 0 and toks[i - 1].key in RU_MAKES and adjacent_words(text, toks[i - 1], toks[i])


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
# the words _RU_LOWER_SURNAME_AFTER matches after its space (a whole word: a space before, no word character
# or hyphen after), each word's answer kept per process (_ru_lower_starts)
_RU_SURNAME_SHAPED = WordTest(re.compile(_RU_LOWER_SURNAME_AFTER.pattern[1:].replace("(?![\\w-])", "")).fullmatch)


# a sentence or a field after a colon that starts in lower case: the text is typed so, and a name in it may be too
# (the text's start asked apart: "^" in the alternation made the engine try every position)
_LOWER_SENTENCE_START = re.compile(r"[.!?:;\n][ \u00a0]*[а-яё]")
_LOWER_TEXT_START = re.compile(r"[ \u00a0]*[а-яё]")


def _typed_in_lower_case(ctx: TextContext) -> bool:
    """Whether the lower-case pass is worth its cost (~40 us for a text of 700 characters): a sentence starts in
    lower case, or an introduction that a lower-case name follows as often as not ("меня зовут", "фио")."""
    norm = ctx.norm
    return "зовут" in norm or "фио" in norm or _LOWER_TEXT_START.match(ctx.text) is not None \
        or _LOWER_SENTENCE_START.search(ctx.text) is not None


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
    if word.replace("ё", "е") in RU_AMBIGUOUS or word in RU_STOP:
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
        some_name = words > 1 and w not in RU_STOP and w.replace("ё", "е") not in RU_AMBIGUOUS \
            and (ru_morph.guessed_name(w) or ru_morph.reading(w).name > 0)
        if kind not in ("first", "middle", "last") and not some_name:
            # after an introduction: a word the dictionary lacks, or any word but a verb, pronoun... before a
            # surname ("меня зовут канат абдрахманов", "фио: орынкул моминова")
            if not intro or w in RU_STOP or ru_morph.not_a_name(w) or (words == 1 and ru_morph.ordinary_word(w)):
                continue
        elif words == 1 and not cued:
            continue
        out.append(Hit(s, end, "PERSON", 0.75 if cued else 0.7, "morph"))
        pos = end
    return out


# where a cue ends and the name after it may start ("меня зовут ", "здравствуйте, ", "звонила "); every
# alternative starts with a plain letter ("позвонил", not "(?:по)?звонил"): the engine then skips in C to where
# one of those letters stands, where an optional prefix made it try every position (3x the CPU)
_RU_CUE_END = re.compile(
    r"(?:зовут|фио|уважением|здравствуй(?:те)?|привет|добрый (?:день|вечер)|доброе утро|спасибо|благодарю|хорошо"
    r"|получател[ьи]|отправител[ьи]|клиент(?:ка)?|курьер|менеджер|оператор|передайте|сообщите|"
    r"звонил[аи]?|позвонил[аи]?|перезвонил[аи]?|написал[аи]?|пожаловал(?:ся|ась|ись)|обратил(?:ся|ась|ись)"
    r"|просил[аи]?|попросил[аи]?"
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
    # where _RU_LOWER_SURNAME_AFTER matches: " " and a surname-shaped word, whole (str.find per such word of
    # the text, where the pattern backtracks through every word)
    n = len(text)
    for w in _RU_SURNAME_SHAPED.select(ctx.words):
        k = text.find(" " + w)
        while k >= 0:
            e = k + 1 + len(w)
            if e == n or not (text[e].isalnum() or text[e] in "_-"):
                words_before(k + 1, 1)
            k = text.find(" " + w, k + 1)
    for w in _RU_FIRST_LOWER.intersection(ctx.words):
        k = text.find(w)
        while k >= 0:
            starts.add(k)
            k = text.find(w, k + 1)
    return sorted(starts)


def _cued_unknown(ctx: TextContext, toks: list[Token], idx: int, kinds: dict) -> bool:
    """The cheap pass in front of natasha for a capitalized Cyrillic word the gazetteer does not know: a name
    may be there only when the run of adjacent capitalized words around it (up to two more each side) holds
    a gazetteer word, follows a name cue (a RU_NAME_CONTEXT word within 32 characters before the run or in
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
    if RU_NAME_CONTEXT.near(ctx.norm, toks[idx].start, toks[idx].end, toks[idx].start - s + 32) \
            or any(context_before(ctx, toks[k].start) for k in range(first, idx + 1)):
        return True
    if last > first and not any(toks[k].key in RU_STOP or toks[k].word.isupper() for k in range(first, last + 1)):
        return True
    return first == last and _capitalized_neighbour(text, toks[idx])


def _capitalized_neighbour(text: str, tok: Token) -> bool:
    """A capitalized word that CYR_TOKEN does not take ("Вʼячеслав": an apostrophe after the first letter)
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
    return word[:1].isupper() and word[-1:].isalpha() and not word.isupper() and word.lower() not in RU_STOP


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
