"""The evaluation set: canonical records (support chats and CRM notes in tr/ru/en) with real people's names
from the evaluation half of names-dataset planted in every shape of issue 29, hard negatives, and
identifiers; every planted span labelled. Seeded: the same seed and pool give the same records.

A row is {"lang", "record", "labels"}; a label is {"field", "start", "end", "kind", ...} where field names a
content string of the record (field_texts), kind is "name", "negative" or "identifier".
"""
from __future__ import annotations

import json
import random
import re

from . import texts
from .pool import BUCKETS, COUNTRIES

LANGS = ("tr", "ru", "en")
# primary shape of a record's person: how the name first appears
PRIMARY = {
    "tr": {"cue": 3, "nocue": 3, "greeting": 1.5, "signature": 1, "lower": 2, "caps": 2, "tool": 1},
    "ru": {"cue": 3, "nocue": 3, "greeting": 1.5, "signature": 1, "lower": 2, "caps": 2, "tool": 1, "case": 1.5},
    "en": {"cue": 3, "nocue": 3, "greeting": 1.5, "signature": 1, "lower": 2, "caps": 2, "tool": 1},
}
LATER_SHAPES = {"tr": ("later", "bey_hanim", "suffix"), "ru": ("later", "case"), "en": ("later",)}
NAME_SHARE = 0.7  # of the records, those that carry a person
_SLOT = re.compile(r"\{(full|first|last|io|fio)(?::(\w+))?\}|\{a\}|\{mr\}|\{bh(?::(\w+))?\}|\{V\}|\[\[(.+?)\]\]", re.S)
_WORD = re.compile(r"[^\W_]+")


# ---------------------------------------------------------------------------------------------- Turkish forms
_BACK, _FRONT = set("aıouAIOU"), set("eiöüəEİÖÜƏâîû")


def _last_vowel(word: str) -> str:
    for ch in reversed(word):
        if ch in _BACK or ch in _FRONT:
            return ch
    return "e"


def tr_suffix(name: str, case: str) -> str:
    """The apostrophe and case suffix after a proper name by vowel harmony ("Çelik'in", "Ayşe'ye")."""
    v = _last_vowel(name)
    back = v in _BACK
    four = {"a": "ı", "ı": "ı", "A": "ı", "I": "ı", "o": "u", "u": "u", "O": "u", "U": "u",
            "ö": "ü", "ü": "ü", "Ö": "ü", "Ü": "ü"}.get(v, "i")
    two = "a" if back else "e"
    vowel_end = name[-1].lower() in "aeıioöuüəâîû"
    hard = name[-1].lower() in "fstkçşhp"
    if case == "gen":
        return "'" + ("n" if vowel_end else "") + four + "n"
    if case == "dat":
        return "'" + ("y" if vowel_end else "") + two
    if case == "acc":
        return "'" + ("y" if vowel_end else "") + four
    if case == "abl":
        return "'" + ("t" if hard else "d") + two + "n"
    if case == "loc":
        return "'" + ("t" if hard else "d") + two
    raise ValueError(case)


# ---------------------------------------------------------------------------------------------- Russian forms
_SIBILANT = "жшчщц"
_VELAR_SIB = "гкхжшчщ"


def _ru_noun_masc(stem: str, case: str) -> str:
    soft_o = stem[-1] in _SIBILANT
    return stem + {"gen": "а", "dat": "у", "acc": "а", "ins": "ем" if soft_o else "ом", "prep": "е"}[case]


