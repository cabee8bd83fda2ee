"""Residual risk measured on the user's own data: how often a real person's name would survive the PII stage
in records like the run's own.

`ResidualProbe` is a phase-3 step placed just before the PII step. It passes every record on unchanged; for a
seeded sample of them (about pii.residual_sample copies over the run, drawn by a hash of split.seed and the
record id, so a rerun draws the same ones) it plants real names into COPIES at realistic places (after a cue,
as a sentence's subject, in a greeting, in a signature), in the record's language and casing, runs a PII step
of its own over the copies, and counts per language how many planted names had a word of three or more
letters left. Each name is drawn from a rank bucket (top 100, 100-1k, 1k-10k in its countries) chosen
uniformly, so the long tail weighs as much as the common names. The copies live in this module only: they
are never returned, written, logged or counted by content. The probe names (data/pii/probe_names.json) are
the evaluation half of a real-name list that no recognizer list holds (bench/pii/build_probe_names.py), so
the figure is what the detectors do on names they were never given, not on their own lists.

It runs before the PII step so that the copies' unchanged strings are scanned once: the detector's text
cache then gives the PII step their hits (its texts_cached counter includes them).

`residual_summary` turns the summed counters into report.json's pii.residual_risk.measured: recall, and the
share of records that would keep a name if each held one, with a 95% Wilson interval, scaled to the run's
records per language. `check_residual` is the kvkk: strict policy on its upper bound.
"""
from __future__ import annotations

import hashlib
import math
import random
import re

from pipeline.core.numfmt import percent
from pipeline.core.stats import merge_counters
from pipeline.core.step import Step
from pipeline.core.textnorm import content_chars
from pipeline.data.lang import pii_language
from pipeline.data.pii.lang import detect_language
from pipeline.data.pii.step import PiiPolicyError, PiiStep
from pipeline.data.pii.text import load_data

# copies held at once: a small run is probed many times per record, and its records may be large
COPIES_AT_ONCE = 32
PLANTS_PER_COPY = 2  # names planted in one copy: two places of one record, as a chat names a person twice
_MIN_CASE_LETTERS = 20  # letters a text needs before its casing is taken as a style (all lower, ALL CAPS)
_Z = 1.96  # 95%
_WORD = re.compile(r"\w+")

# Where a name goes, per language: (shape, template). {full} is "First Last", {first} a first name alone,
# {full_gen} the Turkish genitive ("Ayşe Çelik'in"). A Russian template with {v} takes the verb's past-tense
# gender ending ("" or "а").
_TEMPLATES = {
    "tr": (("cue", "Benim adım {full}."), ("cue", "Müşteri adı: {full}"), ("cue", "İsim soyisim: {full}"),
           ("cue", "Kayıt {full} adına açılmış."), ("subject", "{full} dün aradı."),
           ("subject", "{full} siparişini tekrar sordu."), ("subject", "{full_gen} talebi iletildi."),
           ("greeting", "Merhaba {first},"),
           ("greeting", "İyi günler {first} Hanım,"), ("signature", "Saygılarımla,\n{full}"),
           ("signature", "Teşekkürler,\n{first}")),
    "ru": (("cue", "Меня зовут {full}."), ("cue", "Клиент: {full}."), ("cue", "ФИО: {full}"),
           ("subject", "{full} звонил{v} вчера."), ("subject", "{full} оставил{v} заявку."),
           ("greeting", "Здравствуйте, {first}!"), ("greeting", "Добрый день, {first}."),
           ("signature", "С уважением,\n{full}")),
    "en": (("cue", "My name is {full}."), ("cue", "Customer name: {full}"), ("cue", "I spoke with {full} today."),
           ("subject", "{full} called yesterday about the refund."), ("subject", "{full} asked about the order."),
           ("greeting", "Hi {first},"), ("greeting", "Got it {first}."), ("signature", "Thanks,\n{full}"),
           ("signature", "Best regards,\n{first}")),
}
SHAPES = ("cue", "subject", "greeting", "signature")
# a Russian woman's surname: the masculine form's ending -> the feminine one
_RU_FEMININE = (("ский", "ская"), ("цкий", "цкая"), ("ов", "ова"), ("ев", "ева"), ("ёв", "ёва"), ("ин", "ина"),
                ("ын", "ына"))


