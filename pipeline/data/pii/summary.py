"""The report's KVKK section: what personal data was found (counts per type and language), what was done with
it, and what risk remains; as the report.json "pii" object (kvkk_summary) and as report.md's section
(render_kvkk_markdown). Counts, type names and rules only: no value ever reaches these."""
from __future__ import annotations

from pipeline.core.markdown import table
from pipeline.data.pii.residual import measured_text, residual_summary

_RESIDUAL_NOTES = {
    "PERSON_latin": ("medium", "Turkish/English names come from a gazetteer (Faker tr/en/de/fr/it/es lists + common "
                     "Turkish names) and context rules, not a model: unlisted names without a title, introduction "
                     "or cue around them (\"Sayın\", \"Bey\", \"I spoke with\", \"adına\", \"kurye\", a signature "
                     "under \"Saygılarımla,\", a \"From:\" line), lower-case names without an "
                     "introduction (\"ben murat\", \"my name is james\" are found) and lone first names that are "
                     "common words stay."),
    "PERSON_ru": ("low", "Russian names: natasha NER + ru_RU gazetteer; lower-case or transliterated names "
                  "can be missed."),
    "ADDRESS": ("medium", "Addresses are best effort (street word + house number); free-form directions stay."),
    "context": ("low", "Passports, 10-digit VKN/INN and OGRN need a context word; without one they stay "
                "(see candidates_left_below_threshold)."),
    "quasi": ("medium", "Indirect identifiers (job + employer + city, ages, rare events) are not detected."),
    "special": ("medium", "KVKK art. 6 special categories (health, religion, ethnicity, political views, union "
                "membership, sex life, criminal records, biometrics) are found by a tr/ru/en lexicon with "
                "person-context rules (pipeline/data/pii/special.py; recall and precision in bench/pii): paraphrases "
                "and terms outside the lexicon stay, and under pii.special report the found ones stay in the "
                "text too; with the identifiers gone they remain personal data wherever the rest of a record "
                "still points to a person."),
    "pseudonym": ("medium", "Pseudonyms stay personal data while the salt exists: keep it off the training side."),
    "mask": ("low", "Masking keeps the length and separators of a value."),
    "disabled": ("high", "PII stripping is off: all personal data in the input is in the output."),
}


def kvkk_summary(counters: dict, cfg, probe: dict | None = None) -> dict:
    """What was found (counts per type and language), what was done with it, and what risk remains.

    `counters` are the summed StageStats counters of the pii stage from all shards, `probe` those of the
    residual-risk probe (pipeline/data/pii/residual.py). No values.
    """
    counters = counters or {}
    entities = {k: int(v) for k, v in sorted((counters.get("entities") or {}).items())}
    by_language = {lang: {k: int(v) for k, v in sorted(d.items())}
                   for lang, d in sorted((counters.get("languages") or {}).items()) if isinstance(d, dict)}
    residual = {k: int(v) for k, v in sorted((counters.get("residual") or {}).items())}
    methods = counters.get("methods") or {}
    total = sum(entities.values())
    special = {k: int(v) for k, v in sorted((counters.get("special") or {}).items())}
    actions = {ent: ("drop record" if cfg.operators.get(ent, cfg.operator) == "drop"
                     else cfg.operators.get(ent, cfg.operator)) for ent in entities}
    risks = []
    if not cfg.enabled:
        risks.append(_risk("disabled"))
    else:
        person = methods.get("PERSON") or {}
        latin_langs = [lang for lang in ("tr", "en") if lang in cfg.languages]
        if latin_langs:
            latin_found = sum(int((by_language.get(lang) or {}).get("PERSON", 0)) for lang in latin_langs)
            risks.append(_risk("PERSON_latin", names_found=latin_found))
        if "ru" in cfg.languages:
            risks.append(_risk("PERSON_ru", found_by_natasha=int(person.get("natasha", 0))))
        risks.append(_risk("ADDRESS", found=entities.get("ADDRESS", 0)))
        risks.append(_risk("context", left_below_threshold=sum(residual.values())))
        risks.append(_risk("quasi"))
        risks.append(_risk("special", found=sum(special.values())))
        used = {cfg.operator, *cfg.operators.values()}
        if "pseudonym" in used:
            risks.append(_risk("pseudonym"))
        if "mask" in used:
            risks.append(_risk("mask"))
    levels = [r["level"] for r in risks]
    overall = "high" if "high" in levels else "medium" if "medium" in levels else "low"
    return {
        "policy": cfg.kvkk,
        "enabled": bool(cfg.enabled),
        "languages": list(cfg.languages),
        "score_threshold": cfg.score_threshold,
        **({"strict_score": cfg.strict_score} if cfg.kvkk == "strict" else {}),
        "personal_data_found": {
            "total": total,
            "records_with_personal_data": int(counters.get("records_with_pii", 0)),
            "by_type": entities,
            "by_language": by_language,
            # how names were found (identifiers are all "pattern"; "field": replaced by their field name)
            "by_method": {ent: {m: int(n) for m, n in sorted(d.items())} for ent, d in sorted(methods.items())
                          if isinstance(d, dict) and set(d) != {"pattern"}},
        },
        # KVKK art. 6 mentions (pipeline/data/pii/special.py): counted per category and record language
        "special_categories": {
            "policy": cfg.special,
            "total": sum(special.values()),
            "records": int(counters.get("records_with_special", 0)),
            "by_category": special,
            "by_language": {lang: {k: int(v) for k, v in sorted(d.items())}
                            for lang, d in sorted((counters.get("special_languages") or {}).items())
                            if isinstance(d, dict)},
        },
        "fields_stripped": {k: int(v) for k, v in sorted((counters.get("fields_stripped") or {}).items())},
        "actions": {
            "default_operator": cfg.operator,
            "per_type": actions,
            "counts": {k: int(v) for k, v in sorted((counters.get("actions") or {}).items())},
            "records_dropped": int(counters.get("dropped_records", 0)),
        },
        "residual_risk": {
            "overall": overall,
            "candidates_left_below_threshold": residual,
            "items": risks,
            # names planted into copies of the run's records: how many the step would leave
            "measured": residual_summary(probe, counters.get("records_by_language") or {}, cfg),
        },
        "records_by_language": {k: int(v) for k, v in sorted((counters.get("records_by_language") or {}).items())},
    }