def ru_first(name: str, gender: str, case: str) -> str | None:
    """A Russian (or Kazakh, in Cyrillic) first name in a case, by the regular paradigms; None if irregular."""
    low = name.lower()
    if low.endswith("ия"):
        return name[:-1] + {"gen": "и", "dat": "и", "acc": "ю", "ins": "ей", "prep": "и"}[case]
    if low.endswith("я"):
        return name[:-1] + {"gen": "и", "dat": "е", "acc": "ю", "ins": "ей", "prep": "е"}[case]
    if low.endswith("а"):
        stem = name[:-1]
        gen = "и" if stem[-1] in _VELAR_SIB else "ы"
        ins = "ей" if stem[-1] in _SIBILANT else "ой"
        return stem + {"gen": gen, "dat": "е", "acc": "у", "ins": ins, "prep": "е"}[case]
    if gender != "M":
        return None  # a woman's name that does not end in -а/-я does not decline
    if low == "павел":
        return "Павл" + {"gen": "а", "dat": "у", "acc": "а", "ins": "ом", "prep": "е"}[case]
    if low.endswith("ий"):
        return name[:-1] + {"gen": "я", "dat": "ю", "acc": "я", "ins": "ем", "prep": "и"}[case]
    if low.endswith(("й", "ь")):
        return name[:-1] + {"gen": "я", "dat": "ю", "acc": "я", "ins": "ем", "prep": "е"}[case]
    if low[-1] in "оеиуыэю":
        return None
    if low.endswith(("ел", "ек", "ок", "ец")):
        return None  # a fleeting vowel (Павел, Марек) the rules would get wrong
    return _ru_noun_masc(name, case)


def surname_gender(name: str) -> str:
    """M, F or "?" (either) from a Russian-type surname's ending (also for Azerbaijani/Kazakh -ov/-ova)."""
    low = name.lower()
    if low.endswith(("ова", "ева", "ёва", "ина", "ына", "ская", "цкая", "ova", "eva", "yeva", "ina")):
        return "F"
    if low.endswith(("ов", "ев", "ёв", "ин", "ын", "ский", "цкий", "ov", "ev", "yev", "in")):
        return "M"
    return "?"


def ru_last(name: str, gender: str, case: str) -> str | None:
    low = name.lower()
    if low.endswith(("ская", "цкая")):
        return name[:-2] + {"gen": "ой", "dat": "ой", "acc": "ую", "ins": "ой", "prep": "ой"}[case]
    if low.endswith(("ский", "цкий")):
        return name[:-2] + {"gen": "ого", "dat": "ому", "acc": "ого", "ins": "им", "prep": "ом"}[case]
    if low.endswith(("ова", "ева", "ёва", "ина", "ына")):
        return name[:-1] + {"gen": "ой", "dat": "ой", "acc": "у", "ins": "ой", "prep": "ой"}[case]
    if low.endswith(("ов", "ев", "ёв", "ин", "ын")):
        return name + {"gen": "а", "dat": "у", "acc": "а", "ins": "ым", "prep": "е"}[case]
    if gender != "M" or low[-1] not in "бвгджзклмнпрстфхцчшщ" or low.endswith(("их", "ых")):
        return None  # a woman's consonant surname, -о/-ко/-их and the like stay as they are
    return _ru_noun_masc(name, case)


# ---------------------------------------------------------------------------------------------- casing
def upper(text: str, lang: str) -> str:
    if lang == "tr":
        text = text.replace("i", "İ").replace("ı", "I")
    return text.upper()


def lower(text: str, lang: str) -> str:
    if lang == "tr":
        text = text.replace("I", "ı").replace("İ", "i")
    return text.lower()


# ---------------------------------------------------------------------------------------------- people
def patronymic(father: str, gender: str) -> str | None:
    """Отчество from a father's first name by the regular rules (Иван -> Иванович, Андрей -> Андреевна)."""
    low = father.lower()
    if low.endswith("ий"):
        return father[:-2] + ("иевич" if gender == "M" else "иевна")
    if low.endswith("й") or low[-1] in _SIBILANT:
        return father.rstrip("й") + ("евич" if gender == "M" else "евна")
    if low[-1] in "бвгдзклмнпрстфх":
        return father + ("ович" if gender == "M" else "овна")
    return None