def _probe_names() -> dict:
    data = load_data("probe_names.json")
    return {lang: {kind: [names for names in buckets.values() if names] for kind, buckets in entry.items()}
            for lang, entry in data.items() if not lang.startswith("_")}


# Records longer than this are not sampled: the probe's copies of one 8 MiB record (a run of one record
# takes residual_sample copies of it) cost 300 PII passes over it (about 8 minutes); names are found in a
# window of text, so the sample of shorter records measures the same detectors.
PROBE_MAX_CHARS = 64 * 1024


class ResidualProbe(Step):
    name = "pii_residual"
    config_sections = ("pii", "split")

    def __init__(self, cfg, salt: bytes, seed: int, rate: float):
        """rate: copies per record, pii.residual_sample over the records reaching the PII step; above 1 when the
        run is smaller than the sample (a record is then probed more than once, with other names)."""
        # its own PII step: the probe's finds never reach the pii stage's counts, and the copies are neither
        # refused by the strict policy nor removed by pii.special (they count as names left when they stay)
        self.pii = PiiStep(cfg.model_copy(update={"kvkk": "report", "special": "report"}), salt)
        self.seed, self.rate = seed, rate
        self.names = _probe_names()

    def process(self, batch: list[dict]) -> list[dict]:
        plants: list[tuple[dict, str, list]] = []  # (copy, language, its plants)
        for rec in batch:
            if content_chars(rec) > PROBE_MAX_CHARS:
                continue  # not sampled: a copy costs a PII pass over the whole record
            for k in range(self._copies(rec)):
                rng = random.Random(self._digest(rec, f"copy{k}"))
                planted = self._plant(rec, rng)
                if planted is not None:
                    plants.append(planted)
                if len(plants) >= COPIES_AT_ONCE:
                    self._measure(plants)
                    plants = []
        if plants:
            self._measure(plants)
        return batch

    # -- the sample
    def _digest(self, rec: dict, what: str) -> bytes:
        return hashlib.blake2b(f"residual:{self.seed}:{rec.get('id')}:{what}".encode(), digest_size=8).digest()

    def _copies(self, rec: dict) -> int:
        """floor(rate) copies, one more with the rate's fraction as probability (by the record's hash)."""
        whole = int(self.rate)
        draw = int.from_bytes(self._digest(rec, "draw"), "big") / 2 ** 64
        return whole + (draw < self.rate - whole)

    # -- planting
    def _plant(self, rec: dict, rng: random.Random):
        """A copy of `rec` with PLANTS_PER_COPY names in its content, or None when it has no text to hold one."""
        slots = _content_slots(rec)
        if not slots:
            return None
        lang = self._language(rec)
        copy = dict(rec)
        if isinstance(rec.get("messages"), list):
            copy["messages"] = [dict(m) if isinstance(m, dict) else m for m in rec["messages"]]
        plants = []
        for _ in range(PLANTS_PER_COPY):
            slot = rng.choice(slots)
            text = _get(copy, slot)
            shape, template = rng.choice(_TEMPLATES[lang])
            name_words, phrase = self._phrase(lang, template, rng)
            style = _casing(text)
            phrase, name_words = _styled(phrase, style), [_styled(w, style) for w in name_words]
            _set(copy, slot, _insert(text, phrase, shape, rng))
            plants.append((slot, shape, name_words, _get(rec, slot)))
        return copy, lang, plants

    def _language(self, rec: dict) -> str:
        """The language the PII step will give the record: its meta.lang, else the stop-word guess."""
        langs = self.pii.languages
        return pii_language(rec, langs) or detect_language(" ".join(_get(rec, s) for s in _content_slots(rec))[:3000],
                                                           langs)

    def _phrase(self, lang: str, template: str, rng: random.Random) -> tuple[list[str], str]:
        names = self.names[lang]
        female = lang == "ru" and rng.random() < 0.5
        first = rng.choice(rng.choice(names["first_f" if female else "first_m"] if lang == "ru" else names["first"]))
        last = rng.choice(rng.choice(names["last"]))
        if female:
            last = feminine_surname(last)
        words = [first, last] if "{full" in template else [first]
        return words, template.format(full=f"{first} {last}", first=first, v="а" if female else "",
                                      full_gen=f"{first} {last}'{_tr_genitive(last)}")

    # -- measuring
    def _measure(self, plants: list[tuple[dict, str, list]]) -> None:
        copies = []
        for n, (copy, _, _) in enumerate(plants):
            copy["id"] = f"probe-{n}"  # the PII step returns new dicts and drops some (drop operator)
            copies.append(copy)
        out = {r.get("id"): r for r in self.pii.process(copies)}
        st = self.stats
        for copy, lang, record_plants in plants:
            result = out.get(copy["id"])
            st.add(f"{lang}.copies")
            left_in_copy = False
            for slot, shape, words, original in record_plants:
                after = _get(result, slot) if result is not None else ""
                left = any(_occurrences(after, w) > _occurrences(original, w) for w in words if _letters(w) >= 3)
                st.add(f"{lang}.planted")
                st.add(f"{lang}.shapes.{shape}.planted")
                if left:
                    left_in_copy = True
                    st.add(f"{lang}.left")
                    st.add(f"{lang}.shapes.{shape}.left")
            if left_in_copy:
                st.add(f"{lang}.copies_with_name_left")