def _risk(key: str, **counts) -> dict:
    level, what = _RESIDUAL_NOTES[key]
    return {"topic": key, "level": level, "what": what, **counts}


def render_kvkk_markdown(pii: dict) -> str:
    """report.md's KVKK section from kvkk_summary's dict: a table of types by language with the action taken,
    then stripped fields, the candidates left in the text and the residual risks."""
    found = pii["personal_data_found"]
    actions = pii["actions"]
    risk = pii["residual_risk"]
    langs = [lang for lang in pii["languages"] if lang in found["by_language"]]
    langs += sorted(set(found["by_language"]) - set(langs))
    threshold = f"score threshold {pii['score_threshold']}"
    if "strict_score" in pii:
        threshold += f", strict above {pii['strict_score']}"
    lines = [f"Policy **{pii['policy']}**, stripping {'on' if pii['enabled'] else '**off**'}, languages "
             f"{', '.join(pii['languages'])}, {threshold}. **{found['total']:,}** values found in "
             f"**{found['records_with_personal_data']:,}** records; **{actions['records_dropped']:,}** records "
             f"dropped. Residual risk: **{risk['overall']}**.", ""]
    if found["by_type"]:
        rows = [[ent, f"{n:,}"] + [f"{found['by_language'].get(lang, {}).get(ent, 0):,}" for lang in langs]
                + [actions["per_type"].get(ent, actions["default_operator"])]
                for ent, n in found["by_type"].items()]
        lines += [table(["type", "found"] + langs + ["action"], rows, numeric=tuple(range(1, len(langs) + 2))), ""]
    special = pii.get("special_categories") or {}
    if special.get("total"):
        s_langs = sorted(special["by_language"])
        rows = [[cat, f"{n:,}"] + [f"{special['by_language'][lang].get(cat, 0):,}" for lang in s_langs]
                for cat, n in special["by_category"].items()]
        lines += [f"KVKK article 6 special categories: **{special['total']:,}** mentions in "
                  f"**{special['records']:,}** records, policy **{special['policy']}**.", "",
                  table(["special category", "found"] + s_langs, rows, numeric=tuple(range(1, len(s_langs) + 2))),
                  ""]
    methods = {f"{ent} {m}": n for ent, d in found["by_method"].items() for m, n in d.items()}
    extras = [("How names were found", methods),
              ("Fields removed by name", pii["fields_stripped"]),
              ("Replacements by operator", actions["counts"]),
              ("Candidates left below the threshold", risk["candidates_left_below_threshold"]),
              ("Records by language", pii["records_by_language"])]
    bullets = [f"- {title}: " + ", ".join(f"{k} {v:,}" for k, v in counts.items()) for title, counts in extras
               if counts]
    if bullets:
        lines += bullets + [""]
    measured = _measured_markdown(risk.get("measured"))
    if measured:
        lines += measured + [""]
    rows = [[item["topic"], item["level"], item["what"],
             ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in item.items() if k not in ("topic", "level", "what"))]
            for item in risk["items"]]
    lines.append(table(["risk", "level", "what remains", "counted"], rows))
    return "\n".join(lines)


def _measured_markdown(measured: dict | None) -> list[str]:
    """The residual risk measured on the run's records (pipeline/data/pii/residual.py): a sentence and its table."""
    if measured is None:  # a report from before the probe
        return []
    sentence, header, rows = measured_text(measured)
    return [sentence] + (["", table(header, rows, numeric=(1, 2, 3, 4))] if rows else [])