class Person:
    __slots__ = ("first", "last", "gender", "country", "bucket", "ranks", "middle")

    def __init__(self, first, last, gender, country, bucket, ranks, middle=None):
        self.first, self.last, self.gender = first, last, gender
        self.country, self.bucket, self.ranks = country, bucket, ranks
        self.middle = middle  # a Russian patronymic, or None

    @property
    def full(self) -> str:
        return f"{self.first} {self.last}"


class Builder:
    def __init__(self, pool: dict, seed: int = 29):
        import sys
        from pathlib import Path

        sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # bench/pii: generate.py's value makers
        from generate import Generator

        self.pool = pool
        self.rng = random.Random(seed)
        self.values = Generator(seed)  # checksum-valid TCKN, IBAN, cards, INN, SNILS, plates, addresses

    # ------------------------------------------------------------------ people
    def person(self, lang: str) -> Person:
        rng = self.rng
        for _ in range(200):
            country = rng.choice(COUNTRIES[lang])
            bucket = rng.choice(BUCKETS)[0]
            firsts = self.pool[lang][country]["first"].get(bucket)
            lasts = self.pool[lang][country]["last"].get(bucket)
            if not firsts or not lasts:
                continue
            first, frank, gender = rng.choice(firsts)
            if gender == "?":
                continue  # a name used for both: the Russian verb endings and cases need one
            for _ in range(30):
                last, lrank, _ = rng.choice(lasts)
                sg = surname_gender(last)
                if sg in ("?", gender) and last != first:
                    break
            else:
                continue
            return Person(first, last, gender, country, bucket, (frank, lrank), self._patronymic(lang, country, gender))
        raise RuntimeError(f"no person drawn for {lang}")

    def _patronymic(self, lang: str, country: str, gender: str) -> str | None:
        """A patronymic from another evaluation-half man's name of the country, for Russian text."""
        if lang != "ru":
            return None
        fathers = [r[0] for rows in self.pool[lang][country]["first"].values() for r in rows if r[2] == "M"]
        for _ in range(20):
            middle = patronymic(self.rng.choice(fathers), gender)
            if middle:
                return middle
        return None

    # ------------------------------------------------------------------ sentences
    def _form(self, p: Person, lang: str, which: str, case: str | None) -> list | None:
        """Segments of one name mention: [(text, is_name_word)], or None when the form cannot be made."""
        words = {"full": [("first", p.first), ("last", p.last)], "first": [("first", p.first)],
                 "last": [("last", p.last)], "io": [("first", p.first), ("middle", p.middle)],
                 "fio": [("last", p.last), ("first", p.first), ("middle", p.middle)]}[which]
        if p.middle is None and which in ("io", "fio"):
            return None
        out = []
        for i, (kind, w) in enumerate(words):
            if i:
                out.append((" ", False))
            if case is None:
                out.append((w, True))
            elif lang == "tr":
                if i == len(words) - 1:
                    out += [(w, True), (tr_suffix(w, case), False)]
                else:
                    out.append((w, True))
            else:  # Russian; a patronymic is planted in the nominative only
                form = (ru_first if kind == "first" else ru_last)(w, p.gender, case) if kind != "middle" else None
                if form is None:
                    return None
                out.append((form, True))
        return out

    def render(self, template: str, lang: str, p: Person | None = None, shape: str = "",
               value: tuple | None = None) -> list | None:
        """Segments [(text, label or None)] of a template; None when a name form cannot be made."""
        segs: list = []
        pos = 0
        for m in _SLOT.finditer(template):
            if m.start() > pos:
                segs.append((template[pos:m.start()], None))
            pos = m.end()
            if m.group(4) is not None:  # [[hard negative]]
                segs.append((m.group(4), {"kind": "negative"}))
            elif m.group(0).startswith("{bh"):
                title = "Hanım" if p.gender == "F" else "Bey"
                segs.append((title + (tr_suffix(title, m.group(3)) if m.group(3) else ""), None))
            elif m.group(0) == "{a}":
                segs.append(("а" if p.gender == "F" else "", None))
            elif m.group(0) == "{mr}":
                segs.append(("Ms." if p.gender == "F" else "Mr.", None))
            elif m.group(0) == "{V}":
                segs.append((value[1], {"kind": "identifier", "type": value[0]}))
            else:
                which, case = m.group(1), m.group(2)
                parts = self._form(p, lang, which, case)
                if parts is None:
                    return None
                # the mention's label spans its name words (a Turkish suffix after the apostrophe is not part)
                text = "".join(t for t, _ in parts)
                tail = parts[-1][0] if not parts[-1][1] else ""
                segs.append((text[:len(text) - len(tail)], {"kind": "name", "shape": shape, "mention": which}))
                if tail:
                    segs.append((tail, None))
        if pos < len(template):
            segs.append((template[pos:], None))
        return segs

    def name_sentence(self, lang: str, p: Person, shape: str, group: str | None = None) -> list:
        """A sentence planting the person in `shape`; lower and caps re-case a cue or no-cue sentence."""
        group = group or shape
        if shape in ("lower", "caps"):
            group = self.rng.choice(("cue", "nocue"))
        templates = [t for t in texts.NAMES[lang][group] if t not in self._used] or texts.NAMES[lang][group]
        for _ in range(50):
            template = self.rng.choice(templates)
            segs = self.render(template, lang, p, shape)
            if segs is not None:
                self._used.add(template)  # a record says each sentence once
                break
        else:
            segs = self.render(self.rng.choice(texts.NAMES[lang]["cue"]), lang, p, "cue")
        if shape == "lower":
            segs = [(lower(t, lang), lab) for t, lab in segs]
        elif shape == "caps":
            segs = [(upper(t, lang), lab) for t, lab in segs]
        return segs

    def negative_sentence(self, lang: str) -> list:
        rng = self.rng
        kind = rng.choice(list(texts.NEGATIVES[lang]) + ["code_fence", "code_inline"])
        if kind == "code_fence":
            intro = rng.choice(texts.CODE_INTRO[lang])
            return [(intro + "\n", None), (rng.choice(texts.CODE_FENCES), {"kind": "negative", "neg": kind}),
                    ("\n", None)]
        if kind == "code_inline":
            segs = self.render(rng.choice(texts.CODE_INLINE), lang)
        else:
            segs = self.render(rng.choice(texts.NEGATIVES[lang][kind]), lang)
        return [(t, {**lab, "neg": kind} if lab else None) for t, lab in segs]

    def identifier_sentence(self, lang: str) -> list:
        kind = self.rng.choice(texts.ID_KINDS[lang])
        group = kind.split("_")[0] if kind.startswith(("PHONE", "IBAN")) else kind
        value = self.identifier(kind)
        return self.render(self.rng.choice(texts.IDENTIFIERS[lang][group]), lang, value=(kind, value))

    # ------------------------------------------------------------------ identifier values
    def identifier(self, kind: str) -> str:
        g, rng = self.values, self.rng
        if kind.startswith("PHONE_"):
            return self.phone(kind[6:])
        if kind.startswith("IBAN_"):
            iban = g.fk[{"TR": "tr_TR", "DE": "de_DE", "GB": "en_GB"}[kind[5:]]].iban()
            return " ".join(iban[i:i + 4] for i in range(0, len(iban), 4)) if rng.random() < 0.6 else iban
        if kind == "PLATE_RU":
            letters = "АВЕКМНОРСТУХ"
            a, b, c = (rng.choice(letters) for _ in range(3))
            num, region = f"{rng.randint(1, 999):03d}", str(rng.choice([77, 97, 177, 197, 777, 50, 750, 78, 178, 16]))
            return rng.choice([f"{a}{num}{b}{c} {region}", f"{a} {num} {b}{c} {region}", f"{a}{num}{b}{c}{region}"])
        value, _ = g.value({"TCKN": "TCKN", "CARD": "CREDIT_CARD", "EMAIL": "EMAIL", "INN": "INN", "SNILS": "SNILS",
                            "PLATE_TR": "LICENSE_PLATE", "PASSPORT_RU": "PASSPORT", "ADDRESS": "ADDRESS"}[kind],
                           {"PASSPORT_RU": "ru", "EMAIL": self._lang, "ADDRESS": self._lang}.get(kind, "tr"))
        return value

    def phone(self, region: str) -> str:
        import phonenumbers

        rng = self.rng
        d = lambda n: "".join(rng.choice("0123456789") for _ in range(n))  # noqa: E731
        for _ in range(500):
            nsn = {"TR": lambda: "5" + rng.choice("0345") + d(8), "RU": lambda: "9" + rng.choice("1235689") + d(8),
                   "US": lambda: str(rng.randint(201, 989)) + str(rng.randint(200, 999)) + d(4),
                   "GB": lambda: "7" + rng.choice("45789") + d(8), "DE": lambda: "15" + rng.choice("12579") + d(8),
                   "IN": lambda: rng.choice("6789") + d(9)}[region]()
            num = phonenumbers.parse("+" + str(phonenumbers.country_code_for_region(region)) + nsn)
            if phonenumbers.is_valid_number(num):
                break
        else:
            raise RuntimeError(f"no valid {region} phone")
        n = nsn
        shapes = {
            "TR": [f"+90 {n[:3]} {n[3:6]} {n[6:8]} {n[8:]}", f"0 {n[:3]} {n[3:6]} {n[6:8]} {n[8:]}",
                   f"0{n[:3]} {n[3:6]} {n[6:8]} {n[8:]}", f"0{n}", f"+90{n}", f"(0{n[:3]}) {n[3:6]} {n[6:]}"],
            "RU": [f"8 ({n[:3]}) {n[3:6]}-{n[6:8]}-{n[8:]}", f"+7 {n[:3]} {n[3:6]}-{n[6:8]}-{n[8:]}",
                   f"+7 ({n[:3]}) {n[3:6]} {n[6:8]} {n[8:]}", f"8{n}", f"+7{n}",
                   f"8-{n[:3]}-{n[3:6]}-{n[6:8]}-{n[8:]}"],
            "US": [f"{n[:3]}-{n[3:6]}-{n[6:]}", f"({n[:3]}) {n[3:6]}-{n[6:]}", f"+1 {n[:3]} {n[3:6]} {n[6:]}",
                   f"{n[:3]}.{n[3:6]}.{n[6:]}", f"+1-{n[:3]}-{n[3:6]}-{n[6:]}"],
            "GB": [f"0{n[:4]} {n[4:]}", f"+44 {n[:4]} {n[4:]}", f"+44 (0){n[:4]} {n[4:]}", f"0{n}"],
            "DE": [f"+49 {n[:3]} {n[3:]}", f"0{n[:3]} {n[3:]}", f"0{n[:3]}/{n[3:]}", f"+49{n}"],
            "IN": [f"+91 {n[:5]} {n[5:]}", f"0{n[:5]} {n[5:]}", f"{n[:5]} {n[5:]}", f"+91-{n}"],
        }[region]
        return rng.choice(shapes)

    # ------------------------------------------------------------------ records
    def record(self, idx: int) -> dict:
        lang = LANGS[idx % 3]
        self._lang = lang
        for _ in range(20):  # a person whose name is a word elsewhere in the record is drawn again
            row = self._compose(idx, lang)
            if row is not None:
                return row
        raise RuntimeError("no record composed")

    def _compose(self, idx: int, lang: str) -> dict | None:
        rng = self.rng
        self._used: set[str] = set()
        chat = rng.random() < 0.6
        units: list[list] = [[] for _ in range(rng.choice((4, 4, 6, 8)) if chat else 1)]  # sentences per unit
        person, tool_unit = self._plant_person(units, lang, chat) if rng.random() < NAME_SHARE else (None, None)
        for _ in range(rng.choice((1, 1, 2, 3))):
            self._put(units, self.negative_sentence(lang))
        for _ in range(rng.choice((0, 1, 1, 2, 3))):
            self._put(units, self.identifier_sentence(lang))
        self._fill(units, lang, chat)
        contents, labels = self._assemble(units, chat)
        if person is not None:
            self._person_labels(labels, person, lang)
            if self._collides({f"m{i}" if chat else "text": c for i, c in enumerate(contents)}, labels, person):
                return None
        if chat:
            msgs = [{"role": "user" if i % 2 == 0 else "assistant", "content": c} for i, c in enumerate(contents)]
            if tool_unit is not None:
                labels += self._tool_call(msgs[tool_unit], tool_unit, idx, person, lang)
            rec = {"kind": "chat", "messages": msgs}
        else:
            rec = {"kind": "text", "text": contents[0]}
        rec["source"] = {"file": "bench/pii/realnames.jsonl", "line": idx + 1}
        return {"lang": lang, "record": rec, "labels": labels}

    def _plant_person(self, units: list, lang: str, chat: bool) -> tuple[Person, int | None]:
        """A person's first mention in a primary shape, later mentions after it; the unit of a tool call."""
        rng, n_units = self.rng, len(units)
        person = self.person(lang)
        shapes = PRIMARY[lang]
        shape = rng.choices(list(shapes), weights=list(shapes.values()))[0]
        if shape == "tool" and not chat:
            shape = "cue"
        first_at, tool_unit = 0, None  # the unit of the first mention; later ones come after it
        if shape == "greeting":  # the agent's turn opens with it, after the person's own intro or alone
            if rng.random() < 0.5:
                units[0].append(self.name_sentence(lang, person, "cue"))
            first_at = 1 if chat else 0
            units[first_at].insert(0, self.name_sentence(lang, person, "greeting"))
        elif shape == "tool":  # the agent looks the customer up: the name in the text too, or only in the call
            if rng.random() < 0.5:
                units[0].append(self.name_sentence(lang, person, "cue"))
            first_at = tool_unit = 1
        else:
            units[0].append(self.name_sentence(lang, person, shape))
        for _ in range(rng.choice((0, 1, 1, 2))):
            at = rng.randint(min(first_at + 1, n_units - 1), n_units - 1)
            units[at].append(self.name_sentence(lang, person, rng.choice(LATER_SHAPES[lang])))
        if chat and rng.random() < 0.25 and shape != "greeting":
            units[rng.choice(range(1, n_units, 2))].insert(0, self.name_sentence(lang, person, "greeting"))
        return person, tool_unit

    def _fill(self, units: list, lang: str, chat: bool) -> None:
        """Ordinary sentences around the planted ones; a signature closes its unit; a note gets a header."""
        rng = self.rng
        for i, sents in enumerate(units):
            fill = (texts.FILL_USER if i % 2 == 0 else texts.FILL_AGENT)[lang] if chat else texts.FILL_NOTE[lang]
            for line in rng.sample(fill, rng.choice((1, 2)) if chat else rng.choice((2, 3, 4))):
                sents.insert(rng.randint(0, len(sents)), [(line, None)])
            for sig in [s for s in sents if any(lab and lab.get("shape") == "signature" for _, lab in s)]:
                sents.remove(sig)
                sents.append(sig)
        if not chat:
            units[0].insert(0, [(rng.choice(texts.NOTE_HEADS[lang]) + f" #{rng.randint(10000, 99999)}:", None)])

    @staticmethod
    def _assemble(units: list, chat: bool) -> tuple[list[str], list[dict]]:
        """Each unit's text, and the labels with their offsets in it."""
        contents, labels = [], []
        for fi, sents in enumerate(units):
            text = ""
            for si, segs in enumerate(sents):
                if si and not text.endswith("\n"):  # a line break after a "Name: value" line (no full stop)
                    text += "\n" if text[-1].isalnum() or "\n" in segs[0][0] or any(
                        lab and lab.get("shape") == "signature" for _, lab in segs) else " "
                for seg, lab in segs:
                    if lab is not None:
                        labels.append({**lab, "field": f"m{fi}" if chat else "text", "start": len(text),
                                       "end": len(text) + len(seg), "value": seg})
                    text += seg
            contents.append(text)
        return contents, labels

    def _tool_call(self, msg: dict, unit: int, idx: int, p: Person, lang: str) -> list[dict]:
        """The assistant's CRM call with the customer's name in its arguments (under "customer_name", and in
        the free-text note half of the time); the labels of the names."""
        notes = texts.TOOL_NOTES[lang]
        note = self.render(notes[0] if self.rng.random() < 0.5 else self.rng.choice(notes[1:]), lang, p, "tool") \
            or self.render(notes[0], lang, p, "tool")  # a name the case rules do not cover
        args = {"customer_name": p.full, "ticket": f"T-{self.rng.randint(100000, 999999)}",
                "note": "".join(t for t, _ in note)}
        msg["tool_calls"] = [{"type": "function", "id": f"call_{idx}",
                              "function": {"name": "crm_update", "arguments": args}}]
        field = json.dumps(args, ensure_ascii=False)
        start = field.index(json.dumps(p.full, ensure_ascii=False)) + 1
        labels = [{"kind": "name", "shape": "tool", "mention": "full", "start": start, "end": start + len(p.full),
                   "value": p.full}]
        pos = field.index(json.dumps(args["note"], ensure_ascii=False)) + 1
        for text, lab in note:
            if lab is not None:
                labels.append({**lab, "start": pos, "end": pos + len(text), "value": text})
            pos += len(text)
        for lab in labels:
            lab["field"] = f"t{unit}.0"
        self._person_labels(labels, p, lang)
        return labels

    def _put(self, units: list, sentence: list) -> None:
        units[self.rng.randrange(len(units))].append(sentence)

    @staticmethod
    def _person_labels(labels: list, p: Person, lang: str) -> None:
        """Who a name label is: the person's words (nominative, for the lists), country, rank bucket."""
        for lab in labels:
            if lab["kind"] == "name" and "country" not in lab:
                lab.update({"lang": lang, "country": p.country, "bucket": p.bucket,
                            "base": {"full": [p.first, p.last], "first": [p.first], "last": [p.last],
                                     "io": [p.first, p.middle], "fio": [p.last, p.first, p.middle]}[lab["mention"]],
                            "drawn": [p.first, p.last]})  # the words from the pool (a patronymic is made)

    @staticmethod
    def _collides(fields: dict, labels: list, p: Person) -> bool:
        """True when a word of the person's name (any form planted) is also a word of the other text."""
        name_words = {w.casefold() for lab in labels if lab["kind"] == "name" for w in _WORD.findall(lab["value"])}
        name_words |= {w.casefold() for w in (p.first, p.last, p.middle) if w}
        spans: dict = {}
        for lab in labels:
            if lab["kind"] == "name":
                spans.setdefault(lab["field"], []).append((lab["start"], lab["end"]))
        for key, text in fields.items():
            for m in _WORD.finditer(text):
                if m.group().casefold() in name_words and not any(s <= m.start() < e for s, e in spans.get(key, ())):
                    return True
        return False


def field_texts(rec: dict) -> dict[str, str]:
    """The record's content strings by label field name: "m<i>" (message i's content), "t<i>.<j>" (message i's
    tool call j's arguments as JSON), "text"."""
    if rec.get("messages") is None:
        return {"text": rec.get("text") or ""}
    out = {}
    for i, m in enumerate(rec["messages"]):
        out[f"m{i}"] = m.get("content") or ""
        for j, call in enumerate(m.get("tool_calls") or ()):
            args = call["function"]["arguments"]
            out[f"t{i}.{j}"] = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    return out


def build(pool: dict, n: int, seed: int = 29) -> list[dict]:
    b = Builder(pool, seed)
    return [b.record(i) for i in range(n)]