# --- the copy's text slots ------------------------------------------------------------------------------

def _content_slots(rec: dict) -> list[tuple]:
    """Where a person's name is written: the content of user and assistant turns (any turn when there are
    none), or the text of a plain-text record."""
    msgs = rec.get("messages")
    if isinstance(msgs, list):
        turns = [(i, m.get("role")) for i, m in enumerate(msgs)
                 if isinstance(m, dict) and isinstance(m.get("content"), str) and m["content"].strip()]
        spoken = [("messages", i) for i, role in turns if role in ("user", "assistant")]
        return spoken or [("messages", i) for i, _ in turns]
    if isinstance(rec.get("text"), str) and rec["text"].strip():
        return [("text",)]
    return []


def _get(rec: dict, slot: tuple) -> str:
    if slot[0] == "text":
        return rec.get("text") or ""
    msgs = rec.get("messages") or []
    m = msgs[slot[1]] if slot[1] < len(msgs) else None
    return m.get("content") or "" if isinstance(m, dict) else ""


def _set(rec: dict, slot: tuple, value: str) -> None:
    if slot[0] == "text":
        rec["text"] = value
    else:
        rec["messages"][slot[1]]["content"] = value


# --- the phrase ---------------------------------------------------------------------------------------------

def feminine_surname(surname: str) -> str:
    """A Russian woman's form of a surname given in its masculine form (Абрамов -> Абрамова)."""
    for masc, fem in _RU_FEMININE:
        if surname.endswith(masc):
            return surname[: -len(masc)] + fem
    return surname


_TR_HARMONY = {"a": "ı", "ı": "ı", "e": "i", "i": "i", "o": "u", "u": "u", "ö": "ü", "ü": "ü"}


def _tr_genitive(word: str) -> str:
    """The Turkish genitive suffix after the apostrophe, by vowel harmony: Çelik'in, Aydın'ın, Koç'un, Ata'nın."""
    vowels = [ch for ch in word.lower() if ch in _TR_HARMONY]
    vowel = _TR_HARMONY[vowels[-1]] if vowels else "i"
    return ("n" if word.lower()[-1] in _TR_HARMONY else "") + vowel + "n"


def _casing(text: str) -> str:
    """The text's casing style: 'lower' (no capital letter), 'upper' (ALL CAPS) or 'mixed'."""
    letters = [ch for ch in text[:2000] if ch.isalpha()]
    if len(letters) < _MIN_CASE_LETTERS:
        return "mixed"
    upper = sum(ch.isupper() for ch in letters)
    if upper == 0:
        return "lower"
    return "upper" if upper >= 0.8 * len(letters) else "mixed"


def _styled(text: str, style: str) -> str:
    return text.lower() if style == "lower" else text.upper() if style == "upper" else text


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def _insert(text: str, phrase: str, shape: str, rng: random.Random) -> str:
    """A greeting opens the text, a signature closes it; a cue or subject sentence starts the text or the
    sentence after a random sentence end."""
    if shape == "greeting":
        return f"{phrase} {text}"
    if shape == "signature":
        return f"{text}\n\n{phrase}"
    cuts = [0] + [m.end() for m in _SENTENCE_END.finditer(text) if m.end() < len(text)]
    at = rng.choice(cuts)
    return f"{text[:at]}{phrase} {text[at:]}"


def _letters(word: str) -> int:
    return sum(ch.isalpha() for ch in word)


def _occurrences(text: str, word: str) -> int:
    """Whole-word occurrences of `word` as written ("Çelik'in" holds "Çelik")."""
    return len(re.findall(rf"(?<!\w){re.escape(word)}(?!\w)", text)) if text else 0


# --- the figures ------------------------------------------------------------------------------------------

def wilson(hits: int, n: int) -> tuple[float, float]:
    """The 95% Wilson score interval of hits/n."""
    if n <= 0:
        return 0.0, 1.0
    p = hits / n
    denom = 1 + _Z ** 2 / n
    centre = (p + _Z ** 2 / (2 * n)) / denom
    half = _Z / denom * math.sqrt(p * (1 - p) / n + _Z ** 2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def _figures(c: dict, records: int) -> dict:
    """One language's figures (or all languages') from its probe counters."""
    copies, left_copies = int(c.get("copies", 0)), int(c.get("copies_with_name_left", 0))
    planted, left = int(c.get("planted", 0)), int(c.get("left", 0))
    low, high = wilson(left_copies, copies)
    share = left_copies / copies if copies else None
    shapes = c.get("shapes") or {}
    return {
        "copies": copies, "planted": planted, "names_left": left,
        "recall": round((planted - left) / planted, 4) if planted else None,
        "records_with_name_left": {
            "share": None if share is None else round(share, 4), "low": round(low, 4), "high": round(high, 4),
            "records": records,
            "estimate": None if share is None else round(share * records),
            "estimate_low": round(low * records), "estimate_high": round(high * records)},
        "by_shape": {shape: {"planted": int(s["planted"]), "recall": round(1 - int(s.get("left", 0)) / s["planted"], 4)}
                     for shape in SHAPES if (s := shapes.get(shape)) and s.get("planted")},
    }


def residual_summary(probe: dict | None, records_by_language: dict, cfg) -> dict:
    """report.json's pii.residual_risk.measured from the probe's summed counters and the PII step's records per
    language. The records figure reads: had every record a name at such a place, about this many would keep
    one. Counts and shares only."""
    if not (cfg.enabled and cfg.residual_sample):
        return {"enabled": False}
    probe = probe or {}
    langs = sorted(k for k, v in probe.items() if isinstance(v, dict))
    total: dict = {}
    for lang in langs:
        merge_counters(total, probe[lang])
    overall = _figures(total, sum(int(v) for v in records_by_language.values()))
    return {"enabled": True, "sample": cfg.residual_sample, "max": cfg.residual_max,
            "names": "probe_names.json: names-dataset evaluation half, in no recognizer list", **overall,
            "by_language": {lang: _figures(probe[lang], int(records_by_language.get(lang, 0))) for lang in langs}}


def measured_residual(cfg, shard_results: list[dict]) -> dict:
    """residual_summary over the shards' results (their pii_residual and pii stage counters)."""
    probe, langs = {}, {}
    for r in shard_results:
        stages = r.get("stages") or {}
        merge_counters(probe, (stages.get("pii_residual") or {}).get("counters") or {})
        merge_counters(langs, ((stages.get("pii") or {}).get("counters") or {}).get("records_by_language") or {})
    return residual_summary(probe, langs, cfg)


def check_residual(cfg, measured: dict) -> None:
    """kvkk: strict refuses the run when the upper bound of the share of records that would keep a name is
    over pii.residual_max."""
    if cfg.kvkk != "strict" or not measured.get("enabled") or not measured.get("copies"):
        return
    est = measured["records_with_name_left"]
    if est["high"] > cfg.residual_max:
        raise PiiPolicyError(
            f"residual name risk over pii.residual_max={cfg.residual_max:g}: names planted into "
            f"{measured['copies']} copies of this run's records were left in {est['share']:.1%} of them "
            f"(95% CI {est['low']:.1%}-{est['high']:.1%}; recall {measured['recall']:.1%}), about "
            f"{est['estimate']:,} of {est['records']:,} records; see pii.residual_risk in report.json of a "
            f"run with pii.kvkk: report")


# --- the figures as text (report.md and report.html show the same) -------------------------------------------

def measured_text(measured: dict) -> tuple[str, list[str], list[list]]:
    """The measured residual risk as a sentence, and a table (header, rows) per language and overall."""
    if not measured or not measured.get("enabled"):
        return "Residual risk was not measured (pii.residual_sample: 0).", [], []
    if not measured.get("copies"):
        return "Residual risk was not measured: no record had text to plant a name into.", [], []
    est = measured["records_with_name_left"]
    sentence = (f"Measured on this run's records: real names that no recognizer list holds were planted into "
                f"{measured['copies']:,} copies of the records (after cues, as a sentence's subject, in greetings "
                f"and signatures, in each record's language and casing; never written). {percent(measured['recall'])} "
                f"of the {measured['planted']:,} names were removed; {percent(est['share'])} of the copies kept one "
                f"(95% CI {percent(est['low'])}-{percent(est['high'])}): had every record a name, about "
                f"{est['estimate']:,} of {est['records']:,} would keep it ({est['estimate_low']:,}-"
                f"{est['estimate_high']:,}).")
    header = ["language", "copies", "names planted", "recall", "copies keeping a name", "95% CI",
              "records estimated", *(f"recall: {shape}" for shape in SHAPES)]
    rows = []
    for lang, fig in [*measured["by_language"].items(), ("all", measured)]:
        e = fig["records_with_name_left"]
        shapes = fig.get("by_shape") or {}
        rows.append([lang, fig["copies"], fig["planted"], percent(fig["recall"]), percent(e["share"]),
                     f"{percent(e['low'])}-{percent(e['high'])}",
                     f"{e['estimate']:,} of {e['records']:,}" if e["estimate"] is not None else "-",
                     *(percent(shapes[s]["recall"]) if s in shapes else "-" for s in SHAPES)])
    return sentence, header, rows


def measured_line(measured: dict) -> str:
    """The terminal's line after a run."""
    est = measured["records_with_name_left"]
    return (f"residual name risk: {percent(est['share'])} of {measured['copies']:,} probe copies kept a planted name "
            f"(95% CI {percent(est['low'])}-{percent(est['high'])}; recall {percent(measured['recall'])}): had every record "
            f"a name, about {est['estimate']:,} of {est['records']:,} would keep it; by language in report.md")
